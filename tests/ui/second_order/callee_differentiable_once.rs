use linear_ad::differentiable;

#[differentiable]
pub fn sq(x: f64) -> f64 {
    x * x
}

#[differentiable(order = 2)]
pub fn f(x: f64) -> f64 {
    sq(x) * x
}

fn main() {
    let _ = f_hessian(1.0);
}
