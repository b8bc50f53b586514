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

// Outside its block, the macro cannot see `energy`'s order: rustc
// reports the missing second derivatives at the call.
#[differentiable(order = 2)]
pub fn f(k: f64, x: f64) -> f64 {
    let s = Spring { k };
    s.energy(x) + x
}

fn main() {
    let _ = f(1.0, 2.0);
}
