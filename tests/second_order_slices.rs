//! Second derivatives (`order = 2`) through calls that pass slices: the
//! caller's `f_hvp` goes through each callee's `_jvp` differentiated
//! again, detached from its arrays as first-order calls are (the arrays
//! passed back, cotangents accumulated into the caller's buffers), never
//! through an inlined copy of its body. Checked against the caller's twin
//! with the callees written inline, against central finite differences of
//! the gradient, and for symmetry; in the crate's own build profile (debug
//! in `cargo test`, release in `.ci/run`).
#![deny(warnings)]
// Index loops, as numeric code writes them.
#![allow(clippy::needless_range_loop)]

mod support;

use linear_ad::differentiable;
use support::{assert_central, close};

const EPS: f64 = 1e-5;

#[differentiable(order = 2)]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

/// A slice and a float, differentiable in both.
#[differentiable(order = 2)]
pub fn wave(x: &[f64], k: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += (k * x[i]).sin() * x[i];
    }
    s
}

/// Calls passing parameters, the same slice twice, a local array and a
/// `#[nondiff]` slice, in a loop and in a branch.
#[differentiable(order = 2)]
pub fn energy(x: &[f64], y: &[f64], k: f64, #[nondiff] w: &[f64]) -> f64 {
    let d = dot(x, y);
    let mut s = d * d * k + dot(x, x).sin();
    let mut r = vec![0.0; x.len()];
    for i in 0..x.len() {
        r[i] = x[i] * y[i] + k;
    }
    s += wave(&r, k);
    s += dot(w, y) * k;
    for j in 0..2 {
        if s > 0.0 {
            s += wave(y, k * j as f64);
        } else {
            s -= dot(&r, x);
        }
    }
    s
}

#[differentiable(order = 2)]
pub fn energy_inline(x: &[f64], y: &[f64], k: f64, #[nondiff] w: &[f64]) -> f64 {
    let n = x.len();
    let mut d = 0.0;
    let mut xx = 0.0;
    let mut wy = 0.0;
    for i in 0..n {
        d += x[i] * y[i];
        xx += x[i] * x[i];
        wy += w[i] * y[i];
    }
    let mut s = d * d * k + xx.sin();
    let mut r = vec![0.0; n];
    for i in 0..n {
        r[i] = x[i] * y[i] + k;
    }
    for i in 0..n {
        s += (k * r[i]).sin() * r[i];
    }
    s += wy * k;
    for j in 0..2 {
        if s > 0.0 {
            let kj = k * j as f64;
            for i in 0..n {
                s += (kj * y[i]).sin() * y[i];
            }
        } else {
            for i in 0..n {
                s -= r[i] * x[i];
            }
        }
    }
    s
}

/// Points to test at: `x`, `y`, `k`; `w` is fixed.
fn points() -> Vec<(Vec<f64>, Vec<f64>, f64)> {
    vec![
        (vec![0.3, -0.7, 1.1], vec![0.5, 0.2, -0.4], 0.8),
        (vec![-1.2, 0.4, 0.9], vec![0.1, -0.6, 1.3], -0.35),
        // `s` turns negative: the other branch.
        (vec![0.2, -0.1, 0.05], vec![-0.3, 0.25, 0.1], -2.5),
    ]
}

const W: [f64; 3] = [0.6, -1.1, 0.25];

/// A direction in the three inputs.
type Dir = (Vec<f64>, Vec<f64>, f64);

fn directions() -> Vec<Dir> {
    vec![
        (vec![0.9, 0.1, -0.3], vec![-0.2, 0.4, 0.6], 0.5),
        (vec![0.0, 1.0, 0.0], vec![0.0, 0.0, 0.0], 0.0),
        (vec![0.0, 0.0, 0.0], vec![0.3, 0.0, -0.7], -1.0),
    ]
}

fn along(x: &[f64], d: &[f64], t: f64) -> Vec<f64> {
    x.iter().zip(d).map(|(a, b)| a + t * b).collect()
}

