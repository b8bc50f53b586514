#![deny(warnings)]
use linear_ad::{differentiable, LinearMap};

#[differentiable]
pub fn f(x: f64, y: f64) -> f64 {
    let a = x * y;
    a.sin() + x
}

fn main() {
    let (v, d) = f_jvp(0.5, 2.0, 1.0, 0.0);
    let (_, lin) = f_lin(0.5, 2.0);
    assert_eq!(lin.apply((1.0, 0.0)), d);
    let (w, g) = f_vjp(0.5, 2.0, 1.0);
    assert_eq!(v, w);
    assert_eq!(lin.transpose(1.0), g);
}
