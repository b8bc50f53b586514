use linear_ad::differentiable;

#[differentiable]
pub fn clamp_low(x: f64) -> f64 {
    if x < 0.0 {
        return 0.0;
    }
    x * x
}

fn main() {}
