use linear_ad::differentiable;

#[differentiable]
pub extern "C" fn scaled(x: f64) -> f64 {
    x * 2.0
}

fn main() {}
