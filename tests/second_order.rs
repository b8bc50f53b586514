//! Second derivatives (`#[differentiable(order = 2)]`): `f_hvp` and
//! `f_hessian`, by reverse over forward. Checked against Hessians derived
//! by hand, against central finite differences of the first-order
//! gradient (`f_vjp`), for symmetry, and for agreement with the
//! first-order functions on the value and gradient; in the crate's own
//! build profile (debug in `cargo test`).
#![deny(warnings)]

use linear_ad::{differentiable, Differentiable};

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs() + b.abs())
}

#[differentiable(order = 2)]
pub fn rosenbrock(x: f64, y: f64) -> f64 {
    (1.0 - x) * (1.0 - x) + 100.0 * (y - x * x) * (y - x * x)
}

/// The Rosenbrock Hessian, derived by hand.
fn rosenbrock_hessian_by_hand(x: f64, y: f64) -> [[f64; 2]; 2] {
    [
        [2.0 - 400.0 * (y - x * x) + 800.0 * x * x, -400.0 * x],
        [-400.0 * x, 200.0],
    ]
}

#[test]
fn rosenbrock_hessian_matches_the_hand_derivation() {
    for (x, y) in [(-1.2, 1.0), (1.0, 1.0), (0.3, -0.7), (2.0, 3.5)] {
        let want = rosenbrock_hessian_by_hand(x, y);
        let (v, g, h) = rosenbrock_hessian(x, y);
        assert_eq!(v, rosenbrock(x, y));
        assert_eq!(g, rosenbrock_vjp(x, y, 1.0).1);
        let flat = [h[0][0], h[0][1], h[1][0], h[1][1]];
        let want_flat = [want[0][0], want[0][1], want[1][0], want[1][1]];
        for (a, b) in flat.iter().zip(&want_flat) {
            assert!(
                close(*a, *b, 1e-12),
                "at ({x}, {y}): {h:?} against {want:?}"
            );
        }
        // H·v for a direction that is not a unit vector.
        let (dx, dy) = (0.7, -1.3);
        let (v2, g2, hv) = rosenbrock_hvp(x, y, dx, dy);
        assert_eq!((v2, g2), (v, g));
        let want_hv = (
            want[0][0] * dx + want[0][1] * dy,
            want[1][0] * dx + want[1][1] * dy,
        );
        assert!(close(hv.0, want_hv.0, 1e-12) && close(hv.1, want_hv.1, 1e-12));
    }
}

/// A loop carrying state through a branch, a tuple parameter: the tape
/// of the first-order code is a list of sums, which the second derivative
/// differentiates again.
#[differentiable(order = 2)]
pub fn looped(x: f64, y: (f64, f64)) -> f64 {
    let mut s = x * y.0;
    for _ in 0..3 {
        if s > 1.0 {
            s = s.sin() * y.1;
        } else {
            s = s * s + x;
        }
    }
    s * x.exp()
}

/// Central finite differences of `looped`'s gradient along `v`.
fn looped_fd_hvp(x: f64, y: (f64, f64), v: (f64, (f64, f64))) -> [f64; 3] {
    let h = 1e-6;
    let at = |t: f64| {
        let g = looped_vjp(x + t * v.0, (y.0 + t * v.1 .0, y.1 + t * v.1 .1), 1.0).1;
        [g.0, g.1 .0, g.1 .1]
    };
    let (p, m) = (at(h), at(-h));
    [0, 1, 2].map(|k| (p[k] - m[k]) / (2.0 * h))
}

#[test]
fn loops_and_branches_have_the_finite_difference_hvp() {
    for (x, y) in [(0.4, (1.5, 0.8)), (0.9, (0.2, -1.1)), (-0.3, (2.0, 0.5))] {
        let v = (0.3, (-0.6, 1.1));
        let (val, g, hv) = looped_hvp(x, y, v.0, v.1);
        assert_eq!(val, looped(x, y));
        let g1 = looped_vjp(x, y, 1.0).1;
        assert!(close(g.0, g1.0, 1e-14) && close(g.1 .0, g1.1 .0, 1e-14));
        let want = looped_fd_hvp(x, y, v);
        let got = [hv.0, hv.1 .0, hv.1 .1];
        for (a, b) in got.iter().zip(&want) {
            assert!(
                close(*a, *b, 1e-6),
                "at {x}, {y:?}: {got:?} against {want:?}"
            );
        }
    }
}

/// The Hessian is symmetric, and its rows are the HVPs along unit
/// vectors.
#[test]
fn hessians_are_symmetric() {
    let (x, y) = (0.4, (1.5, 0.8));
    let (_, _, h) = looped_hessian(x, y);
    for i in 0..3 {
        for j in 0..3 {
            assert!(close(h[i][j], h[j][i], 1e-12), "{h:?}");
        }
    }
    let (_, _, hv) = looped_hvp(x, y, 0.0, (1.0, 0.0));
    assert_eq!([hv.0, hv.1 .0, hv.1 .1], h[1]);
}

