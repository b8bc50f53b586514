//! Functions named like built-in attributes (`link`, `inline`, `cold`,
//! `test`, `repr`): their signature macros would make those names
//! ambiguous, so they have none, and callers call them all the same.
#![deny(warnings)]

use linear_ad::differentiable;

#[differentiable]
pub fn link(angle: f64, l: f64) -> f64 {
    l * angle.cos()
}

#[differentiable]
fn inline(x: f64) -> f64 {
    x * x
}

#[differentiable]
fn cold(x: f64) -> f64 {
    x.exp()
}

#[differentiable]
fn repr(x: f64) -> f64 {
    x.sin()
}

#[differentiable]
fn test(x: f64) -> f64 {
    x + 1.0
}

#[differentiable]
fn arm(q: f64) -> f64 {
    link(q, 2.0) + inline(q) + cold(q) + repr(q) + test(q)
}

fn main() {
    let (_, g) = arm_vjp(0.5, 1.0);
    let want = -2.0 * 0.5f64.sin() + 2.0 * 0.5 + 0.5f64.exp() + 0.5f64.cos() + 1.0;
    assert!((g - want).abs() < 1e-12, "{g} vs {want}");
}
