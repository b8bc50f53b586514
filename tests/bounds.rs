//! Generated loops check their arrays' bounds once, before the loop
//! (`linear_core::codegen::bounds`): they panic exactly when the user's
//! function does, with the same message, and compute the same derivatives
//! where every index is in bounds.

// Index loops, as numeric code is often written.
#![allow(clippy::needless_range_loop)]

use std::panic::{catch_unwind, UnwindSafe};

use linear_ad::{differentiable, LinearMap};

/// `x · y` over `x`'s indices: `y` must be at least as long.
#[differentiable]
pub fn dot_over_x(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * y[i];
    }
    s
}

/// A loop over `lo..hi` with a state array written in place: `out[i]`
/// for `i` in `lo..hi` only, so `lo > hi` runs nothing and `hi` past the
/// end fails at the first index past it.
#[differentiable]
pub fn squares_between(x: &[f64], #[nondiff] lo: usize, #[nondiff] hi: usize) -> Vec<f64> {
    let mut out = vec![0.0; x.len()];
    for i in lo..hi {
        out[i] = x[i] * x[i];
    }
    out
}

/// The panic message of `f`, if it panics.
fn message(f: impl FnOnce() + UnwindSafe) -> Option<String> {
    let payload = catch_unwind(f).err()?;
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
}

fn quiet() {
    std::panic::set_hook(Box::new(|_| {}));
}

#[test]
fn a_loop_past_an_array_panics_as_the_function_does() {
    quiet();
    let (x, y) = ([1.0, 2.0, 3.0], [4.0, 5.0]);
    let expected = message(|| {
        dot_over_x(&x, &y);
    });
    assert_eq!(
        expected.as_deref(),
        Some("index out of bounds: the len is 2 but the index is 2")
    );
    assert_eq!(
        message(|| {
            dot_over_x_vjp(&x, &y, 1.0);
        }),
        expected
    );
    assert_eq!(
        message(|| {
            dot_over_x_jvp(&x, &y, &x, &y);
        }),
        expected
    );
    assert_eq!(
        message(|| {
            dot_over_x_lin(&x, &y);
        }),
        expected
    );
}

#[test]
fn a_range_starting_past_the_end_reports_its_first_index() {
    quiet();
    let x = [1.0, 2.0];
    for (lo, hi) in [(3, 5), (1, 4), (0, 3)] {
        let expected = message(|| {
            squares_between(&x, lo, hi);
        });
        assert!(expected.is_some(), "{lo}..{hi} is out of bounds");
        assert_eq!(
            message(|| {
                squares_between_vjp(&x, lo, hi, vec![1.0; 2]);
            }),
            expected,
            "{lo}..{hi}"
        );
    }
}

#[test]
fn empty_and_fitting_loops_run_as_before() {
    // An empty range past the end reads nothing: no panic.
    let x = [1.0, 2.0];
    let (v, g) = squares_between_vjp(&x, 5, 3, vec![1.0; 2]);
    assert_eq!(v, vec![0.0, 0.0]);
    assert_eq!(g, vec![0.0, 0.0]);
    let (v, g) = squares_between_vjp(&x, 1, 2, vec![1.0, 10.0]);
    assert_eq!(v, vec![0.0, 4.0]);
    assert_eq!(g, vec![0.0, 2.0 * 2.0 * 10.0]);
    // `y` longer than `x`: its extra elements are not read, and their
    // cotangents are zero.
    let (x, y) = ([1.0, 2.0], [4.0, 5.0, 6.0]);
    let (v, (gx, gy)) = dot_over_x_vjp(&x, &y, 2.0);
    assert_eq!(v, 14.0);
    assert_eq!(gx, vec![8.0, 10.0]);
    assert_eq!(gy, vec![2.0, 4.0, 0.0]);
    let (_, lin) = dot_over_x_lin(&x, &y);
    assert_eq!(lin.apply((vec![1.0, 0.0], vec![0.0, 0.0, 1.0])), 4.0);
    let (e, _): (Vec<f64>, Vec<f64>) = lin.transpose(1.0);
    assert_eq!(e, vec![4.0, 5.0]);
    // Empty inputs: the loop does not run.
    let (v, (gx, gy)) = dot_over_x_vjp(&[], &[], 1.0);
    assert_eq!((v, gx.len(), gy.len()), (0.0, 0, 0));
}

/// Two arrays read in one loop, the second shorter.
#[differentiable]
pub fn weighted(x: &[f64], w: &[f64], #[nondiff] lo: usize, #[nondiff] hi: usize) -> f64 {
    let mut s = 0.0;
    for i in lo..hi {
        s += x[i] * w[i];
    }
    s
}

#[test]
fn of_several_arrays_the_first_failing_access_is_reported() {
    quiet();
    let (x, w) = ([1.0; 5], [1.0; 3]);
    // From 0 and from 3: `w` fails first, at 3. From 4: `w`, at 4,
    // though `x` is read first. From 7: `x`, at 7, read first.
    for (lo, hi) in [(0, 6), (4, 6), (3, 6), (7, 9)] {
        let expected = message(|| {
            weighted(&x, &w, lo, hi);
        });
        assert!(expected.is_some(), "{lo}..{hi} is out of bounds");
        assert_eq!(
            message(|| {
                weighted_vjp(&x, &w, lo, hi, 1.0);
            }),
            expected,
            "{lo}..{hi}"
        );
    }
}

