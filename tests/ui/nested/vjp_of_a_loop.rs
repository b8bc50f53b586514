use linear_ad::differentiable;

#[differentiable(order = 2)]
fn looped(x: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        s += (x * i as f64).sin();
    }
    s
}

#[differentiable]
fn outer(x: f64) -> f64 {
    let (_, g) = looped_vjp(x, 1.0);
    g * x
}

fn main() {
    let _ = outer(1.0);
}
