use linear_ad::differentiable;

#[differentiable]
pub fn pick(x: f64, k: u8) -> f64 {
    match k {
        0 => x,
        _ => x * x,
    }
}

fn main() {}