/// A three-point stencil: `x` at `i - 1`, `i` and `i + 1` in one loop,
/// which code generation leaves with its checks (an array at several
/// offsets: `linear_core::codegen::window`); `out` written at `i`.
#[differentiable]
pub fn stencil(x: &[f64], #[nondiff] hi: usize) -> Vec<f64> {
    let mut out = vec![0.0; x.len()];
    for i in 1..hi {
        out[i] = x[i - 1] - 2.0 * x[i] + x[i + 1] * x[i];
    }
    out
}

/// Reads only past the index: `x[i + 2]`, no access at `i` itself, so
/// no check is hoisted (`linear_core::codegen::bounds`) and the window of
/// `x` from `lo + 2` alone tests the loop.
#[differentiable]
pub fn ahead(x: &[f64], #[nondiff] n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += x[i + 2] * x[i + 2];
    }
    s
}

#[test]
fn offset_indices_panic_as_the_function_does() {
    quiet();
    let x = [1.0, 2.0, 3.0, 4.0];
    for hi in [4, 5] {
        let expected = message(|| {
            stencil(&x, hi);
        });
        assert!(expected.is_some(), "1..{hi} reads past the end");
        assert_eq!(
            message(|| {
                stencil_vjp(&x, hi, vec![1.0; 4]);
            }),
            expected
        );
        assert_eq!(
            message(|| {
                stencil_jvp(&x, hi, &x);
            }),
            expected
        );
    }
    for n in [3, 7] {
        let expected = message(|| {
            ahead(&x, n);
        });
        assert!(expected.is_some(), "0..{n} reads past the end");
        assert_eq!(
            message(|| {
                ahead_vjp(&x, n, 1.0);
            }),
            expected
        );
    }
    // A loop that does not run reads nothing, wherever its window would be.
    assert_eq!(ahead_vjp(&x, 0, 1.0), (0.0, vec![0.0; 4]));
    assert_eq!(stencil_vjp(&x, 1, vec![1.0; 4]).1, vec![0.0; 4]);
}

#[test]
fn offset_indices_give_the_derivatives() {
    let x = [0.5, -1.0, 2.0, 0.25, 3.0];
    let hi = x.len() - 1;
    let (y, lin) = stencil_lin(&x, hi);
    assert_eq!(y, stencil(&x, hi));
    // Row i of the Jacobian: ∂out[i]/∂x[i-1] = 1, ∂/∂x[i] = -2 + x[i+1],
    // ∂/∂x[i+1] = x[i].
    for i in 1..hi {
        let mut e = vec![0.0; x.len()];
        e[i] = 1.0;
        let row = lin.transpose(e);
        let mut want = vec![0.0; x.len()];
        want[i - 1] = 1.0;
        want[i] = -2.0 + x[i + 1];
        want[i + 1] = x[i];
        assert_eq!(row, want, "row {i}");
        let (_, by_vjp) = stencil_vjp(&x, hi, {
            let mut e = vec![0.0; x.len()];
            e[i] = 1.0;
            e
        });
        assert_eq!(by_vjp, want, "row {i} by f_vjp");
    }
    // Columns: `apply` of a unit tangent is the transposes' column.
    for j in 0..x.len() {
        let mut e = vec![0.0; x.len()];
        e[j] = 1.0;
        let column = lin.apply(e.clone());
        let (_, dy) = stencil_jvp(&x, hi, &e);
        assert_eq!(column, dy, "column {j}");
    }
    let (s, g) = ahead_vjp(&x, 3, 1.0);
    assert_eq!(s, ahead(&x, 3));
    assert_eq!(g, vec![0.0, 0.0, 2.0 * x[2], 2.0 * x[3], 2.0 * x[4]]);
}

/// `total[r] += x[j]·w` over `j`, with `r` fixed: the array is reached at
/// one element in every iteration, which the loop carries as a value (a
/// cell, `linear_core::codegen::window`), in the forward loop and in the
/// transposed one (where `x̄[j] += total̄[r]·w` and `w̄ += total̄[r]·x[j]`).
#[differentiable]
pub fn into_one(x: &[f64], w: f64, #[nondiff] r: usize, #[nondiff] m: usize) -> Vec<f64> {
    let mut total = vec![0.0; 3];
    for j in 0..m {
        total[r] += x[j] * w;
    }
    total
}

#[test]
fn one_element_in_every_iteration_gives_the_derivatives_and_panics() {
    quiet();
    let x = [0.5, -1.0, 2.0, 0.25];
    let (y, (gx, gw)) = into_one_vjp(&x, 1.5, 2, 3, vec![0.0, 0.0, 2.0]);
    assert_eq!(y, into_one(&x, 1.5, 2, 3));
    assert_eq!(gx, vec![3.0, 3.0, 3.0, 0.0]);
    assert_eq!(gw, 2.0 * (0.5 - 1.0 + 2.0));
    let (_, dy) = into_one_jvp(&x, 1.5, 2, 3, &[1.0, 0.0, 0.0, 0.0], 1.0);
    assert_eq!(dy, vec![0.0, 0.0, 1.5 + (0.5 - 1.0 + 2.0)]);
    // No iteration: the element is never read, even past the end.
    assert_eq!(into_one_vjp(&x, 1.5, 7, 0, vec![1.0; 3]).1 .0, vec![0.0; 4]);
    // Past the end with iterations: the function's own panic.
    let expected = message(|| {
        into_one(&x, 1.5, 7, 2);
    });
    assert!(expected.is_some());
    assert_eq!(
        message(|| {
            into_one_vjp(&x, 1.5, 7, 2, vec![1.0; 3]);
        }),
        expected
    );
    assert_eq!(
        message(|| {
            into_one_jvp(&x, 1.5, 7, 2, &x, 1.0);
        }),
        expected
    );
}
