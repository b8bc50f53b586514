//! Second derivatives (`order = 2`) through calls of functions that take
//! `#[nondiff]` slices: the callee's `_jvp` and `_vjp` are differentiable
//! with the data passed back to them, as first-order calls pass it, never
//! copied into a tape. Checked against the caller's twin with the callee
//! written inline, against central finite differences, and by the
//! dot-product identity; in the crate's own build profile (debug in
//! `cargo test`, release in `.ci/run`).
#![deny(warnings)]
// Index loops, as numeric code writes them.
#![allow(clippy::needless_range_loop)]

mod support;

use linear_ad::differentiable;
use support::{assert_central, close};

const EPS: f64 = 1e-5;

/// A weighted sum with the weights as data, before the differentiable
/// parameters.
#[differentiable(order = 2)]
pub fn wsum(#[nondiff] w: &[f64], x: &[f64], k: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += w[i] * (k * x[i]).sin() * x[i];
    }
    s
}

/// Calls passing the caller's own data, parameters and a local array, in a
/// loop and in both arms of a branch.
#[differentiable(order = 2)]
pub fn fit(x: &[f64], k: f64, #[nondiff] w: &[f64]) -> f64 {
    let mut r = vec![0.0; x.len()];
    for i in 0..x.len() {
        r[i] = x[i] * x[i] - k;
    }
    let mut s = wsum(w, x, k) * wsum(w, &r, 0.5);
    for j in 0..2 {
        if s > 0.0 {
            s += wsum(w, &r, k * j as f64);
        } else {
            s -= wsum(w, x, k).cos();
        }
    }
    s
}

#[differentiable(order = 2)]
pub fn fit_inline(x: &[f64], k: f64, #[nondiff] w: &[f64]) -> f64 {
    let n = x.len();
    let mut r = vec![0.0; n];
    for i in 0..n {
        r[i] = x[i] * x[i] - k;
    }
    let (mut a, mut b) = (0.0, 0.0);
    for i in 0..n {
        a += w[i] * (k * x[i]).sin() * x[i];
        b += w[i] * (0.5 * r[i]).sin() * r[i];
    }
    let mut s = a * b;
    for j in 0..2 {
        if s > 0.0 {
            let kj = k * j as f64;
            for i in 0..n {
                s += w[i] * (kj * r[i]).sin() * r[i];
            }
        } else {
            let mut c = 0.0;
            for i in 0..n {
                c += w[i] * (k * x[i]).sin() * x[i];
            }
            s -= c.cos();
        }
    }
    s
}

/// Points `(x, k)`: the first product positive at the first, negative at
/// the others.
fn points() -> Vec<(Vec<f64>, f64)> {
    vec![
        (vec![1.2, -0.4, 0.9], 0.6),
        (vec![-1.2, 0.4, 0.9], -0.35),
        (vec![0.2, -0.1, 0.05], 2.5),
    ]
}

const W: [f64; 3] = [0.6, -1.1, 0.25];

fn directions() -> Vec<(Vec<f64>, f64)> {
    vec![
        (vec![0.9, 0.1, -0.3], 0.5),
        (vec![0.0, 1.0, 0.0], 0.0),
        (vec![0.0, 0.0, 0.0], -1.0),
    ]
}

fn along(x: &[f64], d: &[f64], t: f64) -> Vec<f64> {
    x.iter().zip(d).map(|(a, b)| a + t * b).collect()
}

fn flat(g: &(Vec<f64>, f64)) -> Vec<f64> {
    g.0.iter().copied().chain([g.1]).collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(p, q)| p * q).sum()
}

#[test]
fn data_calls_have_the_hvp_of_their_inlined_twin() {
    let mut arms = [false; 2];
    for (x, k) in points() {
        let r: Vec<f64> = x.iter().map(|v| v * v - k).collect();
        let s0 = wsum(&W, &x, k) * wsum(&W, &r, 0.5);
        arms[usize::from(s0 > 0.0)] = true;
        for (vx, vk) in directions() {
            let (v, g, hv) = fit_hvp(&x, k, &W, &vx, vk);
            let (u, h, hu) = fit_inline_hvp(&x, k, &W, &vx, vk);
            assert!(close(v, u, 1e-14), "value {v} against {u}");
            for (a, b) in flat(&g).into_iter().zip(flat(&h)) {
                assert!(close(a, b, 1e-13), "gradient {g:?} against {h:?}");
            }
            for (a, b) in flat(&hv).into_iter().zip(flat(&hu)) {
                assert!(close(a, b, 1e-12), "H·v {hv:?} against {hu:?}");
            }
        }
    }
    assert_eq!(
        arms, [true; 2],
        "the points take both arms of the branch first"
    );
}

#[test]
fn data_calls_have_the_finite_difference_hvp() {
    for (x, k) in points() {
        for (vx, vk) in directions() {
            let (_, g, hv) = fit_hvp(&x, k, &W, &vx, vk);
            let grad = |t: f64| flat(&fit_vjp(&along(&x, &vx, t), k + t * vk, &W, 1.0).1);
            assert_eq!(flat(&g), grad(0.0));
            assert_central(&flat(&hv), grad, EPS, 1e-7);
        }
    }
}

