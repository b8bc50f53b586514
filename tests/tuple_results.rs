#![deny(warnings)]
// Index loops, as numeric code writes them.
#![allow(clippy::needless_range_loop)]

//! Functions whose result is a tuple holding arrays (`-> (f64, Vec<f64>)`):
//! each component is a result of its own in the IR, grouped into the Rust
//! tuple again by the generated code. The tangent and the cotangent have
//! the result's type (`(f64, Vec<f64>)`); every mode is checked against
//! finite differences and the others, and calls of such functions from
//! other differentiable code against the same code written inline.

use linear_ad::{differentiable, Differentiable, Lanes, LinearMap};

mod support;
use support::{assert_close, check, close, dot, fd_along};

/// The log-sum-exp of `z` and the softmax probabilities, from one pass:
/// a classifier's normaliser and its distribution.
#[differentiable]
fn lse_softmax(z: &[f64]) -> (f64, Vec<f64>) {
    let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut p = vec![0.0; z.len()];
    let mut s = 0.0;
    for i in 0..z.len() {
        p[i] = (z[i] - m).exp();
        s += p[i];
    }
    for i in 0..z.len() {
        p[i] /= s;
    }
    (m + s.ln(), p)
}

/// Nested tuples, a fixed-size array built in place, an array literal,
/// and a loop left by `break`.
#[differentiable]
fn nested(x: &[f64], k: f64) -> (Vec<f64>, (f64, [f64; 2]), [f64; 2]) {
    let mut y = vec![0.0; x.len()];
    let mut z = [0.0; 2];
    let mut t = 0.0;
    for i in 0..x.len() {
        if x[i] > 100.0 {
            break;
        }
        y[i] = x[i].sin() * k;
        t += x[i] * x[i];
        z[i % 2] += x[i] * k * k;
    }
    (y, (t * k, [t, k.cos()]), z)
}

/// The components in one flat vector.
fn flat_nested(r: &(Vec<f64>, (f64, [f64; 2]), [f64; 2])) -> Vec<f64> {
    let (y, (a, b), z) = r;
    let mut out = y.clone();
    out.push(*a);
    out.extend_from_slice(b);
    out.extend_from_slice(z);
    out
}

/// A flat vector of `nested`'s shape as its tuple (`n` elements in `y`).
fn unflat_nested(v: &[f64], n: usize) -> (Vec<f64>, (f64, [f64; 2]), [f64; 2]) {
    (
        v[..n].to_vec(),
        (v[n], [v[n + 1], v[n + 2]]),
        [v[n + 3], v[n + 4]],
    )
}

#[test]
fn the_softmax_is_the_gradient_of_its_log_sum_exp() {
    let z = [0.3, -1.2, 2.0, 0.7];
    let (value, p) = lse_softmax(&z);
    let expected: f64 = z.iter().map(|v| v.exp()).sum::<f64>().ln();
    assert!(close(value, expected, 1e-14));
    // The cotangent (1, 0): the gradient of the log-sum-exp alone.
    let ((v2, p2), g) = lse_softmax_vjp(&z, (1.0, vec![0.0; 4]));
    assert_eq!((v2, &p2), (value, &p));
    assert_close(&g, &p, 1e-14);
    // The cotangent (0, e_j): row j of the softmax's Jacobian,
    // p_j (δ_ij − p_i).
    for j in 0..4 {
        let mut e = vec![0.0; 4];
        e[j] = 1.0;
        let (_, g) = lse_softmax_vjp(&z, (0.0, e));
        let want: Vec<f64> = (0..4)
            .map(|i| p[j] * (f64::from(u8::from(i == j)) - p[i]))
            .collect();
        assert_close(&g, &want, 1e-14);
    }
}

#[test]
fn every_mode_agrees_with_finite_differences() {
    let z = [0.3, -1.2, 2.0, 0.7];
    let flat = |r: (f64, Vec<f64>)| -> Vec<f64> { [vec![r.0], r.1].concat() };
    check(
        &z,
        5,
        |v| flat(lse_softmax(v)),
        |v, d| flat(lse_softmax_jvp(v, d).1),
        |v, w| lse_softmax_vjp(v, (w[0], w[1..].to_vec())).1,
        |v, d, w| {
            let (_, lin) = lse_softmax_lin(v);
            (
                flat(lin.apply(d.to_vec())),
                lin.transpose((w[0], w[1..].to_vec())),
            )
        },
    );
}

