use linear_ad::differentiable;

#[differentiable]
pub fn total_variation(x: &[f64]) -> f64 {
    x.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f64>()
}

fn main() {}
