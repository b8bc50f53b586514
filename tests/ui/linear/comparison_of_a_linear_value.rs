use linear_ad::linear;

#[linear]
pub fn clipped(a: f64, #[linear] x: f64) -> f64 {
    let m = x.max(a);
    m * a
}

fn main() {}
