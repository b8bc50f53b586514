use linear_ad::linear;

#[linear]
pub fn outer(#[linear] x: f64, #[linear] y: f64) -> f64 {
    x * y + x
}

fn main() {}
