use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    #[nondiff]
    pub id: usize,
}

// `p` is one parameter or the other: its constant fields are not known
// where the call is made.
#[differentiable]
fn f(a: Point, b: Point, c: bool) -> f64 {
    let p = if c { a } else { b };
    p.x + h(p) * p.id as f64
}

#[differentiable]
fn h(p: Point) -> f64 {
    p.y * p.id as f64
}

fn main() {}
