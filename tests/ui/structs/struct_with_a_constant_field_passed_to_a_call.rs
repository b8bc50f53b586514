use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    #[nondiff]
    pub id: usize,
}

#[differentiable]
fn f(p: Point) -> f64 {
    p.x + h(p)
}

#[differentiable]
fn h(p: Point) -> f64 {
    p.y * p.id as f64
}

fn main() {}
