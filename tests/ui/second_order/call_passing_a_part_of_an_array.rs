use linear_ad::differentiable;

#[differentiable(order = 2)]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

#[differentiable(order = 2)]
pub fn halves(x: &[f64]) -> f64 {
    let h = x.len() / 2;
    dot(&x[..h], &x[h..]).sin()
}

fn main() {}
