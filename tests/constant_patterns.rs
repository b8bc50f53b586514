//! `match` and `if let` on constant data of any type: a `#[nondiff]`
//! enum, an `Option` of data, the elements of a slice of enums, by value
//! and by reference, with the names the patterns bind read as floats.
//! Each function's derivatives agree with central differences and across
//! modes (`support::check`), at inputs that take every arm.
#![deny(warnings)]

mod support;

use linear_ad::{differentiable, LinearMap};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Spring(f64),
    Damper { c: f64 },
    Free,
}

/// By value, with a tuple variant, a struct variant and a guard reading a
/// differentiable value.
#[differentiable]
fn energy(x: f64, v: f64, #[nondiff] k: Kind) -> f64 {
    match k {
        Kind::Spring(s) => 0.5 * s * x * x + 0.5 * v * v,
        Kind::Damper { c } if v > 0.0 => c * v * x,
        Kind::Damper { .. } => -v * x,
        Kind::Free => 0.5 * v * v,
    }
}

/// By reference: the bindings are `&f64`, read as `s * x` and `*c * x`.
#[differentiable]
fn energy_ref(x: f64, v: f64, #[nondiff] k: &Kind) -> f64 {
    match k {
        Kind::Spring(s) => 0.5 * s * x * x + 0.5 * v * v,
        Kind::Damper { c } if v > 0.0 => *c * v * x,
        Kind::Damper { .. } => -v * x,
        Kind::Free => 0.5 * v * v,
    }
}

fn energy_by_hand(x: f64, v: f64, k: Kind) -> (f64, f64) {
    match k {
        Kind::Spring(s) => (s * x, v),
        Kind::Damper { c } if v > 0.0 => (c * v, c * x),
        Kind::Damper { .. } => (-v, -x),
        Kind::Free => (0.0, v),
    }
}

const KINDS: [Kind; 4] = [
    Kind::Spring(3.0),
    Kind::Damper { c: 0.5 },
    Kind::Damper { c: 0.25 },
    Kind::Free,
];

#[test]
fn a_match_on_an_enum_takes_the_arm_rust_takes() {
    for k in KINDS {
        for (x, v) in [(1.5, 0.75), (-0.5, -1.25)] {
            assert_eq!(energy_vjp(x, v, k, 1.0).0, energy(x, v, k));
            assert_eq!(energy_ref_vjp(x, v, &k, 1.0).0, energy_ref(x, v, &k));
            assert_eq!(energy_vjp(x, v, k, 1.0).1, energy_by_hand(x, v, k));
            assert_eq!(energy_ref_vjp(x, v, &k, 1.0).1, energy_by_hand(x, v, k));
            support::check_xy(
                (x, v),
                |x, v| energy(x, v, k),
                |x, v, dx, dv| energy_jvp(x, v, k, dx, dv),
                |x, v, w| energy_vjp(x, v, k, w),
                |x, v| energy_lin(x, v, k),
            );
            support::check_xy(
                (x, v),
                |x, v| energy_ref(x, v, &k),
                |x, v, dx, dv| energy_ref_jvp(x, v, &k, dx, dv),
                |x, v, w| energy_ref_vjp(x, v, &k, w),
                |x, v| energy_ref_lin(x, v, &k),
            );
        }
    }
}

/// In a loop, on an element of a slice of enums (`kinds[i]`, and `k`
/// bound by iterating the slice), and a statement `match` assigning.
#[differentiable]
fn chain(xs: &[f64], #[nondiff] kinds: &[Kind]) -> f64 {
    let mut e = 0.0;
    for i in 0..xs.len() {
        e += match kinds[i] {
            Kind::Spring(s) => 0.5 * s * xs[i] * xs[i],
            Kind::Damper { c } => c * xs[i].abs(),
            Kind::Free => 0.0,
        };
    }
    for (i, k) in kinds.iter().enumerate() {
        match k {
            Kind::Spring(s) => e *= 1.0 + s * xs[i] * 0.1,
            Kind::Free => e -= xs[i],
            _ => {}
        }
    }
    e
}

