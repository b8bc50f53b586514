use linear_ad::differentiable;

#[differentiable]
#[allow(clippy::needless_late_init)]
pub fn f(x: f64) -> f64 {
    let y;
    if x > 0.0 {
        y = x * x;
    } else {
        y = -x;
    }
    y
}

fn main() {}
