//! The quickstart: one function, its derivative in all three modes.
//!
//! Run with `cargo run --example quickstart`.

use linear_ad::{differentiable, LinearMap};

/// f(x, y) = sin(x·y) + x
#[differentiable]
pub fn f(x: f64, y: f64) -> f64 {
    let a = x * y;
    a.sin() + x
}

fn main() {
    let (x, y) = (0.5, 2.0);
    println!("f({x}, {y}) = {}", f(x, y));

    // Forward mode: one directional derivative per call.
    let (_, df_dx) = f_jvp(x, y, 1.0, 0.0);
    let (_, df_dy) = f_jvp(x, y, 0.0, 1.0);
    println!("forward mode:  df/dx = {df_dx:.6}, df/dy = {df_dy:.6}");

    // Reverse mode: the whole gradient in one call.
    let (_, (gx, gy)) = f_vjp(x, y, 1.0);
    println!("reverse mode:  df/dx = {gx:.6}, df/dy = {gy:.6}");

    // Linearize once, apply and transpose from the same tape.
    let (_, lin) = f_lin(x, y);
    println!(
        "linearization: J·(1, 0) = {:.6}, Jᵀ·1 = {:?}",
        lin.apply((1.0, 0.0)),
        lin.transpose(1.0)
    );

    let exact = ((x * y).cos() * y + 1.0, (x * y).cos() * x);
    println!(
        "by hand:       df/dx = {:.6}, df/dy = {:.6}",
        exact.0, exact.1
    );
}
