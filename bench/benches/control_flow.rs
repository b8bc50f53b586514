//! Control flow: linear-ad against hand-written tangents and adjoints on
//! loops and branches, on the same inputs, in one run. Every variant is
//! checked against the hand-written derivative before it is timed; tape
//! bytes per iteration are printed next to the hand-written adjoint's.
//! `cargo bench -p linear-ad-bench --bench control_flow`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use linear_ad::{LinearMap, TapeSize};
use linear_ad_bench::control::*;

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1500))
        .sample_size(30)
}

fn close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1e-9 * (1.0 + a.abs() + b.abs()),
        "{what}: {a} vs {b}"
    );
}

/// Prints a tape measurement and appends it to
/// `target/criterion/control_tapes.txt` for the report.
fn tape_line(name: &str, bytes: usize, iters: usize, hand_per_iter: usize) {
    let line = format!(
        "{name}\t{bytes}\t{iters}\t{:.1}\t{hand_per_iter}",
        bytes as f64 / iters as f64
    );
    println!(
        "tape {name}: {bytes} bytes for {iters} iterations ({:.1} per iteration; hand-written adjoint {hand_per_iter})",
        bytes as f64 / iters as f64
    );
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/criterion");
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("control_tapes.txt");
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    text = text
        .lines()
        .filter(|l| !l.starts_with(&format!("{name}\t")))
        .map(|l| format!("{l}\n"))
        .collect();
    text.push_str(&line);
    text.push('\n');
    let _ = std::fs::write(path, text);
}

fn horner_bench(c: &mut Criterion) {
    let coef: Vec<f64> = (0..=1000)
        .map(|i| ((i * 37 % 101) as f64 - 50.0) / 1000.0)
        .collect();
    let x = 0.9993;
    let (v, d) = horner_hand_jvp(x, &coef, 1.0);
    close(horner(x, &coef), v, "horner value");
    close(horner_hand_vjp(x, &coef, 1.0).1, d, "horner hand vjp");
    close(horner_jvp(x, &coef, 1.0).1, d, "horner jvp");
    close(horner_vjp(x, &coef, 1.0).1, d, "horner vjp");
    let (_, lin) = horner_lin(x, &coef);
    close(lin.transpose(1.0), d, "horner lin");
    tape_line(
        "horner_1000",
        lin.tape_bytes(),
        coef.len(),
        HORNER_HAND_BYTES_PER_ITER,
    );
    let mut g = c.benchmark_group("horner_1000");
    g.bench_function("primal", |b| {
        b.iter(|| horner(black_box(x), black_box(&coef)))
    });
    g.bench_function("hand_jvp", |b| {
        b.iter(|| horner_hand_jvp(black_box(x), black_box(&coef), 1.0))
    });
    g.bench_function("hand_vjp", |b| {
        b.iter(|| horner_hand_vjp(black_box(x), black_box(&coef), 1.0))
    });
    g.bench_function("linear_ad_jvp", |b| {
        b.iter(|| horner_jvp(black_box(x), black_box(&coef), 1.0))
    });
    g.bench_function("linear_ad_vjp", |b| {
        b.iter(|| horner_vjp(black_box(x), black_box(&coef), 1.0))
    });
    g.bench_function("linear_ad_lin_transpose", |b| {
        b.iter(|| {
            let (v, l) = horner_lin(black_box(x), black_box(&coef));
            (v, l.transpose(1.0))
        })
    });
    g.finish();
}

