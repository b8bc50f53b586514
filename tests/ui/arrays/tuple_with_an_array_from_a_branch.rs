use linear_ad::differentiable;

#[differentiable]
fn signed(x: &[f64], s: f64) -> (f64, Vec<f64>) {
    let mut y = vec![0.0; x.len()];
    for i in 0..x.len() {
        y[i] = x[i] * s;
    }
    if s > 0.0 {
        (s, y)
    } else {
        (-s, y)
    }
}

fn main() {
    let _ = signed(&[1.0], 2.0);
}