/// A fixed-size array parameter, unpacked; `while`; `f32`.
#[differentiable(order = 2)]
pub fn quartic(p: [f32; 3]) -> f32 {
    let [a, b, c] = p;
    let mut t = a * b + c;
    let mut n = 0;
    while n < 2 {
        t = t * t;
        n += 1;
    }
    t
}

#[test]
fn arrays_while_loops_and_f32() {
    // t = (ab + c)^4: ∂²t/∂a∂b = 4u³ + 12u²ab, ∂²t/∂a² = 12u²b², with
    // u = ab + c.
    let p = [0.5f32, 1.5, -0.25];
    let u = p[0] * p[1] + p[2];
    let (_, _, h) = quartic_hessian(p);
    let want_ab = 4.0 * u * u * u + 12.0 * u * u * p[0] * p[1];
    let want_aa = 12.0 * u * u * p[1] * p[1];
    let want_cc = 12.0 * u * u;
    assert!((h[0][1] - want_ab).abs() < 1e-5, "{h:?}");
    assert!((h[0][0] - want_aa).abs() < 1e-5, "{h:?}");
    assert!((h[2][2] - want_cc).abs() < 1e-5, "{h:?}");
}

/// A function generic in its float type.
#[differentiable(order = 2)]
pub fn cubic<T: num_traits::Float>(x: T, y: T) -> T {
    x * x * x * y
}

#[test]
fn generic_floats() {
    let (x, y) = (1.5f64, -2.0);
    let (_, _, h) = cubic_hessian(x, y);
    assert!(close(h[0][0], 6.0 * x * y, 1e-14));
    assert!(close(h[0][1], 3.0 * x * x, 1e-14));
    assert!(close(h[1][1], 0.0, 1e-14));
    let (_, _, h32) = cubic_hessian(1.5f32, -2.0f32);
    assert!((h32[0][1] - 6.75).abs() < 1e-5);
}

/// The extended Rosenbrock function over a slice: arrays read by index,
/// whose cotangents are accumulated in buffers at both orders.
#[differentiable(order = 2)]
pub fn rosenbrock_n(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    s
}

/// Its Hessian, derived by hand: tridiagonal.
fn rosenbrock_n_hessian_by_hand(x: &[f64]) -> Vec<Vec<f64>> {
    let n = x.len();
    let mut h = vec![vec![0.0; n]; n];
    for i in 0..n - 1 {
        h[i][i] += 2.0 - 400.0 * (x[i + 1] - x[i] * x[i]) + 800.0 * x[i] * x[i];
        h[i][i + 1] += -400.0 * x[i];
        h[i + 1][i] += -400.0 * x[i];
        h[i + 1][i + 1] += 200.0;
    }
    h
}

#[test]
fn slices_have_the_hand_derived_hessian() {
    let x = [-1.2, 1.0, 0.4, -0.3, 2.0];
    let want = rosenbrock_n_hessian_by_hand(&x);
    let (v, g, h) = rosenbrock_n_hessian(&x);
    assert_eq!(v, rosenbrock_n(&x));
    let g1 = rosenbrock_n_vjp(&x, 1.0).1;
    for (a, b) in g.iter().zip(&g1) {
        assert!(close(*a, *b, 1e-14), "{g:?} against {g1:?}");
    }
    for (row, want_row) in h.iter().zip(&want) {
        for (a, b) in row.iter().zip(want_row) {
            assert!(close(*a, *b, 1e-12), "{h:?} against {want:?}");
        }
    }
    let dir = [0.5, -1.0, 0.25, 2.0, -0.75];
    let (_, _, hv) = rosenbrock_n_hvp(&x, &dir);
    for (k, row) in want.iter().enumerate() {
        let w: f64 = row.iter().zip(&dir).map(|(a, b)| a * b).sum();
        assert!(close(hv[k], w, 1e-12), "{hv:?}");
    }
}

/// A fixed-size array read by index in a loop, beside a scalar.
#[differentiable(order = 2)]
#[allow(clippy::needless_range_loop)]
pub fn weighted(w: &[f64; 3], t: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        s += w[i] * (t * (i as f64 + 1.0)).sin();
    }
    s * s
}

#[test]
fn fixed_arrays_read_by_index() {
    let (w, t) = ([0.3, -0.8, 1.1], 0.7);
    let (v, g, h) = weighted_hessian(&w, t);
    assert_eq!(v, weighted(&w, t));
    let g1 = weighted_vjp(&w, t, 1.0).1;
    assert!(close(g.1, g1.1, 1e-14));
    // Rows against finite differences of the gradient.
    let eps = 1e-6;
    for k in 0..4 {
        let at = |e: f64| {
            let (mut w2, mut t2) = (w, t);
            if k < 3 {
                w2[k] += e;
            } else {
                t2 += e;
            }
            let (gw, gt) = weighted_vjp(&w2, t2, 1.0).1;
            [gw[0], gw[1], gw[2], gt]
        };
        let (p, m) = (at(eps), at(-eps));
        for j in 0..4 {
            let fd = (p[j] - m[j]) / (2.0 * eps);
            assert!(
                close(h[k][j], fd, 1e-6),
                "H[{k}][{j}] = {} against {fd}",
                h[k][j]
            );
        }
    }
}

