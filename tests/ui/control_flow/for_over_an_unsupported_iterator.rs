use linear_ad::differentiable;

#[differentiable]
pub fn smooth(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter().step_by(2) {
        s += v * v;
    }
    s
}

fn main() {}
