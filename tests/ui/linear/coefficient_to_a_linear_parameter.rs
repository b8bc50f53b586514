use linear_ad::linear;

#[linear]
pub fn scaled(k: f64, #[linear] x: f64) -> f64 {
    k * x
}

#[linear]
pub fn affine_call(a: f64, #[linear] x: f64) -> f64 {
    // `a` is a coefficient here, but `scaled` is linear in its second
    // argument: the call would be affine in `x`'s absence.
    scaled(x, a)
}

fn main() {}