#[derive(Differentiable, Clone, Copy)]
pub struct Spring {
    pub k: f64,
}

#[differentiable]
impl Spring {
    /// A method: `Self::energy_hvp`, `Self::energy_hessian`.
    #[differentiable(order = 2)]
    pub fn energy(&self, l: f64, m: f64) -> f64 {
        0.5 * self.k * (l - 1.0) * (l - 1.0) * m.exp()
    }
}

#[test]
fn methods_and_structs() {
    let s = Spring { k: 3.0 };
    let (l, m) = (1.5f64, 0.2f64);
    let e = m.exp();
    // Hessian of 0.5·k·(l − 1)²·eᵐ in (k, l, m), by hand.
    let d = l - 1.0;
    let want = [
        [0.0, d * e, 0.5 * d * d * e],
        [d * e, s.k * e, s.k * d * e],
        [0.5 * d * d * e, s.k * d * e, 0.5 * s.k * d * d * e],
    ];
    let dir = [0.4, -0.9, 1.3];
    let (v, g, hv) = s.energy_hvp(l, m, &SpringTangent { k: dir[0] }, dir[1], dir[2]);
    assert_eq!(v, s.energy(l, m));
    let g1 = s.energy_vjp(l, m, 1.0).1;
    assert!(close(g.0.k, g1.0.k, 1e-14) && close(g.1, g1.1, 1e-14) && close(g.2, g1.2, 1e-14));
    let got = [hv.0.k, hv.1, hv.2];
    for (k, row) in want.iter().enumerate() {
        let w: f64 = row.iter().zip(&dir).map(|(a, b)| a * b).sum();
        assert!(close(got[k], w, 1e-13), "{got:?} at row {k}");
    }
}

/// A loop of run-time length under binomial checkpointing: the first-order
/// functions replay states, the HVP keeps what the default policy keeps.
#[differentiable(order = 2, checkpoint = "binomial", snapshots = 2)]
pub fn decay(y0: f64, k: f64, #[nondiff] steps: usize) -> f64 {
    let mut y = y0;
    for _ in 0..steps {
        y = y - 0.1 * k * y * y;
    }
    y
}

#[test]
fn binomial_checkpointing_at_first_order() {
    let (y0, k, steps) = (0.8, 0.6, 7);
    let (v, g, h) = decay_hessian(y0, k, steps);
    assert_eq!(v, decay(y0, k, steps));
    assert_eq!(g, decay_vjp(y0, k, steps, 1.0).1);
    let eps = 1e-6;
    let grad = |a: f64, b: f64| {
        let g = decay_vjp(a, b, steps, 1.0).1;
        [g.0, g.1]
    };
    for (row, (da, db)) in [(eps, 0.0), (0.0, eps)].into_iter().enumerate() {
        let (p, m) = (grad(y0 + da, k + db), grad(y0 - da, k - db));
        for j in 0..2 {
            let fd = (p[j] - m[j]) / (2.0 * eps);
            assert!(
                close(h[row][j], fd, 1e-6),
                "H[{row}][{j}] = {} against {fd}",
                h[row][j]
            );
        }
    }
}

/// Where `f_vjp` is differentiable (straight-line code), `f_hessian`
/// linearizes the gradient once (`f_vjp_lin`) and applies the map per
/// direction: forward over reverse, where `f_hvp` is reverse over
/// forward. Each row agrees with `f_hvp` along its unit vector, and the
/// value and gradient with the first-order functions, for a generic
/// function at both float types too.
#[test]
fn hessian_rows_from_the_linearized_gradient_are_the_hvps() {
    for (x, y) in [(-1.2, 1.0), (0.3, -0.7)] {
        let (v, g, h) = rosenbrock_hessian(x, y);
        assert_eq!((v, g), rosenbrock_vjp(x, y, 1.0));
        for (row, (dx, dy)) in [(1.0, 0.0), (0.0, 1.0)].into_iter().enumerate() {
            let (_, _, hv) = rosenbrock_hvp(x, y, dx, dy);
            assert!(
                close(h[row][0], hv.0, 1e-12) && close(h[row][1], hv.1, 1e-12),
                "row {row}: {:?} against {hv:?}",
                h[row]
            );
        }
        let (_, g, h) = cubic_hessian(x, y);
        assert_eq!(g, cubic_vjp(x, y, 1.0).1);
        let (_, _, hv) = cubic_hvp(x, y, 0.0, 1.0);
        assert!(close(h[1][0], hv.0, 1e-12) && close(h[1][1], hv.1, 1e-12));
    }
}
