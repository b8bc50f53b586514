use linear_ad::{differentiable, linear};

#[differentiable]
pub fn double(t: f64) -> f64 {
    2.0 * t
}

#[linear]
pub fn uses_double(#[linear] x: f64) -> f64 {
    double(x)
}

fn main() {}
