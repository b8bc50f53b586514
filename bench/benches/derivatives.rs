//! Derivatives side by side, in one run per workload, on the same inputs:
//! the primal, a hand-written derivative, linear-ad's `f_jvp`, `f_vjp` and
//! `f_lin` + `apply`/`transpose`, num-dual (forward, vector duals), echidna
//! (bytecode tape, recorded once and re-evaluated) and reverse (a run-time
//! tape). Every implementation is checked against the hand-written one
//! before it is timed. `cargo bench -p linear-ad-bench`, then
//! `cargo run -p linear-ad-bench --bin report` writes BENCHMARKS.md.

use std::hint::black_box;
use std::ops::{Add, Div, Mul, Neg, Sub};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use linear_ad::{Lanes, LinearMap};
use linear_ad_bench::*;
use nalgebra::SVector;
use num_dual::{Dual64, DualNum, DualSVec64};
use reverse::Gradient;

/// What the generic versions of the workloads need of a number type.
trait Real:
    Copy
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    fn addc(self, c: f64) -> Self;
    fn mulc(self, c: f64) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn sqrt(self) -> Self;
    fn tanh(self) -> Self;
    fn powi(self, n: i32) -> Self;
    /// `self > other` on the values (the max of log-sum-exp).
    fn gt(self, other: Self) -> bool;
}

macro_rules! real_via {
    ($t:ty, $via:path, $add:expr, $mul:expr) => {
        impl Real for $t {
            fn addc(self, c: f64) -> Self {
                ($add)(self, c)
            }
            fn mulc(self, c: f64) -> Self {
                ($mul)(self, c)
            }
            fn sin(self) -> Self {
                <$t as $via>::sin(&self)
            }
            fn cos(self) -> Self {
                <$t as $via>::cos(&self)
            }
            fn exp(self) -> Self {
                <$t as $via>::exp(&self)
            }
            fn ln(self) -> Self {
                <$t as $via>::ln(&self)
            }
            fn sqrt(self) -> Self {
                <$t as $via>::sqrt(&self)
            }
            fn tanh(self) -> Self {
                <$t as $via>::tanh(&self)
            }
            fn powi(self, n: i32) -> Self {
                <$t as $via>::powi(&self, n)
            }
            fn gt(self, other: Self) -> bool {
                self > other
            }
        }
    };
}

impl Real for f64 {
    fn addc(self, c: f64) -> Self {
        self + c
    }
    fn mulc(self, c: f64) -> Self {
        self * c
    }
    fn sin(self) -> Self {
        f64::sin(self)
    }
    fn cos(self) -> Self {
        f64::cos(self)
    }
    fn exp(self) -> Self {
        f64::exp(self)
    }
    fn ln(self) -> Self {
        f64::ln(self)
    }
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    fn tanh(self) -> Self {
        f64::tanh(self)
    }
    fn powi(self, n: i32) -> Self {
        f64::powi(self, n)
    }
    fn gt(self, other: Self) -> bool {
        self > other
    }
}

macro_rules! dual_svec {
    ($($n:literal),*) => {$(
        real_via!(DualSVec64<$n>, DualNum, |a: Self, c| a + c, |a: Self, c| a * c);
    )*};
}
dual_svec!(1, 2, 4, 10, 15, 100);
real_via!(Dual64, DualNum, |a: Self, c| a + c, |a: Self, c| a * c);

type BR = echidna::BReverse<f64>;

impl Real for BR {
    fn addc(self, c: f64) -> Self {
        self + BR::constant(c)
    }
    fn mulc(self, c: f64) -> Self {
        self * BR::constant(c)
    }
    fn sin(self) -> Self {
        num_traits::Float::sin(self)
    }
    fn cos(self) -> Self {
        num_traits::Float::cos(self)
    }
    fn exp(self) -> Self {
        num_traits::Float::exp(self)
    }
    fn ln(self) -> Self {
        num_traits::Float::ln(self)
    }
    fn sqrt(self) -> Self {
        num_traits::Float::sqrt(self)
    }
    fn tanh(self) -> Self {
        num_traits::Float::tanh(self)
    }
    fn powi(self, n: i32) -> Self {
        num_traits::Float::powi(self, n)
    }
    fn gt(self, other: Self) -> bool {
        self > other
    }
}

