use linear_ad::differentiable;

#[differentiable]
pub fn scale(v: &mut [f64]) -> f64 {
    v[0]
}

fn main() {}
