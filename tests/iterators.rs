#![deny(warnings)]
// Index loops in the twins, as numeric code writes them.
#![allow(clippy::needless_range_loop)]

//! Iterations over parts of arrays, as numeric Rust writes them: parts
//! (`x[1..]`, `&x[..n - 1]`, `x[1..=2]`), `.skip(s)`, `.take(t)`,
//! `.step_by(k)`, `.chain(..)`, `.filter(|v| ..)`, `product()`, and `fold` after `map`, in `for`
//! loops, reductions and collections. Each function has a twin written
//! with index loops: both are lowered to the same kind of loops, so their
//! values and derivatives agree to rounding, and the iterator forms are
//! checked against finite differences too.

use linear_ad::differentiable;

mod support;
use support::{assert_close, check, close};

/// [`check`] at `(X, Y)` for a function of two slices to a float, given
/// as `f` and its generated `_jvp`, `_vjp` and `_lin`.
macro_rules! check_two_slices {
    ($f:ident, $jvp:ident, $vjp:ident, $lin:ident) => {{
        let xy = [X, Y].concat();
        let n = X.len();
        check(
            &xy,
            1,
            |v| vec![$f(&v[..n], &v[n..])],
            |v, d| vec![$jvp(&v[..n], &v[n..], &d[..n], &d[n..]).1],
            |v, c| {
                let (_, (gx, gy)) = $vjp(&v[..n], &v[n..], c[0]);
                [gx, gy].concat()
            },
            |v, d, c| {
                use linear_ad::LinearMap;
                let (_, lin) = $lin(&v[..n], &v[n..]);
                let (gx, gy) = lin.transpose(c[0]);
                (
                    vec![lin.apply((d[..n].to_vec(), d[n..].to_vec()))],
                    [gx, gy].concat(),
                )
            },
        );
    }};
}

/// Σ (x[i+1] − x[i])², by a zip of two parts of one array.
#[differentiable]
fn roughness(x: &[f64]) -> f64 {
    let n = x.len();
    x[1..]
        .iter()
        .zip(&x[..n - 1])
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
}

#[differentiable]
fn roughness_twin(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 1..x.len() {
        let d = x[i] - x[i - 1];
        s += d * d;
    }
    s
}

/// `skip`, `take`, `enumerate` before and after them, and a reversed
/// iteration cut at its top.
#[differentiable]
fn window(x: &[f64], w: f64) -> f64 {
    let mut s = 0.0;
    for (i, v) in x.iter().enumerate().skip(1).take(3) {
        s += (i as f64) * v * w;
    }
    s += x
        .iter()
        .skip(2)
        .enumerate()
        .map(|(j, v)| (j as f64 + 1.0) * v.sin())
        .sum::<f64>();
    s + x.iter().rev().skip(1).take(2).fold(0.0, |a, v| a * w + v)
}

#[differentiable]
fn window_twin(x: &[f64], w: f64) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for i in 1..4 {
        if i < n {
            s += (i as f64) * x[i] * w;
        }
    }
    for i in 2..n {
        s += ((i - 2) as f64 + 1.0) * x[i].sin();
    }
    let mut a = 0.0;
    for i in (n - 3..n - 1).rev() {
        a = a * w + x[i];
    }
    s + a
}

/// Filters, on elements and on pairs, a product, and a fold after a map.
#[differentiable]
fn hinge(x: &[f64], y: &[f64]) -> f64 {
    let positive = x.iter().filter(|v| **v > 0.0).map(|v| v * v).sum::<f64>();
    let mut s = 0.0;
    for (a, b) in x.iter().zip(y).filter(|(a, b)| **a > **b) {
        s += (a - b) * (a - b);
    }
    let p = x[1..=2].iter().product::<f64>();
    let c = x.iter().map(|v| v.cos()).fold(0.0, |a, c| a + c * c);
    positive + s + p + c
}

