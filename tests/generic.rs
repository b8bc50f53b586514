//! Functions generic in their float type (issue 10): `fn f<T: Float>`,
//! with `T::zero()`, `T::one()`, `T::from(..).unwrap()` of constants and
//! loop indices, `T::sin(x)` and `Float::exp(x)`, slices of `T`, and a
//! `where` clause. Each generic function is checked against the same
//! body written for `f64` and for `f32`: one body serves both with the
//! same values and derivatives, in all three modes.

#![allow(clippy::needless_range_loop)]

use linear_ad::num_traits::Float;
use linear_ad::{differentiable, LinearMap};

#[differentiable]
fn bump<T: Float>(x: T, y: T) -> T {
    let half = T::from(0.5).unwrap();
    T::sin(x) * y + Float::exp(-half * x * x) - T::one() / (T::from(2).unwrap() + y * y)
        + x % (y + T::from(3).unwrap())
}

#[differentiable]
fn bump_f64(x: f64, y: f64) -> f64 {
    let half = 0.5;
    f64::sin(x) * y + f64::exp(-half * x * x) - 1.0 / (2.0 + y * y) + x % (y + 3.0)
}

#[differentiable]
fn bump_f32(x: f32, y: f32) -> f32 {
    let half = 0.5;
    f32::sin(x) * y + f32::exp(-half * x * x) - 1.0 / (2.0 + y * y) + x % (y + 3.0)
}

#[test]
fn one_body_two_float_types() {
    for (x, y) in [(0.3, -1.2), (1.7, 0.4), (-2.0, 2.5)] {
        assert_eq!(bump(x, y), bump_f64(x, y));
        assert_eq!(bump_jvp(x, y, 0.7, -0.2), bump_f64_jvp(x, y, 0.7, -0.2));
        assert_eq!(bump_vjp(x, y, 1.0), bump_f64_vjp(x, y, 1.0));
        let (xf, yf) = (x as f32, y as f32);
        assert_eq!(bump(xf, yf), bump_f32(xf, yf));
        assert_eq!(bump_jvp(xf, yf, 0.7, -0.2), bump_f32_jvp(xf, yf, 0.7, -0.2));
        assert_eq!(bump_vjp(xf, yf, 1.0), bump_f32_vjp(xf, yf, 1.0));
        // The linearization of either instance applies and transposes.
        let (_, l) = bump_lin(xf, yf);
        let (_, l32) = bump_f32_lin(xf, yf);
        assert_eq!(l.apply((0.7, -0.2)), l32.apply((0.7, -0.2)));
        assert_eq!(l.transpose(1.0), l32.transpose(1.0));
    }
    // And they are derivatives: central differences in f64.
    let (x, y, h) = (0.3, -1.2, 1e-6);
    let (_, (dx, dy)) = bump_vjp(x, y, 1.0);
    let fd_x = (bump(x + h, y) - bump(x - h, y)) / (2.0 * h);
    let fd_y = (bump(x, y + h) - bump(x, y - h)) / (2.0 * h);
    assert!((dx - fd_x).abs() < 1e-8 && (dy - fd_y).abs() < 1e-8);
}

/// A loop over a slice of `T`, the loop index converted to `T`, and the
/// bound in a `where` clause.
#[differentiable]
fn weighted<T>(xs: &[T], k: T) -> T
where
    T: Float,
{
    let mut s = T::zero();
    for i in 0..xs.len() {
        let w = T::from(i).unwrap() + T::one();
        s = s + w * (k * xs[i]).tanh();
    }
    s
}

#[differentiable]
fn weighted_f64(xs: &[f64], k: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..xs.len() {
        let w = i as f64 + 1.0;
        s += w * (k * xs[i]).tanh();
    }
    s
}

