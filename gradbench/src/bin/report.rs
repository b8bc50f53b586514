//! Times every eval's primal and derivative at GradBench's workload sizes
//! that fit a small machine, and prints the Markdown table of
//! BENCHMARKS.md: medians of the tool's own `"evaluate"` timings (the
//! same code path GradBench times), their ratio per workload, and the
//! geometric mean of the ratios per eval, which is the figure GradBench's
//! summary compares.
//!
//! `cargo run --release -p linear-ad-gradbench --bin report [-- SECONDS]`
//! (`SECONDS`, default 1, is each function's `min_seconds`) prints the
//! tables and writes them to `gradbench/results.md`, which the benchmark
//! report (`cargo run -p linear-ad-bench --bin report`) puts in
//! BENCHMARKS.md. `REPORT_EVALS=llsq,det` times those evals only and
//! writes nothing (for before-and-after comparisons of one change).
//!
//! Inputs are drawn as the evals draw them (uniform on [0, 1), GMM as
//! ADBench's generator, LSTM's sequence as 14-bit characters), from a
//! fixed seed; BA repeats one fixed camera, point and feature, as its
//! data files do. The ratios do not depend on the values, except for
//! branches (BA's rotation is not 0, as in ADBench's data).

use linear_ad_gradbench::evals;
use serde_json::{json, Value};

/// SplitMix64: a fixed, dependency-free stream of uniform numbers.
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn vec(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.uniform()).collect()
    }
    fn rows(&mut self, n: usize, d: usize, scale: f64, shift: f64) -> Vec<Vec<f64>> {
        (0..n)
            .map(|_| self.vec(d).iter().map(|v| scale * v + shift).collect())
            .collect()
    }
}

