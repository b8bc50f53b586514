use linear_ad::differentiable;

#[differentiable]
pub fn f(x: f64) -> f64 {
    let y = x * 2.0;
    y = y + 1.0;
    y
}

fn main() {}
