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

#[differentiable(order = 2)]
pub fn total(k: f64, x: f64) -> f64 {
    let s = Spring { k };
    s.energy(x) * x
}

// `total_vjp`'s reverse pass reads `energy`'s tape: no derivative of it
// goes through the method call yet.
#[differentiable]
pub fn grad_norm(k: f64, x: f64) -> f64 {
    let (_, (gk, gx)) = total_vjp(k, x, 1.0);
    gk * gk + gx * gx
}

fn main() {}
