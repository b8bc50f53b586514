use linear_ad::differentiable;

#[differentiable]
fn stats(x: &[f64]) -> (f64, Vec<f64>) {
    let mut y = vec![0.0; x.len()];
    for i in 0..x.len() {
        y[i] = x[i] * x[i];
    }
    (x[0], y)
}

fn main() {
    let _ = stats(&[1.0]);
}
