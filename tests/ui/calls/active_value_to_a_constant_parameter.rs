use linear_ad::differentiable;

#[differentiable]
pub fn scaled(x: f64, #[nondiff] k: f64) -> f64 {
    x * k
}

#[differentiable]
pub fn caller(x: f64, y: f64) -> f64 {
    // `y` is differentiable here, but `scaled` holds `k` constant.
    scaled(x, y)
}

fn main() {}
