use linear_ad::differentiable;

// A `[T; N]` result built in a local array with an early exit: the exit's
// result starts as N values, the local array is one array.
#[differentiable]
fn clipped(x: &[f64]) -> [f64; 3] {
    let mut y = [0.0; 3];
    if x[0] > 1.0 {
        return y;
    }
    for i in 0..3 {
        y[i] = x[i] * 2.0;
    }
    y
}

fn main() {
    let _ = clipped(&[1.0, 2.0, 3.0]);
}