impl<'a> Real for reverse::Var<'a> {
    fn addc(self, c: f64) -> Self {
        self + c
    }
    fn mulc(self, c: f64) -> Self {
        self * c
    }
    fn sin(self) -> Self {
        reverse::Var::sin(&self)
    }
    fn cos(self) -> Self {
        reverse::Var::cos(&self)
    }
    fn exp(self) -> Self {
        reverse::Var::exp(&self)
    }
    fn ln(self) -> Self {
        reverse::Var::ln(&self)
    }
    fn sqrt(self) -> Self {
        reverse::Var::sqrt(&self)
    }
    fn tanh(self) -> Self {
        reverse::Var::tanh(&self)
    }
    fn powi(self, n: i32) -> Self {
        reverse::Var::powi(&self, n)
    }
    fn gt(self, other: Self) -> bool {
        self > other
    }
}

// The workloads once more, generically: the same operations in the same
// order as their `#[differentiable]` versions in src/lib.rs.

fn g_scalar<T: Real>(x: T) -> T {
    let (s, c) = (x.sin(), x.cos());
    x.exp() / (s.powi(3) + c.powi(3)).sqrt()
}

fn g_rosenbrock<T: Real>(x: T, y: T) -> T {
    let a = (-x).addc(1.0);
    let b = y - x * x;
    a * a + b.mulc(100.0) * b
}

fn g_long<T: Real>(a: T, b: T, c: T, d: T) -> T {
    let s1 = a * b + c.sin() - d.cos() * a;
    let s2 = (s1 * s1).addc(1.0).sqrt() / (b * b).addc(2.0);
    let s3 = s2.exp() * c - (a - d).tanh() + s1 * d;
    let s4 = (s3 * s3 + s2 * s2).addc(1.0).ln() + (a * c).sin();
    let s5 = s4 * s1 - s3 / (s2 * s2).addc(1.0) + (c * d).sin() * (a * b).cos();
    let s6 = s5 * s5 + s4 - s3 * s2 + s1;
    let s7 = s6.mulc(0.1).tanh() * s5 + (s4 * s4).addc(1.0).sqrt();
    s7 * s6 - s2.exp()
}

fn g_reprojection<T: Real>(cam: &[T], x: &[T], w: T, feat: [f64; 2]) -> [T; 2] {
    let (r0, r1, r2, c0, c1, c2) = (cam[0], cam[1], cam[2], cam[3], cam[4], cam[5]);
    let (f, u0, v0, k1, k2) = (cam[6], cam[7], cam[8], cam[9], cam[10]);
    let (p0, p1, p2) = (x[0] - c0, x[1] - c1, x[2] - c2);
    let theta = (r0 * r0 + r1 * r1 + r2 * r2).sqrt();
    let (cos, sin) = (theta.cos(), theta.sin());
    let (w0, w1, w2) = (r0 / theta, r1 / theta, r2 / theta);
    let (x0, x1, x2) = (w1 * p2 - w2 * p1, w2 * p0 - w0 * p2, w0 * p1 - w1 * p0);
    let tmp = (w0 * p0 + w1 * p1 + w2 * p2) * (-cos).addc(1.0);
    let q0 = p0 * cos + x0 * sin + w0 * tmp;
    let q1 = p1 * cos + x1 * sin + w1 * tmp;
    let q2 = p2 * cos + x2 * sin + w2 * tmp;
    let (m0, m1) = (q0 / q2, q1 / q2);
    let rsq = m0 * m0 + m1 * m1;
    let l = (k1 * rsq + k2 * rsq * rsq).addc(1.0);
    let proj0 = f * (m0 * l) + u0;
    let proj1 = f * (m1 * l) + v0;
    [w * proj0.addc(-feat[0]), w * proj1.addc(-feat[1])]
}

fn g_rosenbrock_n<T: Real>(x: &[T]) -> T {
    let mut acc: Option<T> = None;
    for i in 0..x.len() - 1 {
        let t = x[i + 1] - x[i] * x[i];
        let u = (-x[i]).addc(1.0);
        let s = t.mulc(100.0) * t + u * u;
        acc = Some(match acc {
            Some(a) => a + s,
            None => s,
        });
    }
    acc.unwrap_or_else(|| x[0].mulc(0.0))
}

fn close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1e-9 * (1.0 + a.abs() + b.abs()),
        "{what}: {a} vs {b}"
    );
}

fn close_all(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    a.iter().zip(b).for_each(|(x, y)| close(*x, *y, what));
}

/// One bundle-adjustment observation: camera, point, weight, feature.
type Observation = ([f64; 11], [f64; 3], f64, [f64; 2]);

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1500))
        .sample_size(40)
}

