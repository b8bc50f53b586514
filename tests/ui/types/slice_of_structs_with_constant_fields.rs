use linear_ad::{differentiable, Differentiable};

#[derive(Clone, Copy, Differentiable)]
pub struct Body {
    pub x: f64,
    pub v: f64,
    #[nondiff]
    pub m: f64,
}

#[differentiable]
pub fn kinetic(bodies: &[Body]) -> f64 {
    let mut e = 0.0;
    for b in bodies {
        e += 0.5 * b.m * b.v * b.v;
    }
    e
}

fn main() {
    let _ = kinetic(&[Body { x: 0.0, v: 1.0, m: 2.0 }]);
}
