use linear_ad::differentiable;

#[differentiable]
pub fn rounded(x: f64) -> f64 {
    x.div_euclid(2.0) * x
}

fn main() {}
