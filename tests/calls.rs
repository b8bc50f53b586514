//! Calls between `#[differentiable]` functions: compiled as calls to the
//! callee's generated functions (never inlined), across modules, with
//! constant arguments, array arguments and tuple results.
#![deny(warnings)]

use linear_ad::{differentiable, LinearMap};

mod geometry {
    use linear_ad::differentiable;

    #[differentiable]
    pub fn norm(p: [f64; 3]) -> f64 {
        (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt()
    }

    /// `c` and `n` are constants; `v` and `k` differentiable.
    #[differentiable]
    pub fn scale(v: (f64, f64), k: f64, #[nondiff] c: f64, n: usize) -> (f64, f64) {
        let m = c * n as f64;
        (v.0 * k * m, v.1.sin() * k)
    }
}

#[differentiable]
pub fn square(x: f64) -> f64 {
    x * x
}

#[differentiable]
pub fn uses_calls(x: f64, y: f64) -> f64 {
    let a = square(x);
    let n = geometry::norm([x, y, 1.0]);
    let s: (f64, f64) = geometry::scale((a, y), n, 2.0, 3);
    let t: (f64, f64) = geometry::scale((y, x), 1.5, 0.5, 2);
    let b = square(2.0 * y) + s.0 * s.1 + t.0 - t.1;
    // All arguments constant: an ordinary call, no derivative needed.
    let k = square(3.0);
    a * n + b * k
}

fn by_hand(x: f64, y: f64) -> f64 {
    let a = x * x;
    let n = (x * x + y * y + 1.0).sqrt();
    let s = (a * n * 6.0, y.sin() * n);
    let t = (y * 1.5 * 1.0, x.sin() * 1.5);
    let b = 4.0 * y * y + s.0 * s.1 + t.0 - t.1;
    a * n + b * 9.0
}

fn fd(f: impl Fn(f64, f64) -> f64, x: f64, y: f64, dx: f64, dy: f64) -> f64 {
    let h = 1e-6;
    (f(x + h * dx, y + h * dy) - f(x - h * dx, y - h * dy)) / (2.0 * h)
}

#[test]
fn calls_compute_the_same_values_as_the_inlined_function() {
    for (x, y) in [(0.3, -0.7), (1.2, 0.4)] {
        assert!((uses_calls(x, y) - by_hand(x, y)).abs() < 1e-12 * by_hand(x, y).abs());
    }
}

#[test]
fn derivatives_through_calls() {
    for (x, y) in [(0.3, -0.7), (1.2, 0.4), (-0.9, 0.25)] {
        let (v, (gx, gy)) = uses_calls_vjp(x, y, 1.0);
        assert_eq!(v, uses_calls(x, y));
        let (nx, ny) = (fd(by_hand, x, y, 1.0, 0.0), fd(by_hand, x, y, 0.0, 1.0));
        assert!(
            (gx - nx).abs() < 1e-5 * (1.0 + nx.abs()),
            "d/dx {gx} vs {nx}"
        );
        assert!(
            (gy - ny).abs() < 1e-5 * (1.0 + ny.abs()),
            "d/dy {gy} vs {ny}"
        );

        let (v2, t) = uses_calls_jvp(x, y, 0.6, -0.8);
        assert_eq!(v2, v);
        assert!((t - (0.6 * gx - 0.8 * gy)).abs() < 1e-10 * (1.0 + t.abs()));

        let (_, lin) = uses_calls_lin(x, y);
        assert_eq!(lin.apply((0.6, -0.8)), t);
        assert_eq!(lin.transpose(1.0), (gx, gy));
    }
}

#[test]
fn callee_api_is_usable_directly() {
    let p = [1.0, 2.0, 2.0];
    let (n, g) = geometry::norm_vjp(p, 1.0);
    assert_eq!(n, 3.0);
    assert!((g[0] - 1.0 / 3.0).abs() < 1e-15 && (g[2] - 2.0 / 3.0).abs() < 1e-15);
    let ((a, b), (dv, dk)) = geometry::scale_vjp((1.0, 0.5), 2.0, 1.0, 1, (1.0, 0.0));
    assert_eq!((a, b), (2.0, 0.5f64.sin() * 2.0));
    assert_eq!((dv, dk), ((2.0, 0.0), 1.0));
}

/// A local array with an annotated type and constant elements, carried
/// by a loop and passed whole to a callee: it crosses as an array, not as
/// the tuple the IR holds it as.
#[differentiable]
pub fn carried_array_argument(k: f64) -> f64 {
    let mut p: [f64; 3] = [1.0, 2.0, 0.5];
    for _ in 0..3 {
        let n = geometry::norm(p);
        p = [p[0] * k / n, p[1] + k, p[2] * n];
    }
    geometry::norm(p)
}

#[test]
fn a_carried_local_array_is_passed_as_an_array() {
    let by_hand = |k: f64| {
        let mut p = [1.0_f64, 2.0, 0.5];
        for _ in 0..3 {
            let n = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
            p = [p[0] * k / n, p[1] + k, p[2] * n];
        }
        (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt()
    };
    for k in [0.3, 1.7] {
        assert_eq!(carried_array_argument(k), by_hand(k));
        let (_, d) = carried_array_argument_vjp(k, 1.0);
        let want = (by_hand(k + 1e-6) - by_hand(k - 1e-6)) / 2e-6;
        assert!(
            (d - want).abs() < 1e-6 * (1.0 + want.abs()),
            "{d} against {want}"
        );
    }
}

/// `c` is a constant, `n` a count: the caller passes a count it computes.
#[differentiable]
pub fn damped(x: f64, #[nondiff] c: f64, n: usize) -> f64 {
    let mut s = x;
    for _ in 0..n {
        s = c * s.sin() + x;
    }
    s
}

#[differentiable]
pub fn pick(x: f64, up: bool) -> f64 {
    if up {
        x * x
    } else {
        -x
    }
}

/// Integers and bools computed in the function (from a loop index) are
/// passed to the callees' constant parameters: as values, with no
/// tangent.
#[differentiable]
#[allow(clippy::needless_range_loop)]
pub fn computed_counts(x: [f64; 3]) -> f64 {
    let mut s = 0.0;
    for k in 0..3 {
        s += damped(x[k], 0.75, k + 1) * pick(x[k], k % 2 == 0);
    }
    s
}

fn computed_counts_by_hand(x: [f64; 3]) -> f64 {
    let mut s = 0.0;
    for (k, &xk) in x.iter().enumerate() {
        let mut d = xk;
        for _ in 0..k + 1 {
            d = 0.75 * d.sin() + xk;
        }
        let p = if k % 2 == 0 { xk * xk } else { -xk };
        s += d * p;
    }
    s
}

#[test]
fn computed_integers_and_bools_are_passed_to_constant_parameters() {
    let x = [0.3, -0.4, 1.2];
    let want = computed_counts_by_hand(x);
    assert!((computed_counts(x) - want).abs() < 1e-14);
    let (v, g) = computed_counts_vjp(x, 1.0);
    assert_eq!(v, computed_counts(x));
    for i in 0..3 {
        let at = |t: f64| {
            let mut p = x;
            p[i] += t;
            computed_counts_by_hand(p)
        };
        let nd = (at(1e-6) - at(-1e-6)) / 2e-6;
        assert!(
            (g[i] - nd).abs() < 1e-6 * (1.0 + nd.abs()),
            "{i}: {} against {nd}",
            g[i]
        );
    }
    let d = [0.5, -1.0, 0.25];
    let (_, t) = computed_counts_jvp(x, d);
    let gd: f64 = (0..3).map(|i| g[i] * d[i]).sum();
    assert!((t - gd).abs() < 1e-12 * (1.0 + t.abs()));
    let (_, lin) = computed_counts_lin(x);
    assert_eq!(lin.apply(d), t);
    assert_eq!(lin.transpose(1.0), g);
}

/// A plain Rust function, not differentiable: differentiable code may
/// call it on constants.
pub fn weight(k: usize) -> f64 {
    1.0 / (k as f64 + 1.0)
}

/// Calls whose only non-constant arguments are loop indices, with no
/// annotation: each takes its float type from its context (the other
/// operand, or the variable it is added to), whether the callee is plain
/// Rust or differentiable.
#[differentiable]
pub fn weighted_sum(x: f64, y: f64) -> f64 {
    let mut s = 0.0;
    for k in 0..4 {
        s += damped(2.0, 0.75, k);
        s += x * weight(k) + weight(k + 1) * y;
        s -= (weight(k) * 2.0) * x * y;
    }
    s
}

#[test]
fn calls_on_loop_indices_take_their_type_from_their_context() {
    let (x, y) = (0.7, -1.3);
    let mut want = 0.0;
    let (mut gx, mut gy) = (0.0, 0.0);
    for k in 0..4 {
        want += damped(2.0, 0.75, k) + x * weight(k) + weight(k + 1) * y - weight(k) * 2.0 * x * y;
        gx += weight(k) - 2.0 * weight(k) * y;
        gy += weight(k + 1) - 2.0 * weight(k) * x;
    }
    assert!((weighted_sum(x, y) - want).abs() < 1e-14 * (1.0 + want.abs()));
    let (v, (dx, dy)) = weighted_sum_vjp(x, y, 1.0);
    assert_eq!(v, weighted_sum(x, y));
    assert!(
        (dx - gx).abs() < 1e-14 && (dy - gy).abs() < 1e-14,
        "({dx}, {dy}) against ({gx}, {gy})"
    );
}

/// The same calls written into array elements and tuple fields: each
/// takes the element's or field's float type.
#[differentiable]
pub fn weighted_parts(x: f64) -> ([f64; 2], (f64, f64)) {
    let mut a = [x, 0.0];
    let mut t = (x, x * x);
    for k in 0..3 {
        a[1] += weight(k);
        a[0] = weight(k + 1);
        t.1 += weight(k);
    }
    (a, t)
}

#[test]
fn calls_on_loop_indices_written_into_elements_and_fields() {
    let x = 0.6;
    let w: f64 = (0..3).map(weight).sum();
    let (a, t) = weighted_parts(x);
    assert_eq!((a, t), ([weight(3), w], (x, x * x + w)));
    let (_, dx) = weighted_parts_vjp(x, ([0.0, 1.0], (1.0, 1.0)));
    // d/dx of a[1] + t.0 + t.1 = 0 + 1 + 2x.
    assert!((dx - (1.0 + 2.0 * x)).abs() < 1e-15, "{dx}");
}
