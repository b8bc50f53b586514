use linear_ad::differentiable;

#[derive(Clone, Copy)]
pub struct Vec2 {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
pub fn f(x: f64, y: f64) -> f64 {
    let p = Vec2 { x, y: x * y };
    p.x * p.y
}

fn main() {
    let _ = f(1.0, 2.0);
}
