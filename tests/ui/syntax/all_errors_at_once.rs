use linear_ad::differentiable;

// Three independent problems: each is reported, in one compilation.
#[differentiable]
pub fn several(x: f64, y: f64) -> f64 {
    let a = x.div_euclid(2.0);
    let b = if y > 0.0 { y } else { x };
    let c = (|t: f64| t * y)(x);
    let d = x.midpoint(y);
    a + b + c + d
}

fn main() {
    // The function itself still compiles: no cascade of errors here.
    let _ = several(1.0, 2.0);
}
