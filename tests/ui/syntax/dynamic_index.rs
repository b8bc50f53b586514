use linear_ad::differentiable;

#[differentiable]
pub fn pick(v: [f64; 3], i: usize) -> f64 {
    v[i] * 2.0
}

fn main() {}
