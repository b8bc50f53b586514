use linear_ad::differentiable;

#[differentiable]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

#[differentiable]
pub fn energy(a: &[f64], x: &[f64]) -> f64 {
    let m = x.len();
    let mut e = 0.0;
    for i in 0..a.len() / m {
        let y = dot(&a[i * m..(i + 1) * m], x);
        e += y * y;
    }
    e
}

fn main() {}
