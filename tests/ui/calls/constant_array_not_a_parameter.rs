use linear_ad::differentiable;

const ONES: &[f64] = &[1.0, 1.0];

#[differentiable]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a[0] * b[0] + a[1] * b[1]
}

#[differentiable]
pub fn against_ones(x: &[f64]) -> f64 {
    dot(x, ONES)
}

fn main() {}
