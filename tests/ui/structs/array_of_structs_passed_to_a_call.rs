use linear_ad::{differentiable, Differentiable};

#[derive(Clone, Copy, Differentiable)]
pub struct Body {
    pub x: f64,
    pub v: f64,
}

#[differentiable]
pub fn kinetic(bodies: &[Body]) -> f64 {
    bodies.iter().map(|b| 0.5 * b.v * b.v).sum()
}

#[differentiable]
pub fn total(bodies: &[Body], g: f64) -> f64 {
    let mut p = 0.0;
    for b in bodies {
        p += g * b.x;
    }
    p + kinetic(bodies)
}

fn main() {
    let _ = total(&[Body { x: 0.0, v: 1.0 }], 9.8);
}
