use linear_ad::differentiable;

#[differentiable]
pub fn first<'a>(xs: &'a [f64], k: f64) -> f64 {
    xs[0] * k
}

fn main() {
    let _ = first(&[1.0], 2.0);
}
