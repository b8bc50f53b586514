use linear_ad::differentiable;

#[derive(Clone, Copy)]
pub enum Shape {
    Circle,
    Square,
}

#[differentiable]
pub fn area(shape: Shape, r: f64) -> f64 {
    match shape {
        Shape::Circle => 3.0 * r * r,
        Shape::Square => r * r,
    }
}

fn main() {
    let _ = area(Shape::Square, 1.0);
    let _ = Shape::Circle;
}
