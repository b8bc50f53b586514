//! Control flow in `#[differentiable]` functions: branches, loops, `while`,
//! `match`; derivatives against finite differences and between modes
//! (`f_jvp`, `f_lin` + `apply`, `f_lin` + `transpose`, `f_vjp`), in the
//! crate's own build profile (debug in `cargo test`).
#![deny(warnings)]

use linear_ad::{differentiable, LinearMap, TapeSize};

/// Central finite difference of `f` at `x` along `dx`.
fn fd(f: impl Fn(f64) -> f64, x: f64) -> f64 {
    let h = 1e-6 * (1.0 + x.abs());
    (f(x + h) - f(x - h)) / (2.0 * h)
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs() + b.abs())
}

#[differentiable]
pub fn piecewise(x: f64) -> f64 {
    if x > 1.0 {
        x * x
    } else if x > -1.0 {
        2.0 * x - 1.0
    } else {
        -x.exp()
    }
}

/// Variables declared without a value and assigned in each branch, of a
/// float, a tuple, an array, a constant and a value assigned once after
/// its `let`.
#[differentiable]
#[allow(clippy::needless_late_init)]
pub fn assigned_later(x: f64, y: f64, n: usize) -> f64 {
    let z: f64;
    if x > y {
        z = x * y;
    } else {
        z = x.sin();
    }
    let c: f64;
    if n > 2 {
        c = 1.5;
    } else {
        c = 2.5;
    }
    let p: (f64, f64);
    if n.is_multiple_of(2) {
        p = (x, y * 2.0);
    } else {
        p = (y, x);
    }
    let q: f64;
    q = z + 1.0;
    let a: [f64; 2];
    if x > 0.0 {
        a = [x, y * 2.0];
    } else {
        a = [y, x];
    }
    z * c + p.0 * p.1 * q + a[0] * a[1]
}

#[test]
fn variables_assigned_after_their_let() {
    for (x, y, n) in [(0.7, 0.2, 4), (0.3, 1.1, 1), (-0.4, -0.9, 3)] {
        let (v, (gx, gy)) = assigned_later_vjp(x, y, n, 1.0);
        assert_eq!(v, assigned_later(x, y, n));
        let fx = fd(|t| assigned_later(t, y, n), x);
        let fy = fd(|t| assigned_later(x, t, n), y);
        assert!(close(gx, fx, 1e-6), "{gx} against {fx}");
        assert!(close(gy, fy, 1e-6), "{gy} against {fy}");
        let (_, d) = assigned_later_jvp(x, y, n, 1.0, 0.0);
        assert!(close(d, gx, 1e-14), "{d} against {gx}");
    }
}

#[test]
fn if_else_chains_follow_the_branch_taken() {
    for x in [-2.0, -0.5, 0.3, 1.5, 3.0] {
        let (v, d) = piecewise_jvp(x, 1.0);
        assert_eq!(v, piecewise(x));
        assert!(close(d, fd(piecewise, x), 1e-6), "x = {x}: {d}");
        let (v2, lin) = piecewise_lin(x);
        assert_eq!(v2, v);
        assert_eq!(lin.apply(1.0), d);
        assert_eq!(lin.transpose(1.0), d);
        assert_eq!(piecewise_vjp(x, 1.0), (v, d));
    }
}

/// A branch whose arms are a constant array (`[1.0, 0.0, 0.0]`, `[0.0;
/// 3]`) and a computed one, as a rotation that is the identity below a
/// small angle; `is_empty()` of an array choosing a branch.
#[differentiable]
pub fn turned(a: f64, x: &[f64]) -> f64 {
    let row = if a.abs() < 1e-4 {
        [1.0, 0.0, 0.0]
    } else if a > 10.0 {
        [0.0; 3]
    } else {
        [a.cos(), -a.sin(), 0.0]
    };
    if x.is_empty() {
        row[0] + row[1]
    } else {
        row[0] * x[0] + row[1] * x[x.len() - 1]
    }
}

