use linear_ad::differentiable;

#[differentiable]
pub fn weighted(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for (i, a, b) in v.iter().enumerate() {
        s += a * i as f64;
    }
    s
}

fn main() {}
