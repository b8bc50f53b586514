//! Array workloads (issue 9): each a `#[differentiable]` function over a
//! slice, and its adjoint written by hand the way one would: the reverse
//! sweep reads the input again and writes `grad[i] += ..`, keeping no tape.

use linear_ad::{differentiable, Differentiable};

/// The chained Rosenbrock function over a slice.
#[differentiable]
pub fn rosenbrock(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
    }
    s
}

pub fn rosenbrock_hand(x: &[f64]) -> (f64, Vec<f64>) {
    let mut s = 0.0;
    let mut g = vec![0.0; x.len()];
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
        g[i + 1] += 200.0 * a;
        g[i] += -400.0 * a * x[i] - 2.0 * b;
    }
    (s, g)
}

/// ⟨x, y⟩.
#[differentiable]
pub fn dot(x: &[f64], y: &[f64]) -> f64 {
    x.iter().zip(y.iter()).map(|(a, b)| a * b).sum::<f64>()
}

pub fn dot_hand(x: &[f64], y: &[f64]) -> (f64, Vec<f64>, Vec<f64>) {
    let v = x.iter().zip(y).map(|(a, b)| a * b).sum();
    (v, y.to_vec(), x.to_vec())
}

/// A dense matrix-vector product `A x`, `A` row-major with `x.len()`
/// columns: an array result, written element by element.
#[differentiable]
pub fn matvec(a: &[f64], x: &[f64]) -> Vec<f64> {
    let m = x.len();
    let n = a.len() / m;
    let mut y = vec![0.0; n];
    for i in 0..n {
        for j in 0..m {
            y[i] += a[i * m + j] * x[j];
        }
    }
    y
}

/// The matrix of [`matvec`] as a struct with a `Vec` field (issue 10):
/// the same loops, reading `m.a` in place.
#[derive(Differentiable, Clone, Debug)]
pub struct Matrix {
    pub a: Vec<f64>,
    #[nondiff]
    pub cols: usize,
}

/// [`matvec`] with the matrix in a struct.
#[differentiable]
// The loops of `matvec`, written alike.
#[allow(clippy::needless_range_loop)]
pub fn matvec_struct(m: &Matrix, x: &[f64]) -> Vec<f64> {
    let n = m.a.len() / m.cols;
    let mut y = vec![0.0; n];
    for i in 0..n {
        for j in 0..m.cols {
            y[i] += m.a[i * m.cols + j] * x[j];
        }
    }
    y
}

/// `A x` and the cotangents of `A` and `x` for the output cotangent `w`:
/// `w xᵀ` and `Aᵀ w`, in one sweep over `A`.
pub fn matvec_hand(a: &[f64], x: &[f64], w: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let y = matvec(a, x);
    let (m, n) = (x.len(), y.len());
    let (mut ga, mut gx) = (vec![0.0; a.len()], vec![0.0; m]);
    for i in 0..n {
        for j in 0..m {
            ga[i * m + j] += w[i] * x[j];
            gx[j] += w[i] * a[i * m + j];
        }
    }
    (y, ga, gx)
}

/// log Σ exp(x_i), shifted by the maximum.
#[differentiable]
pub fn log_sum_exp(x: &[f64]) -> f64 {
    let mut m = x[0];
    for &v in x.iter() {
        if v > m {
            m = v;
        }
    }
    let mut s = 0.0;
    for &v in x.iter() {
        s += (v - m).exp();
    }
    m + s.ln()
}

pub fn log_sum_exp_hand(x: &[f64]) -> (f64, Vec<f64>) {
    let m = x.iter().fold(x[0], |m, &v| if v > m { v } else { m });
    let s: f64 = x.iter().map(|v| (v - m).exp()).sum();
    let g = x.iter().map(|v| (v - m).exp() / s).collect();
    (m + s.ln(), g)
}

/// Mean squared error of a line `w[0] x + w[1]` over a data set.
#[differentiable]
pub fn least_squares(w: &[f64; 2], #[nondiff] xs: &[f64], #[nondiff] ys: &[f64]) -> f64 {
    let mut loss = 0.0;
    for (k, &x) in xs.iter().enumerate() {
        let r = w[0] * x + w[1] - ys[k];
        loss += r * r;
    }
    loss / xs.len() as f64
}

pub fn least_squares_hand(w: &[f64; 2], xs: &[f64], ys: &[f64]) -> (f64, [f64; 2]) {
    let (mut loss, mut g) = (0.0, [0.0; 2]);
    for (x, y) in xs.iter().zip(ys) {
        let r = w[0] * x + w[1] - y;
        loss += r * r;
        g[0] += 2.0 * r * x;
        g[1] += 2.0 * r;
    }
    let n = xs.len() as f64;
    (loss / n, [g[0] / n, g[1] / n])
}

/// Σ xᵢ², a helper for [`quadratic_calls`].
#[differentiable]
pub fn sum_squares(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for &v in x {
        s += v * v;
    }
    s
}

/// ⟨x, y⟩ + ½‖x‖² + ½‖y‖² through calls of slice helpers ([`dot`],
/// [`sum_squares`]): the callees' derivatives run behind their calls, the
/// arrays passed back to them and their cotangents accumulated in the
/// caller's buffers.
#[differentiable]
pub fn quadratic_calls(x: &[f64], y: &[f64]) -> f64 {
    dot(x, y) + 0.5 * sum_squares(x) + 0.5 * sum_squares(y)
}

