use linear_ad::differentiable;

#[differentiable]
pub fn weighted(x: f64, #[nondiff] w: &[f64]) -> f64 {
    let mut s = 0.0;
    for wi in w.iter() {
        s += wi * x;
    }
    s
}

fn main() {}