#[test]
fn matches_on_elements_of_a_slice_of_enums_in_loops() {
    let kinds = [
        Kind::Spring(2.0),
        Kind::Damper { c: 0.5 },
        Kind::Free,
        Kind::Spring(0.5),
    ];
    let xs = [1.0, -2.0, 3.0, 0.5];
    let f = |x: &[f64]| vec![chain(x, &kinds)];
    support::check(
        &xs,
        1,
        f,
        |x, d| vec![chain_jvp(x, &kinds, d).1],
        |x, w| chain_vjp(x, &kinds, w[0]).1,
        |x, d, w| {
            let (_, l) = chain_lin(x, &kinds);
            (vec![l.apply(d.to_vec())], l.transpose(w[0]))
        },
    );
    assert_eq!(chain_vjp(&xs, &kinds, 1.0).0, chain(&xs, &kinds));
}

/// `if let` on an `Option` by value and by reference, as an expression
/// and as a statement with an early `return`, and nested patterns on the
/// elements of a slice.
#[differentiable]
fn scaled(x: f64, #[nondiff] scale: Option<f64>, #[nondiff] shift: &Option<f64>) -> f64 {
    let mut y = if let Some(s) = scale { x * s } else { x };
    if let Some(t) = shift {
        y += t * x;
    }
    if let Some(0.0) = scale {
        return 0.0;
    }
    y * y
}

#[differentiable]
fn optional(xs: &[f64], #[nondiff] kinds: &[Option<Kind>]) -> f64 {
    let mut e = 0.0;
    for (i, k) in kinds.iter().enumerate() {
        if let Some(Kind::Spring(s)) = k {
            e += s * xs[i] * xs[i];
        } else if let Some(Kind::Damper { c }) = kinds[i] {
            e += c * xs[i];
        }
    }
    e
}

#[test]
fn if_let_on_options_binds_their_contents() {
    // By hand: y = x·s + t·x, f = y², f' = 2y(s + t).
    for (scale, shift) in [(Some(3.0), Some(1.0)), (None, None), (Some(2.0), None)] {
        let x = 1.25;
        let (s, t) = (scale.unwrap_or(1.0), shift.unwrap_or(0.0));
        let y = x * s + t * x;
        assert_eq!(scaled(x, scale, &shift), y * y);
        assert_eq!(
            scaled_vjp(x, scale, &shift, 1.0),
            (y * y, 2.0 * y * (s + t))
        );
        assert_eq!(scaled_jvp(x, scale, &shift, 1.0).1, 2.0 * y * (s + t));
    }
    assert_eq!(scaled_vjp(1.25, Some(0.0), &Some(1.0), 1.0), (0.0, 0.0));
    let kinds = [
        Some(Kind::Spring(2.0)),
        None,
        Some(Kind::Damper { c: 0.5 }),
        Some(Kind::Free),
    ];
    let xs = [1.0, 2.0, 3.0, 4.0];
    let (v, g) = optional_vjp(&xs, &kinds, 1.0);
    assert_eq!(v, optional(&xs, &kinds));
    assert_eq!(g, vec![4.0, 0.0, 0.5, 0.0]);
}

/// A generic float, matched through a constant `Option<T>`.
#[differentiable]
fn generic_scale<T: linear_ad::num_traits::Float>(x: T, #[nondiff] k: Option<T>) -> T {
    match k {
        Some(s) if s > T::zero() => x * s,
        Some(_) => -x,
        None => x * x,
    }
}

