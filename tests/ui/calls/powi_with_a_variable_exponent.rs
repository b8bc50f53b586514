use linear_ad::differentiable;

#[differentiable]
pub fn power(x: f64, n: i32) -> f64 {
    x.powi(n)
}

fn main() {}
