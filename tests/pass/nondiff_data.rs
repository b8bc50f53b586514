#![deny(warnings)]
use linear_ad::differentiable;

// A `#[nondiff]` parameter of any type is a constant passed through: here a
// data slice read by inactive code.
#[differentiable]
pub fn weighted(x: f64, #[nondiff] data: &[f64]) -> f64 {
    let mean = data.iter().sum::<f64>() / data.len() as f64;
    (x - mean) * (x - mean)
}

fn main() {
    let data = [1.0, 2.0, 3.0];
    let (v, g) = weighted_vjp(4.0, &data, 1.0);
    assert_eq!(v, 4.0);
    assert_eq!(g, 4.0);
}
