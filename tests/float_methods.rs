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

#[differentiable]
fn remainders(x: f64, y: f64) -> f64 {
    let mut w = x * 3.0;
    w %= y;
    (x % y) * y + x.rem_euclid(y) + f64::rem_euclid(-x, 0.75) + w
}

/// The gradient of `remainders` from std's quotients: `x % y = x - q·y`
/// with `q = trunc(x / y)`, `x.rem_euclid(y) = x - q·y` with
/// `q = x.div_euclid(y)`.
fn remainders_gradient(x: f64, y: f64) -> (f64, f64) {
    let q = (x / y).trunc();
    let e = x.div_euclid(y);
    let w = (3.0 * x / y).trunc();
    // y from `(x % y) * y`, 1 and -1 from the two `rem_euclid`, 3 from `w`.
    let dx = y + 3.0;
    let dy = x % y - y * q - e - w;
    (dx, dy)
}

#[test]
fn remainders_of_reals_have_slope_one_and_minus_the_quotient() {
    // Every sign of `x` and `y`, away from multiples of `y`.
    for (x, y) in [
        (2.3f64, 0.7f64),
        (-2.3, 0.7),
        (2.3, -0.7),
        (-1.1, -0.45),
        (0.4, 1.3),
    ] {
        let want = (x % y) * y + x.rem_euclid(y) + (-x).rem_euclid(0.75) + (x * 3.0) % y;
        assert_eq!(remainders(x, y), want);
        let (v, (dx, dy)) = remainders_vjp(x, y, 1.0);
        assert_eq!(v, want);
        let (gx, gy) = remainders_gradient(x, y);
        assert!(
            (dx - gx).abs() < 1e-12 && (dy - gy).abs() < 1e-12,
            "{dx} {dy} vs {gx} {gy}"
        );
        support::check_xy(
            (x, y),
            remainders,
            remainders_jvp,
            remainders_vjp,
            remainders_lin,
        );
    }
}

#[differentiable]
fn remainder32(x: f32, y: f32) -> f32 {
    x.rem_euclid(y) + x % y
}

#[test]
fn f32_remainders_compute_std_values() {
    for (x, y) in [(2.3f32, 0.7f32), (-2.3, 0.7)] {
        let (v, d) = remainder32_jvp(x, y, 0.0, 1.0);
        assert_eq!(v.to_bits(), remainder32(x, y).to_bits());
        assert_eq!(v.to_bits(), (x.rem_euclid(y) + x % y).to_bits());
        let want = -x.div_euclid(y) - (x / y).trunc();
        assert!((d - want).abs() < 1e-6, "{d} vs {want}");
    }
}

/// A bit per test, so one value tells which held (for `f32`, through the
/// generic version below).
#[differentiable]
fn tests_of(x: f64) -> f64 {
    let mut code = 0.0;
    if x.is_nan() {
        code += 1.0;
    }
    if x.is_finite() {
        code += 2.0;
    }
    if x.is_infinite() {
        code += 4.0;
    }
    if x.is_sign_negative() {
        code += 8.0;
    }
    if f64::is_sign_positive(x) {
        code += 16.0;
    }
    code
}

#[differentiable]
fn tests_of_generic<T: linear_ad::num_traits::Float>(x: T) -> T {
    let mut code = T::zero();
    if x.is_nan() {
        code = code + T::one();
    }
    if x.is_finite() {
        code = code + T::from(2.0).unwrap();
    }
    if x.is_infinite() {
        code = code + T::from(4.0).unwrap();
    }
    if x.is_sign_negative() {
        code = code + T::from(8.0).unwrap();
    }
    if x.is_sign_positive() {
        code = code + T::from(16.0).unwrap();
    }
    code
}

fn std_code(tests: [bool; 5]) -> f64 {
    tests
        .iter()
        .zip([1.0, 2.0, 4.0, 8.0, 16.0])
        .map(|(&t, bit)| if t { bit } else { 0.0 })
        .sum()
}

#[test]
fn float_tests_hold_where_std_s_do() {
    let negative_nan = -f64::NAN;
    for x in [
        0.0,
        -0.0,
        1.5,
        -2.0,
        f64::MIN_POSITIVE / 4.0,
        f64::MAX,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        negative_nan,
    ] {
        let want = std_code([
            x.is_nan(),
            x.is_finite(),
            x.is_infinite(),
            x.is_sign_negative(),
            x.is_sign_positive(),
        ]);
        assert_eq!(tests_of(x), want);
        assert_eq!(tests_of_jvp(x, 1.0), (want, 0.0), "at {x:e}");
        assert_eq!(tests_of_vjp(x, 1.0), (want, 0.0), "at {x:e}");
        assert_eq!(tests_of_generic_jvp(x, 1.0), (want, 0.0), "at {x:e}");
        let y = x as f32;
        let want32 = std_code([
            y.is_nan(),
            y.is_finite(),
            y.is_infinite(),
            y.is_sign_negative(),
            y.is_sign_positive(),
        ]) as f32;
        assert_eq!(tests_of_generic(y), want32);
        assert_eq!(tests_of_generic_vjp(y, 1.0), (want32, 0.0), "at {y:e}");
    }
}

/// A guard on a test, as numeric code writes one.
#[differentiable]
fn guarded(x: f64) -> f64 {
    if !x.is_finite() {
        return 0.0;
    }
    if x.is_sign_negative() {
        -x * x
    } else {
        x.sqrt()
    }
}

#[test]
fn a_guard_on_a_test_takes_its_branch_s_derivative() {
    // By hand: 1/(2√x) for x ≥ +0, -2x for x ≤ -0, 0 past the finite.
    for (x, d) in [(4.0, 0.25), (-3.0, 6.0), (-0.0, 0.0), (f64::INFINITY, 0.0)] {
        let (v, g) = guarded_vjp(x, 1.0);
        assert_eq!((v, g), (guarded(x), d), "at {x}");
        assert_eq!(guarded_jvp(x, 1.0).1, d, "at {x}");
    }
    assert_eq!(guarded_vjp(f64::NAN, 1.0), (0.0, 0.0));
}