#[differentiable]
fn hinge_twin(x: &[f64], y: &[f64]) -> f64 {
    let mut positive = 0.0;
    let mut s = 0.0;
    let mut c = 0.0;
    for i in 0..x.len() {
        if x[i] > 0.0 {
            positive += x[i] * x[i];
        }
        if x[i] > y[i] {
            s += (x[i] - y[i]) * (x[i] - y[i]);
        }
        c += x[i].cos() * x[i].cos();
    }
    positive + s + x[1] * x[2] + c
}

/// A collection over a filtered part, written in place through
/// `iter_mut` over a part, and a loop left by `break`.
#[differentiable]
fn scaled_tail(x: &[f64], k: f64) -> f64 {
    let mut y: Vec<f64> = x[1..].iter().map(|v| v * k).collect();
    for v in y[1..].iter_mut() {
        *v *= 2.0;
    }
    let mut s = 0.0;
    for v in y.iter().skip(1) {
        if *v > 100.0 {
            break;
        }
        s += v * v;
    }
    s + y[0]
}

#[differentiable]
fn scaled_tail_twin(x: &[f64], k: f64) -> f64 {
    let n = x.len() - 1;
    let mut y = vec![0.0; n];
    for i in 0..n {
        y[i] = x[i + 1] * k;
    }
    for i in 1..n {
        y[i] *= 2.0;
    }
    let mut s = 0.0;
    let mut i = 1;
    while i < n && y[i] <= 100.0 {
        s += y[i] * y[i];
        i += 1;
    }
    s + y[0]
}

const X: [f64; 5] = [0.3, -1.2, 2.0, 0.7, -0.4];
const Y: [f64; 5] = [0.1, -1.5, 2.5, 0.2, 0.3];

#[test]
fn parts_of_an_array_zipped() {
    assert!(close(roughness(&X), roughness_twin(&X), 1e-15));
    let (_, g) = roughness_vjp(&X, 1.0);
    let (_, h) = roughness_twin_vjp(&X, 1.0);
    assert_close(&g, &h, 1e-15);
    check(
        &X,
        1,
        |v| vec![roughness(v)],
        |v, d| vec![roughness_jvp(v, d).1],
        |v, w| roughness_vjp(v, w[0]).1,
        |v, d, w| {
            let (_, lin) = roughness_lin(v);
            use linear_ad::LinearMap;
            (vec![lin.apply(d.to_vec())], lin.transpose(w[0]))
        },
    );
}

#[test]
fn skip_take_and_enumerate() {
    let w = 0.7;
    assert!(close(window(&X, w), window_twin(&X, w), 1e-14));
    let (_, (g, gw)) = window_vjp(&X, w, 1.0);
    let (_, (h, hw)) = window_twin_vjp(&X, w, 1.0);
    assert_close(&g, &h, 1e-14);
    assert!(close(gw, hw, 1e-14));
    // A short array: `take(3)` past the end, `skip(2)` to the end.
    let short = [0.5, -0.25, 1.5];
    assert!(close(window(&short, w), window_twin(&short, w), 1e-14));
    check(
        &[X[0], X[1], X[2], X[3], X[4], w],
        1,
        |v| vec![window(&v[..5], v[5])],
        |v, d| vec![window_jvp(&v[..5], v[5], &d[..5], d[5]).1],
        |v, c| {
            let (_, (g, gw)) = window_vjp(&v[..5], v[5], c[0]);
            [g, vec![gw]].concat()
        },
        |v, d, c| {
            use linear_ad::LinearMap;
            let (_, lin) = window_lin(&v[..5], v[5]);
            let (g, gw) = lin.transpose(c[0]);
            (
                vec![lin.apply((d[..5].to_vec(), d[5]))],
                [g, vec![gw]].concat(),
            )
        },
    );
}

