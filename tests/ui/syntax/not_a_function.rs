use linear_ad::differentiable;

#[differentiable]
pub struct Point {
    pub x: f64,
}

fn main() {}
