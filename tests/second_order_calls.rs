//! Second derivatives (`order = 2`) of functions that call other
//! differentiable functions: the caller's `f_hvp` and `f_hessian` go
//! through each callee's own second derivatives (its `_jvp`
//! differentiated again), never through an inlined copy of its body.
//! Checked against each caller's twin with the callees written inline
//! (whose Hessians `tests/second_order.rs` checks by hand), against
//! central finite differences of the gradient, and for symmetry; in the
//! crate's own build profile (debug in `cargo test`).
#![deny(warnings)]

use linear_ad::{differentiable, linear};

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs() + b.abs())
}

const EPS: f64 = 1e-5;

#[differentiable(order = 2)]
pub fn bump(x: f64, y: f64) -> f64 {
    (x * y).sin() + x * x * y
}

/// A callee with a constant parameter and a count: neither has a
/// direction, and callers pass them as they are.
#[differentiable(order = 2)]
pub fn damped(x: f64, #[nondiff] c: f64, n: usize) -> f64 {
    let mut s = x;
    for _ in 0..n {
        s = (s * c).tanh() + 0.5 * s;
    }
    s
}

/// A callee of an array, calling another function in its turn.
#[differentiable(order = 2)]
pub fn spread(p: [f64; 2], t: f64) -> f64 {
    let q = bump(p[0], t);
    q * p[1] + (p[0] - p[1]).exp()
}

/// A callee whose constant parameters come before and between its
/// differentiable ones: its direction cotangents are not in step with its
/// parameters.
#[differentiable(order = 2)]
pub fn weighted(k: usize, x: f64, #[nondiff] c: f64, y: f64) -> f64 {
    k as f64 * x * (c * y).sin()
}

/// Straight-line calls, one of them with a constant argument (as the
/// README writes it).
#[differentiable(order = 2)]
pub fn outer(x: f64, y: f64) -> f64 {
    bump(x, y) * bump(y, 2.0) + x.exp() + weighted(3, x, 0.5, y)
}

#[differentiable(order = 2)]
pub fn outer_inline(x: f64, y: f64) -> f64 {
    let a = (x * y).sin() + x * x * y;
    let b = (y * 2.0).sin() + y * y * 2.0;
    a * b + x.exp() + 3.0 * x * (0.5 * y).sin()
}

/// Calls in a loop and in a branch, of callees with constant parameters
/// and of a callee that makes calls itself.
#[differentiable(order = 2)]
pub fn looped(x: f64, y: [f64; 2]) -> f64 {
    let mut s = 0.0;
    for k in 0..3 {
        let t = k as f64 * 0.25;
        if s < 1.0 {
            // A count computed from the loop index.
            s += damped(x + t, 0.75, k + 1) * y[0];
        } else {
            s -= bump(s, y[1]);
        }
        s += spread(y, x * t);
    }
    s
}

#[differentiable(order = 2)]
pub fn looped_inline(x: f64, y: [f64; 2]) -> f64 {
    let mut s = 0.0;
    for k in 0..3 {
        let t = k as f64 * 0.25;
        if s < 1.0 {
            let mut d = x + t;
            for _ in 0..k + 1 {
                d = (d * 0.75).tanh() + 0.5 * d;
            }
            s += d * y[0];
        } else {
            s -= (s * y[1]).sin() + s * s * y[1];
        }
        let u = x * t;
        let q = (y[0] * u).sin() + y[0] * y[0] * u;
        s += q * y[1] + (y[0] - y[1]).exp();
    }
    s
}

/// Points and directions to test at.
const AT: [(f64, f64, f64, f64); 3] = [
    (0.3, -0.4, 1.0, 0.5),
    (-1.2, 0.8, -0.25, 2.0),
    (0.9, 1.7, 0.0, -1.0),
];

#[test]
fn calls_have_the_hvp_of_their_inlined_twin() {
    for (x, y, vx, vy) in AT {
        let (v, g, hv) = outer_hvp(x, y, vx, vy);
        let (w, h, hw) = outer_inline_hvp(x, y, vx, vy);
        assert!(close(v, w, 1e-15), "value {v} against {w}");
        for (a, b) in [(g.0, h.0), (g.1, h.1), (hv.0, hw.0), (hv.1, hw.1)] {
            assert!(close(a, b, 1e-13), "{g:?} {hv:?} against {h:?} {hw:?}");
        }
    }
}

