use linear_ad::num_traits::Float;
use linear_ad::Differentiable;

#[derive(Differentiable)]
struct Weighted<T: Float, W> {
    x: T,
    #[nondiff]
    w: W,
}

#[derive(Differentiable)]
struct Unbounded<T> {
    x: T,
}

fn main() {}
