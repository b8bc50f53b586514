use linear_ad::differentiable;

#[differentiable]
fn square(x: f64) -> f64 {
    x * x
}

#[differentiable]
fn outer(x: f64) -> f64 {
    let (_, d) = square_jvp(x, 1.0);
    d * x
}

fn main() {
    let _ = outer(1.0);
}
