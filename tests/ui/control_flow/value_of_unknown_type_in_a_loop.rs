use linear_ad::differentiable;

#[differentiable]
pub fn scaled(x: f64, #[nondiff] data: &[f64]) -> f64 {
    let mut s = x;
    for i in 0..data.len() {
        let d = data.get(i).copied().unwrap_or_default();
        s = s * d;
    }
    s
}

fn main() {}