fn flat(g: &Dir) -> Vec<f64> {
    g.0.iter().chain(&g.1).copied().chain([g.2]).collect()
}

#[test]
fn slice_calls_have_the_hvp_of_their_inlined_twin() {
    for (x, y, k) in points() {
        for (vx, vy, vk) in directions() {
            let (v, g, hv) = energy_hvp(&x, &y, k, &W, &vx, &vy, vk);
            let (u, h, hu) = energy_inline_hvp(&x, &y, k, &W, &vx, &vy, vk);
            assert!(close(v, u, 1e-14), "value {v} against {u}");
            for (a, b) in flat(&g).into_iter().zip(flat(&h)) {
                assert!(close(a, b, 1e-13), "gradient {g:?} against {h:?}");
            }
            for (a, b) in flat(&hv).into_iter().zip(flat(&hu)) {
                assert!(close(a, b, 1e-12), "H·v {hv:?} against {hu:?}");
            }
        }
    }
}

#[test]
fn slice_calls_have_the_finite_difference_hvp() {
    for (x, y, k) in points() {
        for (vx, vy, vk) in directions() {
            let (_, g, hv) = energy_hvp(&x, &y, k, &W, &vx, &vy, vk);
            let grad = |t: f64| {
                let (_, g) =
                    energy_vjp(&along(&x, &vx, t), &along(&y, &vy, t), k + t * vk, &W, 1.0);
                flat(&g)
            };
            assert_eq!(flat(&g), grad(0.0));
            assert_central(&flat(&hv), grad, EPS, 1e-7);
        }
    }
}

#[test]
fn the_hessian_through_slice_calls_is_symmetric() {
    let dot7 = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(p, q)| p * q).sum::<f64>();
    for (x, y, k) in points() {
        let ds = directions();
        for u in &ds {
            for v in &ds {
                let (_, _, hv) = energy_hvp(&x, &y, k, &W, &v.0, &v.1, v.2);
                let (_, _, hu) = energy_hvp(&x, &y, k, &W, &u.0, &u.1, u.2);
                let (a, b) = (dot7(&flat(u), &flat(&hv)), dot7(&flat(v), &flat(&hu)));
                assert!(close(a, b, 1e-12), "u·Hv {a} against v·Hu {b}");
            }
        }
    }
}

/// A function of slices whose `_jvp` other differentiable code calls: the
/// derivative along `v` of `pair` at `x`, differentiated again.
#[differentiable(order = 2)]
pub fn pair(x: &[f64], y: &[f64]) -> f64 {
    dot(x, y) * wave(x, 0.5)
}

#[differentiable]
pub fn slope(x: &[f64], v: &[f64]) -> f64 {
    let (_, d) = pair_jvp(x, x, v, v);
    d
}

#[test]
fn the_jvp_of_a_function_of_slices_is_a_callee() {
    let (x, v) = (vec![0.4, -0.9, 1.3], vec![0.7, 0.2, -0.5]);
    let (s, (gx, gv)) = slope_vjp(&x, &v, 1.0);
    let f = |x: &[f64], v: &[f64]| {
        let h = 1e-6;
        (pair(&along(x, v, h), &along(x, v, h)) - pair(&along(x, v, -h), &along(x, v, -h)))
            / (2.0 * h)
    };
    assert!(close(s, f(&x, &v), 1e-8), "{s} against {}", f(&x, &v));
    // The slope is linear in `v`: its gradient in `v` at `v` is itself.
    assert!(close(dot(&gv, &v), s, 1e-12));
    for i in 0..3 {
        let e: Vec<f64> = (0..3).map(|j| if i == j { EPS } else { 0.0 }).collect();
        let fd = (slope(&along(&x, &e, 1.0), &v) - slope(&along(&x, &e, -1.0), &v)) / (2.0 * EPS);
        assert!(close(gx[i], fd, 1e-7), "{gx:?}: {i} against {fd}");
    }
}

