use linear_ad::differentiable;

#[differentiable]
pub fn scale_first(x: Vec<f64>, k: f64) -> f64 {
    let mut y = x;
    y[0] *= k;
    y[0] + y[1]
}

fn main() {}
