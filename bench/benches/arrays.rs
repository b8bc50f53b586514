//! Arrays: `f_vjp` against the hand-written adjoint for n = 10, 10³, 10⁵
//! and 10⁶, on the same inputs, in one run (mat-vec also with the matrix
//! in a struct's `Vec` field); every gradient is checked
//! against the hand-written one before it is timed, and the tape bytes of
//! `f_lin` are printed (the hand-written adjoints keep none: they read the
//! input again). `cargo bench -p linear-ad-bench --bench arrays`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use linear_ad::TapeSize;
use linear_ad_bench::arrays::*;

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(1000))
        .sample_size(20)
}

const SIZES: [usize; 4] = [10, 1_000, 100_000, 1_000_000];

fn input(n: usize, seed: usize) -> Vec<f64> {
    (0..n)
        .map(|i| (((i * 7919 + seed * 104_729) % 1000) as f64 / 500.0) - 1.0)
        .collect()
}

fn same(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (x, y) in a.iter().zip(b) {
        assert!(
            (x - y).abs() <= 1e-9 * (1.0 + x.abs() + y.abs()),
            "{what}: {x} vs {y}"
        );
    }
}

/// Prints a tape measurement and records it in
/// `target/criterion/array_tapes.txt` for the report.
fn tape(name: &str, n: usize, bytes: usize) {
    println!(
        "tape {name} n={n}: {bytes} bytes ({:.1} per element; hand-written adjoint 0)",
        bytes as f64 / n as f64
    );
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/criterion");
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("array_tapes.txt");
    let key = format!("{name}\t{n}\t");
    let mut text: String = std::fs::read_to_string(&path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with(&key))
        .map(|l| format!("{l}\n"))
        .collect();
    text.push_str(&format!("{key}{bytes}\n"));
    let _ = std::fs::write(path, text);
}

fn rosenbrock_bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("arrays/rosenbrock");
    for n in SIZES {
        let x = input(n, 1);
        let (v, gh) = rosenbrock_hand(&x);
        let (w, gv) = rosenbrock_vjp(&x, 1.0);
        assert!((v - w).abs() <= 1e-9 * v.abs());
        same(&gv, &gh, "rosenbrock gradient");
        tape("rosenbrock", n, rosenbrock_lin(&x).1.tape_bytes());
        g.bench_with_input(BenchmarkId::new("hand", n), &x, |b, x| {
            b.iter(|| rosenbrock_hand(black_box(x)))
        });
        g.bench_with_input(BenchmarkId::new("vjp", n), &x, |b, x| {
            b.iter(|| rosenbrock_vjp(black_box(x), 1.0))
        });
    }
}

fn dot_bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("arrays/dot");
    for n in SIZES {
        let (x, y) = (input(n, 2), input(n, 3));
        let (v, gx, gy) = dot_hand(&x, &y);
        let (w, (ax, ay)) = dot_vjp(&x, &y, 1.0);
        assert!((v - w).abs() <= 1e-9 * (1.0 + v.abs()));
        same(&ax, &gx, "dot x");
        same(&ay, &gy, "dot y");
        tape("dot", n, dot_lin(&x, &y).1.tape_bytes());
        g.bench_with_input(
            BenchmarkId::new("hand", n),
            &(x.clone(), y.clone()),
            |b, (x, y)| b.iter(|| dot_hand(black_box(x), black_box(y))),
        );
        g.bench_with_input(BenchmarkId::new("vjp", n), &(x, y), |b, (x, y)| {
            b.iter(|| dot_vjp(black_box(x), black_box(y), 1.0))
        });
    }
}

/// The columns of the `n`-entry matrix of the mat-vec benchmark: 10, 100,
/// 1000, 1000 for n = 10, 10³, 10⁵, 10⁶ (rows 1, 10, 100, 1000).
fn matvec_columns(n: usize) -> usize {
    let digits = (n as f64).log10().round() as u32;
    10usize.pow(digits.div_ceil(2)).min(n)
}

