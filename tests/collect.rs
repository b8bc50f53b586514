#![deny(warnings)]

//! `collect` into a `Vec` and reductions over ranges: `a.iter().map(|v|
//! ..).collect()` (with `.zip`, `.enumerate`, `.copied`), the element type
//! from a turbofish, a `let` annotation or the function's result, rows
//! collected into `Vec<[f64; M]>`, and `(0..n).map(|i| ..).sum()` /
//! `.collect()`. Each lowers to a loop that pushes onto a new local `Vec`
//! (or accumulates), so the derivatives are those of the loop; each
//! function is checked against finite differences, the dot-product
//! identity between its JVP and VJP, and `f_lin`'s two directions.

use linear_ad::{differentiable, LinearMap};

mod support;
use support::{assert_close, close, dot, fd_along};

/// Softmax: a `collect` into an annotated `Vec`, then one as the result.
#[differentiable]
fn softmax(x: &[f64]) -> Vec<f64> {
    let e: Vec<f64> = x.iter().map(|v| v.exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

/// Two arrays zipped, with a turbofish.
#[differentiable]
fn products(x: &[f64], y: &[f64]) -> Vec<f64> {
    x.iter()
        .zip(y.iter())
        .map(|(a, b)| a * b.sin())
        .collect::<Vec<f64>>()
}

/// The index of `enumerate` as a weight; the collected copy written in
/// place (the form under test, where clippy would prefer `to_vec()`).
#[differentiable]
#[allow(clippy::iter_cloned_collect)]
fn weighted(x: &[f64]) -> Vec<f64> {
    let mut y: Vec<f64> = x.iter().copied().collect();
    y[0] *= 3.0;
    y.iter()
        .enumerate()
        .map(|(i, v)| v * v * (i as f64 + 1.0))
        .collect()
}

/// Points on the unit circle, collected as rows, then reduced.
#[differentiable]
fn circle_energy(t: &[f64], r: f64) -> f64 {
    let p: Vec<[f64; 2]> = t.iter().map(|a| [r * a.cos(), r * a.sin()]).collect();
    let mut e = 0.0;
    for i in 1..p.len() {
        let (dx, dy) = (p[i][0] - p[i - 1][0], p[i][1] - p[i - 1][1]);
        e += dx * dx + dy * dy;
    }
    e
}

/// Reductions and a `collect` over ranges, reading arrays by index.
#[differentiable]
fn lagged(x: &[f64], k: f64) -> f64 {
    let n = x.len();
    let d: Vec<f64> = (1..n).map(|i| x[i] - k * x[i - 1]).collect();
    let s = (0..d.len()).map(|i| d[i] * d[i]).sum::<f64>();
    s + (0..n).rev().fold(0.0, |acc, i| acc * 0.5 + x[i])
}

const X: [f64; 5] = [0.3, -0.7, 1.1, 0.4, -1.3];
const DX: [f64; 5] = [0.5, 0.1, -0.2, 0.3, 0.7];

#[test]
fn softmax_collected_twice() {
    let (y, dy) = softmax_jvp(&X, &DX);
    assert_eq!(y, softmax(&X));
    let total: f64 = y.iter().sum();
    assert!(close(total, 1.0, 1e-12));
    assert_close(&dy, &fd_along(softmax, &X, &DX), 1e-6);
    let ct = vec![1.0, -2.0, 0.5, 3.0, 0.25];
    let (_, g) = softmax_vjp(&X, ct.clone());
    assert!(close(dot(&ct, &dy), dot(&g, &DX), 1e-12));
    // The Jacobian of softmax is diag(y) - y yᵀ: its VJP in closed form.
    let yc = dot(&y, &ct);
    let want: Vec<f64> = y.iter().zip(&ct).map(|(y, c)| y * (c - yc)).collect();
    assert_close(&g, &want, 1e-12);
    let (_, lin) = softmax_lin(&X);
    assert_eq!(lin.apply(DX.to_vec()), dy);
    assert_eq!(lin.transpose(ct), g);
}

#[test]
fn zipped_with_a_turbofish() {
    let y = [1.0, 2.0, -0.5, 0.1, 3.0];
    let dy = [0.2, -0.1, 0.4, 1.0, -0.3];
    let (p, dp) = products_jvp(&X, &y, &DX, &dy);
    assert_eq!(p, products(&X, &y));
    let joint = |v: &[f64]| products(&v[..5], &v[5..]);
    let point = [X, y].concat();
    let dir = [DX, dy].concat();
    assert_close(&dp, &fd_along(joint, &point, &dir), 1e-6);
    let ct = vec![0.5, 1.0, -1.0, 2.0, 0.3];
    let (_, (gx, gy)) = products_vjp(&X, &y, ct.clone());
    for i in 0..5 {
        assert!(close(gx[i], ct[i] * y[i].sin(), 1e-12));
        assert!(close(gy[i], ct[i] * X[i] * y[i].cos(), 1e-12));
    }
    let (_, lin) = products_lin(&X, &y);
    assert_eq!(lin.apply((DX.to_vec(), dy.to_vec())), dp);
    assert_eq!(lin.transpose(ct), (gx, gy));
}

#[test]
fn enumerated_after_a_collected_copy() {
    let (w, dw) = weighted_jvp(&X, &DX);
    assert_eq!(w, weighted(&X));
    assert!(close(w[0], 9.0 * X[0] * X[0], 1e-15));
    assert_close(&dw, &fd_along(weighted, &X, &DX), 1e-6);
    let ct = vec![1.0, 0.5, -0.25, 2.0, -1.0];
    let (_, g) = weighted_vjp(&X, ct.clone());
    assert!(close(dot(&ct, &dw), dot(&g, &DX), 1e-12));
    let (_, lin) = weighted_lin(&X);
    assert_eq!(lin.apply(DX.to_vec()), dw);
    assert_eq!(lin.transpose(ct), g);
}

#[test]
fn rows_collected_then_reduced() {
    let r = 1.5;
    let (e, de) = circle_energy_jvp(&X, r, &DX, 0.25);
    assert_eq!(e, circle_energy(&X, r));
    let joint = |v: &[f64]| vec![circle_energy(&v[..5], v[5])];
    let point: Vec<f64> = X.iter().chain([&r]).copied().collect();
    let dir: Vec<f64> = DX.iter().chain([&0.25]).copied().collect();
    assert!(close(de, fd_along(joint, &point, &dir)[0], 1e-6));
    let (_, (gt, gr)) = circle_energy_vjp(&X, r, 1.0);
    assert!(close(de, dot(&gt, &DX) + gr * 0.25, 1e-12));
    // The energy is r² times a function of the angles: ∂e/∂r = 2e/r.
    assert!(close(gr, 2.0 * e / r, 1e-12));
}

#[test]
fn reductions_and_a_collect_over_ranges() {
    let k = 0.8;
    let (s, ds) = lagged_jvp(&X, k, &DX, -0.5);
    assert_eq!(s, lagged(&X, k));
    let joint = |v: &[f64]| vec![lagged(&v[..5], v[5])];
    let point: Vec<f64> = X.iter().chain([&k]).copied().collect();
    let dir: Vec<f64> = DX.iter().chain([&-0.5]).copied().collect();
    assert!(close(ds, fd_along(joint, &point, &dir)[0], 1e-6));
    let (_, (gx, gk)) = lagged_vjp(&X, k, 1.0);
    assert!(close(ds, dot(&gx, &DX) - 0.5 * gk, 1e-12));
    let (_, lin) = lagged_lin(&X, k);
    assert!(close(lin.apply((DX.to_vec(), -0.5)), ds, 1e-12));
    assert_eq!(lin.transpose(1.0), (gx, gk));
}
