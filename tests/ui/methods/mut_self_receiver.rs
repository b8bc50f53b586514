use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
impl Point {
    #[differentiable]
    pub fn scale(&mut self, k: f64) -> f64 {
        self.x *= k;
        self.x
    }
}

fn main() {
    let mut p = Point { x: 1.0, y: 2.0 };
    let _ = p.scale(2.0);
}
