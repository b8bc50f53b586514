use linear_ad::differentiable;

#[differentiable]
pub fn scale(xs: &mut [f64], k: f64) -> f64 {
    xs[0] *= k;
    xs[0]
}

fn main() {
    let _ = scale(&mut [1.0], 2.0);
}