#[test]
fn calls_have_the_finite_difference_hvp() {
    for (x, y, vx, vy) in AT {
        let (_, g, hv) = outer_hvp(x, y, vx, vy);
        assert_eq!(g, outer_vjp(x, y, 1.0).1);
        let grad = |t: f64| outer_vjp(x + t * vx, y + t * vy, 1.0).1;
        let (p, m) = (grad(EPS), grad(-EPS));
        let fd = ((p.0 - m.0) / (2.0 * EPS), (p.1 - m.1) / (2.0 * EPS));
        assert!(close(hv.0, fd.0, 1e-7), "{hv:?} against {fd:?}");
        assert!(close(hv.1, fd.1, 1e-7), "{hv:?} against {fd:?}");
    }
}

#[test]
fn calls_in_loops_and_branches_and_nested_calls() {
    for (x, y0, y1) in [(0.3, 0.5, -0.2), (1.1, -0.7, 0.4), (-0.6, 1.3, 0.9)] {
        let y = [y0, y1];
        let (v, g, h) = looped_hessian(x, y);
        let (w, gw, hw) = looped_inline_hessian(x, y);
        assert!(close(v, w, 1e-14), "value {v} against {w}");
        assert!(close(g.0, gw.0, 1e-13), "{g:?} against {gw:?}");
        for k in 0..2 {
            assert!(close(g.1[k], gw.1[k], 1e-13), "{g:?} against {gw:?}");
        }
        for i in 0..3 {
            for j in 0..3 {
                assert!(close(h[i][j], hw[i][j], 1e-12), "{h:?} against {hw:?}");
                assert!(close(h[i][j], h[j][i], 1e-12), "not symmetric: {h:?}");
            }
        }
        // Row 0 against finite differences of the gradient along x.
        let (p, m) = (looped_vjp(x + EPS, y, 1.0).1, looped_vjp(x - EPS, y, 1.0).1);
        let fd = [
            (p.0 - m.0) / (2.0 * EPS),
            (p.1[0] - m.1[0]) / (2.0 * EPS),
            (p.1[1] - m.1[1]) / (2.0 * EPS),
        ];
        for j in 0..3 {
            assert!(close(h[0][j], fd[j], 1e-7), "{:?} against {fd:?}", h[0]);
        }
    }
}

/// A callee's `_jvp` is differentiable when it makes calls itself, so
/// other differentiable code can call it (`spread` calls `bump`).
#[differentiable]
pub fn slope(p: [f64; 2]) -> f64 {
    let (_, d) = spread_jvp(p, 0.5, [1.0, 0.0], 0.0);
    d * d
}

#[test]
fn the_jvp_of_a_function_with_calls_is_a_callee() {
    for p in [[0.3, -0.4], [1.2, 0.7]] {
        let (_, g) = slope_vjp(p, 1.0);
        for k in 0..2 {
            let mut e = [0.0; 2];
            e[k] = EPS;
            let fd = (slope([p[0] + e[0], p[1] + e[1]]) - slope([p[0] - e[0], p[1] - e[1]]))
                / (2.0 * EPS);
            assert!(close(g[k], fd, 1e-7), "{g:?} against {fd}");
            // Forward mode of `slope`: J of `spread_jvp`, whose call of
            // `bump` goes through `bump_jvp`'s linearization.
            let (_, d) = slope_jvp(p, [e[0] / EPS, e[1] / EPS]);
            assert!(close(d, g[k], 1e-12), "{d} against {g:?}");
        }
    }
}

/// `#[linear(order = 2)]` callees: `mix` with a coefficient the caller
/// passes a differentiable value to (so its derivative is bilinear, not
/// linear), `twice_mix` a linear function calling another (its
/// coefficient held constant, as `#[linear]` holds those of functions
/// with calls).
#[linear(order = 2)]
pub fn mix(a: f64, #[linear] x: f64, #[linear] y: f64) -> f64 {
    a * x + 2.0 * y
}

#[linear(order = 2)]
pub fn twice_mix(a: f64, #[linear] x: f64) -> f64 {
    mix(a, x, -x) * 2.0
}

#[differentiable(order = 2)]
pub fn blended(x: f64, y: f64) -> f64 {
    let m = mix(x, x * y, y.sin());
    m * x + twice_mix(3.0, x * y)
}

