//! Nested derivatives (`#[differentiable(order = 2)]`): `f_jvp` and
//! `f_vjp` are differentiable functions in their turn, with their own
//! `_jvp`, `_lin` and `_vjp`, and other differentiable code can call them
//! (a gradient through an inner gradient). Checked against central
//! finite differences of the first-order functions, against `f_hvp`
//! (forward over reverse against reverse over forward), and by the
//! dot-product identity between each derived function's JVP and VJP; in
//! the crate's own build profile (debug in `cargo test`).
#![deny(warnings)]

use linear_ad::differentiable;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs() + b.abs())
}

#[differentiable(order = 2)]
pub fn wavy(x: f64, y: [f64; 2]) -> f64 {
    (x * y[0]).sin() + y[1].exp() * x / (1.0 + y[0] * y[0])
}

/// A point and a direction to test at, and a second direction.
const AT: [(f64, [f64; 2], f64, [f64; 2]); 3] = [
    (0.3, [-0.5, 0.2], 1.0, [0.0, 0.0]),
    (-1.1, [0.7, -0.4], 0.25, [-1.5, 0.5]),
    (2.0, [1.3, 0.9], -0.75, [0.4, 2.0]),
];

const EPS: f64 = 1e-5;

fn axpy(a: f64, x: [f64; 2], y: [f64; 2]) -> [f64; 2] {
    [y[0] + a * x[0], y[1] + a * x[1]]
}

#[test]
fn the_jvp_of_f_jvp_is_the_derivative_of_f_jvp() {
    for (x, y, dx, dy) in AT {
        // Differentiated along (x, y) only, then along the direction only.
        for (ex, ey, edx, edy) in [
            (0.7, [0.2, -1.0], 0.0, [0.0, 0.0]),
            (0.0, [0.0, 0.0], 0.6, [-0.3, 1.2]),
        ] {
            let at = |t: f64| wavy_jvp(x + t * ex, axpy(t, ey, y), dx + t * edx, axpy(t, edy, dy));
            let ((v, d), (tv, td)) = wavy_jvp_jvp(x, y, dx, dy, ex, ey, edx, edy);
            assert_eq!((v, d), wavy_jvp(x, y, dx, dy));
            let (p, m) = (at(EPS), at(-EPS));
            assert!(
                close(tv, (p.0 - m.0) / (2.0 * EPS), 1e-7),
                "value tangent {tv}"
            );
            assert!(
                close(td, (p.1 - m.1) / (2.0 * EPS), 1e-7),
                "derivative tangent {td}"
            );
        }
    }
}

#[test]
fn the_vjp_of_f_jvp_agrees_with_its_jvp() {
    // <J_g(u), w> = <u, J_g^T(w)> for g = wavy_jvp.
    for (x, y, dx, dy) in AT {
        let u = (0.3, [-0.8, 0.5], 1.1, [0.2, -0.6]);
        let w = (0.9, -1.7);
        let (_, (tv, td)) = wavy_jvp_jvp(x, y, dx, dy, u.0, u.1, u.2, u.3);
        let (_, (cx, cy, cdx, cdy)) = wavy_jvp_vjp(x, y, dx, dy, w);
        let lhs = tv * w.0 + td * w.1;
        let rhs = u.0 * cx
            + u.1[0] * cy[0]
            + u.1[1] * cy[1]
            + u.2 * cdx
            + u.3[0] * cdy[0]
            + u.3[1] * cdy[1];
        assert!(close(lhs, rhs, 1e-12), "{lhs} against {rhs}");
    }
}

/// What `f_vjp` returns for `wavy` and `swept`.
type Vjp = (f64, (f64, [f64; 2]));

/// `tangent` (from `f_vjp_jvp`) against central differences of `at`
/// (`f_vjp` along the same direction, at `t`).
fn matches_differences(tangent: Vjp, at: impl Fn(f64) -> Vjp) {
    let (tv, (tgx, tgy)) = tangent;
    let (p, m) = (at(EPS), at(-EPS));
    let fd = |a: f64, b: f64| (a - b) / (2.0 * EPS);
    assert!(close(tv, fd(p.0, m.0), 1e-7));
    assert!(close(tgx, fd(p.1 .0, m.1 .0), 1e-7), "{tgx}");
    for k in 0..2 {
        assert!(close(tgy[k], fd(p.1 .1[k], m.1 .1[k]), 1e-7), "{tgy:?}");
    }
}

