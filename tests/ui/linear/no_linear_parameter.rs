use linear_ad::linear;

#[linear]
pub fn scale(a: f64, x: f64) -> f64 {
    a * x
}

fn main() {}
