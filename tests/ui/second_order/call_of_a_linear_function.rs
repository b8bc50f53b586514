use linear_ad::{differentiable, linear};

#[linear]
pub fn twice(#[linear] x: f64) -> f64 {
    2.0 * x
}

#[differentiable(order = 2)]
pub fn f(x: f64) -> f64 {
    twice(x) * x
}

fn main() {
    let _ = f_hessian(1.0);
}
