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

#[differentiable(order = 2)]
pub fn f(k: f64, x: f64) -> f64 {
    let s = Spring { k };
    s.energy(x) + x
}

fn main() {
    let _ = f(1.0, 2.0);
}
