use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Body {
    pub mass: f64,
    #[nondiff]
    pub id: usize,
}

#[differentiable]
fn heavier(b: Body) -> f64 {
    let c = Body { mass: 2.0 * b.mass, id: b.id };
    c.mass
}

#[differentiable]
fn same(b: Body) -> Body {
    b
}

fn main() {}
