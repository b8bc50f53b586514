use linear_ad::{differentiable, Differentiable};

#[derive(Clone, Differentiable)]
pub struct Chain {
    pub links: Vec<f64>,
    pub k: f64,
}

#[differentiable]
pub fn stiffness(chains: &[Chain]) -> f64 {
    let mut e = 0.0;
    for c in chains {
        e += c.k;
    }
    e
}

fn main() {
    let _ = stiffness(&[Chain { links: vec![], k: 2.0 }]);
}
