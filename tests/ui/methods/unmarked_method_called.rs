use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
impl Point {
    pub fn norm2(&self) -> f64 {
        self.x * self.x + self.y * self.y
    }

    #[differentiable]
    pub fn energy(&self, k: f64) -> f64 {
        k * self.norm2()
    }
}

fn main() {
    let _ = Point { x: 1.0, y: 2.0 }.energy(2.0);
}
