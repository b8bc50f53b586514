use linear_ad::differentiable;

#[differentiable]
pub fn step(x: f64, y: f64) -> f64 {
    let b = (x < y) as i32 as f64;
    b * x
}

fn main() {}
