use linear_ad::{differentiable, Differentiable};

#[derive(Clone, Copy, Differentiable)]
pub struct Particle {
    pub x: f64,
    #[nondiff]
    pub m: f64,
}

#[differentiable]
pub fn moved(ps: &[Particle], dt: f64) -> Vec<Particle> {
    let mut out: Vec<Particle> = Vec::new();
    for p in ps {
        out.push(Particle { x: p.x + dt, m: p.m });
    }
    out
}

fn main() {
    let _ = moved(&[Particle { x: 0.0, m: 1.0 }], 0.1);
}
