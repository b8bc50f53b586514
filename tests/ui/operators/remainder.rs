use linear_ad::differentiable;

#[differentiable]
pub fn wrap(x: f64) -> f64 {
    x % 1.0
}

fn main() {}
