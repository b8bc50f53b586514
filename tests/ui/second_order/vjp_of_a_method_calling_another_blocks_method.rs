use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Spring {
    pub k: f64,
}

#[differentiable]
impl Spring {
    #[differentiable(order = 2)]
    pub fn energy(&self, x: f64) -> f64 {
        0.5 * self.k * x * x
    }
}

#[derive(Differentiable, Clone, Copy)]
pub struct Damper {
    pub c: f64,
}

#[differentiable]
impl Damper {
    // `energy` is a method of another block: `loaded_vjp`'s reverse pass
    // reads its tape, so `loaded_vjp` is not differentiable.
    #[differentiable(order = 2)]
    pub fn loaded(&self, s: &Spring, x: f64) -> f64 {
        self.c * s.energy(x)
    }
}

#[differentiable]
pub fn grad_norm(d: &Damper, s: &Spring, x: f64) -> f64 {
    let (_, (gd, _, gx)): (f64, (DamperTangent, SpringTangent, f64)) = d.loaded_vjp(s, x, 1.0);
    gd.c * gd.c + gx * gx
}

fn main() {}
