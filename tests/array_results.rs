#![deny(warnings)]

//! Functions that return the arrays they build: `-> Vec<T>` and
//! `-> [T; N]`, The tangent of the result is an array
//! of its length (`f_jvp`, `LinearMap::apply`), and the cotangent is an
//! owned array of the result's type (`f_vjp`, `LinearMap::transpose`),
//! which the reverse pass uses as its accumulator. Each function is checked
//! against finite differences, column by column, and every mode against
//! the others, in debug and release builds alike.

use linear_ad::{differentiable, LinearMap};

mod support;
use support::{assert_close, close, dot, fd_along};

/// A dense matrix-vector product, `A` row-major with `x.len()` columns.
#[differentiable]
fn matvec(a: &[f64], x: &[f64]) -> Vec<f64> {
    let m = x.len();
    let n = a.len() / m;
    let mut y = vec![0.0; n];
    for i in 0..n {
        for j in 0..m {
            y[i] += a[i * m + j] * x[j];
        }
    }
    y
}

/// A fixed-size result, each element overwritten after it is read.
#[differentiable]
fn rotate_scale(p: &[f64; 3], k: f64) -> [f64; 3] {
    let mut u = [0.0; 3];
    for i in 0..3 {
        u[i] = p[(i + 1) % 3] * k;
    }
    u[0] = u[0].sin() * u[2];
    u
}

/// The input `Vec` taken by value, the result a new one.
#[differentiable]
fn normalize(x: Vec<f64>) -> Vec<f64> {
    let mut s = 0.0;
    for v in x.iter() {
        s += v * v;
    }
    let r = s.sqrt();
    let mut y = vec![0.0; x.len()];
    for i in 0..x.len() {
        y[i] = x[i] / r;
    }
    y
}

/// A `Vec` taken by value, moved into the linearization, beside a tape of
/// more than 16 values, which the forward pass returns in groups of 16
/// (`linear_core::codegen::forward_body`): `f_lin` unpacks the groups
/// into the struct's fields, and the moved `Vec` takes none of them.
#[differentiable]
fn chained_scale(x: Vec<f64>, a: f64) -> Vec<f64> {
    let mut k = a;
    let b = (k * 0.5).sin();
    k = k * b + 0.1;
    let c = (k * 0.3).cos();
    k = k * c - 0.2;
    let d = (k * 0.7).tanh();
    k = k * d + 0.3;
    let e = (k * 0.2).exp();
    k = k * e - 0.1;
    let f = (k * k + 1.0).sqrt();
    k = k * f + 0.2;
    let g = (k * 0.1).sin();
    k = k * g + 1.0;
    let h = (k * 0.4).atan();
    k = k * h - 0.3;
    let m = (k * 0.6).sinh();
    k = k * m + 0.5;
    let n = (k * k + 2.0).ln();
    k = k * n + 1.0;
    let p = (k * 0.2).cos();
    k = k * p - 0.4;
    let q = (k * 0.5).tanh();
    k = k * q + 0.6;
    let r = (k * 0.3).exp();
    k = k * r - 0.2;
    let t = (k * k + 0.5).sqrt();
    k = k * t + 0.1;
    let mut y = vec![0.0; x.len()];
    for i in 0..x.len() {
        y[i] = x[i] * k + x[i] * x[i] * b;
    }
    y
}

/// Copies: `let mut y = x.to_vec()` of a parameter, then written; a copy
/// only read (`let z = y.clone()`) and a written copy of a local
/// (`let mut w = z.clone()`), the local read again after.
#[differentiable]
fn damped(x: &[f64], k: f64) -> Vec<f64> {
    let mut y = x.to_vec();
    for i in 1..y.len() {
        y[i] += k * y[i - 1];
    }
    let z = y.clone();
    let mut w = z.clone();
    w[0] *= k;
    let s = z.iter().sum::<f64>();
    for i in 0..w.len() {
        w[i] -= 0.1 * s * z[i];
    }
    w
}

