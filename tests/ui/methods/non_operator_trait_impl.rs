use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

pub trait Energy {
    fn energy(&self) -> f64;
}

#[differentiable]
impl Energy for Point {
    #[differentiable]
    fn energy(&self) -> f64 {
        self.x * self.x + self.y * self.y
    }
}

fn main() {
    let _ = Point { x: 1.0, y: 2.0 }.energy();
}
