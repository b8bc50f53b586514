use linear_ad::linear;

#[linear]
pub fn wave(a: f64, #[linear] x: f64) -> f64 {
    a * x.sin() + f64::exp(x)
}

fn main() {}
