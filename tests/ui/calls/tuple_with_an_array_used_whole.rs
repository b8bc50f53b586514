use linear_ad::differentiable;

#[differentiable]
fn scaled(x: &[f64], s: f64) -> (f64, Vec<f64>) {
    let mut y = vec![0.0; x.len()];
    for i in 0..x.len() {
        y[i] = x[i] * s;
    }
    (s * s, y)
}

#[differentiable]
fn either(x: &[f64], s: f64) -> f64 {
    let r = if s > 0.0 { scaled(x, s) } else { scaled(x, -s) };
    r.0 * r.1[0]
}

fn main() {
    let _ = either(&[1.0], 2.0);
}
