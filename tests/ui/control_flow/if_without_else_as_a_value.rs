use linear_ad::differentiable;

#[differentiable]
pub fn relu(x: f64) -> f64 {
    let y = if x > 0.0 { x };
    y
}

fn main() {}