#[test]
fn nested_tuples_agree_with_finite_differences() {
    let x = [0.3, -1.2, 2.0];
    let n = x.len();
    let inputs = |v: &[f64]| (v[..n].to_vec(), v[n]);
    check(
        &[x[0], x[1], x[2], 0.7],
        n + 5,
        |v| {
            let (x, k) = inputs(v);
            flat_nested(&nested(&x, k))
        },
        |v, d| {
            let ((x, k), (dx, dk)) = (inputs(v), inputs(d));
            let (y, dy) = nested_jvp(&x, k, &dx, dk);
            assert_eq!(y, nested(&x, k));
            flat_nested(&dy)
        },
        |v, w| {
            let (x, k) = inputs(v);
            let (_, (gx, gk)) = nested_vjp(&x, k, unflat_nested(w, n));
            [gx, vec![gk]].concat()
        },
        |v, d, w| {
            let ((x, k), (dx, dk)) = (inputs(v), inputs(d));
            let (_, lin) = nested_lin(&x, k);
            let (gx, gk) = lin.transpose(unflat_nested(w, n));
            (flat_nested(&lin.apply((dx, dk))), [gx, vec![gk]].concat())
        },
    );
    // The `break`: elements past it keep their zero, and no derivative.
    let (y, (_, (gx, _))) = (
        nested(&[1.0, 200.0, 3.0], 2.0).0,
        nested_vjp(&[1.0, 200.0, 3.0], 2.0, unflat_nested(&[1.0; 8], 3)),
    );
    assert_eq!(&y[1..], &[0.0, 0.0]);
    assert_eq!(&gx[1..], &[0.0, 0.0]);
}

/// Calls: the results destructured, read by field, and returned whole.
#[differentiable]
fn calls(z: &[f64], #[nondiff] w: &[f64]) -> f64 {
    let (lse, p) = lse_softmax(z);
    let r = lse_softmax(&z[1..]);
    let mut s = 0.0;
    for i in 0..w.len() {
        s += w[i] * p[i];
    }
    lse * s + r.0 * r.1[0]
}

/// [`calls`] with the callee's body written inline.
#[differentiable]
fn inline_twin(z: &[f64], #[nondiff] w: &[f64]) -> f64 {
    let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut p = vec![0.0; z.len()];
    let mut s = 0.0;
    for i in 0..z.len() {
        p[i] = (z[i] - m).exp();
        s += p[i];
    }
    let lse = m + s.ln();
    let mut m1 = f64::NEG_INFINITY;
    for i in 1..z.len() {
        m1 = m1.max(z[i]);
    }
    let mut s1 = 0.0;
    for i in 1..z.len() {
        s1 += (z[i] - m1).exp();
    }
    let (lse1, p10) = (m1 + s1.ln(), (z[1] - m1).exp() / s1);
    let mut t = 0.0;
    for i in 0..w.len() {
        t += w[i] * p[i] / s;
    }
    lse * t + lse1 * p10
}

/// A function returning its callee's tuple as it is.
#[differentiable]
fn passed_on(z: &[f64]) -> (f64, Vec<f64>) {
    lse_softmax(z)
}

#[test]
fn calls_agree_with_the_callee_written_inline() {
    let (z, w) = ([0.3, -1.2, 2.0, 0.7], [1.0, -0.5, 0.25, 2.0]);
    let (v, g) = calls_vjp(&z, &w, 1.0);
    let (v2, g2) = inline_twin_vjp(&z, &w, 1.0);
    assert!(close(v, v2, 1e-13));
    assert!(close(calls(&z, &w), inline_twin(&z, &w), 1e-13));
    assert_close(&g, &g2, 1e-12);
    let d = [0.5, 0.25, -1.0, 0.125];
    let fd = fd_along(|p| vec![calls(p, &w)], &z, &d);
    assert!(close(dot(&g, &d), fd[0], 1e-6));
    let (_, dv) = calls_jvp(&z, &w, &d);
    assert!(close(dv, dot(&g, &d), 1e-12));
    let (_, lin) = calls_lin(&z, &w);
    assert_close(&lin.transpose(1.0), &g, 1e-15);
    // Returned whole: the callee's results and derivatives.
    assert_eq!(passed_on(&z), lse_softmax(&z));
    let ct = (0.5, vec![1.0, -1.0, 2.0, 0.0]);
    assert_eq!(passed_on_vjp(&z, ct.clone()), lse_softmax_vjp(&z, ct));
}

#[test]
fn a_cotangent_of_the_wrong_length_is_refused() {
    let (_, lin) = lse_softmax_lin(&[1.0, 2.0]);
    let caught = std::panic::catch_unwind(move || lin.transpose((1.0, vec![1.0; 3])));
    let msg = caught.expect_err("a cotangent of length 3 for a result of length 2");
    let text = msg
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| msg.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(
        text.contains("the length of `lse_softmax`'s result"),
        "{text}"
    );
}