#[test]
fn the_jvp_of_f_vjp_is_the_derivative_of_f_vjp() {
    for (x, y, ex, ey) in AT {
        for ct in [1.0, -0.4] {
            let at = |t: f64| wavy_vjp(x + t * ex, axpy(t, ey, y), ct + t * 0.3);
            let ((v, (gx, gy)), tangent) = wavy_vjp_jvp(x, y, ct, ex, ey, 0.3);
            assert_eq!((v, (gx, gy)), wavy_vjp(x, y, ct));
            matches_differences(tangent, at);
        }
    }
}

#[test]
fn forward_over_reverse_is_reverse_over_forward() {
    // J(f_vjp) at cotangent 1 along v gives H·v; so does f_hvp.
    for (x, y, vx, vy) in AT {
        let (_, (_, (hx, hy))) = wavy_vjp_jvp(x, y, 1.0, vx, vy, 0.0);
        let (_, _, (hx2, hy2)) = wavy_hvp(x, y, vx, vy);
        assert!(close(hx, hx2, 1e-12), "{hx} against {hx2}");
        for k in 0..2 {
            assert!(close(hy[k], hy2[k], 1e-12), "{hy:?} against {hy2:?}");
        }
    }
}

#[test]
fn the_vjp_of_f_vjp_agrees_with_its_jvp() {
    for (x, y, ex, ey) in AT {
        let ct = 0.6;
        let u = (ex, ey, -0.7);
        let w = (1.3, (0.4, [-0.9, 0.25]));
        let (_, (tv, (tgx, tgy))) = wavy_vjp_jvp(x, y, ct, u.0, u.1, u.2);
        let (_, (cx, cy, cct)) = wavy_vjp_vjp(x, y, ct, w);
        let lhs = tv * w.0 + tgx * w.1 .0 + tgy[0] * w.1 .1[0] + tgy[1] * w.1 .1[1];
        let rhs = u.0 * cx + u.1[0] * cy[0] + u.1[1] * cy[1] + u.2 * cct;
        assert!(close(lhs, rhs, 1e-12), "{lhs} against {rhs}");
    }
}

#[test]
fn f_jvp_lin_and_f_vjp_lin_apply_the_same_maps() {
    use linear_ad::LinearMap;
    let (x, y, dx, dy) = AT[1];
    let (v, map) = wavy_jvp_lin(x, y, dx, dy);
    assert_eq!(v, wavy_jvp(x, y, dx, dy));
    let u = (0.3, [-0.8, 0.5], 1.1, [0.2, -0.6]);
    assert_eq!(
        map.apply(u),
        wavy_jvp_jvp(x, y, dx, dy, u.0, u.1, u.2, u.3).1
    );
    let (v, map) = wavy_vjp_lin(x, y, 0.5);
    assert_eq!(v, wavy_vjp(x, y, 0.5));
    let w = (1.3, (0.4, [-0.9, 0.25]));
    assert_eq!(map.transpose(w), wavy_vjp_vjp(x, y, 0.5, w).1);
}

/// Twenty steps of gradient ascent on `wavy(x, ·)` from `y0`, the
/// gradient by forward mode (`wavy_jvp` along each unit vector), and the
/// value reached: differentiable in `x` and `y0` through the steps.
#[differentiable]
pub fn ascent_forward(x: f64, y0: [f64; 2]) -> f64 {
    let mut y = y0;
    for _ in 0..20 {
        let (_, g0) = wavy_jvp(x, y, 0.0, [1.0, 0.0]);
        let (_, g1) = wavy_jvp(x, y, 0.0, [0.0, 1.0]);
        y = [y[0] + 0.05 * g0, y[1] + 0.05 * g1];
    }
    wavy(x, y)
}

/// The same, the gradient by reverse mode (`wavy_vjp`).
#[differentiable]
pub fn ascent_reverse(x: f64, y0: [f64; 2]) -> f64 {
    let mut y = y0;
    for _ in 0..20 {
        let (_, (_, g)) = wavy_vjp(x, y, 1.0);
        y = [y[0] + 0.05 * g[0], y[1] + 0.05 * g[1]];
    }
    wavy(x, y)
}

