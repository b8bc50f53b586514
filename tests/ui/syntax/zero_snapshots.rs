use linear_ad::differentiable;

#[differentiable(checkpoint = "binomial", snapshots = 0)]
pub fn g(x: f64) -> f64 {
    x * x
}

fn main() {
    let _ = g(1.0);
}
