#![deny(warnings)]

//! Local `Vec`s grown by `push`: `Vec::with_capacity(n)` and `Vec::new()`
//! (element type from a `Vec<T>` annotation, else the function's float),
//! pushed in loops, in branches (a result whose length depends on the
//! data) and read back while growing. The tangent of a push is pushed
//! onto the tangent's buffer; the reverse pass pops the cotangents off the
//! result's cotangent, last pushed first. Each function is checked against
//! finite differences and every mode against the others.

use linear_ad::{differentiable, LinearMap};

mod support;
use support::{assert_close, close, dot, fd_along};

/// One push per iteration.
#[differentiable]
fn scaled_squares(x: &[f64], k: f64) -> Vec<f64> {
    let mut y = Vec::with_capacity(x.len());
    for v in x.iter() {
        y.push(k * v * v);
    }
    y
}

/// Pushes in one arm only: the result's length depends on the signs.
#[differentiable]
#[allow(clippy::needless_range_loop)]
fn positives_scaled(x: &[f64], k: f64) -> Vec<f64> {
    let mut y = Vec::new();
    for i in 0..x.len() {
        if x[i] > 0.0 {
            y.push(x[i] * k);
        }
    }
    y
}

/// A running sum, reading what it pushed before.
#[differentiable]
fn running_sum(x: &[f64]) -> Vec<f64> {
    let mut y = Vec::with_capacity(x.len());
    y.push(x[0]);
    for i in 1..x.len() {
        let prev = y[i - 1];
        y.push(prev + x[i].sin());
    }
    y
}

/// Tuples pushed into an annotated `Vec`, reduced afterwards; a `while`
/// loop pushes.
#[differentiable]
#[allow(clippy::needless_range_loop)]
fn pairs_energy(x: &[f64]) -> f64 {
    let mut p: Vec<(f64, f64)> = Vec::new();
    let mut i = 0;
    while i + 1 < x.len() {
        p.push((x[i] * x[i + 1], x[i] - x[i + 1]));
        i += 2;
    }
    let mut e = 0.0;
    for k in 0..p.len() {
        e += p[k].0 * p[k].1.exp();
    }
    e
}

/// A `Vec` parameter taken `mut`: the function's own copy, written and
/// pushed.
#[differentiable]
fn extended(mut x: Vec<f64>, k: f64) -> Vec<f64> {
    x[0] *= k;
    x.push(k * k);
    x
}

#[test]
fn one_push_per_iteration() {
    let (x, k) = (vec![0.5, -1.5, 2.0, 0.25], 1.5);
    let (dx, dk) = (vec![0.1, 0.2, -0.3, 0.4], -0.5);
    let (y, dy) = scaled_squares_jvp(&x, k, &dx, dk);
    assert_eq!(y, scaled_squares(&x, k));
    let joint = |p: &[f64]| scaled_squares(&p[..4], p[4]);
    let point: Vec<f64> = x.iter().chain([&k]).copied().collect();
    let dir: Vec<f64> = dx.iter().chain([&dk]).copied().collect();
    assert_close(&dy, &fd_along(joint, &point, &dir), 1e-6);
    let ct = vec![1.0, -2.0, 0.5, 3.0];
    let (_, (gx, gk)) = scaled_squares_vjp(&x, k, ct.clone());
    assert!(close(dot(&ct, &dy), dot(&gx, &dx) + gk * dk, 1e-12));
    // y_i = k x_i^2: the gradient is diagonal.
    for i in 0..4 {
        assert!(close(gx[i], ct[i] * 2.0 * k * x[i], 1e-12), "{gx:?}");
    }
    let (_, lin) = scaled_squares_lin(&x, k);
    assert_eq!(lin.apply((dx, dk)), dy);
    assert_eq!(lin.transpose(ct), (gx, gk));
}

#[test]
fn pushes_in_a_branch() {
    let (x, k) = (vec![0.5, -1.5, 2.0, -0.25, 3.0], 2.0);
    let (dx, dk) = (vec![0.1, 0.2, -0.3, 0.4, 0.5], 0.25);
    let (y, dy) = positives_scaled_jvp(&x, k, &dx, dk);
    assert_eq!(y, positives_scaled(&x, k));
    assert_eq!(y, vec![1.0, 4.0, 6.0]);
    assert_eq!(
        dy,
        vec![0.1 * k + 0.5 * dk, -0.3 * k + 2.0 * dk, 0.5 * k + 3.0 * dk]
    );
    let ct = vec![1.0, -1.0, 0.5];
    let (_, (gx, gk)) = positives_scaled_vjp(&x, k, ct.clone());
    assert_eq!(gx, vec![k, 0.0, -k, 0.0, 0.5 * k]);
    assert!(close(gk, 0.5 - 2.0 + 1.5, 1e-12));
    let (_, lin) = positives_scaled_lin(&x, k);
    assert_eq!(lin.apply((dx, dk)), dy);
    assert_eq!(lin.transpose(ct), (gx, gk));
    // No element positive: an empty result, and a zero gradient.
    let (y, lin) = positives_scaled_lin(&[-1.0, -2.0], k);
    assert!(y.is_empty());
    assert_eq!(lin.transpose(vec![]), (vec![0.0, 0.0], 0.0));
}

#[test]
fn reading_what_was_pushed() {
    let x = vec![0.3, -0.7, 1.1, 0.4];
    let dx = vec![0.5, 0.1, -0.2, 0.3];
    let (y, dy) = running_sum_jvp(&x, &dx);
    assert_eq!(y, running_sum(&x));
    assert_close(&dy, &fd_along(running_sum, &x, &dx), 1e-6);
    let ct = vec![0.2, -1.0, 0.7, 1.3];
    let (_, g) = running_sum_vjp(&x, ct.clone());
    assert!(close(dot(&ct, &dy), dot(&g, &dx), 1e-12));
}

#[test]
fn tuples_pushed_in_a_while_loop() {
    let x = vec![0.3, -0.7, 1.1, 0.4, 2.0];
    let dx = vec![0.5, 0.1, -0.2, 0.3, 9.0];
    let (e, de) = pairs_energy_jvp(&x, &dx);
    assert_eq!(e, pairs_energy(&x));
    let want = fd_along(|p| vec![pairs_energy(p)], &x, &dx)[0];
    assert!(close(de, want, 1e-6), "{de} vs {want}");
    let (_, g) = pairs_energy_vjp(&x, 1.0);
    assert!(close(de, dot(&g, &dx), 1e-12));
    // The odd element is never read.
    assert_eq!(g[4], 0.0);
}

#[test]
fn a_mut_vec_parameter_is_the_functions_own() {
    let (x, k) = (vec![2.0, -1.0], 3.0);
    let (dx, dk) = (vec![0.5, 0.25], -1.0);
    let (y, dy) = extended_jvp(x.clone(), k, dx.clone(), dk);
    assert_eq!(y, extended(x.clone(), k));
    assert_eq!(y, vec![6.0, -1.0, 9.0]);
    assert_eq!(dy, vec![0.5 * k + 2.0 * dk, 0.25, 2.0 * k * dk]);
    let ct = vec![1.0, 2.0, -1.0];
    let (_, (gx, gk)) = extended_vjp(x.clone(), k, ct.clone());
    assert_eq!(gx, vec![k, 2.0]);
    assert_eq!(gk, 2.0 - 2.0 * k);
    let (_, lin) = extended_lin(x, k);
    assert_eq!(lin.apply((dx, dk)), dy);
    assert_eq!(lin.transpose(ct), (gx, gk));
}
