use linear_ad::Differentiable;

#[derive(Differentiable)]
struct Body {
    mass: f64,
    name: String,
    parent: Option<usize>,
}

fn main() {}