/// A copy of constant data (`#[nondiff]`, as a recurrent network's
/// initial state) that differentiable values are written into, read
/// before and after the writes; `clone()` of a constant `Vec` alike.
#[differentiable]
#[allow(clippy::ptr_arg)]
fn relaxed(x: &[f64], #[nondiff] start: &[f64], #[nondiff] weights: &Vec<f64>) -> f64 {
    let mut s = start.to_vec();
    let mut w = weights.clone();
    for t in 0..3 {
        for i in 0..s.len() {
            s[i] = 0.5 * s[i] + x[i] * (s[i] + t as f64).sin();
        }
        w[t % 2] += s[t];
    }
    s.iter().sum::<f64>() * w[0] + w[1]
}

/// `let mut c = u;` of an inline array is a copy (`[f64; N]` is `Copy`):
/// `u` keeps its elements.
#[differentiable]
fn copied_inline(p: &[f64; 3]) -> [f64; 3] {
    let mut u = [0.0; 3];
    for i in 0..3 {
        u[i] = p[i] * p[i];
    }
    let mut c = u;
    c[1] = c[0] * c[2];
    for i in 0..3 {
        c[i] += u[i];
    }
    c
}

/// `vec![a, b, c]` of computed elements, written again, and one only
/// read; a tuple element type.
#[differentiable]
#[allow(clippy::useless_vec)]
fn moments(x: &[f64]) -> Vec<f64> {
    let s = x.iter().sum::<f64>();
    let q = x.iter().map(|v| v * v).sum::<f64>();
    let mut m = vec![s, q, 1.0];
    m[2] = m[0] * m[1];
    let w = vec![(s, 2.0), (q, s)];
    m[1] += w[1].0 * w[0].1 + w[1].1;
    m
}

/// Writes inside branches: both arms of an `if` write, then one arm only
/// (the other leaves the array as it is), and a `match`.
#[differentiable]
fn leaky_scan(x: &[f64], k: f64) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    for i in 0..x.len() {
        if x[i] > 0.0 {
            y[i] = k * x[i];
        } else {
            y[i] = 0.01 * x[i];
        }
        if i > 0 {
            y[i] += y[i - 1] * k;
        }
        match i % 3 {
            0 => y[i] *= 2.0,
            1 => {}
            _ => y[i] -= x[i] * x[i],
        }
    }
    if k > 1.0 {
        y[0] = y[0].sin();
    }
    y
}

/// Whole arrays chosen in a branch: `a = y` of a parameter is a copy.
#[differentiable]
fn pick(x: &[f64], y: &[f64]) -> f64 {
    let mut a = x;
    if x[0] > 0.0 {
        a = y;
    }
    a[0] * a[1]
}

/// Early exits in a function returning a `Vec`: a `return` of a whole
/// array in a branch, a `break` out of the loop writing the result, and a
/// `return` of another array from inside the loop.
#[differentiable]
#[allow(clippy::needless_range_loop)]
fn clipped(x: &[f64], k: f64) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    if x[0] > 10.0 {
        return y;
    }
    for i in 0..x.len() {
        if x[i] < -5.0 {
            break;
        }
        if x[i] > 5.0 {
            let mut z = vec![0.0; 2];
            z[0] = k * x[i];
            z[1] = y[0];
            return z;
        }
        y[i] = k * x[i] * x[i];
    }
    y
}

#[test]
fn matvec_modes_agree_with_finite_differences() {
    let a = [0.5, -1.0, 2.0, 0.25, 1.5, -0.75];
    let x = [0.3, -0.8];
    let (da, dx) = ([0.1, 0.2, -0.3, 0.4, -0.5, 0.6], [0.7, -0.2]);
    let (y, dy) = matvec_jvp(&a, &x, &da, &dx);
    assert_eq!(y, matvec(&a, &x));
    // A linear map of (a, x) jointly: finite differences along (da, dx).
    let joint = |p: &[f64]| matvec(&p[..6], &p[6..]);
    let point: Vec<f64> = a.iter().chain(&x).copied().collect();
    let dir: Vec<f64> = da.iter().chain(&dx).copied().collect();
    assert_close(&dy, &fd_along(joint, &point, &dir), 1e-6);
    // Reverse mode: <ct, J d> = <J^T ct, d>.
    let ct = vec![1.5, -0.5, 2.0];
    let (y2, (ga, gx)) = matvec_vjp(&a, &x, ct.clone());
    assert_eq!(y2, y);
    assert!(close(dot(&ct, &dy), dot(&ga, &da) + dot(&gx, &dx), 1e-12));
    // The gradient of y_i is row i of A, for x.
    let (_, (_, g1)) = matvec_vjp(&a, &x, vec![0.0, 1.0, 0.0]);
    assert_eq!(g1, a[2..4].to_vec());
    // One linearization serves both directions.
    let (y3, lin) = matvec_lin(&a, &x);
    assert_eq!(y3, y);
    assert_eq!(lin.apply((da.to_vec(), dx.to_vec())), dy);
    assert_eq!(lin.transpose(ct), (ga, gx));
}

