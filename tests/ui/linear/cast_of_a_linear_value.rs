use linear_ad::linear;

#[linear]
pub fn narrowed(#[linear] x: f64) -> f32 {
    x as f32
}

fn main() {}
