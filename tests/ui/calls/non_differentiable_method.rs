use linear_ad::differentiable;

#[differentiable]
pub fn rounded(x: f64) -> f64 {
    x.floor() * x
}

fn main() {}
