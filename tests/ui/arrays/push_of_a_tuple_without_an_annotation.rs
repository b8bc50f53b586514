use linear_ad::differentiable;

#[differentiable]
pub fn pairs(x: &[f64]) -> f64 {
    let mut p = Vec::new();
    for v in x.iter() {
        p.push((*v, v * v));
    }
    p[0].0 + p[0].1
}

fn main() {}
