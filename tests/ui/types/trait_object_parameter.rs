use linear_ad::differentiable;

#[differentiable]
pub fn apply(f: &dyn Fn(f64) -> f64, x: f64) -> f64 {
    f(x) * x
}

fn main() {
    let _ = apply(&|v| v, 1.0);
}
