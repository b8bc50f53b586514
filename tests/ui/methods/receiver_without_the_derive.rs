use linear_ad::differentiable;

pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
impl Point {
    #[differentiable]
    pub fn norm2(&self) -> f64 {
        self.x * self.x + self.y * self.y
    }
}

fn main() {
    let _ = Point { x: 1.0, y: 2.0 }.norm2();
}