#[test]
fn slices_loops_and_index_conversion() {
    let xs = [0.5, -1.0, 2.0, 0.25];
    assert_eq!(weighted(&xs, 0.8), weighted_f64(&xs, 0.8));
    let (y, (dxs, dk)) = weighted_vjp(&xs, 0.8, 1.0);
    let (y64, (dxs64, dk64)) = weighted_f64_vjp(&xs, 0.8, 1.0);
    assert_eq!((y, &dxs, dk), (y64, &dxs64, dk64));
    let d = [0.1, 0.2, -0.3, 0.4];
    assert_eq!(
        weighted_jvp(&xs, 0.8, &d, 0.5),
        weighted_f64_jvp(&xs, 0.8, &d, 0.5)
    );
    // In f32, against the f64 instance.
    let xs32 = xs.map(|v| v as f32);
    let (_, (dxs32, dk32)) = weighted_vjp(&xs32, 0.8f32, 1.0);
    for (a, b) in dxs32.iter().zip(&dxs64) {
        assert!((*a as f64 - b).abs() < 1e-5, "{a} vs {b}");
    }
    assert!((dk32 as f64 - dk64).abs() < 1e-5);
}

/// Generic callers name `linear_ad::Real` for the generated functions.
fn gradient<T: linear_ad::Real>(x: T, y: T) -> (T, T) {
    bump_vjp(x, y, T::one()).1
}

#[test]
fn generic_callers() {
    assert_eq!(gradient(0.3f64, -1.2), bump_f64_vjp(0.3, -1.2, 1.0).1);
    assert_eq!(gradient(0.3f32, -1.2), bump_f32_vjp(0.3, -1.2, 1.0).1);
}

/// A generic callee of differentiable code: its tuple result needs no
/// annotation (the signature is read at the call's float type).
#[differentiable]
pub fn polar<T: Float>(x: T, y: T) -> (T, T) {
    ((x * x + y * y).sqrt(), y.atan2(x))
}

/// A generic caller: `polar` and `bump` at the caller's `T`.
#[differentiable]
fn spiral<T: Float>(x: T, y: T) -> T {
    let (r, t) = polar(x, y);
    r * t + bump(t, r)
}

/// Non-generic callers: the calls are at `f64` and at `f32`.
#[differentiable]
fn spiral_f64(x: f64, y: f64) -> f64 {
    let (r, t) = polar(x, y);
    r * t + bump(t, r)
}

#[differentiable]
fn spiral_f32(x: f32, y: f32) -> f32 {
    let (r, t) = polar(x, y);
    r * t + bump(t, r)
}

fn spiral_by_hand(x: f64, y: f64) -> f64 {
    let (r, t) = ((x * x + y * y).sqrt(), y.atan2(x));
    r * t + bump_f64(t, r)
}

#[test]
fn generic_callees_at_the_callers_float_type() {
    for (x, y) in [(0.3, 1.2), (-1.7, 0.4)] {
        assert_eq!(spiral(x, y), spiral_f64(x, y));
        assert!((spiral(x, y) - spiral_by_hand(x, y)).abs() < 1e-12);
        assert_eq!(spiral_vjp(x, y, 1.0), spiral_f64_vjp(x, y, 1.0));
        assert_eq!(spiral_jvp(x, y, 0.4, -0.9), spiral_f64_jvp(x, y, 0.4, -0.9));
        let (xf, yf) = (x as f32, y as f32);
        assert_eq!(spiral(xf, yf), spiral_f32(xf, yf));
        assert_eq!(spiral_vjp(xf, yf, 1.0), spiral_f32_vjp(xf, yf, 1.0));
        let (_, l) = spiral_lin(xf, yf);
        assert_eq!(l.transpose(1.0), spiral_f32_vjp(xf, yf, 1.0).1);
        // Derivatives, by central differences in f64.
        let h = 1e-6;
        let (_, (dx, dy)) = spiral_vjp(x, y, 1.0);
        let fd_x = (spiral_by_hand(x + h, y) - spiral_by_hand(x - h, y)) / (2.0 * h);
        let fd_y = (spiral_by_hand(x, y + h) - spiral_by_hand(x, y - h)) / (2.0 * h);
        assert!(
            (dx - fd_x).abs() < 1e-7 && (dy - fd_y).abs() < 1e-7,
            "{dx} {fd_x} {dy} {fd_y}"
        );
    }
}
