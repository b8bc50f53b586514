use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
impl Point {
    #[differentiable]
    pub fn energy(&self, k: f64) -> f64 {
        k * self.x
    }

    pub fn norm2(&self) -> f64 {
        self.x * self.x + self.y * self.y
    }
}

#[differentiable]
fn total(p: &Point, k: f64) -> f64 {
    p.energy(k) + p.norm2()
}

fn main() {
    let _ = total(&Point { x: 1.0, y: 2.0 }, 2.0);
}
