use linear_ad::differentiable;

pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
fn norm(p: Point) -> f64 {
    (p.x * p.x + p.y * p.y).sqrt()
}

fn main() {
    let _ = norm(Point { x: 3.0, y: 4.0 });
}
