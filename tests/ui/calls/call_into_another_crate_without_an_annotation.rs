use linear_ad::differentiable;
use linear_ad_callee::polar;

#[differentiable]
pub fn radius(x: f64, y: f64) -> f64 {
    let (r, _) = polar(x, y);
    r + linear_ad_callee::nested::logistic(x)
}

fn main() {}
