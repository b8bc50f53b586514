use linear_ad::Differentiable;

#[derive(Differentiable)]
struct Point<T> {
    x: T,
    y: T,
}

fn main() {}