#[test]
fn filters_products_and_folds_after_maps() {
    assert!(close(hinge(&X, &Y), hinge_twin(&X, &Y), 1e-14));
    let (_, (gx, gy)) = hinge_vjp(&X, &Y, 1.0);
    let (_, (hx, hy)) = hinge_twin_vjp(&X, &Y, 1.0);
    assert_close(&gx, &hx, 1e-14);
    assert_close(&gy, &hy, 1e-14);
    // Along a direction that crosses no filter's boundary.
    let d = [0.5, -0.25, 0.125, 1.0, -0.5];
    let fd = support::fd_along(|v| vec![hinge(v, &Y)], &X, &d);
    let (_, dv) = hinge_jvp(&X, &Y, &d, &[0.0; 5]);
    assert!(close(dv, fd[0], 1e-6), "{dv} against {}", fd[0]);
}

#[test]
fn collections_and_places_over_parts() {
    let k = 1.3;
    assert!(close(scaled_tail(&X, k), scaled_tail_twin(&X, k), 1e-14));
    let (_, (g, gk)) = scaled_tail_vjp(&X, k, 1.0);
    let (_, (h, hk)) = scaled_tail_twin_vjp(&X, k, 1.0);
    assert_close(&g, &h, 1e-14);
    assert!(close(gk, hk, 1e-14));
    // The `break`: past an element over 100, nothing more is summed.
    let big = [1.0, 2.0, 80.0, 3.0, 4.0];
    assert!(close(
        scaled_tail(&big, k),
        scaled_tail_twin(&big, k),
        1e-14
    ));
    let (_, (g, _)) = scaled_tail_vjp(&big, k, 1.0);
    assert_eq!(&g[3..], &[0.0, 0.0]);
}

/// Elements out of an `Option`: `first`, `last`, `reduce`, `max_by` and
/// `min_by`, unwrapped.
#[differentiable]
fn ends(x: &[f64]) -> f64 {
    let a = *x.first().unwrap();
    let b = x.last().copied().unwrap_or(0.0);
    let c = x.iter().copied().reduce(f64::max).unwrap();
    let d = x.iter().copied().reduce(|p, q| p * q).expect("non-empty");
    let e = x.iter().copied().max_by(|p, q| p.total_cmp(q)).unwrap();
    let f = x
        .iter()
        .copied()
        .min_by(|p, q| p.partial_cmp(q).unwrap())
        .unwrap();
    let g = x
        .iter()
        .copied()
        .max_by(|p, q| q.total_cmp(p))
        .unwrap_or(0.0);
    a * b + c + d + e * f * g
}

#[test]
fn first_last_reduce_and_max_by_unwrapped() {
    let x = [0.5, 2.0, -1.5];
    let (v, g) = ends_vjp(&x, 1.0);
    assert_eq!(v, ends(&x));
    // x₀x₂ + max + x₀x₁x₂ + max·min·min, the maximum x₁, the minimum x₂
    // (`max_by` with the comparison reversed is a minimum).
    let hand = x[0] * x[2] + x[1] + x[0] * x[1] * x[2] + x[1] * x[2] * x[2];
    assert!(close(v, hand, 1e-15));
    let want = [
        x[2] + x[1] * x[2],
        1.0 + x[0] * x[2] + x[2] * x[2],
        x[0] + x[0] * x[1] + 2.0 * x[1] * x[2],
    ];
    assert_close(&g, &want, 1e-15);
}

/// `step_by`: on elements, after `enumerate` (the count strides too),
/// after `rev` (from the last element), after `zip` and before `skip`,
/// on a part and reversed after, and in a reduction.
#[differentiable]
fn strided(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter().step_by(2) {
        s += v * v;
    }
    for (i, v) in x.iter().enumerate().step_by(3) {
        s += (i as f64) * v.sin();
    }
    for v in x.iter().rev().step_by(2) {
        s = s * 0.5 + v;
    }
    for (a, b) in x.iter().zip(y).step_by(2).skip(1) {
        s += a * b;
    }
    for v in x[1..].iter().step_by(3).rev() {
        s = s * 0.9 + v.cos();
    }
    s + y.iter().step_by(2).map(|v| v.exp()).sum::<f64>()
}