/// num-dual's gradient of an N-input function, one forward pass with
/// N-wide duals.
fn nd_gradient<const N: usize>(
    f: impl Fn(&[DualSVec64<N>]) -> DualSVec64<N>,
    x: [f64; N],
) -> (f64, [f64; N])
where
    DualSVec64<N>: Real,
{
    let (v, g) = num_dual::gradient(
        |v: SVector<DualSVec64<N>, N>| f(v.as_slice()),
        &SVector::from(x),
    );
    let mut out = [0.0; N];
    out.copy_from_slice(g.as_slice());
    (v, out)
}

/// reverse's gradient: a run-time tape per evaluation.
fn rev_gradient<const N: usize>(
    f: impl for<'a> Fn(&[reverse::Var<'a>]) -> reverse::Var<'a>,
    x: [f64; N],
) -> (f64, [f64; N]) {
    let tape = reverse::Tape::new();
    let vars = tape.add_vars(&x);
    let y = f(&vars);
    let grads = y.grad();
    let mut out = [0.0; N];
    for (o, v) in out.iter_mut().zip(&vars) {
        *o = grads.wrt(v);
    }
    (y.val(), out)
}

fn scalar_workloads(c: &mut Criterion) {
    // f(x) = exp(x)/sqrt(sin³x + cos³x)
    let x = 0.7;
    let want = scalar_hand(x);
    close(scalar_vjp(x, 1.0).1, want.1, "scalar vjp");
    close(scalar_jvp(x, 1.0).1, want.1, "scalar jvp");
    close(scalar_lin(x).1.transpose(1.0), want.1, "scalar lin");
    close(
        nd_gradient(|v| g_scalar(v[0]), [x]).1[0],
        want.1,
        "scalar num-dual",
    );
    let (mut tape, _) = echidna::record(|v: &[BR]| g_scalar(v[0]), &[x]);
    close(tape.gradient(&[x])[0], want.1, "scalar echidna");
    close(
        rev_gradient(|v| g_scalar(v[0]), [x]).1[0],
        want.1,
        "scalar reverse",
    );
    let mut g = c.benchmark_group("scalar");
    g.bench_function("primal", |b| b.iter(|| scalar(black_box(x))));
    g.bench_function("hand", |b| b.iter(|| scalar_hand(black_box(x))));
    g.bench_function("linear_ad_jvp", |b| {
        b.iter(|| scalar_jvp(black_box(x), 1.0))
    });
    g.bench_function("linear_ad_vjp", |b| {
        b.iter(|| scalar_vjp(black_box(x), 1.0))
    });
    g.bench_function("linear_ad_lin_transpose", |b| {
        b.iter(|| {
            let (v, l) = scalar_lin(black_box(x));
            (v, l.transpose(1.0))
        })
    });
    g.bench_function("num_dual", |b| {
        b.iter(|| nd_gradient(|v| g_scalar(v[0]), [black_box(x)]))
    });
    g.bench_function("echidna", |b| b.iter(|| tape.gradient(&[black_box(x)])));
    g.bench_function("reverse", |b| {
        b.iter(|| rev_gradient(|v| g_scalar(v[0]), [black_box(x)]))
    });
    g.finish();

    // 2-D Rosenbrock
    let (x, y) = (-1.2, 1.0);
    let want = rosenbrock_hand(x, y);
    let got = rosenbrock_vjp(x, y, 1.0).1;
    close(got.0, want.1 .0, "rosenbrock vjp x");
    close(got.1, want.1 .1, "rosenbrock vjp y");
    close(
        nd_gradient(|v| g_rosenbrock(v[0], v[1]), [x, y]).1[0],
        want.1 .0,
        "rosenbrock num-dual",
    );
    let (mut tape, _) = echidna::record(|v: &[BR]| g_rosenbrock(v[0], v[1]), &[x, y]);
    close(tape.gradient(&[x, y])[1], want.1 .1, "rosenbrock echidna");
    close(
        rev_gradient(|v| g_rosenbrock(v[0], v[1]), [x, y]).1[1],
        want.1 .1,
        "rosenbrock reverse",
    );
    let mut g = c.benchmark_group("rosenbrock");
    g.bench_function("primal", |b| {
        b.iter(|| rosenbrock(black_box(x), black_box(y)))
    });
    g.bench_function("hand", |b| {
        b.iter(|| rosenbrock_hand(black_box(x), black_box(y)))
    });
    g.bench_function("linear_ad_jvp", |b| {
        b.iter(|| {
            let (x, y) = black_box((x, y));
            (
                rosenbrock_jvp(x, y, 1.0, 0.0),
                rosenbrock_jvp(x, y, 0.0, 1.0).1,
            )
        })
    });
    g.bench_function("linear_ad_vjp", |b| {
        b.iter(|| rosenbrock_vjp(black_box(x), black_box(y), 1.0))
    });
    g.bench_function("linear_ad_lin_transpose", |b| {
        b.iter(|| {
            let (v, l) = rosenbrock_lin(black_box(x), black_box(y));
            (v, l.transpose(1.0))
        })
    });
    g.bench_function("num_dual", |b| {
        b.iter(|| nd_gradient(|v| g_rosenbrock(v[0], v[1]), black_box([x, y])))
    });
    g.bench_function("echidna", |b| b.iter(|| tape.gradient(&black_box([x, y]))));
    g.bench_function("reverse", |b| {
        b.iter(|| rev_gradient(|v| g_rosenbrock(v[0], v[1]), black_box([x, y])))
    });
    g.finish();

    // 53 operations over 4 inputs
    let v = [0.4, -0.3, 1.2, 0.8];
    let want = long_hand(v[0], v[1], v[2], v[3]);
    let got = long_vjp(v[0], v[1], v[2], v[3], 1.0).1;
    for (k, gk) in [got.0, got.1, got.2, got.3].iter().enumerate() {
        close(*gk, want.1[k], "long vjp vs hand");
    }
    let nd = nd_gradient(|u| g_long(u[0], u[1], u[2], u[3]), v);
    let (mut tape, _) = echidna::record(|u: &[BR]| g_long(u[0], u[1], u[2], u[3]), &v);
    let ec = tape.gradient(&v);
    let rv = rev_gradient(|u| g_long(u[0], u[1], u[2], u[3]), v);
    close_all(&nd.1, &want.1, "long num-dual");
    close_all(&ec, &want.1, "long echidna");
    close_all(&rv.1, &want.1, "long reverse");
    let mut g = c.benchmark_group("long");
    g.bench_function("primal", |b| {
        b.iter(|| {
            let v = black_box(v);
            long(v[0], v[1], v[2], v[3])
        })
    });
    g.bench_function("hand", |b| {
        b.iter(|| {
            let v = black_box(v);
            long_hand(v[0], v[1], v[2], v[3])
        })
    });
    g.bench_function("linear_ad_jvp", |b| {
        b.iter(|| {
            let v = black_box(v);
            (
                long_jvp(v[0], v[1], v[2], v[3], 1.0, 0.0, 0.0, 0.0),
                long_jvp(v[0], v[1], v[2], v[3], 0.0, 1.0, 0.0, 0.0).1,
                long_jvp(v[0], v[1], v[2], v[3], 0.0, 0.0, 1.0, 0.0).1,
                long_jvp(v[0], v[1], v[2], v[3], 0.0, 0.0, 0.0, 1.0).1,
            )
        })
    });
    g.bench_function("linear_ad_vjp", |b| {
        b.iter(|| {
            let v = black_box(v);
            long_vjp(v[0], v[1], v[2], v[3], 1.0)
        })
    });
    g.bench_function("linear_ad_lin_transpose", |b| {
        b.iter(|| {
            let v = black_box(v);
            let (r, l) = long_lin(v[0], v[1], v[2], v[3]);
            (r, l.transpose(1.0))
        })
    });
    g.bench_function("num_dual", |b| {
        b.iter(|| nd_gradient(|u| g_long(u[0], u[1], u[2], u[3]), black_box(v)))
    });
    g.bench_function("echidna", |b| b.iter(|| tape.gradient(black_box(&v))));
    g.bench_function("reverse", |b| {
        b.iter(|| rev_gradient(|u| g_long(u[0], u[1], u[2], u[3]), black_box(v)))
    });
    g.finish();
}

