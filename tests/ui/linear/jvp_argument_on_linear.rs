use linear_ad::linear;

#[linear]
pub fn tangent(#[linear] dx: f64) -> f64 {
    2.0 * dx
}

#[linear(jvp = tangent)]
pub fn twice(#[linear] x: f64) -> f64 {
    x + x
}

fn main() {}