fn matvec_bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("arrays/matvec");
    for n in SIZES {
        let m = matvec_columns(n);
        let (a, x, w) = (input(n, 7), input(m, 8), input(n / m, 9));
        let (y, ga, gx) = matvec_hand(&a, &x, &w);
        let (yv, (av, xv)) = matvec_vjp(&a, &x, w.clone());
        same(&yv, &y, "mat-vec value");
        same(&av, &ga, "mat-vec cotangent of the matrix");
        same(&xv, &gx, "mat-vec cotangent of the vector");
        tape("matvec", n, matvec_lin(&a, &x).1.tape_bytes());
        let mat = Matrix {
            a: a.clone(),
            cols: m,
        };
        let (ys, (ms, xs)) = matvec_struct_vjp(&mat, &x, w.clone());
        same(&ys, &y, "mat-vec value, matrix in a struct");
        same(&ms.a, &ga, "mat-vec cotangent of the struct's matrix");
        same(
            &xs,
            &gx,
            "mat-vec cotangent of the vector, matrix in a struct",
        );
        g.bench_with_input(
            BenchmarkId::new("vjp_struct", n),
            &(&mat, &x, &w),
            |b, (mat, x, w)| {
                b.iter(|| matvec_struct_vjp(black_box(mat), black_box(x), black_box(*w).clone()))
            },
        );
        let data = (a, x, w);
        g.bench_with_input(BenchmarkId::new("hand", n), &data, |b, (a, x, w)| {
            b.iter(|| matvec_hand(black_box(a), black_box(x), black_box(w)))
        });
        g.bench_with_input(BenchmarkId::new("vjp", n), &data, |b, (a, x, w)| {
            // The cotangent buffer is the reverse pass's accumulator: it is
            // moved in, so each call gets its own (a copy the hand-written
            // adjoint does not make, of n / m elements).
            b.iter(|| matvec_vjp(black_box(a), black_box(x), black_box(w).clone()))
        });
    }
}

/// Slices across calls: the same function through calls of slice helpers
/// and with their loops inline, against the hand-written gradient.
fn calls_bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("arrays/calls");
    for n in SIZES {
        let (x, y) = (input(n, 10), input(n, 11));
        let (v, gx, gy) = quadratic_hand(&x, &y);
        for (name, vjp) in [
            (
                "vjp_calls",
                quadratic_calls_vjp as fn(&[f64], &[f64], f64) -> _,
            ),
            ("vjp_inline", quadratic_inline_vjp),
        ] {
            let (w, (ax, ay)) = vjp(&x, &y, 1.0);
            assert!((v - w).abs() <= 1e-9 * (1.0 + v.abs()), "{name}");
            same(&ax, &gx, name);
            same(&ay, &gy, name);
        }
        tape("calls", n, quadratic_calls_lin(&x, &y).1.tape_bytes());
        tape(
            "calls_inline",
            n,
            quadratic_inline_lin(&x, &y).1.tape_bytes(),
        );
        let data = (x, y);
        g.bench_with_input(BenchmarkId::new("hand", n), &data, |b, (x, y)| {
            b.iter(|| quadratic_hand(black_box(x), black_box(y)))
        });
        g.bench_with_input(BenchmarkId::new("vjp_calls", n), &data, |b, (x, y)| {
            b.iter(|| quadratic_calls_vjp(black_box(x), black_box(y), 1.0))
        });
        g.bench_with_input(BenchmarkId::new("vjp_inline", n), &data, |b, (x, y)| {
            b.iter(|| quadratic_inline_vjp(black_box(x), black_box(y), 1.0))
        });
    }
}

fn log_sum_exp_bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("arrays/log_sum_exp");
    for n in SIZES {
        let x = input(n, 4);
        let (v, gh) = log_sum_exp_hand(&x);
        let (w, gv) = log_sum_exp_vjp(&x, 1.0);
        assert!((v - w).abs() <= 1e-9 * (1.0 + v.abs()));
        same(&gv, &gh, "log-sum-exp gradient");
        tape("log_sum_exp", n, log_sum_exp_lin(&x).1.tape_bytes());
        g.bench_with_input(BenchmarkId::new("hand", n), &x, |b, x| {
            b.iter(|| log_sum_exp_hand(black_box(x)))
        });
        g.bench_with_input(BenchmarkId::new("vjp", n), &x, |b, x| {
            b.iter(|| log_sum_exp_vjp(black_box(x), 1.0))
        });
    }
}

fn least_squares_bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("arrays/least_squares");
    let w = [0.7, -0.2];
    for n in SIZES {
        let (xs, ys) = (input(n, 5), input(n, 6));
        let (v, gh) = least_squares_hand(&w, &xs, &ys);
        let (l, gv) = least_squares_vjp(&w, &xs, &ys, 1.0);
        assert!((v - l).abs() <= 1e-9 * (1.0 + v.abs()));
        same(&gv, &gh, "least-squares gradient");
        tape(
            "least_squares",
            n,
            least_squares_lin(&w, &xs, &ys).1.tape_bytes(),
        );
        let data = (xs, ys);
        g.bench_with_input(BenchmarkId::new("hand", n), &data, |b, (xs, ys)| {
            b.iter(|| least_squares_hand(black_box(&w), black_box(xs), black_box(ys)))
        });
        g.bench_with_input(BenchmarkId::new("vjp", n), &data, |b, (xs, ys)| {
            b.iter(|| least_squares_vjp(black_box(&w), black_box(xs), black_box(ys), 1.0))
        });
    }
}

