use linear_ad::num_traits::Float;
use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
struct Point<T: Float> {
    x: T,
    y: T,
}

#[differentiable]
impl<T: Float> Point<T> {
    #[differentiable]
    fn scaled<U: Float>(&self, k: T) -> T {
        self.x * k + self.y
    }
}

fn main() {}
