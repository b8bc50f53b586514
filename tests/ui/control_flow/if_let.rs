use linear_ad::differentiable;

#[differentiable]
pub fn maybe(x: f64, #[nondiff] k: Option<f64>) -> f64 {
    if let Some(k) = k {
        x * k
    } else {
        x
    }
}

fn main() {}