#[test]
fn gradients_through_an_inner_gradient_ascent_match_finite_differences() {
    for (x, y0) in [(0.3, [-0.5, 0.2]), (-0.6, [0.7, -0.4]), (0.8, [0.1, -1.0])] {
        let (v, vf) = (ascent_forward(x, y0), ascent_reverse(x, y0));
        assert!(close(v, vf, 1e-12), "{v} against {vf}");
        let fd = |f: fn(f64, [f64; 2]) -> f64| {
            let d = |ex: f64, ey: [f64; 2]| {
                (f(x + EPS * ex, axpy(EPS, ey, y0)) - f(x - EPS * ex, axpy(-EPS, ey, y0)))
                    / (2.0 * EPS)
            };
            (d(1.0, [0.0, 0.0]), [d(0.0, [1.0, 0.0]), d(0.0, [0.0, 1.0])])
        };
        let want = fd(ascent_forward);
        // All four: outer reverse or forward, inner forward or reverse.
        let (_, rf) = ascent_forward_vjp(x, y0, 1.0);
        let (_, rr) = ascent_reverse_vjp(x, y0, 1.0);
        let ff = |ex: f64, ey: [f64; 2]| ascent_forward_jvp(x, y0, ex, ey).1;
        let fr = |ex: f64, ey: [f64; 2]| ascent_reverse_jvp(x, y0, ex, ey).1;
        for (name, (gx, gy)) in [
            ("rf", rf),
            ("rr", rr),
            (
                "ff",
                (
                    ff(1.0, [0.0, 0.0]),
                    [ff(0.0, [1.0, 0.0]), ff(0.0, [0.0, 1.0])],
                ),
            ),
            (
                "fr",
                (
                    fr(1.0, [0.0, 0.0]),
                    [fr(0.0, [1.0, 0.0]), fr(0.0, [0.0, 1.0])],
                ),
            ),
        ] {
            assert!(close(gx, want.0, 1e-6), "{name}: {gx} against {}", want.0);
            for k in 0..2 {
                assert!(
                    close(gy[k], want.1[k], 1e-6),
                    "{name}: {gy:?} against {:?}",
                    want.1
                );
            }
        }
    }
}

// The README's example, as written there.
#[differentiable(order = 2)]
pub fn energy(x: f64, y: [f64; 2]) -> f64 {
    (x * y[0]).sin() + y[1] * y[1] * x
}

#[differentiable]
pub fn settled(x: f64, y0: [f64; 2]) -> f64 {
    let mut y = y0;
    for _ in 0..20 {
        let (_, (_, g)) = energy_vjp(x, y, 1.0);
        y = [y[0] - 0.1 * g[0], y[1] - 0.1 * g[1]];
    }
    energy(x, y)
}

#[test]
fn the_readme_example_differentiates_through_the_descent() {
    let (x, y0) = (0.5, [1.0, -1.0]);
    let (value, (dx, dy0)) = settled_vjp(x, y0, 1.0);
    assert_eq!(value, settled(x, y0));
    let (_, d) = settled_jvp(x, y0, 1.0, [0.0, 0.0]);
    let want = (settled(x + EPS, y0) - settled(x - EPS, y0)) / (2.0 * EPS);
    assert!(close(dx, want, 1e-7), "{dx} against {want}");
    assert!(close(d, dx, 1e-12), "{d} against {dx}");
    for k in 0..2 {
        let mut e = [0.0; 2];
        e[k] = EPS;
        let want = (settled(x, axpy(1.0, e, y0)) - settled(x, axpy(-1.0, e, y0))) / (2.0 * EPS);
        assert!(close(dy0[k], want, 1e-7), "{dy0:?} against {want}");
    }
}

/// Derived callees of a function generic in its float type, and of one
/// with constant parameters, which the derived functions take too.
#[differentiable(order = 2)]
pub fn cubic<T: linear_ad::num_traits::Float>(x: T, y: T) -> T {
    x * x * y
}

#[differentiable(order = 2)]
pub fn scaled_sine(x: f64, #[nondiff] c: f64, n: usize) -> f64 {
    let k = c * n as f64;
    (x * k).sin()
}

