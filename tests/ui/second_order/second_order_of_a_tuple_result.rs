use linear_ad::differentiable;

#[differentiable(order = 2)]
pub fn polar(r: f64, t: f64) -> (f64, f64) {
    (r * t.cos(), r * t.sin())
}

fn main() {
    // The error is at `order = 2`, not here: `polar_hvp` exists as a stub.
    let _ = polar_hvp(1.0, 0.5, 1.0, 0.0);
}
