use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable)]
pub struct Cloud {
    pub points: Vec<f64>,
}

#[derive(Differentiable)]
pub struct Scene {
    pub clouds: (Cloud, Cloud),
    pub light: f64,
}

#[differentiable]
fn total(s: &Scene) -> f64 {
    s.light * s.clouds.0.points[0]
}

fn main() {}
