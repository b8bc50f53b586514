use linear_ad::differentiable;

const LOW: f64 = -1e300;

// The accumulator's type comes from the initial value, and a constant
// item's type is not visible to the macro.
#[differentiable]
fn largest(xs: &[f64]) -> f64 {
    xs.iter().fold(LOW, |a, &b| a.max(b))
}

fn main() {
    let _ = largest(&[1.0, 2.0]);
}