/// `‖A x‖²` row by row through calls: each row a part of `A`
/// (`dot(&a[i*n..(i+1)*n], x)`), or the whole `A` and the row's offset,
/// against the row's loop inline and the hand-written gradient.
fn rows_bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("arrays/rows");
    for (rows, cols) in ROW_SHAPES {
        let (a, x) = (input(rows * cols, 12), input(cols, 13));
        let (v, ga, gx) = rows_hand(&a, &x);
        for (name, vjp) in [
            ("parts", rows_by_parts_vjp as fn(&[f64], &[f64], f64) -> _),
            ("offsets", rows_by_offsets_vjp),
            ("inline", rows_inline_vjp),
        ] {
            let (w, (pa, px)) = vjp(&a, &x, 1.0);
            assert!((v - w).abs() <= 1e-9 * (1.0 + v.abs()), "{name}");
            same(&pa, &ga, name);
            same(&px, &gx, name);
        }
        let id = format!("{rows}x{cols}");
        let data = (a, x);
        g.bench_with_input(BenchmarkId::new("hand", &id), &data, |b, (a, x)| {
            b.iter(|| rows_hand(black_box(a), black_box(x)))
        });
        g.bench_with_input(BenchmarkId::new("vjp_parts", &id), &data, |b, (a, x)| {
            b.iter(|| rows_by_parts_vjp(black_box(a), black_box(x), 1.0))
        });
        g.bench_with_input(BenchmarkId::new("vjp_offsets", &id), &data, |b, (a, x)| {
            b.iter(|| rows_by_offsets_vjp(black_box(a), black_box(x), 1.0))
        });
        g.bench_with_input(BenchmarkId::new("vjp_inline", &id), &data, |b, (a, x)| {
            b.iter(|| rows_inline_vjp(black_box(a), black_box(x), 1.0))
        });
    }
}

/// The gravitational potential of n bodies: an array of structs, the
/// same as rows and a slice of masses, and the hand-written gradient.
fn bodies_bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("arrays/bodies");
    for n in [10usize, 100, 1000] {
        let p = input(3 * n, 14);
        let m: Vec<f64> = input(n, 15).iter().map(|v| 1.5 + v).collect();
        let bodies: Vec<Body> = (0..n)
            .map(|i| Body {
                pos: [p[3 * i], p[3 * i + 1], p[3 * i + 2]],
                m: m[i],
            })
            .collect();
        let pos: Vec<[f64; 3]> = bodies.iter().map(|b| b.pos).collect();
        let (v, gh) = potential_bodies_hand(&bodies);
        let (w, gb) = potential_bodies_vjp(&bodies, 1.0);
        let (u, gr) = potential_rows_vjp(&pos, &m, 1.0);
        assert!((v - w).abs() <= 1e-9 * (1.0 + v.abs()) && (v - u).abs() <= 1e-9 * (1.0 + v.abs()));
        let flat = |g: Vec<[f64; 3]>| g.concat();
        same(
            &gb.iter().flat_map(|t| t.pos).collect::<Vec<_>>(),
            &flat(gh.clone()),
            "bodies",
        );
        same(&flat(gr), &flat(gh), "rows");
        g.bench_with_input(BenchmarkId::new("hand", n), &bodies, |b, bs| {
            b.iter(|| potential_bodies_hand(black_box(bs)))
        });
        g.bench_with_input(BenchmarkId::new("vjp_bodies", n), &bodies, |b, bs| {
            b.iter(|| potential_bodies_vjp(black_box(bs), 1.0))
        });
        let data = (pos, m);
        g.bench_with_input(BenchmarkId::new("vjp_rows", n), &data, |b, (p, m)| {
            b.iter(|| potential_rows_vjp(black_box(p), black_box(m), 1.0))
        });
    }
}

/// Rows × columns of the matrices of [`rows_bench`].
const ROW_SHAPES: [(usize, usize); 2] = [(100, 10), (1000, 100)];

criterion_group! {
    name = benches;
    config = config();
    targets = rosenbrock_bench, dot_bench, matvec_bench, log_sum_exp_bench, least_squares_bench, calls_bench, rows_bench, bodies_bench
}
criterion_main!(benches);
