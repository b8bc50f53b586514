//! `llsq`: the linear least-squares objective of cmpad's `llsq_obj`,
//! `y(x) = ½ Σᵢ (sᵢ - Σⱼ xⱼ tᵢʲ)²` with `tᵢ = -1 + 2i/(n-1)` and
//! `sᵢ = sign(tᵢ)`, and its gradient in `x`.
//!
//! `t` and `s` depend on `i` and `n` only, so they stay ordinary Rust in
//! every generated function; the polynomial is evaluated by powers of `t`
//! as the formula is written.

// Index loops, as the eval's formulas are written.
#![allow(clippy::needless_range_loop)]

use linear_ad::differentiable;
use serde::Deserialize;

use super::{run, unknown, Evaluated, Input};

/// y(x) over `n` points.
#[differentiable]
pub fn llsq(x: &[f64], n: usize) -> f64 {
    let m = x.len();
    let mut y = 0.0;
    for i in 0..n {
        let t = -1.0 + (i as f64) * 2.0 / ((n - 1) as f64);
        let s = if t > 0.0 {
            1.0
        } else if t < 0.0 {
            -1.0
        } else {
            0.0
        };
        let mut r = s;
        let mut power = 1.0;
        for j in 0..m {
            r -= x[j] * power;
            power *= t;
        }
        y += r * r;
    }
    0.5 * y
}

/// ∇y(x).
pub fn gradient(x: &[f64], n: usize) -> Vec<f64> {
    llsq_vjp(x, n, 1.0).1
}

#[derive(Deserialize)]
pub struct LlsqInput {
    pub x: Vec<f64>,
    pub n: usize,
}

impl Input for LlsqInput {
    fn problem(&self) -> Option<String> {
        (self.n < 2).then(|| format!("`n` is {}, and the points need n ≥ 2", self.n))
    }
}

pub fn evaluate(function: &str, input: serde_json::Value) -> Evaluated {
    match function {
        "primal" => run(input, |i: &LlsqInput| llsq(&i.x, i.n)),
        "gradient" => run(input, |i: &LlsqInput| gradient(&i.x, i.n)),
        _ => unknown("llsq", function, &["primal", "gradient"]),
    }
}
