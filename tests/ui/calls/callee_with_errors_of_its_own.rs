use linear_ad::differentiable;

// `noisy` fails to expand; its callers stop quietly, so that the one
// error reported is `noisy`'s own, not one per caller saying its
// signature is missing.
#[differentiable]
pub fn noisy(x: f64) -> f64 {
    let s = format!("{x}");
    x * s.len() as f64
}

#[differentiable]
pub fn twice(x: f64) -> f64 {
    noisy(x) * 2.0
}

#[differentiable]
pub fn slope(x: f64) -> f64 {
    let (_, g) = noisy_vjp(x, 1.0);
    g * twice(x)
}

fn main() {
    let _ = slope(1.0);
}
