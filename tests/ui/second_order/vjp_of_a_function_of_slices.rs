use linear_ad::differentiable;

#[differentiable(order = 2)]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

#[differentiable]
pub fn first_gradient_entry(x: &[f64], y: &[f64]) -> f64 {
    let (_, (gx, _)) = dot_vjp(x, y, 1.0);
    gx[0]
}

fn main() {}
