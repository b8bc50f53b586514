use linear_ad::differentiable;

#[differentiable(fast)]
pub fn f(x: f64) -> f64 {
    x.sin()
}

fn main() {}
