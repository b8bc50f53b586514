use linear_ad::linear;

#[linear]
pub fn ratio(a: f64, #[linear] x: f64) -> f64 {
    a / x
}

fn main() {}
