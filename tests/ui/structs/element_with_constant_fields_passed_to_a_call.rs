use linear_ad::{differentiable, Differentiable};

#[derive(Clone, Copy, Differentiable)]
pub struct Particle {
    pub x: f64,
    #[nondiff]
    pub m: f64,
}

#[differentiable]
pub fn weight(p: &Particle) -> f64 {
    p.x * p.m
}

#[differentiable]
pub fn total(ps: &[Particle]) -> f64 {
    let mut e = 0.0;
    for p in ps {
        e += weight(p);
    }
    e
}

fn main() {
    let _ = total(&[Particle { x: 0.0, m: 1.0 }]);
}
