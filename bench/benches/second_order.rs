//! Second derivatives: `f_hvp` against `f_vjp` (the gradient) and a
//! hand-written HVP on the extended Rosenbrock function, `f_hessian`
//! against num-dual's hyper-dual `hessian` on a six-coordinate energy
//! and on a loop (`orbit`: the linearized gradient through the loop's
//! records, against one `f_hvp` per direction); every variant checked
//! against the others before it is timed.
//! `cargo bench -p linear-ad-bench --bench second_order`.
//!
//! Every variant reads its inputs through a reference (`*black_box(&p)`):
//! `black_box(p)` stores the array just before the function loads it,
//! and where LLVM's vectorizer pairs the loads across the stores' 16-byte
//! halves (as it did for `coulomb_calls_vjp`, whose callees take
//! `(p[1], p[2])` and `(p[3], p[4])`) store-to-load forwarding fails:
//! 49 ns against 20 ns for the same instructions.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use linear_ad_bench::second::*;
use nalgebra::SVector;
use num_dual::{hessian, Dual2SVec64, DualNum};

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

fn hvp_bench(c: &mut Criterion) {
    for n in [10usize, 1000] {
        let x: Vec<f64> = (0..n)
            .map(|i| ((i * 37 % 101) as f64 - 50.0) / 40.0)
            .collect();
        let v: Vec<f64> = (0..n)
            .map(|i| ((i * 53 % 97) as f64 - 48.0) / 50.0)
            .collect();
        let (s, g, hv) = rosenbrock_slice_hvp_hand(&x, &v);
        let (s2, g2, hv2) = rosenbrock_slice_hvp(&x, &v);
        close(s2, s, "value");
        let g1 = rosenbrock_slice_vjp(&x, 1.0).1;
        for k in 0..n {
            close(g2[k], g[k], "hvp gradient");
            close(g1[k], g[k], "vjp gradient");
            close(hv2[k], hv[k], "hvp");
        }
        let mut grp = c.benchmark_group(format!("hvp_rosenbrock_{n}"));
        grp.bench_function("primal", |b| b.iter(|| rosenbrock_slice(black_box(&x))));
        grp.bench_function("linear_ad_vjp", |b| {
            b.iter(|| rosenbrock_slice_vjp(black_box(&x), 1.0))
        });
        grp.bench_function("linear_ad_hvp", |b| {
            b.iter(|| rosenbrock_slice_hvp(black_box(&x), black_box(&v)))
        });
        grp.bench_function("hand_hvp", |b| {
            b.iter(|| rosenbrock_slice_hvp_hand(black_box(&x), black_box(&v)))
        });
        grp.finish();
    }
}

/// `coulomb` on num-dual's hyper-dual vectors.
fn coulomb_dual(p: SVector<Dual2SVec64<6>, 6>) -> Dual2SVec64<6> {
    let d = |i: usize, j: usize| {
        let dx = p[2 * i] - p[2 * j];
        let dy = p[2 * i + 1] - p[2 * j + 1];
        (dx * dx + dy * dy).sqrt()
    };
    let mut tether = p[0] * p[0];
    for q in p.iter().skip(1) {
        tether += q * q;
    }
    d(0, 1).recip() + d(1, 2).recip() + d(2, 0).recip() + tether * 0.5
}