fn rk4_bench(c: &mut Criterion) {
    let (y0, k, steps, h) = ([1.0, 0.0, 0.5, -0.2], 2.0, 1000, 0.01);
    let mut grad = [0.0; 5];
    for (j, g) in grad.iter_mut().enumerate() {
        let mut dy = [0.0; 4];
        let mut dk = 0.0;
        if j < 4 {
            dy[j] = 1.0
        } else {
            dk = 1.0
        }
        *g = rk4_hand_jvp(y0, k, steps, h, dy, dk).1;
    }
    let (v, (hy, hk)) = rk4_hand_vjp(y0, k, steps, h, 1.0);
    close(v, rk4(y0, k, steps, h), "rk4 value");
    for j in 0..4 {
        close(hy[j], grad[j], "rk4 hand vjp");
    }
    close(hk, grad[4], "rk4 hand vjp k");
    let (_, (ly, lk)) = rk4_vjp(y0, k, steps, h, 1.0);
    for j in 0..4 {
        close(ly[j], grad[j], "rk4 vjp");
    }
    close(lk, grad[4], "rk4 vjp k");
    close(
        rk4_jvp(y0, k, steps, h, [1.0, 0.0, 0.0, 0.0], 0.0).1,
        grad[0],
        "rk4 jvp",
    );
    let (_, lin) = rk4_lin(y0, k, steps, h);
    close(lin.transpose(1.0).1, grad[4], "rk4 lin");
    tape_line("rk4_1000", lin.tape_bytes(), steps, RK4_HAND_BYTES_PER_ITER);
    let (_, (sy, sk)) = rk4_state_vjp(y0, k, steps, h, 1.0);
    close(sy[0], grad[0], "rk4 state vjp");
    close(sk, grad[4], "rk4 state vjp k");
    let (_, lin_state) = rk4_state_lin(y0, k, steps, h);
    tape_line(
        "rk4_1000 (checkpoint = \"state\")",
        lin_state.tape_bytes(),
        steps,
        RK4_HAND_BYTES_PER_ITER,
    );
    let mut g = c.benchmark_group("rk4_1000");
    g.bench_function("primal", |b| {
        b.iter(|| rk4(black_box(y0), black_box(k), steps, h))
    });
    g.bench_function("hand_jvp", |b| {
        b.iter(|| {
            rk4_hand_jvp(
                black_box(y0),
                black_box(k),
                steps,
                h,
                [1.0, 0.0, 0.0, 0.0],
                0.0,
            )
        })
    });
    g.bench_function("hand_vjp", |b| {
        b.iter(|| rk4_hand_vjp(black_box(y0), black_box(k), steps, h, 1.0))
    });
    g.bench_function("linear_ad_jvp", |b| {
        b.iter(|| {
            rk4_jvp(
                black_box(y0),
                black_box(k),
                steps,
                h,
                [1.0, 0.0, 0.0, 0.0],
                0.0,
            )
        })
    });
    g.bench_function("linear_ad_vjp", |b| {
        b.iter(|| rk4_vjp(black_box(y0), black_box(k), steps, h, 1.0))
    });
    g.bench_function("linear_ad_lin_transpose", |b| {
        b.iter(|| {
            let (v, l) = rk4_lin(black_box(y0), black_box(k), steps, h);
            (v, l.transpose(1.0))
        })
    });
    g.bench_function("linear_ad_vjp_state", |b| {
        b.iter(|| rk4_state_vjp(black_box(y0), black_box(k), steps, h, 1.0))
    });
    g.finish();
}