#[test]
fn fixed_size_results_are_arrays() {
    let p = [0.4, -0.9, 1.3];
    let k = 0.8;
    let (dp, dk) = ([0.1, -0.2, 0.3], 0.5);
    let (y, dy): ([f64; 3], [f64; 3]) = rotate_scale_jvp(&p, k, &dp, dk);
    assert_eq!(y, rotate_scale(&p, k));
    let f = |q: &[f64]| rotate_scale(&[q[0], q[1], q[2]], q[3]).to_vec();
    assert_close(
        &dy,
        &fd_along(f, &[p[0], p[1], p[2], k], &[dp[0], dp[1], dp[2], dk]),
        1e-6,
    );
    let ct = [0.3, 1.0, -2.0];
    let (_, (gp, gk)): (_, ([f64; 3], f64)) = rotate_scale_vjp(&p, k, ct);
    assert!(close(dot(&ct, &dy), dot(&gp, &dp) + gk * dk, 1e-12));
    let (_, lin) = rotate_scale_lin(&p, k);
    assert_eq!(lin.apply((dp, dk)), dy);
    assert_eq!(lin.transpose(ct), (gp, gk));
}

#[test]
fn a_vec_in_and_a_vec_out() {
    let x = vec![3.0, -4.0, 1.0];
    let dx = vec![0.2, 0.1, -0.5];
    let (y, dy) = normalize_jvp(x.clone(), dx.clone());
    assert_eq!(y, normalize(x.clone()));
    assert_close(&dy, &fd_along(|p| normalize(p.to_vec()), &x, &dx), 1e-6);
    let cy = vec![1.0, -1.0, 0.5];
    let (_, g) = normalize_vjp(x.clone(), cy.clone());
    assert!(close(dot(&cy, &dy), dot(&g, &dx), 1e-12));
    // y is a unit vector: moving x along itself leaves y where it is.
    let (_, along) = normalize_jvp(x.clone(), x.clone());
    assert!(along.iter().all(|d| d.abs() < 1e-12), "{along:?}");
    let (_, lin) = normalize_lin(x);
    assert_eq!(lin.apply(dx), dy);
    assert_eq!(lin.transpose(cy), g);
}

#[test]
fn a_moved_vec_beside_a_wide_tape() {
    let (x, a) = (vec![0.7, -1.2, 0.4], 0.9);
    let (dx, da) = (vec![0.3, 0.2, -0.6], -0.4);
    let (y, dy) = chained_scale_jvp(x.clone(), a, dx.clone(), da);
    assert_eq!(y, chained_scale(x.clone(), a));
    let mut xd = x.clone();
    xd.push(a);
    let mut d = dx.clone();
    d.push(da);
    let f = |p: &[f64]| chained_scale(p[..3].to_vec(), p[3]);
    assert_close(&dy, &fd_along(f, &xd, &d), 1e-6);
    let (y2, lin) = chained_scale_lin(x.clone(), a);
    assert_eq!(y2, y);
    assert!(
        linear_ad::TapeSize::tape_bytes(&lin) > 17 * 8,
        "a tape of {} bytes",
        linear_ad::TapeSize::tape_bytes(&lin)
    );
    assert_eq!(lin.apply((dx.clone(), da)), dy);
    let cy = vec![1.0, -0.5, 2.0];
    let (gx, ga) = lin.transpose(cy.clone());
    let (_, (vx, va)) = chained_scale_vjp(x, a, cy.clone());
    assert_eq!((&gx, ga), (&vx, va));
    assert!(close(dot(&cy, &dy), dot(&gx, &dx) + ga * da, 1e-12));
}

