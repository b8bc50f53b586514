//! Checks shared by the array test files (each integration test is its own
//! crate and uses a part of them): closeness with a relative tolerance,
//! the dot product of the dot-product identity, and Jacobian-vector
//! products by central differences.

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
