use linear_ad::differentiable;

#[differentiable]
pub fn first(xs: &[f64]) -> f64 {
    if let Some(v) = xs.first() {
        *v
    } else {
        0.0
    }
}

fn main() {}
