use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Point {
    pub x: f64,
    #[nondiff]
    pub id: usize,
}

// `q` keeps `p`'s constant fields but not its value: the call cannot pass
// `p` in its place.
#[differentiable]
fn f(p: &Point) -> f64 {
    let mut q = *p;
    q.x *= 2.0;
    h(&q) + q.id as f64
}

#[differentiable]
fn h(p: &Point) -> f64 {
    p.x * p.id as f64
}

fn main() {}