/// The README's example, as written there.
#[differentiable(order = 2)]
pub fn loss(x: &[f64], y: &[f64]) -> f64 {
    let d = dot(x, y);
    d * d + dot(x, x).sin()
}

#[test]
fn the_readme_loss_has_the_hand_derived_hvp() {
    let (x, y) = ([0.3, -0.7], [0.5, 0.2]);
    let (v, w) = ([1.0, 0.0], [0.0, 0.0]);
    let (_, _, hv) = loss_hvp(&x, &y, &v, &w);
    // ∇ₓ = 2d·y + 2cos(x·x)·x and ∇ᵧ = 2d·x, along (v, 0).
    let d = x[0] * y[0] + x[1] * y[1];
    let xx = x[0] * x[0] + x[1] * x[1];
    let (xv, yv) = (x[0] * v[0] + x[1] * v[1], y[0] * v[0] + y[1] * v[1]);
    for i in 0..2 {
        let hx = 2.0 * yv * y[i] - 4.0 * xx.sin() * xv * x[i] + 2.0 * xx.cos() * v[i];
        let hy = 2.0 * yv * x[i] + 2.0 * d * v[i];
        assert!(close(hv.0[i], hx, 1e-14), "{hv:?}: {i} against {hx}");
        assert!(close(hv.1[i], hy, 1e-14), "{hv:?}: {i} against {hy}");
    }
}

/// Parts of arrays: rows of a matrix, two halves of one slice in one
/// call, the whole slice after a part of it, and a part of a `#[nondiff]`
/// slice.
#[differentiable(order = 2)]
pub fn by_parts(a: &[f64], x: &[f64], #[nondiff] w: &[f64]) -> f64 {
    let n = x.len();
    let mut e = 0.0;
    for i in 0..a.len() / n {
        let y = dot(&a[i * n..(i + 1) * n], x);
        e += y * y;
    }
    e += dot(&x[..1], &x[1..2]) * dot(&x[1..], x);
    e + wave(&a[..n], 0.5) * dot(&w[1..], &x[..n - 1])
}

#[differentiable(order = 2)]
pub fn by_parts_inline(a: &[f64], x: &[f64], #[nondiff] w: &[f64]) -> f64 {
    let n = x.len();
    let mut e = 0.0;
    for i in 0..a.len() / n {
        let mut y = 0.0;
        for j in 0..n {
            y += a[i * n + j] * x[j];
        }
        e += y * y;
    }
    let mut tail = 0.0;
    for j in 0..n - 1 {
        tail += x[1 + j] * x[j];
    }
    e += x[0] * x[1] * tail;
    let mut wv = 0.0;
    let mut wx = 0.0;
    for j in 0..n {
        wv += (0.5 * a[j]).sin() * a[j];
    }
    for j in 0..n - 1 {
        wx += w[1 + j] * x[j];
    }
    e + wv * wx
}

#[test]
fn parts_of_arrays_have_the_hvp_of_their_inlined_twin() {
    let a: Vec<f64> = (0..9).map(|i| ((i * 7 % 11) as f64 - 5.0) / 6.0).collect();
    let (x, w) = (vec![0.4, -0.9, 1.3], W.to_vec());
    let (va, vx): (Vec<f64>, Vec<f64>) = (
        (0..9).map(|i| ((i * 5 % 7) as f64 - 3.0) / 4.0).collect(),
        vec![0.7, 0.2, -0.5],
    );
    let (v, g, hv) = by_parts_hvp(&a, &x, &w, &va, &vx);
    let (u, h, hu) = by_parts_inline_hvp(&a, &x, &w, &va, &vx);
    assert!(close(v, u, 1e-14), "value {v} against {u}");
    let flat2 =
        |p: &(Vec<f64>, Vec<f64>)| -> Vec<f64> { p.0.iter().chain(&p.1).copied().collect() };
    for (p, q) in flat2(&g).into_iter().zip(flat2(&h)) {
        assert!(close(p, q, 1e-13), "gradient {g:?} against {h:?}");
    }
    for (p, q) in flat2(&hv).into_iter().zip(flat2(&hu)) {
        assert!(close(p, q, 1e-12), "H·v {hv:?} against {hu:?}");
    }
    // And against central differences of the gradient.
    let grad = |t: f64| flat2(&by_parts_vjp(&along(&a, &va, t), &along(&x, &vx, t), &w, 1.0).1);
    assert_central(&flat2(&hv), grad, EPS, 1e-7);
}