/// The message of the panic `f` raises.
fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let err = std::panic::catch_unwind(f).expect_err("expected a panic");
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn arrays_of_the_wrong_length_are_named() {
    let (a, x) = ([1.0, 2.0, 3.0, 4.0], [0.5, -0.5]);
    let m = panic_message(|| {
        matvec_jvp(&a, &x, &[0.0; 4], &[1.0]);
    });
    assert!(
        m.contains("`matvec_jvp`: the tangent `x_tangent` must have the length of `x`"),
        "{m}"
    );
    let m = panic_message(|| {
        matvec_vjp(&a, &x, vec![1.0; 3]);
    });
    assert!(
        m.contains("`matvec_vjp`: the cotangent must have the length of `matvec`'s result"),
        "{m}"
    );
    let (_, lin) = matvec_lin(&a, &x);
    let m = panic_message(|| {
        lin.apply((vec![0.0; 5], vec![0.0; 2]));
    });
    assert!(
        m.contains("the tangent of parameter 1 has the wrong length"),
        "{m}"
    );
    let m = panic_message(|| {
        lin.transpose(vec![1.0]);
    });
    assert!(
        m.contains("the cotangent must have the length of `matvec`'s result"),
        "{m}"
    );
}

#[test]
fn copies_of_constant_arrays() {
    let (start, c) = ([0.5, -0.25, 1.0], vec![1.5, -0.5]);
    let (x, dx) = ([0.3, -0.7, 1.1], [0.2, 0.5, -0.3]);
    let (y, dy) = relaxed_jvp(&x, &start, &c, &dx);
    assert_eq!(y, relaxed(&x, &start, &c));
    let f = |q: &[f64]| vec![relaxed(q, &start, &c)];
    assert_close(&[dy], &fd_along(f, &x, &dx), 1e-6);
    let (_, gx) = relaxed_vjp(&x, &start, &c, 1.0);
    assert!(close(dy, dot(&gx, &dx), 1e-12));
    // The constants are read, not changed.
    assert_eq!((start, c), ([0.5, -0.25, 1.0], vec![1.5, -0.5]));
}

#[test]
fn copies_of_arrays() {
    let (x, k) = (vec![0.5, -1.0, 2.0, 0.25], 0.7);
    let (dx, dk) = (vec![0.1, 0.3, -0.2, 0.5], -0.4);
    let (y, dy) = damped_jvp(&x, k, &dx, dk);
    assert_eq!(y, damped(&x, k));
    let f = |q: &[f64]| damped(&q[..4], q[4]);
    let point: Vec<f64> = x.iter().copied().chain([k]).collect();
    let dir: Vec<f64> = dx.iter().copied().chain([dk]).collect();
    assert_close(&dy, &fd_along(f, &point, &dir), 1e-6);
    let ct = vec![1.0, -2.0, 0.5, 0.25];
    let (_, (gx, gk)) = damped_vjp(&x, k, ct.clone());
    assert!(close(dot(&ct, &dy), dot(&gx, &dx) + gk * dk, 1e-12));

    let p = [0.3, -1.2, 0.8];
    let dp = [0.5, 0.25, -1.0];
    let (c, dc) = copied_inline_jvp(&p, &dp);
    assert_eq!(c, copied_inline(&p));
    let g = |q: &[f64]| copied_inline(&[q[0], q[1], q[2]]).to_vec();
    assert_close(&dc, &fd_along(g, &p, &dp), 1e-6);
    let cc = [0.5, 1.0, -1.5];
    let (_, gp) = copied_inline_vjp(&p, cc);
    assert!(close(dot(&cc, &dc), dot(&gp, &dp), 1e-12));
}

#[test]
fn vectors_of_elements() {
    let x = vec![0.5, -1.0, 2.0];
    let dx = vec![0.3, 0.1, -0.7];
    let (m, dm) = moments_jvp(&x, &dx);
    assert_eq!(m, moments(&x));
    assert_close(&dm, &fd_along(moments, &x, &dx), 1e-6);
    let ct = vec![1.0, 0.5, -0.25];
    let (_, g) = moments_vjp(&x, ct.clone());
    assert!(close(dot(&ct, &dm), dot(&g, &dx), 1e-12));
}

