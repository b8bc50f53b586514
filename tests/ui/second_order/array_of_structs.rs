use linear_ad::{differentiable, Differentiable};

#[derive(Clone, Copy, Differentiable)]
pub struct Body {
    pub x: f64,
    pub v: f64,
}

#[differentiable(order = 2)]
pub fn kinetic(bodies: &[Body]) -> f64 {
    bodies.iter().map(|b| 0.5 * b.v * b.v).sum()
}

fn main() {
    let _ = kinetic(&[Body { x: 0.0, v: 1.0 }]);
}