/// Deterministic observations: camera, point, weight, feature.
fn observations(n: usize) -> Vec<Observation> {
    (0..n)
        .map(|i| {
            let t = i as f64 * 0.37;
            let cam = [
                0.1 + 0.01 * t.sin(),
                -0.2 + 0.02 * t.cos(),
                0.05,
                0.3,
                -0.1,
                -5.0 + 0.1 * t.sin(),
                400.0,
                320.0,
                240.0,
                -1e-3,
                1e-6,
            ];
            let x = [
                0.2 + 0.1 * t.cos(),
                0.4 - 0.05 * t.sin(),
                3.0 + 0.2 * t.cos(),
            ];
            (cam, x, 0.9, [300.0 + t, 280.0 - t])
        })
        .collect()
}

fn bundle_adjustment(c: &mut Criterion) {
    let obs = observations(64);
    check_ba_jacobians(&obs);
    let mut g = c.benchmark_group("ba_jacobian_64_observations");
    g.bench_function("primal", |b| {
        b.iter(|| {
            for (cam, x, w, feat) in black_box(&obs) {
                black_box(reprojection(*cam, *x, *w, *feat));
            }
        })
    });
    g.bench_function("hand", |b| {
        b.iter(|| {
            for (cam, x, w, feat) in black_box(&obs) {
                black_box(reprojection_jacobian_hand(*cam, *x, *w, *feat));
            }
        })
    });
    g.bench_function("linear_ad_lin_2_transposes", |b| {
        b.iter(|| {
            for (cam, x, w, feat) in black_box(&obs) {
                let (r, lin) = reprojection_lin(*cam, *x, *w, *feat);
                black_box((r, lin.transpose([1.0, 0.0]), lin.transpose([0.0, 1.0])));
            }
        })
    });
    g.bench_function("linear_ad_vjp_x2", |b| {
        b.iter(|| {
            for (cam, x, w, feat) in black_box(&obs) {
                black_box((
                    reprojection_vjp(*cam, *x, *w, *feat, [1.0, 0.0]),
                    reprojection_vjp(*cam, *x, *w, *feat, [0.0, 1.0]).1,
                ));
            }
        })
    });
    g.bench_function("linear_ad_jvp_x15", |b| {
        b.iter(|| {
            for (cam, x, w, feat) in black_box(&obs) {
                let mut cols = [[0.0; 2]; 15];
                let mut value = [0.0; 2];
                for (j, col) in cols.iter_mut().enumerate() {
                    let mut e = [0.0; 15];
                    e[j] = 1.0;
                    let dc: [f64; 11] = e[..11].try_into().unwrap_or([0.0; 11]);
                    let dx: [f64; 3] = e[11..14].try_into().unwrap_or([0.0; 3]);
                    let (v, t) = reprojection_jvp(*cam, *x, *w, *feat, dc, dx, e[14]);
                    value = v;
                    *col = t;
                }
                black_box((value, cols));
            }
        })
    });
    g.bench_function("linear_ad_jacobian_lanes", |b| {
        b.iter(|| {
            for (cam, x, w, feat) in black_box(&obs) {
                black_box(reprojection_jacobian(*cam, *x, *w, *feat));
            }
        })
    });
    g.bench_function("linear_ad_jvp_lanes", |b| {
        b.iter(|| {
            for (cam, x, w, feat) in black_box(&obs) {
                black_box(jvp_lanes_columns(cam, x, *w, *feat));
            }
        })
    });
    g.bench_function("num_dual", |b| {
        b.iter(|| {
            for (cam, x, w, feat) in black_box(&obs) {
                black_box(nd_jacobian(cam, x, *w, *feat));
            }
        })
    });
    let (mut tape, _) = echidna::record_multi(
        |v: &[BR]| g_reprojection(&v[..11], &v[11..14], v[14], obs[0].3).to_vec(),
        &flat(&obs[0]),
    );
    g.bench_function("echidna", |b| {
        b.iter(|| {
            for o in black_box(&obs) {
                black_box(tape.jacobian(&flat(o)));
            }
        })
    });
    g.finish();
}

