//! Assignments numeric code writes in one statement, which the macro
//! rewrites into simpler ones before lowering (`lower/sugar.rs`):
//! destructuring assignment (`(a, b) = (b, a + b)`), and `swap`, `fill`
//! and `copy_from_slice` on local arrays. Each function computes what the
//! original computes, and its derivatives agree with central differences
//! and across modes.
#![deny(warnings)]

mod support;

use linear_ad::{differentiable, LinearMap};

/// A two-term recurrence by destructuring assignment, with a `_` part,
/// a nested tuple and an array pattern.
#[differentiable]
fn recurrence(x: f64, y: f64, #[nondiff] n: usize) -> f64 {
    let (mut a, mut b) = (x, y);
    let mut c = [0.0, 0.0];
    for _ in 0..n {
        (a, b) = (b, a + 0.5 * b);
        (_, (c[0], c[1])) = (a * b, (c[1] + a, b.sin()));
    }
    [a, b] = [b * c[0], a + c[1]];
    a * b
}

fn recurrence_by_hand(x: f64, y: f64, n: usize) -> f64 {
    let (mut a, mut b, mut c) = (x, y, [0.0, 0.0]);
    for _ in 0..n {
        let (na, nb) = (b, a + 0.5 * b);
        a = na;
        b = nb;
        let (c0, c1) = (c[1] + a, b.sin());
        c = [c0, c1];
    }
    let (na, nb) = (b * c[0], a + c[1]);
    na * nb
}

#[test]
fn destructuring_assignments_compute_every_part_first() {
    for n in [0, 1, 4] {
        let (x, y) = (0.75, -1.25);
        assert_eq!(recurrence(x, y, n), recurrence_by_hand(x, y, n));
        assert_eq!(recurrence_vjp(x, y, n, 1.0).0, recurrence_by_hand(x, y, n));
        support::check_xy(
            (x, y),
            |x, y| recurrence(x, y, n),
            |x, y, dx, dy| recurrence_jvp(x, y, n, dx, dy),
            |x, y, w| recurrence_vjp(x, y, n, w),
            |x, y| recurrence_lin(x, y, n),
        );
    }
}

/// A bubble sort by `swap`, then a weighted sum of the sorted values: the
/// gradient is each weight at the input that lands in its place.
#[differentiable]
fn sorted_weights(xs: &[f64]) -> f64 {
    let mut y = xs.to_vec();
    let n = y.len();
    for i in 0..n {
        for j in 0..n - 1 - i {
            if y[j] > y[j + 1] {
                y.swap(j, j + 1);
            }
        }
    }
    let mut s = 0.0;
    for (k, v) in y.iter().enumerate() {
        s += (k as f64 + 1.0) * v * v;
    }
    s
}

#[test]
fn swapped_elements_carry_their_derivatives() {
    let xs = [0.5, -2.0, 1.5, 0.25];
    // Sorted: -2.0, 0.25, 0.5, 1.5 at ranks 1..4: d/dx = 2·rank·x.
    let want = [
        2.0 * 3.0 * 0.5,
        2.0 * -2.0,
        2.0 * 4.0 * 1.5,
        2.0 * 2.0 * 0.25,
    ];
    let (v, g) = sorted_weights_vjp(&xs, 1.0);
    assert_eq!(v, sorted_weights(&xs));
    support::assert_close(&g, &want, 1e-15);
    support::check(
        &xs,
        1,
        |x| vec![sorted_weights(x)],
        |x, d| vec![sorted_weights_jvp(x, d).1],
        |x, w| sorted_weights_vjp(x, w[0]).1,
        |x, d, w| {
            let (_, l) = sorted_weights_lin(x);
            (vec![l.apply(d.to_vec())], l.transpose(w[0]))
        },
    );
}

/// `fill` and `copy_from_slice` on a local array.
#[differentiable]
fn refilled(xs: &[f64], c: f64) -> f64 {
    let mut y = vec![0.0; xs.len()];
    y.copy_from_slice(xs);
    let mut s = 0.0;
    for v in y.iter() {
        s += v * v;
    }
    y.fill(c * s);
    y[0] + 2.0 * y[y.len() - 1] + s
}

#[test]
fn fill_and_copy_from_slice_write_every_element() {
    let xs = [0.5, -2.0, 1.5];
    let c = 0.3;
    // By hand: s = Σx², f = 3cs + s, ∂f/∂x = (3c + 1)·2x, ∂f/∂c = 3s.
    let s: f64 = xs.iter().map(|v| v * v).sum();
    let (v, (g, gc)) = refilled_vjp(&xs, c, 1.0);
    assert_eq!(v, refilled(&xs, c));
    assert!(support::close(v, 3.0 * c * s + s, 1e-15));
    let want: Vec<f64> = xs.iter().map(|x| (3.0 * c + 1.0) * 2.0 * x).collect();
    support::assert_close(&g, &want, 1e-15);
    assert!(support::close(gc, 3.0 * s, 1e-15));
}

/// Arrays of different lengths panic, as `copy_from_slice` does.
#[differentiable]
fn copied_into(xs: &[f64], #[nondiff] n: usize) -> f64 {
    let mut y = vec![0.0; n];
    y.copy_from_slice(xs);
    y[0]
}

#[test]
fn copy_from_slice_of_another_length_panics() {
    let xs = [1.0, 2.0];
    assert_eq!(copied_into_vjp(&xs, 2, 1.0), (1.0, vec![1.0, 0.0]));
    for n in [1, 3] {
        let original = std::panic::catch_unwind(|| copied_into(&xs, n));
        let generated = std::panic::catch_unwind(|| copied_into_vjp(&xs, n, 1.0));
        assert!(original.is_err() && generated.is_err(), "n = {n}");
    }
}
