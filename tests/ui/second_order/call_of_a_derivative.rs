use linear_ad::differentiable;

#[differentiable(order = 2)]
pub fn sq(x: f64) -> f64 {
    x * x
}

#[differentiable(order = 2)]
pub fn g(x: f64) -> f64 {
    let (a, b) = sq_jvp(x, 1.0);
    a * b
}

fn main() {
    let _ = g_hessian(1.0);
}
