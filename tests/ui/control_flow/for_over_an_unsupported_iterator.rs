use linear_ad::differentiable;

#[differentiable]
pub fn smooth(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter().skip_while(|v| **v < 0.0) {
        s += v * v;
    }
    s
}

fn main() {}
