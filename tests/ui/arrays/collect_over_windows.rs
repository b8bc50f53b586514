use linear_ad::differentiable;

#[differentiable]
pub fn steps(x: &[f64]) -> Vec<f64> {
    x.windows(2).map(|w| w[1] - w[0]).collect()
}

fn main() {}
