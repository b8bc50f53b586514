use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Debug)]
pub struct Model {
    pub k: f64,
}

#[differentiable]
impl Model {
    #[differentiable]
    pub fn loss(&self, x: &[f64], #[nondiff] w: &[f64]) -> f64 {
        self.k * (w[0] * x[0] + w[1] * x[1])
    }
}

#[differentiable]
pub fn total(m: &Model, x: &[f64], #[nondiff] w: &[f64]) -> f64 {
    m.loss(x, w)
}

fn main() {}