/// `sin ⟨x², y⟩`: its `g_vjp` returns the gradient as two vectors,
/// `cos(s)·(2 x y, x²)`, and is a differentiable function in its turn.
#[differentiable(order = 2)]
pub fn g(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * x[i] * y[i];
    }
    s.sin()
}

/// The squared norm of `g`'s gradient, through `g_vjp`: reverse over
/// reverse, the inner gradient's vectors destructured.
#[differentiable]
pub fn grad_norm(x: &[f64], y: &[f64]) -> f64 {
    let (_, (gx, gy)) = g_vjp(x, y, 1.0);
    let mut n = 0.0;
    for i in 0..gx.len() {
        n += gx[i] * gx[i] + gy[i] * gy[i];
    }
    n
}

/// [`grad_norm`] with `g`'s gradient written by hand.
#[differentiable]
pub fn grad_norm_by_hand(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * x[i] * y[i];
    }
    let c = s.cos();
    let mut n = 0.0;
    for i in 0..x.len() {
        let (a, b) = (2.0 * x[i] * y[i] * c, x[i] * x[i] * c);
        n += a * a + b * b;
    }
    n
}

#[test]
fn the_vjp_of_a_function_of_slices_is_differentiable() {
    let (x, y) = (vec![0.3, -0.4, 0.9], vec![1.1, 0.5, -0.2]);
    let (v, (gx, gy)) = grad_norm_vjp(&x, &y, 1.0);
    let (w, (hx, hy)) = grad_norm_by_hand_vjp(&x, &y, 1.0);
    assert!(close(v, w, 1e-13), "{v} against {w}");
    assert!(close(grad_norm(&x, &y), w, 1e-13));
    for (a, b) in gx.iter().chain(&gy).zip(hx.iter().chain(&hy)) {
        assert!(close(*a, *b, 1e-12), "{gx:?} {gy:?} against {hx:?} {hy:?}");
    }
    // Finite differences of the function itself.
    for i in 0..3 {
        let e: Vec<f64> = (0..3).map(|j| if i == j { EPS } else { 0.0 }).collect();
        let fx = (grad_norm(&along(&x, &e, 1.0), &y) - grad_norm(&along(&x, &e, -1.0), &y))
            / (2.0 * EPS);
        let fy = (grad_norm(&x, &along(&y, &e, 1.0)) - grad_norm(&x, &along(&y, &e, -1.0)))
            / (2.0 * EPS);
        assert!(close(gx[i], fx, 1e-7), "{gx:?}: {i} against {fx}");
        assert!(close(gy[i], fy, 1e-7), "{gy:?}: {i} against {fy}");
    }
    // Forward mode through `g_vjp` agrees with reverse.
    let (dx, dy) = (vec![0.5, -1.0, 0.25], vec![0.125, 0.75, -0.5]);
    let (_, dv) = grad_norm_jvp(&x, &y, &dx, &dy);
    assert!(close(dv, dot(&gx, &dx) + dot(&gy, &dy), 1e-12));
}

