use linear_ad::linear;

#[linear]
pub fn scaled(k: f64, #[linear] x: f64) -> f64 {
    k * x
}

#[linear]
pub fn misuse(#[linear] x: f64, #[linear] y: f64) -> f64 {
    // `x` is linear here, but `scaled` uses its first argument as a
    // coefficient.
    scaled(x, y)
}

fn main() {}