#[differentiable(order = 2)]
pub fn blended_inline(x: f64, y: f64) -> f64 {
    let m = x * (x * y) + 2.0 * y.sin();
    let z = x * y;
    m * x + (3.0 * z + 2.0 * -z) * 2.0
}

#[test]
fn linear_callees_differentiated_twice() {
    for (x, y, vx, vy) in AT {
        let (v, g, h) = blended_hessian(x, y);
        let (w, gw, hw) = blended_inline_hessian(x, y);
        assert!(close(v, w, 1e-14), "value {v} against {w}");
        assert!(
            close(g.0, gw.0, 1e-13) && close(g.1, gw.1, 1e-13),
            "{g:?} against {gw:?}"
        );
        for i in 0..2 {
            for j in 0..2 {
                assert!(close(h[i][j], hw[i][j], 1e-12), "{h:?} against {hw:?}");
            }
        }
        // By hand: x^3 y + 2 x sin y + 2 x y.
        let by_hand = [
            [6.0 * x * y, 3.0 * x * x + 2.0 * y.cos() + 2.0],
            [3.0 * x * x + 2.0 * y.cos() + 2.0, -2.0 * x * y.sin()],
        ];
        for i in 0..2 {
            for j in 0..2 {
                assert!(
                    close(h[i][j], by_hand[i][j], 1e-12),
                    "{h:?} against {by_hand:?}"
                );
            }
        }
        let (_, _, hv) = blended_hvp(x, y, vx, vy);
        let grad = |t: f64| blended_vjp(x + t * vx, y + t * vy, 1.0).1;
        let (p, m) = (grad(EPS), grad(-EPS));
        let fd = ((p.0 - m.0) / (2.0 * EPS), (p.1 - m.1) / (2.0 * EPS));
        assert!(
            close(hv.0, fd.0, 1e-7) && close(hv.1, fd.1, 1e-7),
            "{hv:?} against {fd:?}"
        );
    }
}

#[test]
fn a_linear_function_with_order_2_keeps_its_transpose_and_has_a_hessian() {
    // ⟨(x, y), mix_transpose(a, c)⟩ = ⟨mix(a, x, y), c⟩.
    let (a, x, y, c) = (0.7, -1.3, 0.4, 2.5);
    let (tx, ty) = mix_transpose(a, c);
    assert!(close(x * tx + y * ty, mix(a, x, y) * c, 1e-15));
    // a x + 2 y in (a, x, y): only the mixed term a x is curved.
    let (_, _, h) = mix_hessian(a, x, y);
    assert_eq!(h, [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]);
}

/// The squared norm of `outer`'s gradient, through `outer_vjp`: reverse
/// over reverse through calls. `outer_vjp` calls `bump` (with a literal
/// argument) and `weighted` (a count, and a constant between its
/// differentiable parameters), and its reverse pass goes through their
/// own `_vjp`s (`linear_core::passes::through`).
#[differentiable]
pub fn outer_grad_norm(x: f64, y: f64) -> f64 {
    let (_, (gx, gy)) = outer_vjp(x, y, 1.0);
    gx * gx + gy * gy
}

#[differentiable]
pub fn outer_inline_grad_norm(x: f64, y: f64) -> f64 {
    let (_, (gx, gy)) = outer_inline_vjp(x, y, 1.0);
    gx * gx + gy * gy
}

#[test]
fn the_vjp_of_a_function_with_calls_is_differentiable() {
    for (x, y, vx, vy) in AT {
        let (v, g) = outer_grad_norm_vjp(x, y, 1.0);
        let (w, h) = outer_inline_grad_norm_vjp(x, y, 1.0);
        assert!(close(v, w, 1e-14), "value {v} against {w}");
        assert!(
            close(g.0, h.0, 1e-12) && close(g.1, h.1, 1e-12),
            "{g:?} against the inlined twin's {h:?}"
        );
        let fd = |dx: f64, dy: f64| {
            (outer_grad_norm(x + EPS * dx, y + EPS * dy)
                - outer_grad_norm(x - EPS * dx, y - EPS * dy))
                / (2.0 * EPS)
        };
        assert!(
            close(g.0, fd(1.0, 0.0), 1e-7) && close(g.1, fd(0.0, 1.0), 1e-7),
            "{g:?} against finite differences"
        );
        // Forward over reverse through the same calls.
        let (_, d) = outer_grad_norm_jvp(x, y, vx, vy);
        assert!(close(d, g.0 * vx + g.1 * vy, 1e-12), "{d} against {g:?}");
    }
}