#[test]
fn constant_arrays_in_branches_and_emptiness() {
    let x = [0.5, 2.0];
    for a in [0.0_f64, 5e-5, 0.7, 11.0] {
        for xs in [&x[..], &[]] {
            // The row the branch picks, and ∂/∂a of it.
            let (row, drow) = match a {
                a if a < 1e-4 => ([1.0, 0.0], [0.0, 0.0]),
                a if a > 10.0 => ([0.0, 0.0], [0.0, 0.0]),
                a => ([a.cos(), -a.sin()], [-a.sin(), -a.cos()]),
            };
            let (da, gx) = match xs {
                [] => (drow[0] + drow[1], vec![]),
                _ => (drow[0] * xs[0] + drow[1] * xs[1], row.to_vec()),
            };
            let zero = vec![0.0; xs.len()];
            let (v, d) = turned_jvp(a, xs, 1.0, &zero);
            assert_eq!(v, turned(a, xs));
            assert!(close(d, da, 1e-12), "a = {a}, {xs:?}: {d}, expected {da}");
            let (_, (ga, g)) = turned_vjp(a, xs, 1.0);
            assert!(close(ga, da, 1e-12), "a = {a}, {xs:?}: {ga}");
            assert_eq!(g, gx, "a = {a}, {xs:?}");
        }
    }
}

#[differentiable]
pub fn horner(x: f64, #[nondiff] c: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in (0..c.len()).rev() {
        s = s * x + c[i];
    }
    s
}

#[test]
fn a_for_loop_over_constant_data() {
    let c = [1.0, -2.0, 0.5, 3.0, 0.25];
    for x in [-1.5, 0.0, 0.7, 2.0] {
        let (v, d) = horner_jvp(x, &c, 1.0);
        assert!(close(v, horner(x, &c), 1e-15));
        let expect: f64 = (1..c.len())
            .map(|k| k as f64 * c[k] * x.powi(k as i32 - 1))
            .sum();
        assert!(close(d, expect, 1e-12), "{d} vs {expect}");
        let (_, lin) = horner_lin(x, &c);
        assert!(close(lin.transpose(1.0), d, 1e-14));
        assert!(close(horner_vjp(x, &c, 1.0).1, d, 1e-14));
        // One per-iteration record of one saved real each, in a Vec.
        assert!(lin.tape_bytes() >= c.len() * 8);
    }
}

#[differentiable]
pub fn loss(w: f64, b: f64, #[nondiff] xs: &[f64], #[nondiff] ys: &[f64]) -> f64 {
    let mut total = 0.0;
    for i in 0..xs.len() {
        let r = w * xs[i] + b - ys[i];
        // Huber loss with delta 1.
        if r.abs() <= 1.0 {
            total += 0.5 * r * r;
        } else {
            total += r.abs() - 0.5;
        }
    }
    total / xs.len() as f64
}

#[test]
fn a_loss_summed_over_data_with_a_branch_per_term() {
    let xs = [0.0, 1.0, 2.0, 3.0, 4.0];
    let ys = [1.0, 2.9, 5.2, 7.1, 20.0];
    let (w, b) = (1.7, 0.4);
    let (v, (gw, gb)) = loss_vjp(w, b, &xs, &ys, 1.0);
    assert_eq!(v, loss(w, b, &xs, &ys));
    assert!(close(gw, fd(|w| loss(w, b, &xs, &ys), w), 1e-6));
    assert!(close(gb, fd(|b| loss(w, b, &xs, &ys), b), 1e-6));
    let (_, dw) = loss_jvp(w, b, &xs, &ys, 1.0, 0.0);
    assert!(close(dw, gw, 1e-14));
    let (_, lin) = loss_lin(w, b, &xs, &ys);
    // Dot-product identity between apply and transpose.
    let (tx, ty) = (0.3, -1.1);
    let lhs = lin.apply((tx, ty)) * 2.5;
    let (cw, cb) = lin.transpose(2.5);
    assert!(close(lhs, cw * tx + cb * ty, 1e-14));
    // Both arms' derivatives scale the residual's tangent (by r, by
    // sign(r)): folding makes the branch return that coefficient, so a
    // term's record is its data point and the coefficient, with no tag
    // saying which arm ran (32 bytes with one). In a new thread, whose
    // tape pool is empty, the record buffer holds exactly the terms.
    let heap = std::thread::spawn(move || {
        let (_, lin) = loss_lin(w, b, &xs, &ys);
        lin.tape_bytes() - std::mem::size_of_val(&lin)
    })
    .join()
    .expect("the thread runs");
    assert_eq!(heap, 16 * xs.len());
}

