use linear_ad::differentiable;

#[differentiable]
pub fn weighted(x: &[f64], #[nondiff] w: &[f64]) -> f64 {
    x[0] * w[0] + x[1] * w[1]
}

#[differentiable]
pub fn both(x: &[f64], y: &[f64]) -> f64 {
    weighted(x, y)
}

fn main() {}
