use linear_ad::differentiable;

#[differentiable]
pub fn total(xs: Vec<Vec<f64>>, y: f64) -> f64 {
    xs.len() as f64 * y
}

fn main() {}