#[test]
fn the_vjp_of_a_function_of_slices_has_its_own_derivatives() {
    let (x, y) = (vec![0.3, -0.4, 0.9], vec![1.1, 0.5, -0.2]);
    let (dx, dy, dc) = (vec![0.5, -1.0, 0.25], vec![0.125, 0.75, -0.5], 0.3);
    // `g_vjp_jvp`: the derivative of (value, gradient) along (dx, dy, dc),
    // against central differences of `g_vjp`.
    let ((v, (gx, gy)), (dv, (dgx, dgy))) = g_vjp_jvp(&x, &y, 2.0, &dx, &dy, dc);
    assert_eq!((v, (gx, gy)), g_vjp(&x, &y, 2.0));
    let at = |t: f64| g_vjp(&along(&x, &dx, t), &along(&y, &dy, t), 2.0 + t * dc);
    let ((v1, (ax1, ay1)), (v0, (ax0, ay0))) = (at(EPS), at(-EPS));
    assert!(close(dv, (v1 - v0) / (2.0 * EPS), 1e-8));
    for i in 0..3 {
        assert!(
            close(dgx[i], (ax1[i] - ax0[i]) / (2.0 * EPS), 1e-7),
            "{dgx:?}"
        );
        assert!(
            close(dgy[i], (ay1[i] - ay0[i]) / (2.0 * EPS), 1e-7),
            "{dgy:?}"
        );
    }
    // Its reverse mode, against its forward mode: the dot-product identity.
    let ct = (0.7, (vec![1.0, -2.0, 0.5], vec![0.25, 0.0, -1.0]));
    let (_, (bx, by, bc)) = g_vjp_vjp(&x, &y, 2.0, ct.clone());
    let lhs = ct.0 * dv + dot(&ct.1 .0, &dgx) + dot(&ct.1 .1, &dgy);
    let rhs = dot(&bx, &dx) + dot(&by, &dy) + bc * dc;
    assert!(close(lhs, rhs, 1e-12), "{lhs} against {rhs}");
}

/// Calls passing parameters, the same slice twice, a local array and a
/// literal, in a loop: `calls_vjp`'s reverse pass goes through `dot_vjp`
/// and `wave_vjp` (`linear_core::passes::through`), whose cotangent
/// vectors it adds into its own.
#[differentiable(order = 2)]
pub fn calls(x: &[f64], y: &[f64], k: f64) -> f64 {
    let d = dot(x, y);
    let mut s = d * wave(x, 0.5);
    let mut r = vec![0.0; x.len()];
    for i in 0..x.len() {
        r[i] = x[i] * y[i] + k;
    }
    s += wave(&r, k);
    for j in 0..2 {
        s += dot(x, x).sin() * wave(y, k * j as f64);
    }
    s
}

#[differentiable(order = 2)]
pub fn calls_inline(x: &[f64], y: &[f64], k: f64) -> f64 {
    let n = x.len();
    let mut d = 0.0;
    let mut w = 0.0;
    let mut xx = 0.0;
    let mut wr = 0.0;
    for i in 0..n {
        d += x[i] * y[i];
        w += (0.5 * x[i]).sin() * x[i];
        xx += x[i] * x[i];
        let r = x[i] * y[i] + k;
        wr += (k * r).sin() * r;
    }
    let mut s = d * w + wr;
    for j in 0..2 {
        let kj = k * j as f64;
        let mut wy = 0.0;
        for i in 0..n {
            wy += (kj * y[i]).sin() * y[i];
        }
        s += xx.sin() * wy;
    }
    s
}

/// The squared norm of `calls`' gradient, through `calls_vjp`.
#[differentiable]
pub fn calls_grad_norm(x: &[f64], y: &[f64], k: f64) -> f64 {
    let (_, (gx, gy, gk)) = calls_vjp(x, y, k, 1.0);
    let mut n = gk * gk;
    for i in 0..gx.len() {
        n += gx[i] * gx[i] + gy[i] * gy[i];
    }
    n
}

