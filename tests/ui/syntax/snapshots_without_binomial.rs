use linear_ad::differentiable;

#[differentiable(checkpoint = "state", snapshots = 8)]
pub fn f(x: f64) -> f64 {
    x * x
}

fn main() {
    let _ = f(1.0);
}
