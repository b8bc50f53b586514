use linear_ad::differentiable;

#[differentiable(order = 2)]
fn cube(x: f64) -> f64 {
    x * x * x
}

// `cube_jvp` is differentiable (order = 2), so `cube_jvp_jvp` exists; its
// own derivative would be a third derivative of `cube`.
#[differentiable]
fn third(x: f64) -> f64 {
    let (_, (_, d2)) = cube_jvp_jvp(x, 1.0, 1.0, 0.0);
    d2 * x
}

fn main() {
    let _ = third(1.0);
}