#[differentiable]
pub fn uses_derived_callees(x: f64) -> f64 {
    let (_, d) = cubic_jvp(x, 2.0, 1.0, 0.0);
    let (_, s) = scaled_sine_jvp(x, 2.0, 3, 1.0);
    let (_, g) = scaled_sine_vjp(x, 0.5, 2, 1.0);
    d * s + g * x
}

#[test]
fn generic_and_constant_parameters_cross_derived_calls() {
    for x in [0.3_f64, -1.2] {
        // By hand: 4x·6cos(6x) + x·cos(x).
        let want = 4.0 * x * 6.0 * (6.0 * x).cos() + x * x.cos();
        assert!(close(uses_derived_callees(x), want, 1e-14));
        let (_, d) = uses_derived_callees_vjp(x, 1.0);
        let fd = (uses_derived_callees(x + EPS) - uses_derived_callees(x - EPS)) / (2.0 * EPS);
        assert!(close(d, fd, 1e-7), "{d} against {fd}");
        assert!(close(uses_derived_callees_jvp(x, 1.0).1, d, 1e-12));
    }
}

/// A derived callee of a function reading a constant slice by index.
#[differentiable(order = 2)]
pub fn weighted(x: f64, #[nondiff] w: &[f64]) -> f64 {
    let mut s = 0.0;
    for wi in w.iter() {
        s += (x * *wi).sin();
    }
    s
}

#[differentiable]
pub fn uses_weighted(x: f64, #[nondiff] w: &[f64]) -> f64 {
    let (_, d) = weighted_jvp(x, w, 1.0);
    d * x
}

#[test]
fn a_derived_callee_reads_constant_slices() {
    let w = [1.0, -2.0, 0.5];
    for x in [0.3_f64, -0.8] {
        // By hand: x · Σ wᵢ cos(x wᵢ).
        let want: f64 = x * w.iter().map(|wi| wi * (x * wi).cos()).sum::<f64>();
        assert!(close(uses_weighted(x, &w), want, 1e-14));
        let (_, d) = uses_weighted_vjp(x, &w, 1.0);
        let fd = (uses_weighted(x + EPS, &w) - uses_weighted(x - EPS, &w)) / (2.0 * EPS);
        assert!(close(d, fd, 1e-7), "{d} against {fd}");
    }
}

/// A loop with a branch in it: `damped_vjp` keeps a record per iteration
/// (the state and which arm ran), which `passes::records` makes arrays so
/// that J differentiates them: its derived functions are forward over
/// reverse through the records.
#[differentiable(order = 2)]
pub fn damped(x: f64, y: [f64; 2]) -> f64 {
    let mut s = y[0];
    let mut acc = 0.0;
    for i in 0..5 {
        let t = (x * s + i as f64 * 0.3).sin();
        if t > 0.0 {
            acc += t * y[1];
        } else {
            acc -= 0.5 * t * t;
        }
        s = s * 0.9 + t;
    }
    acc + s * s
}

/// Points where no iteration sits at the branch point `t = 0`.
const DAMPED_AT: [(f64, [f64; 2]); 3] =
    [(0.7, [0.4, -1.2]), (-1.3, [1.1, 0.5]), (2.1, [-0.6, 0.8])];

#[test]
fn the_jvp_of_the_vjp_of_a_loop_with_a_branch_is_its_derivative() {
    for (x, y) in DAMPED_AT {
        let ct = 0.8;
        for (ex, ey, ect) in [
            (1.0, [0.0, 0.0], 0.0),
            (0.0, [0.6, -0.4], 0.0),
            (0.3, [0.2, 0.9], -1.5),
        ] {
            let at = |t: f64| damped_vjp(x + t * ex, axpy(t, ey, y), ct + t * ect);
            let ((v, (gx, gy)), (tv, (tgx, tgy))) = damped_vjp_jvp(x, y, ct, ex, ey, ect);
            assert_eq!((v, (gx, gy)), damped_vjp(x, y, ct));
            let (p, m) = (at(EPS), at(-EPS));
            let fd = |a: f64, b: f64| (a - b) / (2.0 * EPS);
            assert!(close(tv, fd(p.0, m.0), 1e-7), "value tangent {tv}");
            assert!(
                close(tgx, fd(p.1 .0, m.1 .0), 1e-6),
                "{tgx} against {}",
                fd(p.1 .0, m.1 .0)
            );
            for k in 0..2 {
                let want = fd(p.1 .1[k], m.1 .1[k]);
                assert!(close(tgy[k], want, 1e-6), "{tgy:?} against {want}");
            }
        }
    }
}

