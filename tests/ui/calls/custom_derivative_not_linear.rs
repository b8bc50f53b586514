use linear_ad::differentiable;

// The derivative must be a `#[linear]` function: its linearity is what
// makes the transpose (reverse mode) derivable.
pub fn square_tangent(x: f64, dx: f64) -> f64 {
    2.0 * x * dx
}

#[differentiable(jvp = square_tangent)]
pub fn square(x: f64) -> f64 {
    x * x
}

fn main() {}
