use linear_ad::differentiable;

#[differentiable(order = 3)]
pub fn f(x: f64) -> f64 {
    x * x * x
}

fn main() {
    let _ = f_vjp(1.0, 1.0);
}
