use linear_ad::differentiable;

#[differentiable]
fn prefix(x: &[f64], s: f64) -> (f64, Vec<f64>) {
    let mut y = vec![0.0; x.len()];
    for i in 0..x.len() {
        if x[i] < 0.0 {
            return (s, y);
        }
        y[i] = x[i] * s;
    }
    (s, y)
}

fn main() {
    let _ = prefix(&[1.0], 2.0);
}