/// Binomial checkpointing: RK4 over 10,000 steps under every policy; the
/// memory each holds (the tape, plus the states the reverse sweep keeps)
/// and the steps each evaluates are appended to
/// `target/criterion/control_checkpoint.txt` for the report.
fn checkpoint_bench(c: &mut Criterion) {
    let y0 = [1.0, 0.5, -0.3, 0.8];
    let k = 1.3;
    let steps = 10_000;
    let h = 1e-4;
    let (_, (hy, hk)) = rk4_hand_vjp(y0, k, steps, h, 1.0);
    type Vjp = fn([f64; 4], f64, usize, f64, f64) -> (f64, ([f64; 4], f64));
    let variants: [(&str, Option<u32>, Vjp); 5] = [
        ("save", None, rk4_vjp),
        ("state", None, rk4_state_vjp),
        ("binomial_4", Some(4), rk4_binomial4_vjp),
        ("binomial_16", Some(16), rk4_binomial16_vjp),
        ("binomial_64", Some(64), rk4_binomial64_vjp),
    ];
    for (name, _, f) in &variants {
        let (_, (gy, gk)) = f(y0, k, steps, h, 1.0);
        for j in 0..4 {
            close(gy[j], hy[j], name);
        }
        close(gk, hk, name);
    }
    let tapes = [
        rk4_lin(y0, k, steps, h).1.tape_bytes(),
        rk4_state_lin(y0, k, steps, h).1.tape_bytes(),
        rk4_binomial4_lin(y0, k, steps, h).1.tape_bytes(),
        rk4_binomial16_lin(y0, k, steps, h).1.tape_bytes(),
        rk4_binomial64_lin(y0, k, steps, h).1.tape_bytes(),
    ];
    let mut lines = String::new();
    for ((name, snaps, _), tape) in variants.iter().zip(tapes) {
        // The states the reverse sweep holds, and the RK4 steps evaluated:
        // the forward pass's, the reverse sweep's recomputation of each
        // step's stages, and the replay's (from the same schedule generated
        // code runs).
        let (held, evaluated) = match snaps {
            Some(c) => {
                let mut r = linear_ad::__private::Replay::new((), steps, *c, true);
                while r.next_state(|s| s).is_some() {}
                (
                    (*c as usize).min(steps) * std::mem::size_of::<[f64; 4]>(),
                    2 * steps as u64 + r.steps(),
                )
            }
            None if *name == "state" => (0, 2 * steps as u64),
            None => (0, steps as u64),
        };
        lines.push_str(&format!("{name}\t{tape}\t{held}\t{evaluated}\n"));
        println!("rk4_10000 {name}: tape {tape} B, reverse sweep holds {held} B, {evaluated} step evaluations");
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/criterion");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("control_checkpoint.txt"), lines);

    // An inline tape (literal trip count), checked in the release profile.
    let (x, y) = (0.7, 0.3);
    let (_, lin) = eight_steps_lin(x, y);
    assert_eq!(lin.tape_bytes(), std::mem::size_of_val(&lin));
    let e = 1e-6;
    let fd = (eight_steps(x + e, y) - eight_steps(x - e, y)) / (2.0 * e);
    close(eight_steps_vjp(x, y, 1.0).1 .0, fd, "eight_steps vjp");
    close(lin.transpose(1.0).0, fd, "eight_steps lin");

    let mut g = c.benchmark_group("rk4_10000");
    g.bench_function("primal", |b| {
        b.iter(|| rk4(black_box(y0), black_box(k), steps, h))
    });
    g.bench_function("hand_vjp", |b| {
        b.iter(|| rk4_hand_vjp(black_box(y0), black_box(k), steps, h, 1.0))
    });
    for (name, _, f) in variants {
        g.bench_function(name, |b| {
            b.iter(|| f(black_box(y0), black_box(k), steps, h, 1.0))
        });
    }
    g.finish();
}

fn newton_bench(c: &mut Criterion) {
    let (a, b0) = (1.5, 10.0);
    let (v, da) = newton_hand_jvp(a, b0, 1.0, 0.0);
    let (_, db) = newton_hand_jvp(a, b0, 0.0, 1.0);
    close(newton(a, b0), v, "newton value");
    let (_, (ha, hb)) = newton_hand_vjp(a, b0, 1.0);
    close(ha, da, "newton hand vjp a");
    close(hb, db, "newton hand vjp b");
    let (_, (la, lb)) = newton_vjp(a, b0, 1.0);
    close(la, da, "newton vjp a");
    close(lb, db, "newton vjp b");
    close(newton_jvp(a, b0, 1.0, 0.0).1, da, "newton jvp");
    let (_, lin) = newton_lin(a, b0);
    let iters = {
        let mut x = b0;
        let mut n = 0;
        let mut s: f64 = 1.0;
        while s.abs() > 1e-12 && n < 100 {
            s = (x * x * x + a * x - b0) / (3.0 * x * x + a);
            x -= s;
            n += 1;
        }
        n
    };
    tape_line(
        "newton_while",
        lin.tape_bytes(),
        iters,
        NEWTON_HAND_BYTES_PER_ITER,
    );
    let (_, (sa, sb)) = newton_state_vjp(a, b0, 1.0);
    close(sa, da, "newton state vjp a");
    close(sb, db, "newton state vjp b");
    let (_, lin_state) = newton_state_lin(a, b0);
    tape_line(
        "newton_while (checkpoint = \"state\")",
        lin_state.tape_bytes(),
        iters,
        NEWTON_HAND_BYTES_PER_ITER,
    );
    let (_, (ba, bb)) = newton_binomial_vjp(a, b0, 1.0);
    close(ba, da, "newton binomial vjp a");
    close(bb, db, "newton binomial vjp b");
    tape_line(
        "newton_while (checkpoint = \"binomial\", snapshots = 4)",
        newton_binomial_lin(a, b0).1.tape_bytes(),
        iters,
        NEWTON_HAND_BYTES_PER_ITER,
    );
    let mut g = c.benchmark_group("newton_while");
    g.bench_function("primal", |b| b.iter(|| newton(black_box(a), black_box(b0))));
    g.bench_function("hand_jvp", |b| {
        b.iter(|| newton_hand_jvp(black_box(a), black_box(b0), 1.0, 0.0))
    });
    g.bench_function("hand_vjp", |b| {
        b.iter(|| newton_hand_vjp(black_box(a), black_box(b0), 1.0))
    });
    g.bench_function("linear_ad_jvp", |b| {
        b.iter(|| newton_jvp(black_box(a), black_box(b0), 1.0, 0.0))
    });
    g.bench_function("linear_ad_vjp", |b| {
        b.iter(|| newton_vjp(black_box(a), black_box(b0), 1.0))
    });
    g.bench_function("linear_ad_lin_transpose", |b| {
        b.iter(|| {
            let (v, l) = newton_lin(black_box(a), black_box(b0));
            (v, l.transpose(1.0))
        })
    });
    g.bench_function("linear_ad_vjp_state", |b| {
        b.iter(|| newton_state_vjp(black_box(a), black_box(b0), 1.0))
    });
    g.bench_function("linear_ad_vjp_binomial", |b| {
        b.iter(|| newton_binomial_vjp(black_box(a), black_box(b0), 1.0))
    });
    g.finish();
}

fn huber_bench(c: &mut Criterion) {
    let xs: Vec<f64> = (0..1000).map(|i| i as f64 / 100.0).collect();
    let ys: Vec<f64> = xs
        .iter()
        .enumerate()
        .map(|(i, x)| 2.0 * x + 1.0 + ((i * 7919 % 13) as f64 - 6.0) * 0.4)
        .collect();
    let (w, b0) = (1.9, 1.2);
    let (v, (gw, gb)) = huber_hand_vjp(w, b0, &xs, &ys, 1.0);
    close(huber(w, b0, &xs, &ys), v, "huber value");
    close(
        huber_hand_jvp(w, b0, &xs, &ys, 1.0, 0.0).1,
        gw,
        "huber hand jvp",
    );
    let (_, (lw, lb)) = huber_vjp(w, b0, &xs, &ys, 1.0);
    close(lw, gw, "huber vjp w");
    close(lb, gb, "huber vjp b");
    close(huber_jvp(w, b0, &xs, &ys, 0.0, 1.0).1, gb, "huber jvp");
    let (_, lin) = huber_lin(w, b0, &xs, &ys);
    tape_line(
        "huber_1000",
        lin.tape_bytes(),
        xs.len(),
        HUBER_HAND_BYTES_PER_ITER,
    );
    let mut g = c.benchmark_group("huber_1000");
    g.bench_function("primal", |b| {
        b.iter(|| huber(black_box(w), black_box(b0), &xs, &ys))
    });
    g.bench_function("hand_jvp", |b| {
        b.iter(|| huber_hand_jvp(black_box(w), black_box(b0), &xs, &ys, 1.0, 0.0))
    });
    g.bench_function("hand_vjp", |b| {
        b.iter(|| huber_hand_vjp(black_box(w), black_box(b0), &xs, &ys, 1.0))
    });
    g.bench_function("linear_ad_jvp", |b| {
        b.iter(|| huber_jvp(black_box(w), black_box(b0), &xs, &ys, 1.0, 0.0))
    });
    g.bench_function("linear_ad_vjp", |b| {
        b.iter(|| huber_vjp(black_box(w), black_box(b0), &xs, &ys, 1.0))
    });
    g.bench_function("linear_ad_lin_transpose", |b| {
        b.iter(|| {
            let (v, l) = huber_lin(black_box(w), black_box(b0), &xs, &ys);
            (v, l.transpose(1.0))
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = horner_bench, rk4_bench, checkpoint_bench, newton_bench, huber_bench
}
criterion_main!(benches);
