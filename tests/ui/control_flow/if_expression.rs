use linear_ad::differentiable;

#[differentiable]
pub fn relu(x: f64) -> f64 {
    if x > 0.0 { x } else { 0.0 }
}

fn main() {}
