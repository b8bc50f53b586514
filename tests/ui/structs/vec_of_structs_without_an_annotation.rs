use linear_ad::{differentiable, Differentiable};

#[derive(Clone, Copy, Differentiable)]
pub struct Body {
    pub x: f64,
    pub v: f64,
}

#[differentiable]
pub fn step(bodies: &[Body]) -> Vec<Body> {
    let mut out = Vec::with_capacity(bodies.len());
    for b in bodies {
        // An element, not a struct literal: nothing names the `Vec`'s
        // element type.
        out.push(*b);
    }
    out
}

fn main() {
    let _ = step(&[Body { x: 0.0, v: 1.0 }]);
}
