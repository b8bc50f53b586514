use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
struct Point {
    x: f64,
    y: f64,
}

#[differentiable]
impl<'a> Point {
    #[differentiable]
    fn norm(&self) -> f64 {
        self.x * self.y
    }
}

fn main() {}
