use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable)]
pub struct Cloud {
    pub points: Vec<f64>,
    pub weight: f64,
}

#[differentiable]
fn total(c: Cloud) -> f64 {
    c.weight * c.points[0]
}

fn main() {}