#[differentiable]
fn strided_twin(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for i in (0..n).step_by(2) {
        s += x[i] * x[i];
    }
    for i in (0..n).step_by(3) {
        s += (i as f64) * x[i].sin();
    }
    for j in 0..n.div_ceil(2) {
        s = s * 0.5 + x[n - 1 - 2 * j];
    }
    for i in (2..n).step_by(2) {
        s += x[i] * y[i];
    }
    for j in (0..(n - 1).div_ceil(3)).rev() {
        s = s * 0.9 + x[1 + 3 * j].cos();
    }
    let mut t = 0.0;
    for i in (0..n).step_by(2) {
        t += y[i].exp();
    }
    s + t
}

#[test]
fn strides() {
    // Lengths that leave every remainder of 2 and 3.
    for n in [1usize, 2, 3, 4, 5, 6, 7] {
        let x: Vec<f64> = (0..n).map(|i| 0.3 * i as f64 - 0.7).collect();
        let y: Vec<f64> = (0..n).map(|i| 0.2 - 0.1 * i as f64).collect();
        let (v, (gx, gy)) = strided_vjp(&x, &y, 1.0);
        let (w, (hx, hy)) = strided_twin_vjp(&x, &y, 1.0);
        assert!(
            close(v, w, 1e-14) && close(w, strided_twin(&x, &y), 1e-14),
            "{v} {w}"
        );
        assert!(close(v, strided(&x, &y), 1e-14));
        assert_close(&gx, &hx, 1e-13);
        assert_close(&gy, &hy, 1e-13);
    }
    check_two_slices!(strided, strided_jvp, strided_vjp, strided_lin);
}

/// `chain`: in a `for` loop (with `continue`), of parts, of three, with
/// `copied`, in a sum, a fold and a collection.
#[differentiable]
fn chained(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for &v in x.iter().chain(y.iter()) {
        if v < -1.0 {
            continue;
        }
        s = s * 0.5 + v * v;
    }
    for v in x[1..].iter().chain(&y[..1]) {
        s += v.sin();
    }
    for v in x
        .iter()
        .copied()
        .chain(y.iter().copied())
        .chain(x.iter().copied())
    {
        s = s * 0.9 + v;
    }
    let t: f64 = x.iter().chain(y).map(|v| v.exp()).sum();
    let u = y.iter().chain(x.iter()).fold(0.0, |a, v| a * 0.5 + v);
    let w: Vec<f64> = x.iter().chain(y.iter()).map(|v| v * v).collect();
    s + t + u + w[w.len() - 1]
}

#[differentiable]
fn chained_twin(x: &[f64], y: &[f64]) -> f64 {
    let (n, m) = (x.len(), y.len());
    let mut s = 0.0;
    for i in 0..n + m {
        let v = if i < n { x[i] } else { y[i - n] };
        if v >= -1.0 {
            s = s * 0.5 + v * v;
        }
    }
    for i in 1..n {
        s += x[i].sin();
    }
    s += y[0].sin();
    for i in 0..2 * n + m {
        let v = if i < n {
            x[i]
        } else if i < n + m {
            y[i - n]
        } else {
            x[i - n - m]
        };
        s = s * 0.9 + v;
    }
    let mut t = 0.0;
    for i in 0..n {
        t += x[i].exp();
    }
    for i in 0..m {
        t += y[i].exp();
    }
    let mut u = 0.0;
    for i in 0..m {
        u = u * 0.5 + y[i];
    }
    for i in 0..n {
        u = u * 0.5 + x[i];
    }
    s + t + u + y[m - 1] * y[m - 1]
}

/// A `break` in a loop over a chain skips its second part too, and a
/// `return` leaves from either part.
#[differentiable]
fn chain_exits(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for &v in x.iter().chain(y.iter()) {
        if v > 1.0 {
            break;
        }
        s += v * s + v;
    }
    for &v in y.iter().chain(x.iter()) {
        if v > 2.0 {
            return s * v;
        }
    }
    s
}

