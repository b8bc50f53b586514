use linear_ad::differentiable;

// One error, at the macro: the method called on its result is not
// reported again.
#[differentiable]
pub fn digits(x: f64) -> f64 {
    format!("{x}").len() as f64 * x
}

fn main() {}
