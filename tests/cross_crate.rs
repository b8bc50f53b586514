//! Calls into another crate (`tests/callee`): a caller reaches the
//! callee's generated code through the path it writes, so `pub` functions
//! of a dependency are callable with each result shape. What a caller in
//! another crate must add is one `let` annotation per call: the callee's
//! signature macro cannot be exported from the crate that made it (see
//! `linear_core::signature`).
#![deny(warnings)]

mod support;

use linear_ad::differentiable;
use linear_ad_callee::{nested, polar, powers, project, shear, soft_abs};

#[differentiable]
fn uses_a_dependency(x: f64, y: f64) -> f64 {
    let a: f64 = soft_abs(x - y, 0.1);
    let (r, t): (f64, f64) = polar(x, y);
    let q: [f64; 2] = project([x, y, 2.0 + r], 3.0);
    let s: (f64, f64) = shear(x, y, 0.5);
    let l: f64 = nested::logistic(x * y);
    let full: f64 = linear_ad_callee::nested::logistic(y);
    let p: Vec<f64> = powers(y, 3);
    let sum = p.iter().sum::<f64>();
    a * t + q[0] - q[1] + s.0 * s.1 + l + full + sum * x
}

fn by_hand(x: f64, y: f64) -> f64 {
    let a = ((x - y) * (x - y) + 0.01).sqrt();
    let r = (x * x + y * y).sqrt();
    let t = y.atan2(x);
    let q = [3.0 * x / (2.0 + r), 3.0 * y / (2.0 + r)];
    let s = (x + 0.5 * y, y);
    let logistic = |z: f64| 1.0 / (1.0 + (-z).exp());
    let sum = y + y * y + y * y * y;
    a * t + q[0] - q[1] + s.0 * s.1 + logistic(x * y) + logistic(y) + sum * x
}

#[test]
fn a_dependency_s_functions_are_callable_with_every_result_shape() {
    for (x, y) in [(0.3, -0.7), (1.2, 0.4), (-0.9, 0.25)] {
        let want = by_hand(x, y);
        let got = uses_a_dependency(x, y);
        assert!(
            (got - want).abs() < 1e-12 * (1.0 + want.abs()),
            "{got} {want}"
        );
        support::check_xy(
            (x, y),
            uses_a_dependency,
            uses_a_dependency_jvp,
            uses_a_dependency_vjp,
            uses_a_dependency_lin,
        );
    }
}

#[test]
fn a_dependency_s_companions_are_callable_directly() {
    let (v, (dx, dy)) = linear_ad_callee::polar_vjp(0.6, 0.8, (1.0, 0.0));
    assert_eq!(v, polar(0.6, 0.8));
    assert!((dx - 0.6).abs() < 1e-12 && (dy - 0.8).abs() < 1e-12);
    assert_eq!(
        linear_ad_callee::shear_transpose(0.5, (1.0, 2.0)),
        (1.0, 2.5)
    );
}