fn hessian_bench(c: &mut Criterion) {
    let p = [0.9, -0.2, -0.4, 0.7, 0.1, -0.8];
    let (v, g, h) = coulomb_hessian(p);
    let (v2, g2, h2) = hessian(coulomb_dual, &SVector::from(p));
    close(v, v2, "value");
    for i in 0..6 {
        close(g[i], g2[i], "gradient");
        for j in 0..6 {
            close(h[i][j], h2[(i, j)], "hessian");
        }
    }
    let mut grp = c.benchmark_group("hessian_coulomb_6");
    grp.bench_function("primal", |b| b.iter(|| coulomb(*black_box(&p))));
    grp.bench_function("linear_ad_vjp", |b| {
        b.iter(|| coulomb_vjp(*black_box(&p), 1.0))
    });
    grp.bench_function("linear_ad_hvp", |b| {
        b.iter(|| coulomb_hvp(*black_box(&p), *black_box(&[1.0, 0.0, 0.0, 0.0, 0.0, 0.0])))
    });
    grp.bench_function("linear_ad_hessian", |b| {
        b.iter(|| coulomb_hessian(*black_box(&p)))
    });
    // H·v by forward over reverse: J of the gradient, along (v, 0).
    grp.bench_function("linear_ad_vjp_jvp", |b| {
        b.iter(|| {
            coulomb_vjp_jvp(
                *black_box(&p),
                1.0,
                *black_box(&[1.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
                0.0,
            )
        })
    });
    grp.bench_function("num_dual_hessian", |b| {
        b.iter(|| hessian(coulomb_dual, &SVector::from(*black_box(&p))))
    });
    grp.finish();
}

/// `orbit` on num-dual's hyper-dual vectors.
fn orbit_dual(q: SVector<Dual2SVec64<4>, 4>) -> Dual2SVec64<4> {
    let (mut x, mut y, mut vx, mut vy) = (q[0], q[1], q[2], q[3]);
    for _ in 0..20 {
        let r2 = x * x + y * y + 0.1;
        let inv = (r2 * r2.sqrt()).recip();
        vx -= x * inv * 0.05;
        vy -= y * inv * 0.05;
        x += vx * 0.05;
        y += vy * 0.05;
    }
    x * x + y * y * 2.0 + vx * vy
}

/// The Hessian of `orbit` from four `f_hvp` calls, one per unit
/// direction: the schedule `f_hessian` had before `f_vjp` of a loop
/// could be linearized.
fn orbit_hessian_by_hvps(q: [f64; 4]) -> [[f64; 4]; 4] {
    let mut h = [[0.0; 4]; 4];
    for (k, row) in h.iter_mut().enumerate() {
        let mut e = [0.0; 4];
        e[k] = 1.0;
        *row = orbit_hvp(q, e).2;
    }
    h
}

fn hessian_loop_bench(c: &mut Criterion) {
    let q = [0.8, -0.3, 0.2, 0.9];
    let (v, g, h) = orbit_hessian(q);
    let (v2, g2, h2) = hessian(orbit_dual, &SVector::from(q));
    let h3 = orbit_hessian_by_hvps(q);
    close(v, v2, "value");
    for i in 0..4 {
        close(g[i], g2[i], "gradient");
        for j in 0..4 {
            close(h[i][j], h2[(i, j)], "hessian");
            close(h[i][j], h3[i][j], "hessian by HVPs");
        }
    }
    let mut grp = c.benchmark_group("hessian_orbit_4");
    grp.bench_function("primal", |b| b.iter(|| orbit(*black_box(&q))));
    grp.bench_function("linear_ad_vjp", |b| {
        b.iter(|| orbit_vjp(*black_box(&q), 1.0))
    });
    grp.bench_function("linear_ad_hessian", |b| {
        b.iter(|| orbit_hessian(*black_box(&q)))
    });
    grp.bench_function("linear_ad_hvp_x4", |b| {
        b.iter(|| orbit_hessian_by_hvps(*black_box(&q)))
    });
    grp.bench_function("num_dual_hessian", |b| {
        b.iter(|| hessian(orbit_dual, &SVector::from(*black_box(&q))))
    });
    grp.finish();
}

/// `coulomb_calls` (three calls of an `order = 2` callee) against
/// `coulomb` (the same terms inline): what second derivatives through
/// calls cost.
fn hessian_calls_bench(c: &mut Criterion) {
    let p = [0.9, -0.2, -0.4, 0.7, 0.1, -0.8];
    let (v, g, h) = coulomb_hessian(p);
    let (v2, g2, h2) = coulomb_calls_hessian(p);
    close(v, v2, "value");
    for i in 0..6 {
        close(g[i], g2[i], "gradient");
        for j in 0..6 {
            close(h[i][j], h2[i][j], "hessian");
        }
    }
    let e = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    let mut grp = c.benchmark_group("hessian_coulomb_calls_6");
    grp.bench_function("primal", |b| b.iter(|| coulomb_calls(*black_box(&p))));
    grp.bench_function("linear_ad_vjp", |b| {
        b.iter(|| coulomb_calls_vjp(*black_box(&p), 1.0))
    });
    grp.bench_function("linear_ad_hvp", |b| {
        b.iter(|| coulomb_calls_hvp(*black_box(&p), *black_box(&e)))
    });
    grp.bench_function("inline_hvp", |b| {
        b.iter(|| coulomb_hvp(*black_box(&p), *black_box(&e)))
    });
    grp.bench_function("linear_ad_hessian", |b| {
        b.iter(|| coulomb_calls_hessian(*black_box(&p)))
    });
    // Through the callee's `_vjp` (`passes::through`).
    let ((_, gc), (_, hc)) = coulomb_calls_vjp_jvp(p, 1.0, e, 0.0);
    let ((_, gi), (_, hi)) = coulomb_vjp_jvp(p, 1.0, e, 0.0);
    for i in 0..6 {
        close(gc[i], gi[i], "gradient");
        close(hc[i], hi[i], "forward over reverse hvp");
        close(
            hc[i],
            h[0][i],
            "forward over reverse hvp against the hessian",
        );
    }
    grp.bench_function("linear_ad_vjp_jvp", |b| {
        b.iter(|| coulomb_calls_vjp_jvp(*black_box(&p), 1.0, *black_box(&e), 0.0))
    });
    grp.bench_function("inline_hessian", |b| {
        b.iter(|| coulomb_hessian(*black_box(&p)))
    });
    grp.finish();
}

/// The Coulomb energy through calls that pass structs, and through method
/// calls: `f_hvp` and `f_hessian` against the inline function's.
fn hessian_struct_calls_bench(c: &mut Criterion) {
    let p = [0.9, -0.2, -0.4, 0.7, 0.1, -0.8];
    let e = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    let (_, g, h) = coulomb_hessian(p);
    for (name, hessian, hvp) in [
        (
            "hessian_coulomb_structs_6",
            coulomb_structs_hessian as fn([f64; 6]) -> (f64, [f64; 6], [[f64; 6]; 6]),
            coulomb_structs_hvp as fn([f64; 6], [f64; 6]) -> (f64, [f64; 6], [f64; 6]),
        ),
        (
            "hessian_coulomb_methods_6",
            coulomb_methods_hessian,
            coulomb_methods_hvp,
        ),
    ] {
        let (_, g2, h2) = hessian(p);
        let (_, _, hv) = hvp(p, e);
        for i in 0..6 {
            close(g[i], g2[i], "gradient");
            close(hv[i], h[0][i], "hvp");
            for j in 0..6 {
                close(h[i][j], h2[i][j], "hessian");
            }
        }
        let mut grp = c.benchmark_group(name);
        let primal = if name.contains("structs") {
            coulomb_structs
        } else {
            coulomb_methods
        };
        grp.bench_function("primal", |b| b.iter(|| primal(*black_box(&p))));
        grp.bench_function("linear_ad_hvp", |b| {
            b.iter(|| hvp(*black_box(&p), *black_box(&e)))
        });
        grp.bench_function("linear_ad_hessian", |b| b.iter(|| hessian(*black_box(&p))));
        grp.finish();
    }
    // Struct calls go through the callee's `_vjp` too.
    let ((_, gs), (_, hs)) = coulomb_structs_vjp_jvp(p, 1.0, e, 0.0);
    for i in 0..6 {
        close(gs[i], g[i], "gradient");
        close(hs[i], h[0][i], "forward over reverse hvp");
    }
    let mut grp = c.benchmark_group("hessian_coulomb_structs_6");
    grp.bench_function("linear_ad_vjp", |b| {
        b.iter(|| coulomb_structs_vjp(*black_box(&p), 1.0))
    });
    grp.bench_function("linear_ad_vjp_jvp", |b| {
        b.iter(|| coulomb_structs_vjp_jvp(*black_box(&p), 1.0, *black_box(&e), 0.0))
    });
    grp.finish();
    // Method calls of another block: `coulomb_methods_vjp`'s derivatives
    // go through the methods' `_vjp`s (`SecondOrder::VjpLin`).
    let ((_, gm), (_, hm)) = coulomb_methods_vjp_jvp(p, 1.0, e, 0.0);
    for i in 0..6 {
        close(gm[i], g[i], "gradient");
        close(hm[i], h[0][i], "forward over reverse hvp");
    }
    let mut grp = c.benchmark_group("hessian_coulomb_methods_6");
    grp.bench_function("linear_ad_vjp", |b| {
        b.iter(|| coulomb_methods_vjp(*black_box(&p), 1.0))
    });
    grp.bench_function("linear_ad_vjp_jvp", |b| {
        b.iter(|| coulomb_methods_vjp_jvp(*black_box(&p), 1.0, *black_box(&e), 0.0))
    });
    grp.finish();
}

/// `slice_calls` (calls that pass slices, of `order = 2` callees)
/// against `slice_calls_inline` (one loop): what second derivatives
/// through such calls cost, the arrays passed back and accumulated into.
fn hvp_slice_calls_bench(c: &mut Criterion) {
    for n in [10usize, 1000] {
        let x: Vec<f64> = (0..n)
            .map(|i| ((i * 37 % 101) as f64 - 50.0) / 400.0)
            .collect();
        let y: Vec<f64> = (0..n)
            .map(|i| ((i * 53 % 97) as f64 - 48.0) / 500.0)
            .collect();
        let (vx, vy): (Vec<f64>, Vec<f64>) = (x.iter().map(|a| a + 0.5).collect(), y.clone());
        let (s, (g0, g1), (h0, h1)) = slice_calls_hvp(&x, &y, &vx, &vy);
        let (s2, (g2, g3), (h2, h3)) = slice_calls_inline_hvp(&x, &y, &vx, &vy);
        close(s, s2, "value");
        let (a, b) = (g0.iter().chain(&g1), g2.iter().chain(&g3));
        for (p, q) in a.zip(b) {
            close(*p, *q, "hvp gradient");
        }
        for (p, q) in h0.iter().chain(&h1).zip(h2.iter().chain(&h3)) {
            close(*p, *q, "hvp");
        }
        let mut grp = c.benchmark_group(format!("hvp_slice_calls_{n}"));
        grp.bench_function("primal", |b| {
            b.iter(|| slice_calls(black_box(&x), black_box(&y)))
        });
        grp.bench_function("linear_ad_vjp", |b| {
            b.iter(|| slice_calls_vjp(black_box(&x), black_box(&y), 1.0))
        });
        grp.bench_function("linear_ad_hvp", |b| {
            b.iter(|| slice_calls_hvp(black_box(&x), black_box(&y), black_box(&vx), black_box(&vy)))
        });
        grp.bench_function("inline_vjp", |b| {
            b.iter(|| slice_calls_inline_vjp(black_box(&x), black_box(&y), 1.0))
        });
        grp.bench_function("inline_hvp", |b| {
            b.iter(|| {
                slice_calls_inline_hvp(black_box(&x), black_box(&y), black_box(&vx), black_box(&vy))
            })
        });
        // H·v by forward over reverse, the calls through their `_vjp`s.
        let ((_, (c0, c1)), (_, (d0, d1))) = slice_calls_vjp_jvp(&x, &y, 1.0, &vx, &vy, 0.0);
        for (p, q) in d0.iter().chain(&d1).zip(h0.iter().chain(&h1)) {
            close(*p, *q, "forward over reverse hvp");
        }
        for (p, q) in c0.iter().chain(&c1).zip(g0.iter().chain(&g1)) {
            close(*p, *q, "gradient");
        }
        grp.bench_function("linear_ad_vjp_jvp", |b| {
            b.iter(|| {
                slice_calls_vjp_jvp(
                    black_box(&x),
                    black_box(&y),
                    1.0,
                    black_box(&vx),
                    black_box(&vy),
                    0.0,
                )
            })
        });
        grp.bench_function("inline_vjp_jvp", |b| {
            b.iter(|| {
                slice_calls_inline_vjp_jvp(
                    black_box(&x),
                    black_box(&y),
                    1.0,
                    black_box(&vx),
                    black_box(&vy),
                    0.0,
                )
            })
        });
        grp.finish();
    }
}

criterion_group! {
    name = benches;
    config = config();
    targets = hvp_bench, hessian_bench, hessian_loop_bench, hessian_calls_bench, hessian_struct_calls_bench, hvp_slice_calls_bench
}
criterion_main!(benches);