#[test]
fn the_vjp_of_a_function_with_calls_has_its_own_derivatives() {
    for (x, y0, y1) in [(0.3, 0.5, -0.2), (1.1, -0.7, 0.4), (-0.6, 1.3, 0.9)] {
        let y = [y0, y1];
        let (dx, dy, dc) = (0.7, [-0.4, 1.1], 0.3);
        // `looped_vjp_jvp` against central differences of `looped_vjp`
        // along (dx, dy, dc): calls in loops and branches, of callees
        // that call others.
        let ((v, g), (dv, dg)) = looped_vjp_jvp(x, y, 1.5, dx, dy, dc);
        let at = |t: f64| {
            looped_vjp(
                x + t * dx,
                [y[0] + t * dy[0], y[1] + t * dy[1]],
                1.5 + t * dc,
            )
        };
        let ((vp, gp), (vm, gm)) = (at(EPS), at(-EPS));
        assert_eq!((v, g), looped_vjp(x, y, 1.5));
        let fd = |p: f64, m: f64| (p - m) / (2.0 * EPS);
        assert!(close(dv, fd(vp, vm), 1e-7), "{dv} against {}", fd(vp, vm));
        assert!(close(dg.0, fd(gp.0, gm.0), 1e-7), "{dg:?}");
        for k in 0..2 {
            assert!(close(dg.1[k], fd(gp.1[k], gm.1[k]), 1e-7), "{dg:?}");
        }
        // `looped_vjp_vjp` is its transpose: ⟨w, J·d⟩ = ⟨Jᵀw, d⟩.
        let (wv, wg) = (0.6, (-1.2, [0.8, 0.25]));
        let (_, (tx, ty, tc)) = looped_vjp_vjp(x, y, 1.5, (wv, wg));
        let lhs = wv * dv + wg.0 * dg.0 + wg.1[0] * dg.1[0] + wg.1[1] * dg.1[1];
        let rhs = tx * dx + ty[0] * dy[0] + ty[1] * dy[1] + tc * dc;
        assert!(close(lhs, rhs, 1e-12), "{lhs} against {rhs}");
    }
}

/// A callee with `lanes`: its `_vjp`'s linearization gets
/// `__apply_lanes`, so its callers' `f_hessian` applies their gradient's
/// linearization to every unit direction in one run through the calls.
#[differentiable(order = 2, lanes)]
pub fn inverse_distance(ax: f64, ay: f64, bx: f64, by: f64) -> f64 {
    1.0 / ((ax - bx) * (ax - bx) + (ay - by) * (ay - by)).sqrt()
}

#[differentiable(order = 2)]
pub fn three_charges(p: [f64; 6]) -> f64 {
    let [ax, ay, bx, by, cx, cy] = p;
    inverse_distance(ax, ay, bx, by)
        + inverse_distance(bx, by, cx, cy)
        + inverse_distance(cx, cy, ax, ay)
        + 0.5 * (ax * ax + by * by + cx * cy)
}

#[differentiable(order = 2)]
pub fn three_charges_inline(p: [f64; 6]) -> f64 {
    let [ax, ay, bx, by, cx, cy] = p;
    let r = |dx: f64, dy: f64| 1.0 / (dx * dx + dy * dy).sqrt();
    let (ab, bc, ca) = (
        r(ax - bx, ay - by),
        r(bx - cx, by - cy),
        r(cx - ax, cy - ay),
    );
    ab + bc + ca + 0.5 * (ax * ax + by * by + cx * cy)
}

#[test]
fn the_hessian_through_calls_in_lanes_is_the_inlined_twins() {
    for p in [
        [0.9, -0.2, -0.4, 0.7, 0.1, -0.8],
        [1.5, 0.3, -1.1, -0.6, 0.4, 1.2],
    ] {
        let (v, g, h) = three_charges_hessian(p);
        let (w, gw, hw) = three_charges_inline_hessian(p);
        assert!(close(v, w, 1e-14), "value {v} against {w}");
        for i in 0..6 {
            assert!(close(g[i], gw[i], 1e-13), "{g:?} against {gw:?}");
            for j in 0..6 {
                assert!(close(h[i][j], hw[i][j], 1e-12), "{h:?} against {hw:?}");
                assert!(close(h[i][j], h[j][i], 1e-12), "not symmetric: {h:?}");
            }
        }
    }
}
