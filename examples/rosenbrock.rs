//! Gradient descent on the Rosenbrock function, with the gradient from
//! reverse mode (`f_vjp`) checked against the formula.
//!
//! Run with `cargo run --example rosenbrock`.

use linear_ad::differentiable;

/// f(x, y) = (1 - x)² + 100 (y - x²)², minimum 0 at (1, 1).
#[differentiable]
pub fn rosenbrock(x: f64, y: f64) -> f64 {
    let a = 1.0 - x;
    let b = y - x * x;
    a * a + 100.0 * b * b
}

fn main() {
    let (mut x, mut y) = (-1.2, 1.0);
    let step = 1e-3;
    for i in 0..=20_000 {
        let (f, (gx, gy)) = rosenbrock_vjp(x, y, 1.0);
        if i % 4_000 == 0 {
            println!(
                "step {i:5}: f({x:+.6}, {y:+.6}) = {f:.3e}, |grad| = {:.3e}",
                gx.hypot(gy)
            );
        }
        // The hand-written gradient, to show the two agree.
        let exact = (
            -2.0 * (1.0 - x) - 400.0 * x * (y - x * x),
            200.0 * (y - x * x),
        );
        assert!((gx - exact.0).abs() <= 1e-12 * (1.0 + exact.0.abs()));
        assert!((gy - exact.1).abs() <= 1e-12 * (1.0 + exact.1.abs()));
        x -= step * gx;
        y -= step * gy;
    }
    println!("after gradient descent: ({x:.4}, {y:.4}); the minimum is at (1, 1)");
}
