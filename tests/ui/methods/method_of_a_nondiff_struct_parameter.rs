use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Spring {
    pub k: f64,
}

#[differentiable]
impl Spring {
    #[differentiable]
    pub fn energy(&self, x: f64) -> f64 {
        0.5 * self.k * x * x
    }
}

// A method of a constant struct, given a differentiable argument (with a
// constant one, `s.energy(2.0)`, the call is ordinary Rust).
#[differentiable]
pub fn total(#[nondiff] s: &Spring, x: f64) -> f64 {
    s.energy(x) * x + s.energy(2.0)
}

fn main() {}