/// The residual and its 15 Jacobian columns from one `f_jvp_lanes` run
/// (lane `j` seeded with input `j`; no tape).
fn jvp_lanes_columns(
    cam: &[f64; 11],
    x: &[f64; 3],
    w: f64,
    feat: [f64; 2],
) -> ([f64; 2], [Lanes<f64, 15>; 2]) {
    let u = Lanes::<f64, 15>::unit;
    let dc: [Lanes<f64, 15>; 11] = std::array::from_fn(u);
    let dx: [Lanes<f64, 15>; 3] = std::array::from_fn(|i| u(11 + i));
    reprojection_jvp_lanes(*cam, *x, w, feat, dc, dx, u(14))
}

/// Correctness, before anything is timed: every way of building the BA
/// Jacobian agrees with num-dual's.
fn check_ba_jacobians(obs: &[Observation]) {
    for (cam, x, w, feat) in &obs[..4] {
        let (_, lin) = reprojection_lin(*cam, *x, *w, *feat);
        let nd = nd_jacobian(cam, x, *w, *feat);
        let (_, hand) = reprojection_jacobian_hand(*cam, *x, *w, *feat);
        for i in 0..2 {
            close_all(&hand[i], &nd[i], "BA hand-written Jacobian vs num-dual");
        }
        for i in 0..2 {
            let mut ybar = [0.0; 2];
            ybar[i] = 1.0;
            let (dc, dx, dw) = lin.transpose(ybar);
            let row: Vec<f64> = dc.iter().chain(&dx).copied().chain([dw]).collect();
            for j in 0..15 {
                close(row[j], nd[i][j], "BA Jacobian vs num-dual");
            }
            let (_, (vc, vx, vw)) = reprojection_vjp(*cam, *x, *w, *feat, ybar);
            assert_eq!((vc, vx, vw), (dc, dx, dw));
        }
        let (_, jac) = reprojection_jacobian(*cam, *x, *w, *feat);
        let (_, cols) = jvp_lanes_columns(cam, x, *w, *feat);
        for i in 0..2 {
            for j in 0..15 {
                close(jac[i][j], nd[i][j], "BA f_jacobian vs num-dual");
                close(cols[i][j], nd[i][j], "BA f_jvp_lanes vs num-dual");
            }
        }
    }
}

