//! `hello`: `square` is x², `double` its derivative, the protocol's smoke
//! test. Its input is a bare number, without `min_runs`/`min_seconds`, so
//! each function runs once.

use linear_ad::differentiable;
use serde::Deserialize;

use super::{run, unknown, Evaluated, Input};

/// f(x) = x².
#[differentiable]
pub fn square(x: f64) -> f64 {
    x * x
}

/// ∇f(x) = 2x, as reverse mode of [`square`].
pub fn double(x: f64) -> f64 {
    square_vjp(x, 1.0).1
}

#[derive(Deserialize)]
#[serde(transparent)]
struct Number(f64);

impl Input for Number {}

pub fn evaluate(function: &str, input: serde_json::Value) -> Evaluated {
    match function {
        "square" => run(input, |x: &Number| square(x.0)),
        "double" => run(input, |x: &Number| double(x.0)),
        _ => unknown("hello", function, &["square", "double"]),
    }
}