/// One workload: its eval, description, input, and the primal's and the
/// derivative's function names.
struct Workload {
    module: &'static str,
    what: String,
    input: Value,
    functions: [&'static str; 2],
}

fn workloads(rng: &mut Rng) -> Vec<Workload> {
    let mut w = Vec::new();
    let pg = ["primal", "gradient"];
    for n in [10_000, 160_000, 1_280_000] {
        let x: Vec<f64> = rng.vec(n);
        w.push(Workload {
            module: "lse",
            what: format!("n={n}"),
            input: json!({"x": x}),
            functions: pg,
        });
    }
    for n in [1024, 4096, 16392] {
        let x = rng.vec(128);
        w.push(Workload {
            module: "llsq",
            what: format!("n={n},m=128"),
            input: json!({"x": x, "n": n}),
            functions: pg,
        });
    }
    for ell in [7, 8, 9] {
        let a = rng.vec(ell * ell);
        w.push(Workload {
            module: "det",
            what: format!("ell={ell}"),
            input: json!({"A": a, "ell": ell}),
            functions: pg,
        });
    }
    for (n, s) in [(1000, 10), (10_000, 10), (1000, 100)] {
        let x = rng.vec(n);
        w.push(Workload {
            module: "ode",
            what: format!("n={n},s={s}"),
            input: json!({"x": x, "s": s}),
            functions: pg,
        });
    }
    adbench(rng, &mut w);
    // GradBench's k ∈ {10, 100, 1000}, n ∈ {1000, 10⁴, 10⁵}, d ∈ {8, 16},
    // where the cost's n·k·d stays under 2·10⁷; the centroids are the
    // last k points, as the eval makes them.
    for (k, n, d) in [
        (10, 1000, 8),
        (10, 10_000, 16),
        (100, 10_000, 8),
        (10, 100_000, 16),
    ] {
        let points = rng.rows(n, d, 1.0, 0.0);
        let centroids = points[n - k..].to_vec();
        w.push(Workload {
            module: "kmeans",
            what: format!("k={k},n={n},d={d}"),
            input: json!({"points": points, "centroids": centroids}),
            functions: ["cost", "dir"],
        });
    }
    w
}

/// The workloads of the evals from ADBench: `gmm`, `ba`, `ht`, `lstm`.
fn adbench(rng: &mut Rng, w: &mut Vec<Workload>) {
    for (d, k) in [(2, 5), (10, 25), (20, 50)] {
        let n = 1000;
        let width = d * (d + 1) / 2;
        let input = json!({
            "d": d, "k": k, "n": n,
            "alpha": rng.vec(k).iter().map(|v| 2.0 * v - 1.0).collect::<Vec<_>>(),
            "means": rng.rows(k, d, 1.0, 0.0),
            "icf": rng.rows(k, width, 1.0, -0.5),
            "x": rng.rows(n, d, 1.0, 0.0),
            "gamma": 1.0, "m": 0,
        });
        w.push(Workload {
            module: "gmm",
            what: format!("d={d},k={k},n={n}"),
            input,
            functions: ["objective", "jacobian"],
        });
    }
    for (n, m, p) in [(49, 7776, 31843), (21, 11315, 36455)] {
        // A camera 5 units behind the points, as in the example.
        let cam = [
            0.1, -0.2, 0.05, 0.3, -0.1, -5.0, 400.0, 320.0, 240.0, -1e-3, 1e-6,
        ];
        w.push(Workload {
            module: "ba",
            what: format!("n={n},m={m},p={p}"),
            input: json!({"n": n, "m": m, "p": p, "cam": cam, "x": [0.2, 0.4, 3.0],
                          "w": 0.9, "feat": [300.0, 280.0]}),
            functions: ["objective", "jacobian"],
        });
    }
    for (n, complicated) in [(100, false), (192, false), (100, true), (192, true)] {
        w.push(Workload {
            module: "ht",
            what: format!(
                "{},n={n}",
                if complicated { "complicated" } else { "simple" }
            ),
            input: hand(rng, n, complicated),
            functions: ["objective", "jacobian"],
        });
    }
    for (l, c) in [(2, 1024), (4, 1024), (2, 4096), (4, 4096)] {
        // 14 bits per character, as ADBench's data.
        let b = 14;
        let bits = |rng: &mut Rng| rng.vec(b).iter().map(|v| v.round()).collect::<Vec<_>>();
        let input = json!({
            "main_params": rng.rows(2 * l, 4 * b, 1.0, 0.0),
            "extra_params": rng.rows(3, b, 1.0, 0.0),
            "state": rng.rows(2 * l, b, 1.0, 0.0),
            "sequence": (0..c).map(|_| bits(rng)).collect::<Vec<_>>(),
        });
        w.push(Workload {
            module: "lstm",
            what: format!("l={l},c={c}"),
            input,
            functions: ["objective", "jacobian"],
        });
    }
}

/// A hand-tracking input of ADBench's small model's sizes (22 bones, 544
/// vertices, 1084 triangles) with `n` points: a synthetic skeleton (each
/// bone's parent before it), transforms of random entries, each vertex
/// weighted on a few bones.
fn hand(rng: &mut Rng, n: usize, complicated: bool) -> Value {
    let (bones, nv, ntri) = (22, 544, 1084);
    let mut index = |k: usize| (rng.uniform() * k as f64) as usize;
    let parents: Vec<i64> = (0..bones)
        .map(|b| if b == 0 { -1 } else { index(b) as i64 })
        .collect();
    let triangles: Vec<Vec<usize>> = (0..ntri)
        .map(|_| vec![index(nv), index(nv), index(nv)])
        .collect();
    let correspondences: Vec<usize> = (0..n)
        .map(|_| index(if complicated { ntri } else { nv }))
        .collect();
    let transform = |rng: &mut Rng| {
        let mut m = rng.rows(4, 4, 1.0, -0.5);
        m[3] = vec![0.0, 0.0, 0.0, 1.0];
        m
    };
    let base_relatives: Vec<_> = (0..bones).map(|_| transform(rng)).collect();
    let inverse_base_absolutes: Vec<_> = (0..bones).map(|_| transform(rng)).collect();
    let base_positions: Vec<Vec<f64>> = (0..nv)
        .map(|_| {
            let mut p = rng.vec(3);
            p.push(1.0);
            p
        })
        .collect();
    let weights: Vec<Vec<f64>> = (0..nv)
        .map(|_| {
            let w: Vec<f64> = rng
                .vec(bones)
                .iter()
                .map(|v| if *v < 0.15 { *v } else { 0.0 })
                .collect();
            let s: f64 = w.iter().sum::<f64>() + 1e-3;
            w.iter().map(|v| v / s).collect()
        })
        .collect();
    json!({
        "theta": rng.vec(26),
        "data": {
            "model": {
                "bone_count": bones,
                "bone_names": (0..bones).map(|b| format!("bone{b}")).collect::<Vec<_>>(),
                "parents": parents,
                "base_relatives": base_relatives,
                "inverse_base_absolutes": inverse_base_absolutes,
                "base_positions": base_positions,
                "weights": weights,
                "triangles": triangles,
                "is_mirrored": false,
            },
            "correspondences": correspondences,
            "points": rng.rows(n, 3, 1.0, 0.0),
        },
        "us": if complicated { rng.rows(n, 2, 0.5, 0.0) } else { vec![] },
    })
}

/// The median of one function's timings, in seconds.
fn median_seconds(module: &str, function: &str, input: &Value, seconds: f64) -> f64 {
    let mut input = input.clone();
    input["min_runs"] = json!(3);
    input["min_seconds"] = json!(seconds);
    let (_, timings) = evals::evaluate(module, function, input)
        .unwrap_or_else(|e| panic!("{module}::{function}: {e}"));
    let mut ns: Vec<u64> = timings.iter().map(|t| t.nanoseconds).collect();
    ns.sort_unstable();
    ns[ns.len() / 2] as f64 * 1e-9
}

fn show(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

/// GradBench's best tool per eval in its nightly results of 2026-03-14
/// (derivative ÷ primal, geometric mean over workloads), as the GradBench
/// issue quotes them.
const BEST: &[(&str, &str)] = &[
    ("lse", "1.1 (manual)"),
    ("llsq", "1.1 (JAX)"),
    ("det", "1.1 (Futhark; Enzyme 18.2)"),
    ("ode", "2.1 (JAX; Enzyme 2.5)"),
    ("gmm", "2.4 (manual; JAX 3.0, Enzyme 7.6)"),
    ("ba", "7.7 (manual; Enzyme 9.7)"),
    ("ht", "7.7 (manual; Enzyme 47.5)"),
    ("lstm", "2.1 (CoDiPack; Enzyme 2.8)"),
    ("kmeans", "1.4 (manual)"),
];

/// GradBench's best time per nested-AD eval, as the higher-order issue
/// quotes them.
const BEST_NESTED: &[(&str, &str)] =
    &[("particle", "0.98 ms (Enzyme)"), ("saddle", "about 1.6 ms")];

/// `particle` and `saddle` have no primal to divide by: every function is
/// the whole nested optimisation, in one of four pairs of modes. Their
/// medians, at the evals' default inputs (`w = 0`, `start = (1, 1)`).
fn nested_table(seconds: f64, only: &dyn Fn(&str) -> bool) -> String {
    let mut out = String::from(
        "| eval | ff | fr | rf | rr | GradBench's best |\n|---|---:|---:|---:|---:|---|\n",
    );
    for (module, input) in [
        ("particle", json!({"w": 0.0})),
        ("saddle", json!({"start": [1.0, 1.0]})),
    ]
    .into_iter()
    .filter(|(m, _)| only(m))
    {
        let times: Vec<String> = ["ff", "fr", "rf", "rr"]
            .iter()
            .map(|f| show(median_seconds(module, f, &input, seconds)))
            .collect();
        let best = BEST_NESTED
            .iter()
            .find(|(e, _)| *e == module)
            .map_or("", |(_, b)| b);
        out.push_str(&format!("| {module} | {} | {best} |\n", times.join(" | ")));
    }
    out
}

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .map_or(1.0, |s| s.parse().expect("SECONDS"));
    let evals = std::env::var("REPORT_EVALS").ok();
    let only = |m: &str| evals.as_ref().is_none_or(|e| e.split(',').any(|x| x == m));
    let mut rng = Rng(31337);
    let mut out = String::from(
        "| eval | workload | primal | derivative | ratio |\n|---|---|---:|---:|---:|\n",
    );
    let mut by_eval: Vec<(&str, Vec<f64>)> = Vec::new();
    for w in workloads(&mut rng).into_iter().filter(|w| only(w.module)) {
        let p = median_seconds(w.module, w.functions[0], &w.input, seconds);
        let d = median_seconds(w.module, w.functions[1], &w.input, seconds);
        let row = format!(
            "| {} | {} | {} | {} | {:.2} |\n",
            w.module,
            w.what,
            show(p),
            show(d),
            d / p
        );
        print!("{row}");
        out.push_str(&row);
        match by_eval.iter_mut().find(|(m, _)| *m == w.module) {
            Some((_, r)) => r.push(d / p),
            None => by_eval.push((w.module, vec![d / p])),
        }
    }
    let mut summary = String::from(
        "| eval | linear-ad: geometric mean of the ratios | GradBench's best tool |\n|---|---:|---|\n",
    );
    for (m, r) in by_eval {
        let g = (r.iter().map(|x| x.ln()).sum::<f64>() / r.len() as f64).exp();
        let best = BEST.iter().find(|(e, _)| *e == m).map_or("", |(_, b)| b);
        summary.push_str(&format!("| {m} | {g:.2} | {best} |\n"));
    }
    println!("\n{summary}");
    out.push('\n');
    out.push_str(&summary);
    let nested = nested_table(seconds, &only);
    println!("\n{nested}");
    out.push('\n');
    out.push_str(&nested);
    if evals.is_some() {
        return;
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/results.md");
    std::fs::write(path, &out).expect("write gradbench/results.md");
}
