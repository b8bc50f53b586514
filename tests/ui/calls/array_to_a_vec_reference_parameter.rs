use linear_ad::differentiable;

#[differentiable]
#[allow(clippy::ptr_arg)]
pub fn total(v: &Vec<f64>) -> f64 {
    v[0] + v[1]
}

#[differentiable]
pub fn twice(v: &Vec<f64>) -> f64 {
    2.0 * total(v)
}

fn main() {}