#[test]
fn writes_in_branches() {
    for k in [0.7, 1.3] {
        let x = vec![0.5, -1.0, 2.0, 0.25, -0.3, 1.1];
        let dx = vec![0.3, 0.1, -0.7, 0.2, 0.4, -0.1];
        let dk = 0.6;
        let (y, dy) = leaky_scan_jvp(&x, k, &dx, dk);
        assert_eq!(y, leaky_scan(&x, k));
        let f = |q: &[f64]| leaky_scan(&q[..6], q[6]);
        let point: Vec<f64> = x.iter().copied().chain([k]).collect();
        let dir: Vec<f64> = dx.iter().copied().chain([dk]).collect();
        assert_close(&dy, &fd_along(f, &point, &dir), 1e-6);
        let ct = vec![1.0, 0.5, -0.25, 2.0, -1.0, 0.75];
        let (_, (gx, gk)) = leaky_scan_vjp(&x, k, ct.clone());
        assert!(close(dot(&ct, &dy), dot(&gx, &dx) + gk * dk, 1e-12));
        let (_, lin) = leaky_scan_lin(&x, k);
        assert_eq!(lin.apply((dx.clone(), dk)), dy);
        assert_eq!(lin.transpose(ct), (gx, gk));
    }
}

#[test]
fn arrays_chosen_in_a_branch() {
    for x0 in [0.5, -0.5] {
        let (x, y) = (vec![x0, 2.0], vec![3.0, -1.5]);
        let (v, (gx, gy)) = pick_vjp(&x, &y, 1.0);
        assert_eq!(v, pick(&x, &y));
        let (a, other) = if x0 > 0.0 { (&y, &gx) } else { (&x, &gy) };
        let chosen = if x0 > 0.0 { &gy } else { &gx };
        assert_eq!(chosen, &vec![a[1], a[0]]);
        assert_eq!(other, &vec![0.0, 0.0]);
        let (_, dv) = pick_jvp(&x, &y, &[1.0, 0.0], &[0.0, 1.0]);
        assert_eq!(dv, gx[0] + gy[1]);
    }
}

#[test]
fn early_exits_in_a_function_returning_a_vec() {
    let k = 1.5;
    let dk = -0.25;
    // Each input takes one exit: the loop to its end, the `break`, the
    // `return` from the loop, the `return` before it.
    let cases: [(&[f64], &[f64]); 4] = [
        (&[0.5, -1.0, 2.0], &[0.1, 0.2, 0.3]),
        (&[0.5, -6.0, 2.0], &[0.1, 0.2, 0.3]),
        (&[0.5, 6.0, 2.0], &[0.1, 0.2, 0.3]),
        (&[11.0, 1.0], &[0.5, 0.5]),
    ];
    let lengths: Vec<usize> = cases.iter().map(|(x, _)| clipped(x, k).len()).collect();
    assert_eq!(lengths, vec![3, 3, 2, 2]);
    for (x, dx) in cases {
        let n = x.len();
        let (y, dy) = clipped_jvp(x, k, dx, dk);
        assert_eq!(y, clipped(x, k));
        let joint = |p: &[f64]| clipped(&p[..n], p[n]);
        let point: Vec<f64> = x.iter().chain([&k]).copied().collect();
        let dir: Vec<f64> = dx.iter().chain([&dk]).copied().collect();
        assert_close(&dy, &fd_along(joint, &point, &dir), 1e-6);
        let ct: Vec<f64> = (0..y.len()).map(|i| 1.0 - 0.5 * i as f64).collect();
        let (_, (gx, gk)) = clipped_vjp(x, k, ct.clone());
        assert!(close(dot(&ct, &dy), dot(&gx, dx) + gk * dk, 1e-12));
        let (_, lin) = clipped_lin(x, k);
        assert_eq!(lin.apply((dx.to_vec(), dk)), dy);
        assert_eq!(lin.transpose(ct), (gx, gk));
    }
}
