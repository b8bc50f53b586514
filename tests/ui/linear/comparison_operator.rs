use linear_ad::linear;

#[linear]
pub fn gated(a: f64, #[linear] x: f64) -> f64 {
    let on = (x < a) as i32 as f64;
    on * a
}

fn main() {}
