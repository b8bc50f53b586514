use linear_ad::Differentiable;
use std::num::Wrapping;

#[derive(Differentiable, Clone, Copy)]
struct Point<T: linear_ad::num_traits::Float> {
    x: T,
    y: T,
}

#[derive(Differentiable)]
struct Grid {
    origin: Point<f64>,
    cell: Wrapping<u32>,
}

fn main() {}
