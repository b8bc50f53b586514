use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable)]
pub struct Cloud {
    pub points: Vec<f64>,
    pub weight: f64,
}

#[differentiable]
fn nearer(a: &Cloud, b: &Cloud, x: f64) -> f64 {
    let c = if x > 0.0 { a } else { b };
    c.points[0] * x
}

fn main() {}
