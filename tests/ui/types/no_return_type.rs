use linear_ad::differentiable;

#[differentiable]
pub fn nothing(x: f64) {
    let _ = x;
}

fn main() {}