#[differentiable]
pub fn newton_sqrt(a: f64) -> f64 {
    let mut x = a;
    let mut k = 0;
    while k < 6 {
        x = 0.5 * (x + a / x);
        k += 1;
    }
    x
}

#[test]
fn a_while_loop_with_a_growable_tape() {
    for a in [0.5, 2.0, 9.0] {
        let (v, d) = newton_sqrt_jvp(a, 1.0);
        assert!(close(v, a.sqrt(), 1e-6));
        assert!(close(d, fd(newton_sqrt, a), 1e-6), "{d}");
        let (_, g) = newton_sqrt_vjp(a, 1.0);
        assert!(close(g, d, 1e-13));
    }
}

/// `x` squared and halved `n` times: a `while` loop whose trip count is
/// the caller's, from none to enough to grow its tape several times.
#[differentiable]
pub fn square_halvings(x: f64, #[nondiff] n: usize) -> f64 {
    let mut y = x;
    let mut k = 0;
    while k < n {
        y = 0.5 * y * y;
        k += 1;
    }
    y
}

#[test]
fn a_while_loop_tape_holds_every_iteration_and_none_when_none_runs() {
    let x = 1.01;
    // y_k = 2 (x/2)^(2^k), so dy/dx = 2^k y / x.
    for n in [0, 1, 3, 4, 5, 9, 17] {
        let y = 2.0 * (x / 2.0f64).powi(1 << n);
        let dy = (1u64 << n) as f64 * y / x;
        let (v, d) = square_halvings_jvp(x, n, 1.0);
        assert!(
            close(v, y, 1e-12) && close(d, dy, 1e-12),
            "n = {n}: {d} vs {dy}"
        );
        let (_, g) = square_halvings_vjp(x, n, 1.0);
        assert!(close(g, dy, 1e-12), "n = {n}: {g} vs {dy}");
        let (_, lin) = square_halvings_lin(x, n);
        assert!(close(lin.transpose(1.0), dy, 1e-12), "n = {n}");
        let heap = lin.tape_bytes() - std::mem::size_of_val(&lin);
        // A record per iteration (its coefficient), and no allocation at
        // all when the loop runs none.
        assert!(heap >= 8 * n, "n = {n}: {heap} bytes");
        assert_eq!(heap == 0, n == 0, "n = {n}: {heap} bytes");
    }
}

#[differentiable]
pub fn by_cases(x: f64, n: i32) -> f64 {
    match n {
        0 => x,
        1 | 2 => x * x,
        k if k < 0 => -x,
        _ => x.sin(),
    }
}

#[test]
fn match_on_integers_with_guards() {
    for n in [-3, 0, 1, 2, 5] {
        let x = 0.8;
        let (_, d) = by_cases_jvp(x, n, 1.0);
        assert!(close(d, fd(|x| by_cases(x, n), x), 1e-6), "n = {n}");
        assert!(close(by_cases_vjp(x, n, 1.0).1, d, 1e-14));
    }
}