#[test]
fn chains() {
    assert!(close(chained(&X, &Y), chained_twin(&X, &Y), 1e-14));
    let (v, (gx, gy)) = chained_vjp(&X, &Y, 1.0);
    let (w, (hx, hy)) = chained_twin_vjp(&X, &Y, 1.0);
    assert!(close(v, w, 1e-14), "{v} {w}");
    assert_close(&gx, &hx, 1e-13);
    assert_close(&gy, &hy, 1e-13);
    check_two_slices!(chained, chained_jvp, chained_vjp, chained_lin);
    // Exits: no exit, a `break` in the first part (the second skipped), in
    // the second, and a `return` from each part of the second loop.
    let cases = [
        (vec![0.3, -0.5], vec![0.2, 0.4]),
        (vec![1.5, -0.5], vec![0.2, 0.4]),
        (vec![0.3, -0.5], vec![0.2, 1.4]),
        (vec![0.3, 2.5], vec![0.2, 0.4]),
        (vec![0.3, 0.5], vec![2.2, 0.4]),
    ];
    for (x, y) in cases {
        let by_hand = {
            let mut s = 0.0;
            let mut out = None;
            for &v in x.iter().chain(y.iter()) {
                if v > 1.0 {
                    break;
                }
                s += v * s + v;
            }
            for &v in y.iter().chain(x.iter()) {
                if v > 2.0 {
                    out = Some(s * v);
                    break;
                }
            }
            out.unwrap_or(s)
        };
        let (v, (gx, gy)) = chain_exits_vjp(&x, &y, 1.0);
        assert!(close(v, by_hand, 1e-15) && close(v, chain_exits(&x, &y), 1e-15));
        let xy = [x.clone(), y.clone()].concat();
        let k = x.len();
        let f = |p: &[f64]| vec![chain_exits(&p[..k], &p[k..])];
        let d: Vec<f64> = (0..xy.len()).map(|i| 0.5 - 0.25 * i as f64).collect();
        let fd = support::fd_along(f, &xy, &d);
        let got: f64 = gx.iter().chain(&gy).zip(&d).map(|(g, d)| g * d).sum();
        assert!(close(got, fd[0], 1e-7), "{got} against {}", fd[0]);
    }
}

/// Iterations over a fixed-size array parameter (`[f64; 4]`, held as a
/// tuple): `for c in cs`, `cs.iter()`, `.rev().fold(..)`, `.map(..).sum()`
/// and `0..cs.len()`, whose length is the type's. Each is Horner's rule
/// or a weighted sum, against its twin over literal indices.
#[differentiable]
fn horner_for(cs: [f64; 4], x: f64) -> f64 {
    let mut s = 0.0;
    for c in cs {
        s = s * x + c;
    }
    s
}

#[differentiable]
fn horner_iter(cs: [f64; 4], x: f64) -> f64 {
    let mut s = 0.0;
    for c in cs.iter() {
        s = s * x + c;
    }
    s
}

#[differentiable]
fn horner_len(cs: [f64; 4], x: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..cs.len() {
        s = s * x + cs[i];
    }
    s
}

#[differentiable]
fn horner_rev_fold(cs: [f64; 4], x: f64) -> f64 {
    cs.iter().rev().fold(0.0, |s, c| s * x + c)
}

#[differentiable]
fn weighted_sum(cs: [f64; 4], x: f64) -> f64 {
    cs.iter().map(|c| c * x.sin()).sum::<f64>()
}

#[differentiable]
fn horner_twin(cs: [f64; 4], x: f64) -> f64 {
    ((cs[0] * x + cs[1]) * x + cs[2]) * x + cs[3]
}

#[differentiable]
fn horner_rev_twin(cs: [f64; 4], x: f64) -> f64 {
    ((cs[3] * x + cs[2]) * x + cs[1]) * x + cs[0]
}

#[differentiable]
fn weighted_twin(cs: [f64; 4], x: f64) -> f64 {
    (cs[0] + cs[1] + cs[2] + cs[3]) * x.sin()
}