/// [`quadratic_calls`] with the helpers' loops written inline, one after
/// the other as the calls run them.
#[differentiable]
pub fn quadratic_inline(x: &[f64], y: &[f64]) -> f64 {
    let mut d = 0.0;
    for i in 0..x.len() {
        d += x[i] * y[i];
    }
    let mut a = 0.0;
    for &v in x {
        a += v * v;
    }
    let mut b = 0.0;
    for &v in y {
        b += v * v;
    }
    d + 0.5 * a + 0.5 * b
}

pub fn quadratic_hand(x: &[f64], y: &[f64]) -> (f64, Vec<f64>, Vec<f64>) {
    let mut v = 0.0;
    let (mut gx, mut gy) = (vec![0.0; x.len()], vec![0.0; y.len()]);
    for i in 0..x.len() {
        v += x[i] * y[i] + 0.5 * x[i] * x[i] + 0.5 * y[i] * y[i];
        gx[i] = y[i] + x[i];
        gy[i] = x[i] + y[i];
    }
    (v, gx, gy)
}

/// Row `off / n` of a row-major matrix `a` (`n = x.len()` columns)
/// dotted with `x`: the whole array and the row's offset cross the call.
#[differentiable]
pub fn row_dot(a: &[f64], off: usize, x: &[f64]) -> f64 {
    let mut s = 0.0;
    for j in 0..x.len() {
        s += a[off + j] * x[j];
    }
    s
}

/// `‖A x‖²`, each row passed to [`dot`] as a part of `a`.
#[differentiable]
pub fn rows_by_parts(a: &[f64], x: &[f64]) -> f64 {
    let n = x.len();
    let mut e = 0.0;
    for i in 0..a.len() / n {
        let y = dot(&a[i * n..(i + 1) * n], x);
        e += y * y;
    }
    e
}

/// [`rows_by_parts`] passing the whole array and each row's offset.
#[differentiable]
pub fn rows_by_offsets(a: &[f64], x: &[f64]) -> f64 {
    let n = x.len();
    let mut e = 0.0;
    for i in 0..a.len() / n {
        let y = row_dot(a, i * n, x);
        e += y * y;
    }
    e
}

/// [`rows_by_parts`] with the row's loop inline.
#[differentiable]
pub fn rows_inline(a: &[f64], x: &[f64]) -> f64 {
    let n = x.len();
    let mut e = 0.0;
    for i in 0..a.len() / n {
        let mut y = 0.0;
        for j in 0..n {
            y += a[i * n + j] * x[j];
        }
        e += y * y;
    }
    e
}

pub fn rows_hand(a: &[f64], x: &[f64]) -> (f64, Vec<f64>, Vec<f64>) {
    let n = x.len();
    let (mut e, mut ga, mut gx) = (0.0, vec![0.0; a.len()], vec![0.0; n]);
    for (row, grow) in a.chunks(n).zip(ga.chunks_mut(n)) {
        let y: f64 = row.iter().zip(x).map(|(p, q)| p * q).sum();
        e += y * y;
        for j in 0..n {
            grow[j] = 2.0 * y * x[j];
            gx[j] += 2.0 * y * row[j];
        }
    }
    (e, ga, gx)
}

/// A body of the gravitational potential below: a position, and a mass
/// that is a constant.
#[derive(Clone, Copy, Debug, Differentiable)]
pub struct Body {
    pub pos: [f64; 3],
    #[nondiff]
    pub m: f64,
}

/// The gravitational potential `-Σ_{i<j} mᵢ mⱼ / rᵢⱼ` of an array of
/// structs.
#[differentiable]
pub fn potential_bodies(bodies: &[Body]) -> f64 {
    let mut e = 0.0;
    for i in 0..bodies.len() {
        for j in (i + 1)..bodies.len() {
            let (a, b) = (bodies[i], bodies[j]);
            let (dx, dy, dz) = (
                a.pos[0] - b.pos[0],
                a.pos[1] - b.pos[1],
                a.pos[2] - b.pos[2],
            );
            e -= a.m * b.m / (dx * dx + dy * dy + dz * dz).sqrt();
        }
    }
    e
}

/// [`potential_bodies`] over rows of positions and a slice of masses.
#[differentiable]
pub fn potential_rows(pos: &[[f64; 3]], #[nondiff] m: &[f64]) -> f64 {
    let mut e = 0.0;
    for i in 0..pos.len() {
        for j in (i + 1)..pos.len() {
            let (a, b) = (pos[i], pos[j]);
            let (dx, dy, dz) = (a[0] - b[0], a[1] - b[1], a[2] - b[2]);
            e -= m[i] * m[j] / (dx * dx + dy * dy + dz * dz).sqrt();
        }
    }
    e
}

/// [`potential_bodies`] and its gradient in the positions, by hand: one
/// pass over the pairs, each adding its force into both bodies'.
pub fn potential_bodies_hand(bodies: &[Body]) -> (f64, Vec<[f64; 3]>) {
    let mut e = 0.0;
    let mut g = vec![[0.0; 3]; bodies.len()];
    for i in 0..bodies.len() {
        for j in (i + 1)..bodies.len() {
            let (a, b) = (&bodies[i], &bodies[j]);
            let d = [
                a.pos[0] - b.pos[0],
                a.pos[1] - b.pos[1],
                a.pos[2] - b.pos[2],
            ];
            let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            let r = r2.sqrt();
            let mm = a.m * b.m;
            e -= mm / r;
            let s = mm / (r2 * r);
            for k in 0..3 {
                g[i][k] += s * d[k];
                g[j][k] -= s * d[k];
            }
        }
    }
    (e, g)
}
