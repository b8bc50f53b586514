use linear_ad::differentiable;

#[differentiable]
fn clipped(x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    if x[0] > 1.0 {
        return y;
    }
    for i in 0..x.len() {
        y[i] = x[i] * 2.0;
    }
    y
}

fn main() {
    let _ = clipped(&[1.0]);
}
