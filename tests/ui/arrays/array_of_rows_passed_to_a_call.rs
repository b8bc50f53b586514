use linear_ad::differentiable;

#[differentiable]
pub fn first(p: &[[f64; 2]]) -> f64 {
    p[0][0] * p[0][1]
}

#[differentiable]
pub fn scaled(p: &[[f64; 2]]) -> f64 {
    3.0 * first(p)
}

fn main() {}
