use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable)]
pub struct Cloud {
    pub points: Vec<f64>,
    pub weight: f64,
}

#[differentiable]
fn total(c: &Cloud, k: f64) -> f64 {
    let d = Cloud {
        points: vec![k; 3],
        weight: c.weight,
    };
    d.weight
}

fn main() {}
