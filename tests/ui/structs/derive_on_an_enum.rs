use linear_ad::Differentiable;

#[derive(Differentiable)]
enum Shape {
    Circle(f64),
    Square(f64),
}

fn main() {}