/// RK4 for dy/dt = -k y over t in [0, 1], under both checkpoint
/// policies.
macro_rules! rk4_decay {
    ($(#[$attr:meta])* $name:ident) => {
        $(#[$attr])*
        pub fn $name(y0: f64, k: f64, #[nondiff] steps: usize) -> f64 {
            let h = 1.0 / steps as f64;
            let mut y = y0;
            for _ in 0..steps {
                let k1 = -k * y;
                let k2 = -k * (y + 0.5 * h * k1);
                let k3 = -k * (y + 0.5 * h * k2);
                let k4 = -k * (y + h * k3);
                y += h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
            }
            y
        }
    };
}

rk4_decay!(
    #[differentiable]
    rk4
);
rk4_decay!(
    #[differentiable(checkpoint = "state")]
    rk4_state
);
rk4_decay!(
    #[differentiable(checkpoint = "save")]
    rk4_save
);

#[test]
fn an_ode_integrator() {
    let (y0, k): (f64, f64) = (2.0, 0.7);
    let (v, (g0, gk)) = rk4_vjp(y0, k, 100, 1.0);
    assert!(close(v, y0 * (-k).exp(), 1e-9));
    assert!(close(g0, (-k).exp(), 1e-9));
    assert!(close(gk, -y0 * (-k).exp(), 1e-8));
    let (_, d0) = rk4_jvp(y0, k, 100, 1.0, 0.0);
    assert!(close(d0, g0, 1e-13));
}

#[differentiable]
pub fn clamp_low(x: f64) -> f64 {
    if x < 0.0 {
        return 0.0;
    }
    x * x
}

#[differentiable]
pub fn halve_until_small(x: f64) -> f64 {
    let mut y = x;
    let mut n = 0;
    loop {
        if y.abs() < 1.0 {
            break;
        }
        y = 0.5 * y + 0.1 * y.sin();
        n += 1;
        if n > 50 {
            return y;
        }
    }
    y * y
}

#[differentiable]
pub fn sum_skipping(x: f64, #[nondiff] skip: usize) -> f64 {
    let mut s = 0.0;
    'outer: for i in 0..6 {
        if i == skip {
            continue;
        }
        for j in (0..4).rev() {
            if i + j > 7 {
                break 'outer;
            }
            if j == 1 {
                continue 'outer;
            }
            s += (x * (i + j) as f64).sin();
        }
    }
    s
}

#[test]
fn early_return_break_continue_and_labels() {
    for x in [-1.0, 0.5, 2.0] {
        let (v, d) = clamp_low_jvp(x, 1.0);
        assert_eq!(v, clamp_low(x));
        assert!(close(d, fd(clamp_low, x), 1e-6));
        assert_eq!(clamp_low_vjp(x, 1.0), (v, d));
    }
    for x in [0.3, 5.0, 40.0] {
        let (v, d) = halve_until_small_jvp(x, 1.0);
        assert_eq!(v, halve_until_small(x));
        assert!(close(d, fd(halve_until_small, x), 1e-5), "{x}: {d}");
        let (_, lin) = halve_until_small_lin(x);
        assert!(close(lin.transpose(1.0), d, 1e-13));
    }
    for skip in [0, 2, 9] {
        let x = 0.7;
        let (v, d) = sum_skipping_jvp(x, skip, 1.0);
        assert_eq!(v, sum_skipping(x, skip));
        assert!(close(d, fd(|x| sum_skipping(x, skip), x), 1e-6));
        assert!(close(sum_skipping_vjp(x, skip, 1.0).1, d, 1e-13));
    }
}

#[differentiable]
pub fn power_series(x: f64, #[nondiff] n: i32) -> f64 {
    let mut s = 0.0;
    for k in 0..n {
        s += x.powi(k) / (k + 1) as f64;
    }
    s + x.powi(n)
}

#[test]
fn powi_with_an_exponent_computed_at_run_time() {
    for n in [0, 1, 4] {
        let x = 0.9;
        let (v, d) = power_series_jvp(x, n, 1.0);
        assert_eq!(v, power_series(x, n));
        let expect: f64 = (1..n)
            .map(|k| f64::from(k) * x.powi(k - 1) / f64::from(k + 1))
            .sum::<f64>()
            + f64::from(n) * x.powi(n - 1);
        assert!(close(d, expect, 1e-13), "n = {n}: {d} vs {expect}");
        assert!(close(power_series_vjp(x, n, 1.0).1, d, 1e-14));
    }
}

/// One body under both checkpoint policies.
macro_rules! sin_horner {
    ($(#[$attr:meta])* $name:ident) => {
        $(#[$attr])*
        pub fn $name(x: f64, #[nondiff] c: &[f64]) -> f64 {
            let mut s = 0.0;
            for i in (0..c.len()).rev() {
                let t = (s * x).sin();
                s = t * x + c[i];
            }
            s
        }
    };
}

sin_horner!(
    #[differentiable(checkpoint = "state")]
    horner_state
);
sin_horner!(
    #[differentiable]
    horner_saved
);

#[test]
fn checkpointing_loop_state_gives_the_same_derivatives_from_a_smaller_tape() {
    let (y0, k): (f64, f64) = (2.0, 0.7);
    assert_eq!(rk4_state_vjp(y0, k, 50, 1.0), rk4_vjp(y0, k, 50, 1.0));
    assert_eq!(
        rk4_state_jvp(y0, k, 50, 1.0, 0.5),
        rk4_jvp(y0, k, 50, 1.0, 0.5)
    );
    assert_eq!(rk4_save_vjp(y0, k, 50, 1.0), rk4_vjp(y0, k, 50, 1.0));
    let (_, saved) = rk4_save_lin(y0, k, 50);
    let (_, state) = rk4_state_lin(y0, k, 50);
    let (_, auto) = rk4_lin(y0, k, 50);
    assert_eq!(state.transpose(1.0), saved.transpose(1.0));
    assert_eq!(state.apply((0.3, -0.2)), saved.apply((0.3, -0.2)));
    assert_eq!(auto.transpose(1.0), saved.transpose(1.0));
    // One f64 of state per step instead of the stages' intermediates.
    assert!(
        state.tape_bytes() * 3 < saved.tape_bytes(),
        "{} vs {}",
        state.tape_bytes(),
        saved.tape_bytes()
    );
    // The default recomputes, from the state, every product that costs
    // one operation (this integrator's stages are all such products).
    assert_eq!(auto.tape_bytes(), state.tape_bytes());

    let c = [0.5, -1.0, 0.25, 2.0, -0.75];
    let x = 0.8;
    assert_eq!(horner_state_vjp(x, &c, 1.0), horner_saved_vjp(x, &c, 1.0));
    let (_, a) = horner_state_lin(x, &c);
    let (_, b) = horner_saved_lin(x, &c);
    assert_eq!(a.transpose(1.0), b.transpose(1.0));
    assert!(close(
        a.transpose(1.0),
        fd(|x| horner_saved(x, &c), x),
        1e-6
    ));
}

/// Array literals without an annotation, carried through a loop and a
/// branch: typed as `[f64; 2]` and `[[f64; 2]; 2]` would type them.
#[differentiable]
pub fn swept_arrays(q: &[f64], s: f64) -> f64 {
    let mut p = [0.0, 0.0];
    let mut m = [[0.0; 2]; 2];
    let mut angle = 0.0;
    for v in q.iter() {
        angle += v * s;
        p[0] += angle.cos();
        p[1] += angle.sin();
        if p[1] > 0.0 {
            m[0][1] += p[0] * v;
        } else {
            m[1] = [p[1], s];
        }
    }
    p[0] * p[1] + m[0][1] + m[1][0] * m[1][1]
}

#[test]
fn array_literals_carried_without_an_annotation() {
    let q = [0.4, -1.3, 0.8, 2.1, -0.2];
    let (v, (gq, gs)) = swept_arrays_vjp(&q, 0.7, 1.0);
    assert_eq!(v, swept_arrays(&q, 0.7));
    assert!(close(gs, fd(|s| swept_arrays(&q, s), 0.7), 1e-7), "{gs}");
    for i in 0..q.len() {
        let at = |t: f64| {
            let mut r = q;
            r[i] = t;
            swept_arrays(&r, 0.7)
        };
        assert!(close(gq[i], fd(at, q[i]), 1e-7), "{i}: {}", gq[i]);
    }
}

/// An alternating sum whose sign is an `if` on integers inside the loop:
/// its arms (`{ 1.0 }`, `{ -1.0 }`) become constants evaluated in place,
/// which must not be linted as unnecessary braces there (this file denies
/// warnings).
#[differentiable]
pub fn alternating(a: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut odd = 0u64;
    for &v in a.iter() {
        let sign = if odd & 1 == 0 { 1.0 } else { -1.0 };
        s += sign * v * v;
        odd ^= 1;
    }
    s
}

#[test]
fn a_sign_chosen_by_an_integer_branch_in_a_loop() {
    let a = [0.5, -1.5, 2.0, 0.25];
    let (v, g) = alternating_vjp(&a, 1.0);
    assert_eq!(v, alternating(&a));
    for (i, gi) in g.iter().enumerate() {
        let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
        assert!(close(*gi, 2.0 * sign * a[i], 1e-14), "{i}: {gi}");
    }
}

/// Loop state declared by one `let` of a tuple literal: each name keeps
/// its element's type (`0.0` a float, `0u32` an integer).
#[differentiable]
pub fn repeated_product(x: f64, y: f64) -> f64 {
    let (mut s, mut c) = (0.0, 0u32);
    while c < 3 {
        s += x * y;
        c += 1;
    }
    s
}

#[test]
fn loop_state_from_a_tuple_literal() {
    let (v, (gx, gy)) = repeated_product_vjp(1.5, -2.0, 1.0);
    assert_eq!(v, repeated_product(1.5, -2.0));
    assert!(close(gx, -6.0, 1e-15) && close(gy, 4.5, 1e-15), "{gx} {gy}");
}

/// `return` and `break` inside loops over arrays' elements: the loop runs
/// over the indices, its pattern binding each element by value.
#[differentiable]
pub fn first_above(xs: &[f64], t: f64) -> f64 {
    for &x in xs {
        if x > t {
            return x * x;
        }
    }
    t
}

#[differentiable]
pub fn weighted_until(xs: &[f64], ws: &[f64], cap: f64) -> f64 {
    let mut s = 0.0;
    for (k, (x, w)) in xs.iter().zip(ws.iter()).enumerate() {
        if s > cap {
            break;
        }
        s += x * w * (k as f64 + 1.0);
    }
    s
}

#[differentiable]
pub fn last_negative(xs: &[f64]) -> f64 {
    for (i, &x) in xs.iter().enumerate().rev() {
        if x < 0.0 {
            return x * i as f64;
        }
    }
    0.0
}

#[test]
fn early_exits_from_loops_over_arrays() {
    let xs = [0.25, -0.5, 1.5, 2.0];
    let (v, (gx, gt)) = first_above_vjp(&xs, 1.0, 1.0);
    assert_eq!(v, 2.25);
    assert_eq!(gx, vec![0.0, 0.0, 3.0, 0.0]);
    assert_eq!(gt, 0.0);
    let (v, (_, gt)) = first_above_vjp(&xs, 3.0, 1.0);
    assert_eq!((v, gt), (3.0, 1.0));

    let ws = [2.0, 1.0, 0.5];
    // Terms 0.5, then -1.0 (k = 1), then 2.25 (k = 2): ws is shorter, so
    // the fourth is never reached.
    let (v, (gx, gw, gc)) = weighted_until_vjp(&xs, &ws, 10.0, 1.0);
    assert_eq!(v, 1.75);
    assert_eq!(gx, vec![2.0, 2.0, 1.5, 0.0]);
    assert_eq!(gw, vec![0.25, -1.0, 4.5]);
    assert_eq!(gc, 0.0);
    // Past the cap after the first term: the loop breaks.
    let (v, (gx, gw, _)) = weighted_until_vjp(&xs, &ws, 0.2, 1.0);
    assert_eq!(v, 0.5);
    assert_eq!(gx, vec![2.0, 0.0, 0.0, 0.0]);
    assert_eq!(gw, vec![0.25, 0.0, 0.0]);

    let (v, g) = last_negative_vjp(&[-1.0, 2.0, -3.0, 4.0], 1.0);
    assert_eq!(v, -6.0);
    assert_eq!(g, vec![0.0, 0.0, 2.0, 0.0]);
    assert_eq!(last_negative_vjp(&[1.0, 2.0], 1.0), (0.0, vec![0.0, 0.0]));
}

/// Integer methods of loop indices (`i.pow(2)`, `k.min(4)`, the test
/// `i.is_multiple_of(2)`), run where they stand.
#[allow(clippy::needless_range_loop)]
#[differentiable]
fn even_squares(xs: &[f64]) -> f64 {
    let mut e = 0.0;
    for i in 0..xs.len() {
        let k = i.pow(2);
        if i.is_multiple_of(2) && k.min(4) > 1 {
            e += xs[i] * k as f64;
        }
    }
    e
}

#[test]
fn methods_of_loop_indices() {
    let xs = [1.0, 2.0, 3.0, 4.0, 5.0];
    // Indices 2 and 4: weights 4 and 16.
    let (v, g) = even_squares_vjp(&xs, 1.0);
    assert_eq!(v, even_squares(&xs));
    assert_eq!(v, 3.0 * 4.0 + 5.0 * 16.0);
    assert_eq!(g, vec![0.0, 0.0, 4.0, 0.0, 16.0]);
}
