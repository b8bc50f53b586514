use linear_ad::differentiable;

#[differentiable]
pub fn part(x: &[f64]) -> f64 {
    let s = &x[1..3];
    s[0] * s[1]
}

fn main() {
    let _ = part(&[1.0, 2.0, 3.0]);
}
