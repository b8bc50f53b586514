use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
fn f(p: Point) -> f64 {
    p.x * p.w
}

fn main() {}
