use linear_ad::{differentiable, Differentiable};

#[derive(Clone, Copy, Differentiable)]
pub struct Body {
    pub pos: [f64; 3],
    pub m: f64,
}

#[differentiable]
pub fn height(bodies: &[Body]) -> f64 {
    let mut e = 0.0;
    for b in bodies {
        e += b.m * b.pos[2];
    }
    e
}

fn main() {
    let _ = height(&[Body { pos: [0.0; 3], m: 2.0 }]);
}
