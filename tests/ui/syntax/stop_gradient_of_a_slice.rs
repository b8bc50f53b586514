use linear_ad::{differentiable, stop_gradient};

#[differentiable]
fn total(x: &[f64]) -> f64 {
    let y = stop_gradient(x);
    y[0] + x[1]
}

fn main() {
    let _ = total(&[1.0, 2.0]);
}