#[test]
fn the_vjp_of_the_vjp_of_a_loop_with_a_branch_agrees_with_its_jvp() {
    use linear_ad::LinearMap;
    for (x, y) in DAMPED_AT {
        let ct = -0.6;
        let u = (0.4, [-0.3, 1.1], 0.9);
        let w = (0.7, (-1.2, [0.5, 0.35]));
        let (_, (tv, (tgx, tgy))) = damped_vjp_jvp(x, y, ct, u.0, u.1, u.2);
        let (_, (cx, cy, cct)) = damped_vjp_vjp(x, y, ct, w);
        let lhs = tv * w.0 + tgx * w.1 .0 + tgy[0] * w.1 .1[0] + tgy[1] * w.1 .1[1];
        let rhs = u.0 * cx + u.1[0] * cy[0] + u.1[1] * cy[1] + u.2 * cct;
        assert!(close(lhs, rhs, 1e-12), "{lhs} against {rhs}");
        // The linearization applies both maps from one forward pass.
        let (v, map) = damped_vjp_lin(x, y, ct);
        assert_eq!(v, damped_vjp(x, y, ct));
        assert_eq!(map.apply(u), damped_vjp_jvp(x, y, ct, u.0, u.1, u.2).1);
        assert_eq!(map.transpose(w), damped_vjp_vjp(x, y, ct, w).1);
    }
}

#[test]
fn the_hessian_of_a_loop_with_a_branch_has_the_hvps_as_rows() {
    for (x, y) in DAMPED_AT {
        let (v, (gx, gy), h) = damped_hessian(x, y);
        assert_eq!(v, damped(x, y));
        let dirs = [(1.0, [0.0, 0.0]), (0.0, [1.0, 0.0]), (0.0, [0.0, 1.0])];
        for (row, (ex, ey)) in h.iter().zip(dirs) {
            let (_, (hx, hy), (hvx, hvy)) = damped_hvp(x, y, ex, ey);
            assert!(close(hx, gx, 1e-14) && close(hy[0], gy[0], 1e-14));
            let want = [hvx, hvy[0], hvy[1]];
            for k in 0..3 {
                assert!(close(row[k], want[k], 1e-12), "{row:?} against {want:?}");
            }
        }
    }
}

/// Gradient descent on `damped(x, ·)`, its gradient by reverse mode
/// through the loop and branch: differentiable in `x` and `y0`.
#[differentiable]
pub fn damped_descent(x: f64, y0: [f64; 2]) -> f64 {
    let mut y = y0;
    for _ in 0..6 {
        let (_, (_, g)) = damped_vjp(x, y, 1.0);
        y = [y[0] - 0.02 * g[0], y[1] - 0.02 * g[1]];
    }
    damped(x, y)
}

#[test]
fn gradients_through_a_descent_on_a_loop_with_a_branch_match_finite_differences() {
    for (x, y0) in DAMPED_AT {
        let (v, (dx, dy0)) = damped_descent_vjp(x, y0, 1.0);
        assert_eq!(v, damped_descent(x, y0));
        let fd = |ex: f64, ey: [f64; 2]| {
            (damped_descent(x + EPS * ex, axpy(EPS, ey, y0))
                - damped_descent(x - EPS * ex, axpy(-EPS, ey, y0)))
                / (2.0 * EPS)
        };
        let want = [
            fd(1.0, [0.0, 0.0]),
            fd(0.0, [1.0, 0.0]),
            fd(0.0, [0.0, 1.0]),
        ];
        let got = [dx, dy0[0], dy0[1]];
        for k in 0..3 {
            assert!(close(got[k], want[k], 1e-6), "{got:?} against {want:?}");
        }
        let (_, d) = damped_descent_jvp(x, y0, 0.0, [1.0, 0.0]);
        assert!(close(d, dy0[0], 1e-12), "{d} against {}", dy0[0]);
    }
}

