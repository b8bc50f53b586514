use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone)]
pub struct Cloud {
    pub points: Vec<f64>,
    pub weight: f64,
}

#[differentiable]
fn total(c: &Cloud, k: f64) -> f64 {
    let mut d = c.clone();
    d.points[0] = k;
    d.weight * d.points[0]
}

fn main() {}
