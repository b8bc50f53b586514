use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
impl std::ops::Add for Point {
    type Output = Point;
    #[differentiable]
    fn add(self, o: Point) -> Point {
        Point { x: self.x + o.x, y: self.y + o.y }
    }
}

fn main() {
    let p = Point { x: 1.0, y: 2.0 };
    let _ = p + p;
}
