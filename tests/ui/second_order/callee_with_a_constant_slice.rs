use linear_ad::differentiable;

#[differentiable(order = 2)]
pub fn weighted(#[nondiff] w: &[f64], x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += w[i] * x[i] * x[i];
    }
    s
}

#[differentiable(order = 2)]
pub fn energy(#[nondiff] w: &[f64], x: &[f64]) -> f64 {
    weighted(w, x).sin()
}

fn main() {}