#[differentiable]
pub fn calls_inline_grad_norm(x: &[f64], y: &[f64], k: f64) -> f64 {
    let (_, (gx, gy, gk)) = calls_inline_vjp(x, y, k, 1.0);
    let mut n = gk * gk;
    for i in 0..gx.len() {
        n += gx[i] * gx[i] + gy[i] * gy[i];
    }
    n
}

#[test]
fn the_vjp_of_a_function_with_slice_calls_is_differentiable() {
    for (x, y, k) in points() {
        let (v, (gx, gy, gk)) = calls_grad_norm_vjp(&x, &y, k, 1.0);
        let (w, (hx, hy, hk)) = calls_inline_grad_norm_vjp(&x, &y, k, 1.0);
        assert!(close(v, w, 1e-13), "{v} against {w}");
        assert!(close(gk, hk, 1e-11), "{gk} against the inlined twin's {hk}");
        for (a, b) in gx.iter().chain(&gy).zip(hx.iter().chain(&hy)) {
            assert!(close(*a, *b, 1e-11), "{gx:?} {gy:?} against {hx:?} {hy:?}");
        }
        let n = x.len();
        for i in 0..n {
            let e: Vec<f64> = (0..n).map(|j| if i == j { EPS } else { 0.0 }).collect();
            let fx = (calls_grad_norm(&along(&x, &e, 1.0), &y, k)
                - calls_grad_norm(&along(&x, &e, -1.0), &y, k))
                / (2.0 * EPS);
            assert!(close(gx[i], fx, 1e-6), "{gx:?}: {i} against {fx}");
        }
        let fk =
            (calls_grad_norm(&x, &y, k + EPS) - calls_grad_norm(&x, &y, k - EPS)) / (2.0 * EPS);
        assert!(close(gk, fk, 1e-6), "{gk} against {fk}");
    }
}

#[test]
fn the_vjp_of_a_function_with_slice_calls_has_its_own_derivatives() {
    for (x, y, k) in points() {
        let n = x.len();
        let dx: Vec<f64> = (0..n).map(|i| 0.5 - 0.25 * i as f64).collect();
        let dy: Vec<f64> = (0..n).map(|i| 0.125 * i as f64 - 0.3).collect();
        let (dk, dc) = (0.4, -0.7);
        let ((v, (gx, gy, gk)), (dv, (dgx, dgy, dgk))) =
            calls_vjp_jvp(&x, &y, k, 1.5, &dx, &dy, dk, dc);
        assert_eq!((v, (gx, gy, gk)), calls_vjp(&x, &y, k, 1.5));
        let at = |t: f64| {
            calls_vjp(
                &along(&x, &dx, t),
                &along(&y, &dy, t),
                k + t * dk,
                1.5 + t * dc,
            )
        };
        let ((v1, (ax1, ay1, ak1)), (v0, (ax0, ay0, ak0))) = (at(EPS), at(-EPS));
        let fd = |p: f64, m: f64| (p - m) / (2.0 * EPS);
        assert!(close(dv, fd(v1, v0), 1e-7), "{dv}");
        assert!(close(dgk, fd(ak1, ak0), 1e-6), "{dgk}");
        for i in 0..n {
            assert!(close(dgx[i], fd(ax1[i], ax0[i]), 1e-6), "{dgx:?}");
            assert!(close(dgy[i], fd(ay1[i], ay0[i]), 1e-6), "{dgy:?}");
        }
        // `calls_vjp_vjp` is its transpose: ⟨w, J·d⟩ = ⟨Jᵀw, d⟩.
        let wx: Vec<f64> = (0..n).map(|i| 1.0 - 0.5 * i as f64).collect();
        let wy: Vec<f64> = (0..n).map(|i| 0.25 * i as f64).collect();
        let ct = (0.6, (wx.clone(), wy.clone(), -1.1));
        let (_, (bx, by, bk, bc)) = calls_vjp_vjp(&x, &y, k, 1.5, ct);
        let lhs = 0.6 * dv + dot(&wx, &dgx) + dot(&wy, &dgy) - 1.1 * dgk;
        let rhs = dot(&bx, &dx) + dot(&by, &dy) + bk * dk + bc * dc;
        assert!(close(lhs, rhs, 1e-12), "{lhs} against {rhs}");
    }
}

