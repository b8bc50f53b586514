#![deny(warnings)]

//! `stop_gradient(x)`: `x`'s value, through which no derivative flows.
//! Where the result does not depend on the value in exact arithmetic (the
//! shift of a log-sum-exp), the derivatives are those without it, and the
//! loop computing the value leaves the tape; elsewhere the derivative is
//! that of the function with the value held constant.

use linear_ad::{differentiable, stop_gradient, LinearMap, TapeSize};

mod support;
use support::{assert_close, close};

#[differentiable]
fn lse_through(x: &[f64]) -> f64 {
    let mut m = x[0];
    for v in x.iter() {
        m = m.max(*v);
    }
    let mut s = 0.0;
    for v in x.iter() {
        s += (v - m).exp();
    }
    m + s.ln()
}

#[differentiable]
fn lse_held(x: &[f64]) -> f64 {
    let mut m = x[0];
    for v in x.iter() {
        m = m.max(*v);
    }
    let m = stop_gradient(m);
    let mut s = 0.0;
    for v in x.iter() {
        s += (v - m).exp();
    }
    m + s.ln()
}

#[test]
fn a_held_shift_changes_the_tape_not_the_gradient() {
    let x: Vec<f64> = (0..100)
        .map(|i| ((i * 37) % 23) as f64 * 0.1 - 1.0)
        .collect();
    let (v1, g1) = lse_through_vjp(&x, 1.0);
    let (v2, g2) = lse_held_vjp(&x, 1.0);
    assert_eq!((v1, v2), (lse_through(&x), lse_held(&x)));
    assert_eq!(v1, v2);
    assert_close(&g2, &g1, 1e-14);
    // The softmax, by hand.
    let e: Vec<f64> = x.iter().map(|v| (v - v1).exp()).collect();
    assert_close(&g2, &e, 1e-14);
    // The max loop records nothing: one float per element is left (the
    // exponential), against that and the selector of each `max`.
    let (_, through) = lse_through_lin(&x);
    let (_, held) = lse_held_lin(&x);
    assert!(
        held.tape_bytes() + 8 * x.len() <= through.tape_bytes(),
        "{} against {}",
        held.tape_bytes(),
        through.tape_bytes()
    );
    let d: Vec<f64> = (0..100).map(|i| (i % 7) as f64 - 3.0).collect();
    assert!(close(held.apply(d.clone()), through.apply(d), 1e-13));
}

/// `x² + y` with `x²` held: its derivative is that of `c + y`, and the
/// held pair `(x, y)` carries none either.
#[differentiable]
fn held(x: f64, y: f64) -> f64 {
    let (a, b) = stop_gradient((x, y));
    stop_gradient(x * x) + y + a * b
}

#[test]
fn held_values_have_no_derivative() {
    let (x, y) = (3.0, -2.0);
    assert_eq!(held(x, y), 9.0 + y + x * y);
    assert_eq!(held_vjp(x, y, 1.0), (held(x, y), (0.0, 1.0)));
    assert_eq!(held_jvp(x, y, 1.0, 1.0), (held(x, y), 1.0));
    let (_, lin) = held_lin(x, y);
    assert_eq!(lin.apply((0.5, 0.25)), 0.25);
    assert_eq!(lin.transpose(2.0), (0.0, 2.0));
}
