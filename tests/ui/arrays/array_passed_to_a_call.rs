use linear_ad::differentiable;

#[differentiable]
pub fn first_two(v: &[f64]) -> f64 {
    v[0] + v[1]
}

#[differentiable]
pub fn total(v: &[f64]) -> f64 {
    first_two(v) * v[2]
}

fn main() {}
