use linear_ad::{differentiable, linear};

#[differentiable]
pub fn sq(x: f64) -> f64 {
    x * x
}

#[linear]
pub fn twice(#[linear] x: f64) -> f64 {
    2.0 * x
}

/// Every call that cannot be differentiated twice is reported, each at
/// its call.
#[differentiable(order = 2)]
pub fn f(x: f64) -> f64 {
    sq(x) * twice(x) + sq(x + 1.0)
}

fn main() {
    let _ = f_hessian(1.0);
}
