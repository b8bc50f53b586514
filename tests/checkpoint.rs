//! Binomial checkpointing (`#[differentiable(checkpoint = "binomial")]`):
//! the same derivatives as saving every iteration, bit for bit, from a
//! tape whose size does not grow with the trip count.

use linear_ad::{differentiable, LinearMap, TapeSize};

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

/// RK4 for the damped oscillator x'' = -w² x - c x' over t in [0, 1].
macro_rules! oscillator {
    ($(#[$attr:meta])* $name:ident) => {
        $(#[$attr])*
        pub fn $name(x0: f64, v0: f64, w: f64, c: f64, #[nondiff] steps: usize) -> f64 {
            let h = 1.0 / steps as f64;
            let (mut x, mut v) = (x0, v0);
            for _ in 0..steps {
                let (k1x, k1v) = (v, -w * w * x - c * v);
                let (xa, va) = (x + 0.5 * h * k1x, v + 0.5 * h * k1v);
                let (k2x, k2v) = (va, -w * w * xa - c * va);
                let (xb, vb) = (x + 0.5 * h * k2x, v + 0.5 * h * k2v);
                let (k3x, k3v) = (vb, -w * w * xb - c * vb);
                let (xc, vc) = (x + h * k3x, v + h * k3v);
                let (k4x, k4v) = (vc, -w * w * xc - c * vc);
                x += h / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x);
                v += h / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v);
            }
            x * x + v
        }
    };
}

oscillator!(
    #[differentiable]
    osc_saved
);
oscillator!(
    #[differentiable(checkpoint = "binomial", snapshots = 4)]
    osc_binomial
);
oscillator!(
    #[differentiable(checkpoint = "binomial", snapshots = 1)]
    osc_one_snapshot
);

#[test]
fn an_integrator_has_the_same_derivatives_from_a_constant_tape() {
    let (x0, v0, w, c) = (1.0, 0.0, 2.0, 0.3);
    for steps in [0, 1, 2, 7, 100] {
        let saved = osc_saved_vjp(x0, v0, w, c, steps, 1.0);
        assert_eq!(osc_binomial_vjp(x0, v0, w, c, steps, 1.0), saved);
        assert_eq!(osc_one_snapshot_vjp(x0, v0, w, c, steps, 1.0), saved);
        let t = (0.1, -0.2, 0.3, 0.4);
        assert_eq!(
            osc_binomial_jvp(x0, v0, w, c, steps, t.0, t.1, t.2, t.3),
            osc_saved_jvp(x0, v0, w, c, steps, t.0, t.1, t.2, t.3)
        );
        let (_, a) = osc_binomial_lin(x0, v0, w, c, steps);
        let (_, b) = osc_saved_lin(x0, v0, w, c, steps);
        assert_eq!(a.apply(t), b.apply(t));
        assert_eq!(a.transpose(-1.5), b.transpose(-1.5));
    }
    // Central differences of the primal agree with the gradient.
    let (_, (gx, _, gw, gc)) = osc_binomial_vjp(x0, v0, w, c, 200, 1.0);
    let e = 1e-6;
    let fd = |f: &dyn Fn(f64) -> f64, a: f64| (f(a + e) - f(a - e)) / (2.0 * e);
    assert!(close(gx, fd(&|x| osc_saved(x, v0, w, c, 200), x0), 1e-6));
    assert!(close(gw, fd(&|w| osc_saved(x0, v0, w, c, 200), w), 1e-6));
    assert!(close(gc, fd(&|c| osc_saved(x0, v0, w, c, 200), c), 1e-6));
}

#[test]
fn the_tape_does_not_grow_with_the_trip_count() {
    let (_, short) = osc_binomial_lin(1.0, 0.0, 2.0, 0.3, 10);
    let (_, long) = osc_binomial_lin(1.0, 0.0, 2.0, 0.3, 10_000);
    assert_eq!(short.tape_bytes(), long.tape_bytes());
    let (_, saved) = osc_saved_lin(1.0, 0.0, 2.0, 0.3, 10_000);
    assert!(
        long.tape_bytes() * 1000 < saved.tape_bytes(),
        "{} vs {}",
        long.tape_bytes(),
        saved.tape_bytes()
    );
}

/// A million steps of compound interest, (1 + r/n)^n → e^r, reversed
/// with 8 snapshots.
#[differentiable(checkpoint = "binomial", snapshots = 8)]
pub fn compound(r: f64, #[nondiff] n: usize) -> f64 {
    let mut y = 1.0;
    for _ in 0..n {
        y *= 1.0 + r / n as f64;
    }
    y
}

#[test]
fn a_million_iterations_in_eight_snapshots() {
    let n = 1_000_000;
    let r = 0.05;
    let (v, g) = compound_vjp(r, n, 1.0);
    // d/dr (1 + r/n)^n = (1 + r/n)^(n-1) = v / (1 + r/n).
    assert!(close(g, v / (1.0 + r / n as f64), 1e-9), "{g} vs {v}");
    assert!(close(v, r.exp(), 1e-6));
}

