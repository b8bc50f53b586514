use linear_ad::differentiable;

#[differentiable]
pub fn clipped(x: &[f64]) -> f64 {
    let mut y = vec![0.0; x.len()];
    for i in 0..x.len() {
        if x[i] > 0.0 {
            y[i] = x[i];
        }
    }
    y.iter().sum::<f64>()
}

fn main() {}
