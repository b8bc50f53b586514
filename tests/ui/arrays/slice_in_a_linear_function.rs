use linear_ad::linear;

#[linear]
pub fn first(#[linear] v: &[f64]) -> f64 {
    v[0]
}

fn main() {}
