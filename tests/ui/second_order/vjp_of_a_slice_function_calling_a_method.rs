use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Spring {
    pub k: f64,
}

#[differentiable]
impl Spring {
    #[differentiable(order = 2)]
    pub fn energy(&self, x: f64, scale: f64) -> f64 {
        scale * self.k * x * x
    }
}

// `energy` is a method of another block, passed a constant: `total` cannot
// tell whether that parameter is `#[nondiff]` (no cotangent) or not, so
// its VJP cannot go through `energy_vjp`; and `total` takes a slice, whose
// length the derivative by forward mode (one run per input) cannot know.
#[differentiable(order = 2)]
pub fn total(k: f64, xs: &[f64]) -> f64 {
    let s = Spring { k };
    let mut e = 0.0;
    for x in xs {
        e += s.energy(*x, 0.5);
    }
    e
}

#[differentiable]
pub fn grad_norm(k: f64, xs: &[f64]) -> f64 {
    let (_, (gk, _)): (f64, (f64, Vec<f64>)) = total_vjp(k, xs, 1.0);
    gk * gk
}

fn main() {}