/// Binomial checkpointing: the reverse pass replays the loop's states;
/// the derived functions store them instead, so that J sees where each
/// state came from.
#[differentiable(order = 2, checkpoint = "binomial", snapshots = 2)]
pub fn decay(y0: f64, k: f64, #[nondiff] steps: usize) -> f64 {
    let mut y = y0;
    for _ in 0..steps {
        y = y - 0.1 * k * y * y;
    }
    y
}

#[test]
fn the_vjp_of_a_replayed_loop_is_differentiated_through_its_states() {
    for (y0, k) in [(0.8, 1.0), (1.5, -0.4)] {
        let at = |t: f64| decay_vjp(y0 + t * 0.5, k - t, 7, 1.0);
        let (v, (ty, (tgy, tgk))) = decay_vjp_jvp(y0, k, 7, 1.0, 0.5, -1.0, 0.0);
        assert_eq!(v, decay_vjp(y0, k, 7, 1.0));
        let (p, m) = (at(EPS), at(-EPS));
        let fd = |a: f64, b: f64| (a - b) / (2.0 * EPS);
        assert!(close(ty, fd(p.0, m.0), 1e-7));
        assert!(
            close(tgy, fd(p.1 .0, m.1 .0), 1e-6),
            "{tgy} against {}",
            fd(p.1 .0, m.1 .0)
        );
        assert!(
            close(tgk, fd(p.1 .1, m.1 .1), 1e-6),
            "{tgk} against {}",
            fd(p.1 .1, m.1 .1)
        );
    }
}

/// A loop, whose reverse sweep the derived `f_vjp` reads backwards.
#[differentiable(order = 2)]
pub fn swept(x: f64, y: [f64; 2]) -> f64 {
    let mut s = x;
    for i in 0..3 {
        s = (s * y[i % 2]).sin() + x;
    }
    s
}

#[test]
fn the_jvp_of_f_vjp_through_a_loop_is_the_derivative_of_f_vjp() {
    // The derived `f_vjp` walks the loop's records from the last: its
    // position counter once went below zero after the first record, an
    // overflow that panicked here in a debug build.
    for (x, y, ex, ey) in AT {
        let at = |t: f64| swept_vjp(x + t * ex, axpy(t, ey, y), 1.0);
        let ((v, g), tangent) = swept_vjp_jvp(x, y, 1.0, ex, ey, 0.0);
        assert_eq!((v, g), swept_vjp(x, y, 1.0));
        matches_differences(tangent, at);
    }
}

/// Loops inside a loop: `pairs_vjp` reads, per outer iteration, the
/// inner loop's records (as many as the outer index), which
/// `passes::records` keeps in one flat array with each outer record
/// holding where its segment starts and ends: J differentiates them as
/// an array of reals. `chain` nests three deep, its innermost loop a
/// `while`, whose records' number only the run knows.
#[differentiable(order = 2)]
pub fn pairs(x: f64, y: [f64; 2]) -> f64 {
    let mut e = 0.0;
    for i in 0..4 {
        let mut p = x;
        for j in 0..i {
            p = (p * y[j % 2]).sin() + 0.1 * y[i % 2];
        }
        e += p * p;
    }
    e
}

#[differentiable(order = 2)]
pub fn chain(x: f64, y: [f64; 2]) -> f64 {
    let mut e = 0.0;
    for a in 0..3 {
        for b in 0..=a {
            let mut s = x * y[b % 2];
            let mut k = 0;
            while k < a + b {
                s = (s + y[(a + k) % 2]).cos() * x;
                k += 1;
            }
            e += s;
        }
    }
    e
}

#[test]
fn the_jvp_of_the_vjp_of_nested_loops_is_its_derivative() {
    for (x, y, ex, ey) in AT {
        for ct in [1.0, -0.7] {
            let at = |t: f64| pairs_vjp(x + t * ex, axpy(t, ey, y), ct + t * 0.3);
            let ((v, g), tangent) = pairs_vjp_jvp(x, y, ct, ex, ey, 0.3);
            assert_eq!((v, g), pairs_vjp(x, y, ct));
            matches_differences(tangent, at);
            let at = |t: f64| chain_vjp(x + t * ex, axpy(t, ey, y), ct + t * 0.3);
            let ((v, g), tangent) = chain_vjp_jvp(x, y, ct, ex, ey, 0.3);
            assert_eq!((v, g), chain_vjp(x, y, ct));
            matches_differences(tangent, at);
        }
    }
}

