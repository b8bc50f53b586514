use linear_ad::differentiable;
use linear_ad::num_traits::Float;

#[differentiable]
pub fn cube<T: Float>(x: T) -> T {
    x * x * x
}

#[differentiable]
pub fn uses_cube(x: f64) -> f64 {
    cube(x) + 1.0
}

fn main() {}
