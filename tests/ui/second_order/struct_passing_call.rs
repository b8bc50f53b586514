use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Vec2 {
    pub x: f64,
    pub y: f64,
}

#[differentiable(order = 2)]
pub fn norm2(p: Vec2) -> f64 {
    p.x * p.x + p.y * p.y
}

#[differentiable(order = 2)]
pub fn f(x: f64, y: f64) -> f64 {
    norm2(Vec2 { x, y: x * y })
}

fn main() {
    let _ = f(1.0, 2.0);
}