/// The squared norm of `fit`'s gradient, through `fit_vjp`, whose reverse
/// pass goes through `wsum_vjp` with the data passed again.
#[differentiable]
pub fn fit_grad_norm(x: &[f64], k: f64, #[nondiff] w: &[f64]) -> f64 {
    let (_, (gx, gk)) = fit_vjp(x, k, w, 1.0);
    let mut n = gk * gk;
    for i in 0..gx.len() {
        n += gx[i] * gx[i];
    }
    n
}

#[differentiable]
pub fn fit_inline_grad_norm(x: &[f64], k: f64, #[nondiff] w: &[f64]) -> f64 {
    let (_, (gx, gk)) = fit_inline_vjp(x, k, w, 1.0);
    let mut n = gk * gk;
    for i in 0..gx.len() {
        n += gx[i] * gx[i];
    }
    n
}

#[test]
fn the_vjp_of_a_function_with_data_calls_is_differentiable() {
    for (x, k) in points() {
        let (v, g) = fit_grad_norm_vjp(&x, k, &W, 1.0);
        let (u, h) = fit_inline_grad_norm_vjp(&x, k, &W, 1.0);
        assert!(close(v, u, 1e-13), "{v} against {u}");
        for (a, b) in flat(&g).into_iter().zip(flat(&h)) {
            assert!(close(a, b, 1e-11), "{g:?} against the inlined twin's {h:?}");
        }
        for i in 0..=x.len() {
            let at = |t: f64| {
                let mut p = flat(&(x.clone(), k));
                p[i] += t;
                let k = p.pop().unwrap_or_default();
                fit_grad_norm(&p, k, &W)
            };
            let fd = (at(EPS) - at(-EPS)) / (2.0 * EPS);
            assert!(close(flat(&g)[i], fd, 1e-6), "{g:?}: {i} against {fd}");
        }
    }
}

#[test]
fn the_vjp_of_a_function_with_data_calls_has_its_own_derivatives() {
    for (x, k) in points() {
        let n = x.len();
        let dx: Vec<f64> = (0..n).map(|i| 0.5 - 0.25 * i as f64).collect();
        let (dk, dc) = (0.4, -0.7);
        let ((v, g), (dv, dg)) = fit_vjp_jvp(&x, k, &W, 1.5, &dx, dk, dc);
        assert_eq!((v, g.clone()), fit_vjp(&x, k, &W, 1.5));
        let at = |t: f64| fit_vjp(&along(&x, &dx, t), k + t * dk, &W, 1.5 + t * dc);
        let ((v1, g1), (v0, g0)) = (at(EPS), at(-EPS));
        let fd = |p: f64, m: f64| (p - m) / (2.0 * EPS);
        assert!(close(dv, fd(v1, v0), 1e-7), "{dv}");
        for (i, d) in flat(&dg).into_iter().enumerate() {
            assert!(close(d, fd(flat(&g1)[i], flat(&g0)[i]), 1e-6), "{dg:?}");
        }
        // `fit_vjp_vjp` is its transpose: ⟨w, J·d⟩ = ⟨Jᵀw, d⟩.
        let wx: Vec<f64> = (0..n).map(|i| 1.0 - 0.5 * i as f64).collect();
        let (_, (bx, bk, bc)) = fit_vjp_vjp(&x, k, &W, 1.5, (0.6, (wx.clone(), -1.1)));
        let lhs = 0.6 * dv + dot(&wx, &dg.0) - 1.1 * dg.1;
        let rhs = dot(&bx, &dx) + bk * dk + bc * dc;
        assert!(close(lhs, rhs, 1e-12), "{lhs} against {rhs}");
    }
}

/// Parts of the data and of `x`, to `wsum`'s `#[nondiff]` and
/// differentiable slices.
#[differentiable(order = 2)]
pub fn tail_fit(x: &[f64], k: f64, #[nondiff] w: &[f64]) -> f64 {
    wsum(&w[1..], &x[1..], k).sin() + wsum(&w[..2], &x[..2], k)
}

#[differentiable(order = 2)]
pub fn tail_fit_inline(x: &[f64], k: f64, #[nondiff] w: &[f64]) -> f64 {
    let mut a = 0.0;
    for i in 1..x.len() {
        a += w[i] * (k * x[i]).sin() * x[i];
    }
    let mut b = 0.0;
    for i in 0..2 {
        b += w[i] * (k * x[i]).sin() * x[i];
    }
    a.sin() + b
}

#[test]
fn parts_of_data_have_the_hvp_of_their_inlined_twin() {
    for (x, k) in points() {
        for (vx, vk) in directions() {
            let (v, g, hv) = tail_fit_hvp(&x, k, &W, &vx, vk);
            let (u, h, hu) = tail_fit_inline_hvp(&x, k, &W, &vx, vk);
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