#[test]
fn iterations_over_fixed_size_arrays() {
    type F = fn([f64; 4], f64) -> f64;
    type FVjp = fn([f64; 4], f64, f64) -> (f64, ([f64; 4], f64));
    let pairs: [((F, FVjp), (F, FVjp)); 5] = [
        ((horner_for, horner_for_vjp), (horner_twin, horner_twin_vjp)),
        (
            (horner_iter, horner_iter_vjp),
            (horner_twin, horner_twin_vjp),
        ),
        ((horner_len, horner_len_vjp), (horner_twin, horner_twin_vjp)),
        (
            (horner_rev_fold, horner_rev_fold_vjp),
            (horner_rev_twin, horner_rev_twin_vjp),
        ),
        (
            (weighted_sum, weighted_sum_vjp),
            (weighted_twin, weighted_twin_vjp),
        ),
    ];
    let cs = [1.0, -2.0, 0.5, 3.0];
    for ((f, f_vjp), (g, g_vjp)) in pairs {
        for x in [0.5, -1.3] {
            let (v, (gc, gx)) = f_vjp(cs, x, 1.0);
            let (w, (hc, hx)) = g_vjp(cs, x, 1.0);
            assert_eq!(v, f(cs, x));
            assert!(
                close(v, w, 1e-14) && close(w, g(cs, x), 0.0),
                "{v} against {w}"
            );
            assert_close(&gc, &hc, 1e-14);
            assert!(close(gx, hx, 1e-14), "{gx} against {hx}");
            let at = |u: &[f64]| vec![f([u[0], u[1], u[2], u[3]], u[4])];
            let u = [cs[0], cs[1], cs[2], cs[3], x];
            let grad: Vec<f64> = gc.iter().copied().chain([gx]).collect();
            for (k, gk) in grad.iter().enumerate() {
                let mut e = [0.0; 5];
                e[k] = 1.0;
                let fd = support::fd_along(at, &u, &e)[0];
                assert!(close(*gk, fd, 1e-7), "component {k}: {gk} against {fd}");
            }
        }
    }
}

/// `rev().enumerate()` counts from 0 at the top: alone, with `skip` and
/// `take` before and after it, reversed again, and in a map.
#[differentiable]
fn countdown(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for (i, v) in x.iter().rev().enumerate() {
        s += (i as f64 + 1.0) * v * v;
    }
    for (i, v) in x.iter().rev().skip(1).enumerate().take(3) {
        s += (i as f64) * v;
    }
    for (i, v) in y.iter().rev().enumerate().skip(2) {
        s += (i as f64) * v.sin();
    }
    for (i, v) in y.iter().rev().enumerate().rev() {
        s += (i as f64) * v * x[0];
    }
    s + y
        .iter()
        .rev()
        .enumerate()
        .map(|(i, v)| (i as f64 - 1.0) * v.cos())
        .sum::<f64>()
}

#[differentiable]
fn countdown_twin(x: &[f64], y: &[f64]) -> f64 {
    let (n, m) = (x.len(), y.len());
    let mut s = 0.0;
    for k in (0..n).rev() {
        s += ((n - 1 - k) as f64 + 1.0) * x[k] * x[k];
    }
    for i in 0..3 {
        if i + 1 < n {
            s += (i as f64) * x[n - 2 - i];
        }
    }
    for i in 2..m {
        s += (i as f64) * y[m - 1 - i].sin();
    }
    for k in 0..m {
        s += ((m - 1 - k) as f64) * y[k] * x[0];
    }
    let mut t = 0.0;
    for k in (0..m).rev() {
        t += ((m - 1 - k) as f64 - 1.0) * y[k].cos();
    }
    s + t
}

#[test]
fn reversed_iterations_enumerated() {
    assert!(close(countdown(&X, &Y), countdown_twin(&X, &Y), 1e-14));
    let (v, (gx, gy)) = countdown_vjp(&X, &Y, 1.0);
    let (w, (hx, hy)) = countdown_twin_vjp(&X, &Y, 1.0);
    assert!(close(v, w, 1e-14));
    assert_close(&gx, &hx, 1e-13);
    assert_close(&gy, &hy, 1e-13);
    check_two_slices!(countdown, countdown_jvp, countdown_vjp, countdown_lin);
}
