use linear_ad::differentiable;

#[differentiable]
pub fn norm1(pts: &[[f64; 3]]) -> f64 {
    let mut s = 0.0;
    for p in pts.iter() {
        for j in 0..3 {
            s += p[j].abs();
        }
    }
    s
}

fn main() {}
