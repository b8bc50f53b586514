use linear_ad::differentiable;

#[differentiable]
pub fn total(xs: Option<f64>, y: f64) -> f64 {
    xs.unwrap_or(1.0) * y
}

fn main() {}
