//! `#[linear]`: every accepted form, its generated transpose checked by the
//! dot-product identity ⟨x, gᵀ(ȳ)⟩ = ⟨g(x), ȳ⟩, and linear functions used
//! from differentiable ones.
#![deny(warnings)]

use linear_ad::{differentiable, linear, LinearMap};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + a.abs() + b.abs())
}

/// The example.
#[linear]
pub fn axpy(a: f64, #[linear] x: f64, #[linear] y: f64) -> f64 {
    a * x + y
}

#[test]
fn axpy_transpose_is_the_adjoint() {
    let (a, x, y, ybar) = (2.5, 0.3, -1.1, 0.7);
    let (gx, gy) = axpy_transpose(a, ybar);
    assert_eq!((gx, gy), (a * ybar, ybar));
    assert!(close(x * gx + y * gy, axpy(a, x, y) * ybar));
}

/// Part writes on a linear tuple: the written part's old value is
/// dropped (its cotangent is zero), the others moved.
#[linear]
pub fn shear(k: f64, #[linear] p: (f64, f64)) -> (f64, f64) {
    let mut t = p;
    t.0 += k * t.1;
    t.1 = 2.0 * t.0;
    t
}

#[test]
fn part_writes_transpose() {
    let (k, p, ct) = (0.5, (0.3, -1.2), (0.7, 1.9));
    let y = shear(k, p);
    assert_eq!(y, (p.0 + k * p.1, 2.0 * (p.0 + k * p.1)));
    let g = shear_transpose(k, ct);
    assert!(close(p.0 * g.0 + p.1 * g.1, y.0 * ct.0 + y.1 * ct.1));
}

/// A linear value used several times, an unused linear parameter, `x - y`,
/// `-x`, coefficients on either side, division by a coefficient, `0.0` as
/// the linear zero, coefficient code calling arbitrary functions.
fn weight(k: usize) -> f64 {
    1.0 / (1.0 + k as f64)
}

#[linear]
pub fn many_forms(
    c: f64,
    k: usize,
    #[linear] x: f64,
    #[linear] y: f64,
    #[linear] _unused: f64,
) -> f64 {
    let s = c.sin() * weight(k);
    let twice = x + x;
    let mut acc = s * twice - y * c + 0.0;
    acc -= -x / (c * c + 1.0);
    acc += 0.0;
    acc - (y - x) * 3.0
}

#[test]
fn many_forms_transposes_correctly() {
    let (c, k) = (0.8, 3);
    let (x, y, u) = (0.4, -0.9, 5.0);
    let ybar = 1.3;
    let (gx, gy, gu) = many_forms_transpose(c, k, ybar);
    assert_eq!(gu, 0.0, "an unused linear parameter has a zero cotangent");
    assert!(close(
        x * gx + y * gy + u * gu,
        many_forms(c, k, x, y, u) * ybar
    ));
    // Linearity itself: g(x) = gx·x + gy·y for this scalar map.
    assert!(close(many_forms(c, k, x, y, u), (gx * x + gy * y) / ybar));
}

/// Tuples and arrays of linear values, destructuring, a 1-D stencil.
#[linear]
pub fn laplacian(h: f64, #[linear] u: [f64; 5]) -> [f64; 5] {
    let [a, b, c, d, e] = u;
    let k = 1.0 / (h * h);
    [
        (b - a - a) * k,
        (a - b - b + c) * k,
        (b - c - c + d) * k,
        (c - d - d + e) * k,
        (d - e - e) * k,
    ]
}

#[test]
fn stencil_transpose_is_itself() {
    let h = 0.5;
    let u = [0.1, -0.4, 0.9, 0.3, -0.2];
    // The Dirichlet Laplacian is symmetric: its transpose is itself (up to
    // rounding: the transpose sums in another order).
    let (t, l) = (laplacian_transpose(h, u), laplacian(h, u));
    assert!(
        t.iter().zip(&l).all(|(a, b)| close(*a, *b)),
        "{t:?} vs {l:?}"
    );
}

/// A matrix-vector product: the matrix is a coefficient.
#[linear]
pub fn matvec(m: [[f64; 3]; 2], #[linear] v: [f64; 3]) -> [f64; 2] {
    let r0 = m[0][0] * v[0] + m[0][1] * v[1] + m[0][2] * v[2];
    let r1 = m[1][0] * v[0] + m[1][1] * v[1] + m[1][2] * v[2];
    [r0, r1]
}

#[test]
fn matvec_transpose_is_the_matrix_transpose() {
    let m = [[1.0, 2.0, 3.0], [-4.0, 5.0, 0.5]];
    let w = [0.25, -2.0];
    let mt_w = [
        m[0][0] * w[0] + m[1][0] * w[1],
        m[0][1] * w[0] + m[1][1] * w[1],
        m[0][2] * w[0] + m[1][2] * w[1],
    ];
    assert_eq!(matvec_transpose(m, w), mt_w);
}

/// A tuple result, and calls to other `#[linear]` functions with linear
/// arguments in linear positions and coefficients in coefficient positions,
/// `0.0` passed as a linear argument.
#[linear]
pub fn pair(a: f64, #[linear] p: (f64, f64)) -> (f64, f64) {
    let (x, y) = p;
    (axpy(a, x, y), -y * a)
}

#[linear]
pub fn composed(a: f64, #[linear] x: f64, #[linear] y: f64) -> f64 {
    let q: (f64, f64) = pair(a * 2.0, (x, y));
    let r = axpy(a, q.0, 0.0);
    r + axpy(3.0, q.1, x)
}

#[test]
fn calls_between_linear_functions() {
    let a = 0.6;
    let (x, y, ybar) = (1.5, -0.25, 2.0);
    let (gx, gy) = composed_transpose(a, ybar);
    assert!(close(x * gx + y * gy, composed(a, x, y) * ybar));
    let (pbar, qbar) = (0.3, -1.7);
    let (gp0, gp1) = pair_transpose(a, (pbar, qbar));
    let (o0, o1) = pair(a, (x, y));
    assert!(close(x * gp0 + y * gp1, o0 * pbar + o1 * qbar));
}

/// A linear function is differentiable too: called from a differentiable
/// function, its derivative is bilinear in coefficient and linear argument.
#[differentiable]
pub fn uses_linear(a: f64, x: f64) -> f64 {
    let v = axpy(a, x, x * x);
    v * a
}

#[test]
fn linear_functions_are_differentiable() {
    let (a, x) = (1.3, -0.7);
    let (v, (ga, gx)) = uses_linear_vjp(a, x, 1.0);
    // f(a, x) = a (a x + x²): ∂/∂a = 2 a x + x², ∂/∂x = a (a + 2x).
    assert!(close(v, a * (a * x + x * x)));
    assert!(close(ga, 2.0 * a * x + x * x));
    assert!(close(gx, a * (a + 2.0 * x)));
    let (_, lin) = uses_linear_lin(a, x);
    assert_eq!(lin.transpose(1.0), (ga, gx));
}
