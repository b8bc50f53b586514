use linear_ad::differentiable;

#[differentiable(order = 2)]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a[0] * b[0] + a[1] * b[1]
}

#[differentiable(order = 2)]
pub fn square_norm(x: &[f64]) -> f64 {
    dot(x, x)
}

fn main() {}
