use linear_ad::differentiable;

#[differentiable]
pub fn series(x: f64) -> f64 {
    (0..4).map(|k| x * k as f64).sum::<f64>()
}

fn main() {}
