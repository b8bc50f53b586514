//! `ode`: cmpad's `an_ode`, the system `y₀' = x₀`, `yᵢ' = xᵢ·yᵢ₋₁`
//! from `y(0) = 0`, solved to `t = 2` by `s` steps of the classical
//! fourth-order Runge-Kutta method, and the gradient of the solution's
//! last element with respect to `x`.
//!
//! The gradient is reverse mode of the whole solution with the cotangent
//! `eₙ₋₁`: one sweep back through the `s` steps, reading the states the
//! forward sweep saved.

// Index loops, as the eval's formulas are written.
#![allow(clippy::needless_range_loop)]

use linear_ad::differentiable;
use serde::Deserialize;

use super::{run, unknown, Evaluated, Input};

/// y(2) after `s` Runge-Kutta steps.
#[differentiable]
pub fn ode(x: &[f64], s: usize) -> Vec<f64> {
    let n = x.len();
    let h = 2.0 / (s as f64);
    let mut y = vec![0.0; n];
    let mut k1 = vec![0.0; n];
    let mut k2 = vec![0.0; n];
    let mut k3 = vec![0.0; n];
    let mut k4 = vec![0.0; n];
    let mut tmp = vec![0.0; n];
    for _ in 0..s {
        // k1 = f(y)
        k1[0] = x[0];
        for i in 1..n {
            k1[i] = x[i] * y[i - 1];
        }
        for i in 0..n {
            tmp[i] = y[i] + h * k1[i] / 2.0;
        }
        // k2 = f(y + h k1 / 2)
        k2[0] = x[0];
        for i in 1..n {
            k2[i] = x[i] * tmp[i - 1];
        }
        for i in 0..n {
            tmp[i] = y[i] + h * k2[i] / 2.0;
        }
        // k3 = f(y + h k2 / 2)
        k3[0] = x[0];
        for i in 1..n {
            k3[i] = x[i] * tmp[i - 1];
        }
        for i in 0..n {
            tmp[i] = y[i] + h * k3[i];
        }
        // k4 = f(y + h k3)
        k4[0] = x[0];
        for i in 1..n {
            k4[i] = x[i] * tmp[i - 1];
        }
        for i in 0..n {
            y[i] += h * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]) / 6.0;
        }
    }
    y
}

/// ∂y(2)ₙ₋₁/∂x.
pub fn gradient(x: &[f64], s: usize) -> Vec<f64> {
    let mut last = vec![0.0; x.len()];
    last[x.len() - 1] = 1.0;
    ode_vjp(x, s, last).1
}

#[derive(Deserialize)]
pub struct OdeInput {
    pub x: Vec<f64>,
    pub s: usize,
}

impl Input for OdeInput {
    fn problem(&self) -> Option<String> {
        if self.x.is_empty() {
            Some("`x` is empty".into())
        } else if self.s == 0 {
            Some("`s` is 0: the method needs at least one step".into())
        } else {
            None
        }
    }
}

pub fn evaluate(function: &str, input: serde_json::Value) -> Evaluated {
    match function {
        "primal" => run(input, |i: &OdeInput| ode(&i.x, i.s)),
        "gradient" => run(input, |i: &OdeInput| gradient(&i.x, i.s)),
        _ => unknown("ode", function, &["primal", "gradient"]),
    }
}
