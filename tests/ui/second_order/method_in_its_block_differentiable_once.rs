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

    // The block knows `energy`'s order: the error is at the call.
    #[differentiable(order = 2)]
    pub fn doubled(&self, x: f64) -> f64 {
        2.0 * self.energy(x)
    }
}

fn main() {}