fn flat(o: &Observation) -> [f64; 15] {
    let mut v = [0.0; 15];
    v[..11].copy_from_slice(&o.0);
    v[11..14].copy_from_slice(&o.1);
    v[14] = o.2;
    v
}

fn nd_jacobian(cam: &[f64; 11], x: &[f64; 3], w: f64, feat: [f64; 2]) -> [[f64; 15]; 2] {
    let mut v = [DualSVec64::<15>::from_re(0.0); 15];
    for (j, vj) in v.iter_mut().enumerate() {
        let re = if j < 11 {
            cam[j]
        } else if j < 14 {
            x[j - 11]
        } else {
            w
        };
        *vj = DualSVec64::<15>::from_re(re);
        let mut eps = SVector::<f64, 15>::zeros();
        eps[j] = 1.0;
        vj.eps = num_dual::Derivative::some(eps);
    }
    let r = g_reprojection(&v[..11], &v[11..14], v[14], feat);
    let mut out = [[0.0; 15]; 2];
    for (i, ri) in r.iter().enumerate() {
        let d = ri
            .eps
            .unwrap_generic(nalgebra::Const::<15>, nalgebra::Const::<1>);
        out[i].copy_from_slice(d.as_slice());
    }
    out
}

fn rosenbrock_sums(c: &mut Criterion) {
    let x10: [f64; 10] = std::array::from_fn(|i| 0.5 + 0.1 * i as f64);
    let x100: [f64; 100] = std::array::from_fn(|i| 0.5 + 0.01 * i as f64);
    let want10 = rosenbrock_n_hand(x10);
    let want100 = rosenbrock_n_hand(x100);
    let got10 = rosenbrock_10_vjp(x10, 1.0).1;
    let got100 = rosenbrock_100_vjp(x100, 1.0).1;
    close_all(&got10, &want10.1, "rosenbrock 10");
    close_all(&got100, &want100.1, "rosenbrock 100");
    let nd100 = nd_gradient(g_rosenbrock_n, x100);
    let (mut tape100, _) = echidna::record(|v: &[BR]| g_rosenbrock_n(v), &x100);
    let (mut tape10, _) = echidna::record(|v: &[BR]| g_rosenbrock_n(v), &x10);
    let ec100 = tape100.gradient(&x100);
    let rv100 = rev_gradient(|v| g_rosenbrock_n(v), x100);
    close_all(&nd100.1, &want100.1, "rosenbrock 100 num-dual");
    close_all(&ec100, &want100.1, "rosenbrock 100 echidna");
    close_all(&rv100.1, &want100.1, "rosenbrock 100 reverse");
    let mut g = c.benchmark_group("rosenbrock_10");
    g.bench_function("primal", |b| b.iter(|| rosenbrock_10(black_box(x10))));
    g.bench_function("hand", |b| b.iter(|| rosenbrock_n_hand(black_box(x10))));
    g.bench_function("linear_ad_vjp", |b| {
        b.iter(|| rosenbrock_10_vjp(black_box(x10), 1.0))
    });
    g.bench_function("linear_ad_lin_transpose", |b| {
        b.iter(|| {
            let (v, l) = rosenbrock_10_lin(black_box(x10));
            (v, l.transpose(1.0))
        })
    });
    g.bench_function("num_dual", |b| {
        b.iter(|| nd_gradient(g_rosenbrock_n, black_box(x10)))
    });
    g.bench_function("echidna", |b| b.iter(|| tape10.gradient(black_box(&x10))));
    g.bench_function("reverse", |b| {
        b.iter(|| rev_gradient(|v| g_rosenbrock_n(v), black_box(x10)))
    });
    g.finish();
    let mut g = c.benchmark_group("rosenbrock_100");
    g.bench_function("primal", |b| b.iter(|| rosenbrock_100(black_box(x100))));
    g.bench_function("hand", |b| b.iter(|| rosenbrock_n_hand(black_box(x100))));
    g.bench_function("linear_ad_vjp", |b| {
        b.iter(|| rosenbrock_100_vjp(black_box(x100), 1.0))
    });
    g.bench_function("linear_ad_lin_transpose", |b| {
        b.iter(|| {
            let (v, l) = rosenbrock_100_lin(black_box(x100));
            (v, l.transpose(1.0))
        })
    });
    g.bench_function("num_dual", |b| {
        b.iter(|| nd_gradient(g_rosenbrock_n, black_box(x100)))
    });
    g.bench_function("echidna", |b| b.iter(|| tape100.gradient(black_box(&x100))));
    g.bench_function("reverse", |b| {
        b.iter(|| rev_gradient(|v| g_rosenbrock_n(v), black_box(x100)))
    });
    g.finish();
}