#[test]
fn generic_functions_match_on_options_of_their_float() {
    assert_eq!(generic_scale_vjp(2.0f32, Some(3.0), 1.0), (6.0, 3.0));
    assert_eq!(generic_scale_vjp(2.0f64, Some(-1.0), 1.0), (-2.0, -1.0));
    assert_eq!(generic_scale_vjp(2.0f64, None, 1.0), (4.0, 4.0));
    assert_eq!(generic_scale(2.0f64, None), 4.0);
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Loss {
    L2,
    Huber(f64),
    Cauchy { c: f64 },
}

/// A robust loss chosen by a constant enum, one arm guarded by the
/// differentiable residual.
#[differentiable]
fn robust(r: &[f64], #[nondiff] kind: Loss) -> f64 {
    let mut s = 0.0;
    for &e in r {
        s += match kind {
            Loss::L2 => 0.5 * e * e,
            Loss::Huber(d) if e.abs() <= d => 0.5 * e * e,
            Loss::Huber(d) => d * (e.abs() - 0.5 * d),
            Loss::Cauchy { c } => 0.5 * c * c * (1.0 + (e / c).powi(2)).ln(),
        };
    }
    s
}

/// Optional weights whose binding shadows the parameter (`Some(w)` of
/// `w`), read at a loop's index in an arm typed by the `let`.
#[differentiable]
fn weighted_mean(x: &[f64], #[nondiff] w: Option<&[f64]>) -> f64 {
    let (mut s, mut ws) = (0.0, 0.0);
    for i in 0..x.len() {
        let wi: f64 = match w {
            Some(w) => w[i],
            None => 1.0,
        };
        s += wi * x[i];
        ws += wi;
    }
    s / ws
}

#[test]
fn enums_and_options_of_slices_in_loops() {
    let r = [0.5, -2.0];
    // By hand: ψ(e) = e inside the Huber threshold, d·sign(e) outside;
    // e/(1 + e²/c²) for Cauchy.
    assert_eq!(robust_vjp(&r, Loss::L2, 1.0).1, vec![0.5, -2.0]);
    assert_eq!(
        robust_vjp(&r, Loss::Huber(1.0), 1.0),
        (1.625, vec![0.5, -1.0])
    );
    let (v, g) = robust_vjp(&r, Loss::Cauchy { c: 1.0 }, 1.0);
    assert_eq!(v, robust(&r, Loss::Cauchy { c: 1.0 }));
    support::assert_close(&g, &[0.4, -0.4], 1e-15);
    let x = [1.0, 3.0];
    assert_eq!(
        weighted_mean_vjp(&x, Some(&[1.0, 3.0]), 1.0),
        (2.5, vec![0.25, 0.75])
    );
    assert_eq!(weighted_mean_vjp(&x, None, 1.0), (2.0, vec![0.5, 0.5]));
    assert_eq!(weighted_mean(&x, None), 2.0);
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Coef {
    One(f64),
    Maybe(Option<f64>),
}

/// Names bound again and again, each shadowing the one its scrutinee
/// reads (`if let Some(k) = k { match k { Coef::One(k) => .. } }`).
#[differentiable]
fn shadowed(x: f64, #[nondiff] k: Option<Coef>, #[nondiff] ks: &[Coef]) -> f64 {
    let mut s = 0.0;
    if let Some(k) = k {
        match k {
            Coef::One(k) => s += k * x,
            Coef::Maybe(Some(k)) => s += k * x * x,
            Coef::Maybe(None) => s -= x,
        }
    }
    for k in ks {
        if let Coef::Maybe(Some(k)) = k {
            s += k * x;
        }
        let k: f64 = match k {
            Coef::One(v) => *v,
            Coef::Maybe(v) => v.unwrap_or(0.5),
        };
        s += k;
    }
    s
}

#[test]
fn shadowing_bindings_read_what_they_shadow() {
    let ks = [Coef::One(1.0), Coef::Maybe(Some(2.0)), Coef::Maybe(None)];
    // By hand at x = 2: 3x² + 2x + (1 + 2 + 0.5), derivative 6x + 2.
    let k = Some(Coef::Maybe(Some(3.0)));
    assert_eq!(shadowed_vjp(2.0, k, &ks, 1.0), (19.5, 14.0));
    assert_eq!(shadowed(2.0, k, &ks), 19.5);
    assert_eq!(
        shadowed_jvp(2.0, Some(Coef::One(4.0)), &[], 1.0),
        (8.0, 4.0)
    );
    assert_eq!(
        shadowed_vjp(2.0, Some(Coef::Maybe(None)), &[], 1.0),
        (-2.0, -1.0)
    );
}
