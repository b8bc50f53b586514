use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

// A struct's tangent has no lanes: refused at `lanes`, and only
// `apply_lanes` is missing (the other derivatives are generated).
#[differentiable(lanes)]
pub fn norm2(p: Point) -> f64 {
    p.x * p.x + p.y * p.y
}

#[differentiable(lanes)]
pub fn generic<T: linear_ad::num_traits::Float>(x: T) -> T {
    x * x
}

#[differentiable]
pub fn square(x: f64) -> f64 {
    x * x
}

#[differentiable(lanes)]
pub fn caller(x: f64) -> f64 {
    square(x) + x
}

fn main() {
    let (_, g) = norm2_vjp(Point { x: 1.0, y: 2.0 }, 1.0);
    let _ = g.x + g.y;
    let _ = generic_vjp(1.0f64, 1.0);
    let _ = caller_vjp(1.0, 1.0);
}
