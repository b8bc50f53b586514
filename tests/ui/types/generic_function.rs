use linear_ad::differentiable;

#[differentiable]
pub fn square<T: Copy + std::ops::Mul<Output = T>>(x: T) -> T {
    x * x
}

fn main() {}
