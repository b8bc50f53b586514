use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Point {
    pub x: f64,
    #[nondiff]
    pub id: usize,
}

#[differentiable]
fn f(p: &Point) -> f64 {
    let mut q = *p;
    q.x *= 2.0;
    q.id += 1;
    q.x * q.id as f64
}

fn main() {}
