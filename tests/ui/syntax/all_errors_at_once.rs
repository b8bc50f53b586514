use linear_ad::differentiable;

// Three independent problems: each is reported, in one compilation.
#[differentiable]
pub fn several(x: f64, y: f64) -> f64 {
    let a = x.rem_euclid(2.0);
    let b = if y > 0.0 { y } else { x };
    let c = x % y;
    a + b + c
}

fn main() {
    // The function itself still compiles: no cascade of errors here.
    let _ = several(1.0, 2.0);
}
