use linear_ad::differentiable;

#[differentiable]
pub fn boxed(x: f64) -> Box<f64> {
    Box::new(x)
}

fn main() {}