#[test]
fn the_vjp_of_the_vjp_of_nested_loops_agrees_with_its_jvp() {
    use linear_ad::LinearMap;
    for (x, y, _, _) in AT {
        let ct = 0.6;
        let u = (0.4, [-0.3, 1.1], 0.9);
        let w = (0.7, (-1.2, [0.5, 0.35]));
        let (_, (tv, (tgx, tgy))) = chain_vjp_jvp(x, y, ct, u.0, u.1, u.2);
        let (_, (cx, cy, cct)) = chain_vjp_vjp(x, y, ct, w);
        let lhs = tv * w.0 + tgx * w.1 .0 + tgy[0] * w.1 .1[0] + tgy[1] * w.1 .1[1];
        let rhs = u.0 * cx + u.1[0] * cy[0] + u.1[1] * cy[1] + u.2 * cct;
        assert!(close(lhs, rhs, 1e-12), "{lhs} against {rhs}");
        let (v, map) = pairs_vjp_lin(x, y, ct);
        assert_eq!(v, pairs_vjp(x, y, ct));
        assert_eq!(map.apply(u), pairs_vjp_jvp(x, y, ct, u.0, u.1, u.2).1);
        assert_eq!(map.transpose(w), pairs_vjp_vjp(x, y, ct, w).1);
    }
}

/// Gradient descent on `pairs(x, ·)` by its reverse-mode gradient,
/// differentiated in turn (the case the error for nested loops used to
/// refuse, telling the user to call `pairs_jvp` instead).
#[differentiable]
pub fn pairs_descent(x: f64, y0: [f64; 2]) -> f64 {
    let mut y = y0;
    for _ in 0..5 {
        let (_, (_, g)) = pairs_vjp(x, y, 1.0);
        y = [y[0] - 0.05 * g[0], y[1] - 0.05 * g[1]];
    }
    pairs(x, y)
}

#[test]
fn gradients_through_a_descent_on_nested_loops_match_finite_differences() {
    for (x, y0, _, _) in AT {
        let (v, (dx, dy0)) = pairs_descent_vjp(x, y0, 1.0);
        assert_eq!(v, pairs_descent(x, y0));
        let fd = |ex: f64, ey: [f64; 2]| {
            (pairs_descent(x + EPS * ex, axpy(EPS, ey, y0))
                - pairs_descent(x - EPS * ex, axpy(-EPS, ey, y0)))
                / (2.0 * EPS)
        };
        let want = [
            fd(1.0, [0.0, 0.0]),
            fd(0.0, [1.0, 0.0]),
            fd(0.0, [0.0, 1.0]),
        ];
        let got = [dx, dy0[0], dy0[1]];
        for k in 0..3 {
            assert!(close(got[k], want[k], 1e-6), "{got:?} against {want:?}");
        }
        let (_, d) = pairs_descent_jvp(x, y0, 1.0, [0.0, 0.0]);
        assert!(close(d, dx, 1e-12), "{d} against {dx}");
    }
}

/// A loop inside a branch: the arm that ran it records the loop's
/// records in the branch's record (a sum), which `passes::records` keeps
/// in a flat array every arm passes on.
#[differentiable(order = 2)]
pub fn branchy(x: f64, y: [f64; 2]) -> f64 {
    let mut s = x * y[1];
    if x > 0.0 {
        for i in 0..3 {
            s = (s * y[i % 2]).sin() + x;
        }
    } else {
        s = s * s;
    }
    s
}

#[test]
fn the_jvp_of_the_vjp_of_a_loop_in_a_branch_is_its_derivative() {
    // Both arms: x > 0 and x < 0, away from the branch point.
    for (x, y, ex, ey) in AT {
        let at = |t: f64| branchy_vjp(x + t * ex, axpy(t, ey, y), 1.0 - t * 0.2);
        let ((v, g), tangent) = branchy_vjp_jvp(x, y, 1.0, ex, ey, -0.2);
        assert_eq!((v, g), branchy_vjp(x, y, 1.0));
        matches_differences(tangent, at);
    }
}
