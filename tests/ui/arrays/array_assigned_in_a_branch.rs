use linear_ad::differentiable;

#[differentiable]
pub fn pick(x: &[f64], y: &[f64]) -> f64 {
    let mut a = x;
    if x[0] > 0.0 {
        a = y;
    }
    a[0]
}

fn main() {}