/// A tuple result in lanes.
#[differentiable(lanes)]
fn scaled(x: &[f64], k: f64) -> (f64, Vec<f64>) {
    let mut y = vec![0.0; x.len()];
    for i in 0..x.len() {
        y[i] = x[i] * k.sin();
    }
    (k * k, y)
}

#[test]
fn lanes_agree_with_one_direction_at_a_time() {
    let x = [1.0, 2.0];
    let (y, lin) = scaled_lin(&x, 0.5);
    assert_eq!(y, scaled(&x, 0.5));
    let dx = vec![Lanes([1.0, 0.0]), Lanes([0.0, 0.0])];
    let (a, ys) = lin.apply_lanes((dx, Lanes([0.0, 1.0])));
    let (_, ys2) = scaled_jvp_lanes(
        &x,
        0.5,
        &[Lanes([1.0, 0.0]), Lanes([0.0, 0.0])],
        Lanes([0.0, 1.0]),
    );
    assert_eq!(ys, ys2.1);
    for lane in 0..2 {
        let (dx, dk) = (
            vec![f64::from(u8::from(lane == 0)), 0.0],
            f64::from(u8::from(lane == 1)),
        );
        let (da, dy) = lin.apply((dx, dk));
        assert_eq!(a.0[lane], da);
        let got: Vec<f64> = ys.iter().map(|l| l.0[lane]).collect();
        assert_eq!(got, dy);
    }
}

#[derive(Differentiable, Clone, Copy)]
pub struct Scale {
    pub k: f64,
}

#[differentiable]
impl Scale {
    /// `(k² Σ x², k x)`.
    #[differentiable]
    pub fn apply(&self, x: &[f64]) -> (f64, Vec<f64>) {
        let mut y = vec![0.0; x.len()];
        let mut s = 0.0;
        for i in 0..x.len() {
            y[i] = self.k * x[i];
            s += y[i] * y[i];
        }
        (s, y)
    }
}

/// `(w², w x)`, generic in the float type.
#[differentiable]
fn generic<T: linear_ad::num_traits::Float>(x: &[T], w: T) -> (T, Vec<T>) {
    let mut y = vec![T::zero(); x.len()];
    for i in 0..x.len() {
        y[i] = x[i] * w;
    }
    (w * w, y)
}

/// `(x d, Σ d sin x)` over `#[nondiff]` data.
#[differentiable]
fn weighted(x: &[f64], #[nondiff] d: &[f64]) -> (Vec<f64>, f64) {
    let mut y = vec![0.0; x.len()];
    let mut s = 0.0;
    for i in 0..x.len() {
        y[i] = x[i] * d[i];
        s += d[i] * x[i].sin();
    }
    (y, s)
}

/// `k² Σ x² + k x₀ + k³ x₁`, through a method (its result annotated, as
/// outside its block) and a generic function.
#[differentiable]
fn through_both(x: &[f64], k: f64) -> f64 {
    let sc = Scale { k };
    let (s, y): (f64, Vec<f64>) = sc.apply(x);
    let (g, z) = generic(x, k);
    s + y[0] + g * z[1]
}

#[test]
fn methods_generic_floats_and_data() {
    let (x, k) = ([0.5, -1.0], 2.0);
    let (v, (gx, gk)) = through_both_vjp(&x, k, 1.0);
    assert_eq!(v, through_both(&x, k));
    let hand = k * k * (x[0] * x[0] + x[1] * x[1]) + k * x[0] + k * k * k * x[1];
    assert!(close(v, hand, 1e-15));
    let want = [2.0 * k * k * x[0] + k, 2.0 * k * k * x[1] + k * k * k];
    assert_close(&gx, &want, 1e-14);
    let dk = 2.0 * k * (x[0] * x[0] + x[1] * x[1]) + x[0] + 3.0 * k * k * x[1];
    assert!(close(gk, dk, 1e-14));
    let (_, s) = Scale { k: 3.0 }.apply_vjp(&x, (1.0, vec![0.0, 0.0]));
    assert!(close(s.0.k, 6.0 * 1.25, 1e-14));
    assert_close(&s.1, &[9.0, -18.0], 1e-14);
    let (g32, _) = generic_vjp(&[1.0f32, 2.0], 0.5f32, (1.0, vec![1.0, 1.0]));
    assert_eq!(g32, (0.25f32, vec![0.5f32, 1.0]));
    let d = [1.0, 2.0];
    let (r, dx) = weighted_vjp(&x, &d, (vec![1.0, 1.0], 1.0));
    assert_eq!(r, weighted(&x, &d));
    assert_close(
        &dx,
        &[d[0] + d[0] * x[0].cos(), d[1] + d[1] * x[1].cos()],
        1e-14,
    );
}
