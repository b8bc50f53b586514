use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
impl Point {
    #[differentiable]
    pub fn doubled(&self) -> (f64, f64) {
        (2.0 * self.x, 2.0 * self.y)
    }
}

#[differentiable]
fn spread(p: &Point) -> f64 {
    let (a, b) = p.doubled();
    a - b
}

fn main() {
    let _ = spread(&Point { x: 1.0, y: 2.0 });
}
