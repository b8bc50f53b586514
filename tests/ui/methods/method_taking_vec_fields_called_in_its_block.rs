use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable)]
pub struct Layer {
    pub w: Vec<f64>,
    pub gain: f64,
}

#[differentiable]
impl Layer {
    #[differentiable]
    pub fn first(&self) -> f64 {
        self.w[0] * self.gain
    }

    #[differentiable]
    pub fn twice(&self) -> f64 {
        self.first() * 2.0
    }
}

fn main() {}
