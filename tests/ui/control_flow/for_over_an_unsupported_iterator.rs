use linear_ad::differentiable;

#[differentiable]
pub fn smooth(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for w in x.windows(2) {
        s += w[1] - w[0];
    }
    s
}

fn main() {}