/// An array workload of issue 9 as a scalar function of its active inputs
/// laid end to end, generic in the number type, for the AD crates; a
/// vector result is folded with its cotangent (`Σ wᵢ yᵢ`), so the
/// gradient is the VJP.
trait Flat {
    fn eval<T: Real>(&self, v: &[T]) -> T;
}

/// The sum of the terms, without a constant zero (which `reverse` and
/// echidna would record as a node).
fn sum<T: Real>(terms: impl IntoIterator<Item = T>) -> T {
    terms.into_iter().reduce(|a, b| a + b).expect("no terms")
}

struct Rosenbrock;
impl Flat for Rosenbrock {
    fn eval<T: Real>(&self, x: &[T]) -> T {
        g_rosenbrock_n(x)
    }
}

/// `v = x ++ y`.
struct Dot;
impl Flat for Dot {
    fn eval<T: Real>(&self, v: &[T]) -> T {
        let (x, y) = v.split_at(v.len() / 2);
        sum(x.iter().zip(y).map(|(&a, &b)| a * b))
    }
}

/// `v = A ++ x`, `A` with `m` columns; `Σ wᵢ (A x)ᵢ`.
struct Matvec {
    m: usize,
    w: Vec<f64>,
}
impl Flat for Matvec {
    fn eval<T: Real>(&self, v: &[T]) -> T {
        let (a, x) = v.split_at(v.len() - self.m);
        sum(self.w.iter().enumerate().map(|(i, &wi)| {
            let row = &a[i * self.m..(i + 1) * self.m];
            sum(row.iter().zip(x).map(|(&aij, &xj)| aij * xj)).mulc(wi)
        }))
    }
}

struct LogSumExp;
impl Flat for LogSumExp {
    fn eval<T: Real>(&self, x: &[T]) -> T {
        let m = x[1..]
            .iter()
            .fold(x[0], |m, &v| if v.gt(m) { v } else { m });
        m + sum(x.iter().map(|&v| (v - m).exp())).ln()
    }
}

/// `v = w` (2 parameters) over constant data.
struct LeastSquares {
    xs: Vec<f64>,
    ys: Vec<f64>,
}
impl Flat for LeastSquares {
    fn eval<T: Real>(&self, w: &[T]) -> T {
        let loss = sum(self.xs.iter().zip(&self.ys).map(|(&x, &y)| {
            let r = w[0].mulc(x) + w[1].addc(-y);
            r * r
        }));
        loss.mulc(1.0 / self.xs.len() as f64)
    }
}

fn reverse_gradient(f: &impl Flat, x: &[f64]) -> Vec<f64> {
    let t = reverse::Tape::new();
    let vars = t.add_vars(x);
    let grads = f.eval(&vars).grad();
    vars.iter().map(|v| grads.wrt(v)).collect()
}

/// Forward mode: one pass per input, what it costs for a gradient.
fn forward_gradient(f: &impl Flat, x: &[f64]) -> Vec<f64> {
    let mut d: Vec<Dual64> = x.iter().map(|&v| Dual64::new(v, 0.0)).collect();
    (0..x.len())
        .map(|i| {
            d[i].eps = 1.0;
            let g = f.eval(&d).eps;
            d[i].eps = 0.0;
            g
        })
        .collect()
}