/// Newton's iteration for the cube root, a `while` loop whose trip count
/// is known only at its end, nested in a counted loop run backwards in
/// steps of two.
macro_rules! cube_roots {
    ($(#[$attr:meta])* $name:ident) => {
        $(#[$attr])*
        pub fn $name(a: f64, #[nondiff] n: i32) -> f64 {
            let mut total = 0.0;
            for k in (1..n).step_by(2).rev() {
                let target = a * k as f64;
                let mut y = target.max(1.0);
                let mut it = 0;
                while (y * y * y - target).abs() > 1e-12 * target && it < 60 {
                    y -= (y * y * y - target) / (3.0 * y * y);
                    it += 1;
                }
                total = 0.5 * total + y;
            }
            total
        }
    };
}

cube_roots!(
    #[differentiable]
    roots_saved
);
cube_roots!(
    #[differentiable(checkpoint = "binomial", snapshots = 2)]
    roots_binomial
);

#[test]
fn nested_while_in_a_reversed_stepped_loop() {
    for n in [0, 1, 2, 6, 9] {
        let a = 2.5;
        assert_eq!(roots_binomial_vjp(a, n, 1.0), roots_saved_vjp(a, n, 1.0));
        assert_eq!(roots_binomial_jvp(a, n, 0.7), roots_saved_jvp(a, n, 0.7));
    }
    // The derivative of the cube roots themselves: d(ak)^(1/3)/da = (k/3) (ak)^(-2/3).
    let (a, n) = (2.5, 6);
    let mut want = 0.0;
    for k in (1..n).step_by(2).rev() {
        let k = k as f64;
        want = 0.5 * want + k / 3.0 * (a * k).powf(-2.0 / 3.0);
    }
    let (_, g) = roots_binomial_vjp(a, n, 1.0);
    assert!(close(g, want, 1e-9), "{g} vs {want}");
}

/// A loop reading a `#[nondiff]` slice cannot recompute its steps in the
/// reverse sweep (the slice is not on the tape); it falls back to saving
/// its state per iteration.
macro_rules! weighted {
    ($(#[$attr:meta])* $name:ident) => {
        $(#[$attr])*
        pub fn $name(x: f64, #[nondiff] c: &[f64]) -> f64 {
            let mut s = 0.0;
            for i in 0..c.len() {
                s = (s * x).sin() + c[i] * x;
            }
            s
        }
    };
}

weighted!(
    #[differentiable]
    weighted_saved
);
weighted!(
    #[differentiable(checkpoint = "binomial")]
    weighted_binomial
);

#[test]
fn a_loop_over_data_falls_back_to_saving_its_state() {
    let c = [0.5, -1.0, 0.25, 2.0];
    assert_eq!(
        weighted_binomial_vjp(0.8, &c, 1.0),
        weighted_saved_vjp(0.8, &c, 1.0)
    );
    let (_, lin) = weighted_binomial_lin(0.8, &c);
    let (_, more) = weighted_binomial_lin(0.8, &[1.0; 40]);
    assert!(more.tape_bytes() > lin.tape_bytes());
}

/// A body reading its index: the index stays on the forward side (its
/// Rust type is the user's), so both recomputing policies save this loop's
/// values as `"save"` does.
macro_rules! indexed {
    ($(#[$attr:meta])* $name:ident) => {
        $(#[$attr])*
        pub fn $name(x: f64, #[nondiff] n: usize) -> f64 {
            let mut s = x;
            for i in 0..n {
                let t = (s * i as f64).sin();
                s += t * x;
            }
            s
        }
    };
}

indexed!(
    #[differentiable]
    indexed_saved
);
indexed!(
    #[differentiable(checkpoint = "state")]
    indexed_state
);
indexed!(
    #[differentiable(checkpoint = "binomial")]
    indexed_binomial
);

#[test]
fn a_body_reading_its_index_keeps_it_off_the_tape() {
    let want = indexed_saved_vjp(0.4, 6, 1.0);
    assert_eq!(indexed_state_vjp(0.4, 6, 1.0), want);
    assert_eq!(indexed_binomial_vjp(0.4, 6, 1.0), want);
}

/// Eight fixed steps: the tape is a fixed-size array inside the
/// linearization, no heap.
#[differentiable]
pub fn eight_steps(x: f64, y0: f64) -> f64 {
    let mut y = y0;
    for _ in 0..8 {
        y = (y * x).sin() + y;
    }
    y
}

/// The same with a thousand steps: too large to move by value, so on the
/// heap.
#[differentiable]
pub fn thousand_steps(x: f64, y0: f64) -> f64 {
    let mut y = y0;
    for _ in (0..=999).rev() {
        y = (y * x).sin() * 0.5 + y * 0.5;
    }
    y
}

#[test]
fn a_constant_trip_count_keeps_a_small_tape_inline() {
    let (x, y0) = (0.7, 0.3);
    let (v, lin) = eight_steps_lin(x, y0);
    assert_eq!(lin.tape_bytes(), std::mem::size_of_val(&lin));
    let (_, g) = eight_steps_vjp(x, y0, 1.0);
    assert_eq!(lin.transpose(1.0), g);
    let e = 1e-6;
    let fd = (eight_steps(x + e, y0) - eight_steps(x - e, y0)) / (2.0 * e);
    assert!(close(g.0, fd, 1e-7), "{} vs {fd}", g.0);
    assert_eq!(eight_steps_jvp(x, y0, 1.0, 0.0), (v, lin.apply((1.0, 0.0))));

    let (_, big) = thousand_steps_lin(x, y0);
    assert!(big.tape_bytes() > std::mem::size_of_val(&big) + 1000 * 8);
    let (_, g) = thousand_steps_vjp(x, y0, 1.0);
    let fd = (thousand_steps(x + e, y0) - thousand_steps(x - e, y0)) / (2.0 * e);
    assert!(close(g.0, fd, 1e-7), "{} vs {fd}", g.0);
}
