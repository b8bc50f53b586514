use linear_ad::differentiable;

#[differentiable(checkpoint = "revolve")]
pub fn f(x: f64) -> f64 {
    x * x
}

fn main() {}
