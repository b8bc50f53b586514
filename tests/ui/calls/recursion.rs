use linear_ad::differentiable;

#[differentiable]
pub fn fact(x: f64, n: u32) -> f64 {
    if n == 0 {
        1.0
    } else {
        x * fact(x, n - 1)
    }
}

fn main() {}
