//! The rest of f64's differentiable methods: each computes what std
//! computes, and its derivative agrees with central differences and across
//! modes. Piecewise-constant methods (`floor`, `ceil`, `round`, `trunc`,
//! `signum`) have derivative zero away from their jumps.
#![deny(warnings)]

mod support;

use linear_ad::differentiable;

#[differentiable]
fn smooth(x: f64, y: f64) -> f64 {
    let a = x.ln_1p() + y.exp_m1();
    let b = (x * 0.5).asinh() + (y * y + 1.5).acosh() + (x * 0.3).atanh();
    let c = f64::log(x + 2.0, y + 3.0) + x.to_radians() + y.to_degrees();
    let (s, co) = (x * y).sin_cos();
    let d = x.clamp(-0.5, 0.8) + y.copysign(x) + x.mul_add(y, 0.25);
    a + b + c + s * co + d
}

fn smooth_by_std(x: f64, y: f64) -> f64 {
    let a = x.ln_1p() + y.exp_m1();
    let b = (x * 0.5).asinh() + (y * y + 1.5).acosh() + (x * 0.3).atanh();
    let c = (x + 2.0).log(y + 3.0) + x.to_radians() + y.to_degrees();
    let (s, co) = (x * y).sin_cos();
    let d = x.clamp(-0.5, 0.8) + y.copysign(x) + x.mul_add(y, 0.25);
    a + b + c + s * co + d
}

#[differentiable]
fn stepped(x: f64) -> f64 {
    x * x.floor() + x.ceil() * 2.0 + x.round() + x.trunc() * x + x.fract() * x + x.signum()
}

#[differentiable]
fn angles32(x: f32) -> f32 {
    x.to_radians() * 3.0 + x.to_degrees() + f32::fract(x)
}

fn check2(f: fn(f64, f64) -> f64, x: f64, y: f64) {
    support::check_xy((x, y), f, smooth_jvp, smooth_vjp, smooth_lin);
}

#[test]
fn smooth_methods_compute_std_values_and_their_derivatives() {
    // Both signs of `x`, for `copysign`, and `x` inside and outside the
    // clamped range.
    for (x, y) in [(0.3, -0.7), (1.2, 0.4), (-0.4, 0.25), (-0.9, -1.1)] {
        let want = smooth_by_std(x, y);
        assert!((smooth(x, y) - want).abs() <= 1e-12 * want.abs());
        let (v, _) = smooth_vjp(x, y, 1.0);
        assert!((v - want).abs() <= 1e-12 * want.abs(), "{v} vs {want}");
        check2(smooth_by_std, x, y);
    }
}

#[test]
fn piecewise_constant_methods_have_derivative_zero() {
    for x in [1.3, -2.7, 0.45, 5.5001] {
        let (v, d) = stepped_jvp(x, 1.0);
        assert_eq!(v, stepped(x));
        // The `x *` factors, and `fract(x) = x - trunc(x)`, of slope 1.
        let want = x.floor() + x.trunc() + (x.fract() + x);
        assert!((d - want).abs() < 1e-12, "{d} vs {want} at {x}");
        let (_, g) = stepped_vjp(x, 1.0);
        assert_eq!(g, d);
        let h = 1e-7;
        let fd = (stepped(x + h) - stepped(x - h)) / (2.0 * h);
        assert!((fd - d).abs() < 1e-5, "{fd} vs {d}");
    }
}

#[test]
fn f32_constants_are_the_ones_std_multiplies_by() {
    for x in [0.7f32, -123.25, 33.0] {
        let (v, d) = angles32_jvp(x, 1.0);
        assert_eq!(v.to_bits(), angles32(x).to_bits());
        let want = std::f32::consts::PI / 180.0 * 3.0 + 57.295_78 + 1.0;
        assert!((d - want).abs() < 1e-4, "{d} vs {want}");
    }
}

#[differentiable]
fn with_constants(x: f64) -> f64 {
    x * std::f64::consts::PI + f64::EPSILON * x + core::f64::consts::E
}

#[test]
fn std_constants_are_constants() {
    let (v, d) = with_constants_jvp(2.0, 1.0);
    assert_eq!(v, with_constants(2.0));
    assert_eq!(d, std::f64::consts::PI + f64::EPSILON);
}
