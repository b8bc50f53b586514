//! Custom derivatives: `#[differentiable(jvp = d)]` with `d` a `#[linear]`
//! function. Forward mode calls `d`, reverse mode `d`'s derived transpose.
#![deny(warnings)]

use linear_ad::{differentiable, linear, LinearMap};

/// softplus(x) = ln(1 + eˣ), computed stably; the body (control flow,
/// `ln_1p`) is outside the subset the macro differentiates.
#[differentiable(jvp = softplus_tangent)]
pub fn softplus(x: f64) -> f64 {
    if x > 30.0 {
        x
    } else {
        x.exp().ln_1p()
    }
}

/// d softplus(x)[ẋ] = σ(x) ẋ, stable for large |x|.
#[linear]
pub fn softplus_tangent(x: f64, #[linear] dx: f64) -> f64 {
    dx / (1.0 + (-x).exp())
}

/// log-sum-exp of three values, shifted by the maximum for stability.
#[differentiable(jvp = lse_tangent)]
pub fn log_sum_exp(v: [f64; 3]) -> f64 {
    let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    m + v.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// Its derivative is softmax(v)·v̇.
#[linear]
pub fn lse_tangent(v: [f64; 3], #[linear] dv: [f64; 3]) -> f64 {
    let m = v[0].max(v[1]).max(v[2]);
    let (e0, e1, e2) = ((v[0] - m).exp(), (v[1] - m).exp(), (v[2] - m).exp());
    let s = e0 + e1 + e2;
    (e0 * dv[0] + e1 * dv[1] + e2 * dv[2]) / s
}

/// A differentiable function calling both.
#[differentiable]
pub fn loss(w: f64, x: f64) -> f64 {
    let a = softplus(w * x);
    let l = log_sum_exp([a, w, x]);
    l - 0.5 * w
}

fn fd(f: impl Fn(f64) -> f64, x: f64) -> f64 {
    let h = 1e-6;
    (f(x + h) - f(x - h)) / (2.0 * h)
}

#[test]
fn softplus_derivative_matches_finite_differences_and_is_stable() {
    for x in [-3.0, -0.2, 0.0, 0.7, 4.0] {
        let (v, d) = softplus_jvp(x, 1.0);
        assert_eq!(v, softplus(x));
        assert!((d - fd(softplus, x)).abs() < 1e-7, "x = {x}");
        let (_, g) = softplus_vjp(x, 1.0);
        assert_eq!(g, d);
        let (_, lin) = softplus_lin(x);
        assert_eq!(lin.apply(1.0), d);
        assert_eq!(lin.transpose(1.0), g);
    }
    // exp(1000) overflows: differentiating ln(1 + eˣ) naively gives NaN.
    assert_eq!(softplus_vjp(1000.0, 1.0), (1000.0, 1.0));
    assert_eq!(softplus_vjp(-1000.0, 1.0).1, 0.0);
}

#[test]
fn log_sum_exp_gradient_is_softmax() {
    let v = [800.0, 801.0, 799.5];
    let (val, g) = log_sum_exp_vjp(v, 1.0);
    assert!(val.is_finite());
    let e: Vec<f64> = v.iter().map(|x| (x - 801.0).exp()).collect();
    let s: f64 = e.iter().sum();
    for k in 0..3 {
        assert!((g[k] - e[k] / s).abs() < 1e-15);
    }
    let dv = [0.3, -1.0, 2.0];
    let (_, t) = log_sum_exp_jvp(v, dv);
    assert!((t - (g[0] * dv[0] + g[1] * dv[1] + g[2] * dv[2])).abs() < 1e-14);
}

#[test]
fn custom_derivatives_compose_with_generated_ones() {
    let f = |w: f64, x: f64| {
        let a = softplus(w * x);
        let l = log_sum_exp([a, w, x]);
        l - 0.5 * w
    };
    for (w, x) in [(0.4, -1.2), (1.5, 0.8)] {
        let (v, (gw, gx)) = loss_vjp(w, x, 1.0);
        assert_eq!(v, loss(w, x));
        assert!((gw - fd(|t| f(t, x), w)).abs() < 1e-7);
        assert!((gx - fd(|t| f(w, t), x)).abs() < 1e-7);
        let (_, t) = loss_jvp(w, x, 1.0, 0.0);
        assert!((t - gw).abs() < 1e-14);
    }
}
