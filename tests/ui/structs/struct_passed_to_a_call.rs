use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
fn g(x: f64) -> f64 {
    x * x
}

#[differentiable]
fn f(p: Point) -> f64 {
    g(p.x) + h(p)
}

#[differentiable]
fn h(p: Point) -> f64 {
    p.y
}

fn main() {}
