use linear_ad::differentiable;

#[differentiable]
pub fn sign(x: f64) -> f64 {
    match x {
        0.0 => 0.0,
        _ => x,
    }
}

fn main() {}
