use linear_ad::differentiable;

#[differentiable(order = 2)]
pub fn sdot(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * y[i];
    }
    s
}

// `tail_vjp`'s reverse pass goes through `sdot_vjp`, but the call passes
// parts of arrays, which that path does not take yet.
#[differentiable(order = 2)]
pub fn tail(x: &[f64], y: &[f64]) -> f64 {
    sdot(&x[1..], &y[1..]) * x[0]
}

#[differentiable]
pub fn descend(x: &[f64], y: &[f64]) -> f64 {
    let (_, (gx, _)) = tail_vjp(x, y, 1.0);
    gx[0]
}

fn main() {
    let _ = descend(&[1.0, 2.0], &[0.5, 0.25]);
}
