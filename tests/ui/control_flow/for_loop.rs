use linear_ad::differentiable;

#[differentiable]
pub fn power(x: f64) -> f64 {
    let mut acc = 1.0;
    for _ in 0..3 {
        acc *= x;
    }
    acc
}

fn main() {}
