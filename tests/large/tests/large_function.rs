//! A generated straight-line function of 10,000 statements, compiled in the
//! profile `cargo test` uses (debug, with debug information): its
//! expansion has about 300,000 `let`s, and rustc's debug information
//! overflowed its stack on a few thousand nested ones before code generation
//! grouped long runs of statements into chunks. Its derivatives are checked
//! against finite differences and between modes.
//!
//! Unoptimised code gives every intermediate its own stack slot, so the
//! derivatives of a function this long need a stack of several megabytes in
//! a debug build: the test runs them on a thread with a larger stack.

// The generated source ends each block with `let aN = ..; aN`.
#![allow(clippy::let_and_return)]

use linear_ad::LinearMap;

include!(concat!(env!("OUT_DIR"), "/chain.rs"));

#[test]
fn a_ten_thousand_statement_function_builds_in_debug_and_differentiates() {
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(check)
        .expect("thread")
        .join()
        .expect("derivatives agree");
}

fn check() {
    let (x, y) = (0.3, 0.7);
    let (v, (gx, gy)) = chain_10000_vjp(x, y, 1.0);
    assert_eq!(v, chain_10000(x, y));
    let h = 1e-6;
    let fx = (chain_10000(x + h, y) - chain_10000(x - h, y)) / (2.0 * h);
    let fy = (chain_10000(x, y + h) - chain_10000(x, y - h)) / (2.0 * h);
    assert!((gx - fx).abs() <= 1e-6 * (1.0 + fx.abs()), "{gx} vs {fx}");
    assert!((gy - fy).abs() <= 1e-6 * (1.0 + fy.abs()), "{gy} vs {fy}");
    let (_, dx) = chain_10000_jvp(x, y, 1.0, 0.0);
    assert!((dx - gx).abs() <= 1e-12 * (1.0 + gx.abs()));
    let (_, lin) = chain_10000_lin(x, y);
    assert_eq!(lin.transpose(1.0), (gx, gy));
    assert!((lin.apply((0.0, 1.0)) - gy).abs() <= 1e-12 * (1.0 + gy.abs()));
}
