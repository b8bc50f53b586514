use linear_ad::linear;

#[linear]
pub fn constant(a: f64, #[linear] x: f64) -> f64 {
    let _ = x;
    a * 2.0
}

fn main() {}