/// One array workload with about 10³ inputs (issue 9's comparison with Rust
/// AD crates): `f_vjp` (`vjp`, its cotangents laid end to end) against
/// the hand-written adjoint (`hand`), echidna (tape recorded once at `x`,
/// so a branch taken there is replayed), `reverse` (a tape per evaluation)
/// and num-dual in forward mode. Every gradient is checked against the
/// hand-written one first.
fn array_crates(
    c: &mut Criterion,
    name: &str,
    f: &impl Flat,
    x: &[f64],
    hand: impl Fn() -> Vec<f64>,
    vjp: impl Fn() -> Vec<f64>,
) {
    let want = hand();
    let mut tape = echidna::record(|v: &[BR]| f.eval(v), x).0;
    close_all(&vjp(), &want, &format!("{name} vjp"));
    close_all(&tape.gradient(x), &want, &format!("{name} echidna"));
    close_all(&reverse_gradient(f, x), &want, &format!("{name} reverse"));
    close_all(&forward_gradient(f, x), &want, &format!("{name} num-dual"));
    let mut g = c.benchmark_group(format!("crates_{name}_1000"));
    g.bench_function("hand", |b| b.iter(&hand));
    g.bench_function("linear_ad_vjp", |b| b.iter(&vjp));
    g.bench_function("echidna", |b| b.iter(|| tape.gradient(black_box(x))));
    g.bench_function("reverse", |b| b.iter(|| reverse_gradient(f, black_box(x))));
    g.sample_size(10);
    g.bench_function("num_dual", |b| b.iter(|| forward_gradient(f, black_box(x))));
}

/// The five array workloads at n = 10³ (the inputs of `benches/arrays.rs`
/// for that n; the mat-vec has 10 rows of 100 columns).
fn array_workloads_1000(c: &mut Criterion) {
    let input = |n: usize, seed: usize| -> Vec<f64> {
        (0..n)
            .map(|i| (((i * 7919 + seed * 104_729) % 1000) as f64 / 500.0) - 1.0)
            .collect()
    };
    let cat = |a: Vec<f64>, b: Vec<f64>| [a, b].concat();
    let x = input(1000, 1);
    array_crates(
        c,
        "rosenbrock",
        &Rosenbrock,
        &x,
        || arrays::rosenbrock_hand(black_box(&x)).1,
        || arrays::rosenbrock_vjp(black_box(&x), 1.0).1,
    );
    let (x, y) = (input(1000, 2), input(1000, 3));
    array_crates(
        c,
        "dot",
        &Dot,
        &cat(x.clone(), y.clone()),
        || {
            let (_, gx, gy) = arrays::dot_hand(black_box(&x), black_box(&y));
            cat(gx, gy)
        },
        || {
            let (gx, gy) = arrays::dot_vjp(black_box(&x), black_box(&y), 1.0).1;
            cat(gx, gy)
        },
    );
    let (a, x, w) = (input(1000, 7), input(100, 8), input(10, 9));
    array_crates(
        c,
        "matvec",
        &Matvec {
            m: 100,
            w: w.clone(),
        },
        &cat(a.clone(), x.clone()),
        || {
            let (_, ga, gx) = arrays::matvec_hand(black_box(&a), black_box(&x), black_box(&w));
            cat(ga, gx)
        },
        || {
            let (ga, gx) = arrays::matvec_vjp(black_box(&a), black_box(&x), w.clone()).1;
            cat(ga, gx)
        },
    );
    let x = input(1000, 4);
    array_crates(
        c,
        "log_sum_exp",
        &LogSumExp,
        &x,
        || arrays::log_sum_exp_hand(black_box(&x)).1,
        || arrays::log_sum_exp_vjp(black_box(&x), 1.0).1,
    );
    let (xs, ys, w) = (input(1000, 5), input(1000, 6), [0.7, -0.2]);
    array_crates(
        c,
        "least_squares",
        &LeastSquares {
            xs: xs.clone(),
            ys: ys.clone(),
        },
        &w,
        || {
            arrays::least_squares_hand(black_box(&w), black_box(&xs), black_box(&ys))
                .1
                .to_vec()
        },
        || {
            arrays::least_squares_vjp(black_box(&w), black_box(&xs), black_box(&ys), 1.0)
                .1
                .to_vec()
        },
    );
}

criterion_group! {
    name = benches;
    config = config();
    targets = scalar_workloads, bundle_adjustment, rosenbrock_sums, array_workloads_1000
}
criterion_main!(benches);
