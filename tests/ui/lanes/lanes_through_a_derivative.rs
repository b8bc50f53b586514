use linear_ad::differentiable;

#[differentiable(order = 2)]
pub fn cube(x: f64) -> f64 {
    x * x * x
}

// `cube_vjp` is differentiable, but callers' lanes cannot go through it.
#[differentiable(lanes)]
pub fn slope(x: f64) -> f64 {
    let (_, g) = cube_vjp(x, 1.0);
    g * g
}

fn main() {
    let _ = slope(1.0);
}
