use linear_ad::differentiable;

#[differentiable]
pub fn f(x: f64) -> f64 {
    let double = |v: f64| v * 2.0;
    let again = double;
    again(x)
}

fn main() {}
