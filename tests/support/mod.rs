//! Checks shared by the test files (each integration test is its own
//! crate and uses a part of them): closeness with a relative tolerance,
//! the dot product of the dot-product identity, Jacobian-vector products
//! by central differences, and all three modes of one function checked
//! against each other.

#![allow(dead_code)]

/// The step of the central differences.
pub const H: f64 = 1e-6;

pub fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs() + b.abs())
}

pub fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (a, b) in got.iter().zip(want) {
        assert!(close(*a, *b, tol), "{got:?} vs {want:?}");
    }
}

pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(p, q)| p * q).sum()
}

/// The Jacobian-vector product of `f` along `d`, by central differences.
pub fn fd_along(f: impl Fn(&[f64]) -> Vec<f64>, x: &[f64], d: &[f64]) -> Vec<f64> {
    let at = |t: f64| -> Vec<f64> {
        let p: Vec<f64> = x.iter().zip(d).map(|(x, d)| x + t * d).collect();
        f(&p)
    };
    let (a, b) = (at(H), at(-H));
    a.iter().zip(&b).map(|(a, b)| (a - b) / (2.0 * H)).collect()
}

/// Asserts that `got` is the derivative at `t = 0` of `at(t)`, component
/// by component, against central differences of step `eps` to `tol`.
pub fn assert_central<V: AsRef<[f64]>>(got: &[f64], at: impl Fn(f64) -> V, eps: f64, tol: f64) {
    let (p, m) = (at(eps), at(-eps));
    let (p, m) = (p.as_ref(), m.as_ref());
    assert_eq!(got.len(), p.len(), "{got:?} against {p:?}");
    for (i, g) in got.iter().enumerate() {
        let fd = (p[i] - m[i]) / (2.0 * eps);
        assert!(close(*g, fd, tol), "{got:?}: component {i} against {fd}");
    }
}

/// Checks a function of `n` flat inputs: `f` its value, `jvp(x, d)`,
/// `vjp(x, w)` and `lin(x, d, w)` (apply, transpose) through the structs.
pub fn check(
    x: &[f64],
    m: usize,
    f: impl Fn(&[f64]) -> Vec<f64>,
    jvp: impl Fn(&[f64], &[f64]) -> Vec<f64>,
    vjp: impl Fn(&[f64], &[f64]) -> Vec<f64>,
    lin: impl Fn(&[f64], &[f64], &[f64]) -> (Vec<f64>, Vec<f64>),
) {
    let n = x.len();
    for k in 0..3 {
        let d: Vec<f64> = (0..n).map(|i| ((i * 7 + k * 3) % 5) as f64 - 1.7).collect();
        let w: Vec<f64> = (0..m).map(|i| ((i * 3 + k) % 4) as f64 - 1.3).collect();
        let dy = jvp(x, &d);
        assert_close(&dy, &fd_along(&f, x, &d), 1e-6);
        let ct = vjp(x, &w);
        let (a, b) = (dot(&w, &dy), dot(&ct, &d));
        assert!((a - b).abs() <= 1e-10 * (1.0 + a.abs()), "{a} vs {b}");
        let (ldy, lct) = lin(x, &d, &w);
        assert_close(&ldy, &dy, 1e-12);
        assert_close(&lct, &ct, 1e-12);
    }
}

/// [`check`] for a function of two floats to one, given as itself (or a
/// reference with the same values) and its generated `_jvp`, `_vjp` and
/// `_lin`.
pub fn check_xy<L: linear_ad::LinearMap<(f64, f64), f64>>(
    (x, y): (f64, f64),
    f: impl Fn(f64, f64) -> f64,
    jvp: impl Fn(f64, f64, f64, f64) -> (f64, f64),
    vjp: impl Fn(f64, f64, f64) -> (f64, (f64, f64)),
    lin: impl Fn(f64, f64) -> (f64, L),
) {
    check(
        &[x, y],
        1,
        |v| vec![f(v[0], v[1])],
        |v, d| vec![jvp(v[0], v[1], d[0], d[1]).1],
        |v, w| {
            let (_, (dx, dy)) = vjp(v[0], v[1], w[0]);
            vec![dx, dy]
        },
        |v, d, w| {
            let (_, l) = lin(v[0], v[1]);
            let (dx, dy) = l.transpose(w[0]);
            (vec![l.apply((d[0], d[1]))], vec![dx, dy])
        },
    );
}
