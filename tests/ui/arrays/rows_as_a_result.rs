use linear_ad::differentiable;

#[differentiable]
pub fn scaled(pts: &[[f64; 3]], k: f64) -> Vec<[f64; 3]> {
    pts.iter().map(|p| [k * p[0], k * p[1], k * p[2]]).collect()
}

fn main() {}