/// `‖A x‖² + sin ⟨x[..n-1], x[1..]⟩`, `A`'s rows parts of a flat array:
/// calls passing parts of arrays, whose cotangent vectors `rows_vjp`'s
/// reverse pass adds into its own from each part's start.
#[differentiable(order = 2)]
pub fn rows(a: &[f64], x: &[f64]) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for i in 0..a.len() / n {
        let r = dot(&a[i * n..(i + 1) * n], x);
        s += r * r;
    }
    s + dot(&x[..n - 1], &x[1..]).sin()
}

#[differentiable(order = 2)]
pub fn rows_inline(a: &[f64], x: &[f64]) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for i in 0..a.len() / n {
        let mut r = 0.0;
        for j in 0..n {
            r += a[i * n + j] * x[j];
        }
        s += r * r;
    }
    let mut d = 0.0;
    for j in 0..n - 1 {
        d += x[j] * x[j + 1];
    }
    s + d.sin()
}

#[test]
fn the_vjp_of_a_function_passing_parts_of_arrays_is_differentiable() {
    let a = vec![0.3, -0.7, 1.1, 0.5, 0.2, -0.4];
    let x = vec![0.5, 0.25, -0.8];
    let (da, dx, dc) = (
        vec![0.1, 0.2, -0.3, 0.4, -0.5, 0.6],
        vec![-0.25, 0.5, 0.75],
        0.3,
    );
    // Forward over reverse through the calls, against the inlined twin
    // and against central differences of `rows_vjp`.
    let ((v, (ga, gx)), (dv, (dga, dgx))) = rows_vjp_jvp(&a, &x, 1.5, &da, &dx, dc);
    let ((w, (ha, hx)), (dw, (dha, dhx))) = rows_inline_vjp_jvp(&a, &x, 1.5, &da, &dx, dc);
    assert!(
        close(v, w, 1e-14) && close(dv, dw, 1e-13),
        "{v} {dv} against {w} {dw}"
    );
    let pairs = ga.iter().chain(&gx).chain(&dga).chain(&dgx);
    let twin = ha.iter().chain(&hx).chain(&dha).chain(&dhx);
    for (p, q) in pairs.zip(twin) {
        assert!(
            close(*p, *q, 1e-12),
            "{dga:?} {dgx:?} against {dha:?} {dhx:?}"
        );
    }
    let at = |t: f64| rows_vjp(&along(&a, &da, t), &along(&x, &dx, t), 1.5 + t * dc);
    let ((_, (pa, px)), (_, (ma, mx))) = (at(EPS), at(-EPS));
    for i in 0..6 {
        let fd = (pa[i] - ma[i]) / (2.0 * EPS);
        assert!(close(dga[i], fd, 1e-7), "{dga:?}: {i} against {fd}");
    }
    for i in 0..3 {
        let fd = (px[i] - mx[i]) / (2.0 * EPS);
        assert!(close(dgx[i], fd, 1e-7), "{dgx:?}: {i} against {fd}");
    }
    // Reverse over reverse: `rows_vjp_vjp` is the transpose of
    // `rows_vjp_jvp` (the dot-product identity).
    let (wa, wx) = (vec![1.0, -2.0, 0.5, 0.25, 0.0, -1.0], vec![0.6, -0.2, 0.9]);
    let (_, (ba, bx, bc)) = rows_vjp_vjp(&a, &x, 1.5, (0.7, (wa.clone(), wx.clone())));
    let lhs = 0.7 * dv + dot(&wa, &dga) + dot(&wx, &dgx);
    let rhs = dot(&ba, &da) + dot(&bx, &dx) + bc * dc;
    assert!(close(lhs, rhs, 1e-12), "{lhs} against {rhs}");
}
