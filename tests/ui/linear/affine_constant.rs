use linear_ad::linear;

#[linear]
pub fn shifted(a: f64, #[linear] x: f64) -> f64 {
    let y = a * x + 1.0;
    y + a
}

fn main() {}
