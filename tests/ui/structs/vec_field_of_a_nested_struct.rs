use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable)]
pub struct Cloud {
    pub points: Vec<f64>,
}

#[derive(Differentiable)]
pub struct Scene {
    pub cloud: Cloud,
    pub light: f64,
}

#[differentiable]
fn total(s: &Scene) -> f64 {
    s.light * s.cloud.points[0]
}

fn main() {}
