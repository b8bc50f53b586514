#![deny(warnings)]

//! Local arrays written in place: `let mut y = vec![0.0; n]` and
//! `[0.0; N]`, element writes `y[i] = e` and `y[i] op= e`, read back by
//! index and iteration. The reverse pass takes each written slot back out
//! of the cotangent buffer. Each function is checked against finite
//! differences and forward against reverse mode, in debug and release
//! builds alike.

use linear_ad::{differentiable, TapeSize};

/// A dense matrix-vector product into a local buffer, then a weighted sum
/// of its squares: `sum_i w_i (A x)_i^2`, A row-major.
#[differentiable]
fn matvec_energy(a: &[f64], x: &[f64], w: &[f64]) -> f64 {
    let n = w.len();
    let m = x.len();
    let mut y = vec![0.0; n];
    for i in 0..n {
        for j in 0..m {
            y[i] += a[i * m + j] * x[j];
        }
    }
    let mut s = 0.0;
    for i in 0..n {
        s += w[i] * y[i] * y[i];
    }
    s
}

/// A stencil on an inline array: each element overwritten after it is
/// read (`u[i] = ..` of the old `u[i]`), all operators of compound
/// assignment, and iteration over the local array.
#[differentiable]
fn smooth3(p: &[f64; 3], k: f64) -> f64 {
    let mut u = [0.0; 3];
    for i in 0..3 {
        u[i] = p[i] * k;
    }
    for i in 1..3 {
        u[i] -= 0.5 * u[i - 1];
        u[i] *= 1.0 + u[i] * 0.1;
        u[i] /= 1.5;
    }
    u[0] = u[0].sin();
    let mut s = 0.0;
    for v in u.iter() {
        s += v * v;
    }
    s
}

/// A prefix sum: each write reads the element written just before.
#[differentiable]
fn prefix_tail(x: &[f64]) -> f64 {
    let mut c = vec![0.0; x.len()];
    c[0] = x[0];
    for i in 1..x.len() {
        c[i] = c[i - 1] + x[i] * x[i];
    }
    c.iter().map(|v| v.sqrt()).sum::<f64>()
}

/// A loop left by `break` while it writes a local array: after the
/// desugaring of exits, each write runs under `if` (a write in a branch).
#[differentiable]
fn squares_until(x: &[f64], stop: f64) -> f64 {
    let mut y = vec![0.0; x.len()];
    for i in 0..x.len() {
        if x[i] > stop {
            break;
        }
        y[i] = x[i] * x[i];
    }
    y.iter().sum::<f64>()
}

/// A recurrence over a local array, then a product over every other
/// element from the last: the first loop's reverse pass needs `y[i - 1]`
/// per iteration (a value of the array it overwrites), the second the
/// running product and the sine's cosine; both read `x` again at an
/// index computed from the loop's.
#[differentiable]
fn recurrence_then_product(x: &[f64]) -> f64 {
    let n = x.len();
    let mut y = vec![0.0; n];
    y[0] = x[0];
    for i in 1..n {
        y[i] = 0.5 * x[i] * y[i - 1] + x[i];
    }
    let mut p = 1.0;
    for i in (1..n).step_by(2).rev() {
        p *= (x[i - 1] + y[i]).sin();
    }
    p
}

/// A lower-triangular product `q = L c` with `c` a local array (it is
/// overwritten in place): `c[j]`, read in the loop over `l`, is the same
/// in each of its iterations.
#[differentiable]
fn triangular(x: &[f64], w: &[f64]) -> f64 {
    let n = x.len();
    let mut c = vec![0.0; n];
    for j in 0..n {
        c[j] = x[j].sin();
    }
    let mut q = vec![0.0; n];
    for j in 0..n {
        for l in j..n {
            q[l] += w[l * n + j] * c[j];
        }
    }
    let mut s = 0.0;
    for v in q.iter() {
        s += v * v;
    }
    s
}

/// Scales computed once, then read for every data point: `s` is final
/// after its loop (nothing writes it again), so the tape holds it once and
/// the loop over the data reads it again in the reverse pass, as it reads
/// `data`: that loop keeps no record at all.
#[differentiable]
fn scaled_fit(p: &[f64], #[nondiff] data: &[f64]) -> f64 {
    let m = p.len();
    let mut s = vec![0.0; m];
    for j in 0..m {
        s[j] = p[j].exp();
    }
    let mut total = 0.0;
    for i in 0..data.len() / m {
        for j in 0..m {
            let r = s[j] * data[i * m + j] - 1.0;
            total += r * r;
        }
    }
    total
}

/// A fixed array by value, written in place as a `mut` parameter: a
/// smoothing pass over a stencil, `x[i] += w·(x[i - 1] - x[i])`, which
/// reads the element the previous iteration wrote.
#[differentiable]
fn smoothed(mut x: [f64; 4], w: f64) -> f64 {
    for i in 1..4 {
        x[i] += w * (x[i - 1] - x[i]);
    }
    x[0] * x[3] + x[2].exp()
}

/// A copy of a fixed array by value (`let mut y = x;`), written at an
/// index known only at run time; `x` itself is read after the write.
#[differentiable]
fn scaled_copy(x: [f64; 3], k: usize) -> f64 {
    let mut y = x;
    y[k] *= x[0] + y[2];
    y[0] * y[1] + y[2] * x[1]
}

const H: f64 = 1e-6;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs() + b.abs())
}

fn fd(f: impl Fn(&[f64]) -> f64, x: &[f64]) -> Vec<f64> {
    (0..x.len())
        .map(|i| {
            let (mut a, mut b) = (x.to_vec(), x.to_vec());
            a[i] += H;
            b[i] -= H;
            (f(&a) - f(&b)) / (2.0 * H)
        })
        .collect()
}

fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (a, b) in got.iter().zip(want) {
        assert!(close(*a, *b, 1e-5), "{got:?} vs {want:?}");
    }
}

#[test]
fn matvec_gradient_matches_finite_differences_and_forward_mode() {
    let a = [0.5, -1.0, 2.0, 0.25, 1.5, -0.75];
    let x = [0.3, -0.8];
    let w = [1.0, 0.5, 2.0];
    let (v, (ga, gx, gw)) = matvec_energy_vjp(&a, &x, &w, 1.0);
    assert_eq!(v, matvec_energy(&a, &x, &w));
    assert_close(&ga, &fd(|a| matvec_energy(a, &x, &w), &a));
    assert_close(&gx, &fd(|x| matvec_energy(&a, x, &w), &x));
    assert_close(&gw, &fd(|w| matvec_energy(&a, &x, w), &w));
    let (da, dx, dw) = (
        [0.1, 0.2, -0.3, 0.4, -0.5, 0.6],
        [0.7, -0.2],
        [0.3, 0.1, -0.4],
    );
    let (v2, dv) = matvec_energy_jvp(&a, &x, &w, &da, &dx, &dw);
    assert_eq!(v2, v);
    let dot = |g: &[f64], d: &[f64]| g.iter().zip(d).map(|(p, q)| p * q).sum::<f64>();
    assert!(close(
        dv,
        dot(&ga, &da) + dot(&gx, &dx) + dot(&gw, &dw),
        1e-12
    ));
}

#[test]
fn overwritten_elements_of_an_inline_array() {
    let p = [0.4, -0.9, 1.3];
    let k = 0.8;
    let (v, (gp, gk)) = smooth3_vjp(&p, k, 1.0);
    assert_eq!(v, smooth3(&p, k));
    assert_close(&gp, &fd(|p| smooth3(&[p[0], p[1], p[2]], k), &p));
    assert_close(&[gk], &fd(|k| smooth3(&p, k[0]), &[k]));
    let (v2, dv) = smooth3_jvp(&p, k, &[0.1, -0.2, 0.3], 0.5);
    assert_eq!(v2, v);
    let want = gp[0] * 0.1 - gp[1] * 0.2 + gp[2] * 0.3 + gk * 0.5;
    assert!(close(dv, want, 1e-12));
}

#[test]
fn prefix_sums_read_the_element_written_before() {
    let x = [0.5, 1.5, -0.7, 2.0];
    let (v, g) = prefix_tail_vjp(&x, 1.0);
    assert_eq!(v, prefix_tail(&x));
    assert_close(&g, &fd(prefix_tail, &x));
}

#[test]
fn a_loop_left_early_writes_only_what_it_reached() {
    let x = [0.5, 1.5, 4.0, 2.0];
    let (v, (g, gs)) = squares_until_vjp(&x, 3.0, 1.0);
    assert_eq!(v, 0.25 + 2.25);
    assert_eq!(v, squares_until(&x, 3.0));
    assert_close(&g, &fd(|x| squares_until(x, 3.0), &x));
    assert_eq!(g, vec![1.0, 3.0, 0.0, 0.0]);
    assert_eq!(gs, 0.0);
}

#[test]
fn a_loop_index_is_not_saved_per_iteration() {
    let x: Vec<f64> = (0..9).map(|i| 0.3 + 0.1 * (i as f64).cos()).collect();
    let (v, g) = recurrence_then_product_vjp(&x, 1.0);
    assert_eq!(v, recurrence_then_product(&x));
    assert_close(&g, &fd(recurrence_then_product, &x));
    let dx: Vec<f64> = (0..9).map(|i| (i as f64 * 0.7).sin()).collect();
    let (_, dv) = recurrence_then_product_jvp(&x, &dx);
    let want: f64 = g.iter().zip(&dx).map(|(a, b)| a * b).sum();
    assert!(close(dv, want, 1e-12), "{dv} vs {want}");
    // 100 more elements: 100 more iterations of the recurrence, which
    // save `0.5 * x[i]` and `y[i - 1]` (16 bytes), and 50 more of the
    // product, which save the product, the sine and its cosine (24
    // bytes). Their indices (`i` and `i - 1`, another 16 bytes each) come
    // from the range again in the reverse pass.
    let bytes = |n: usize| {
        let x: Vec<f64> = (0..n).map(|i| 0.3 + 0.1 * (i as f64).cos()).collect();
        recurrence_then_product_lin(&x).1.tape_bytes()
    };
    assert_eq!(bytes(201) - bytes(101), 100 * 16 + 50 * 24);
}

#[test]
fn a_value_the_same_in_every_iteration_is_saved_once() {
    let n = 6;
    let x: Vec<f64> = (0..n).map(|i| 0.2 + 0.3 * i as f64).collect();
    let w: Vec<f64> = (0..n * n).map(|i| (i as f64 * 0.37).cos()).collect();
    let (v, (gx, gw)) = triangular_vjp(&x, &w, 1.0);
    assert_eq!(v, triangular(&x, &w));
    assert_close(&gx, &fd(|x| triangular(x, &w), &x));
    assert_close(&gw, &fd(|w| triangular(&x, w), &w));
    // `c[j]` is saved once per `j`, not once per (j, l): the inner loop
    // keeps no record at all (it reads `w` again), the loop over `j` 8
    // bytes (`c[j]`) per iteration, the sum of squares 8 (`2 q[l]`); the
    // loop computing `c` 8 (`cos(x[j])`: it reads `x` again, but a
    // math-library call is kept rather than made twice). From n = 20 to
    // 40 the inner loop runs 610 more times, which saved 8 bytes each
    // before.
    let bytes = |n: usize| {
        let x: Vec<f64> = (0..n).map(|i| 0.2 + 0.3 * i as f64).collect();
        let w: Vec<f64> = (0..n * n).map(|i| (i as f64 * 0.37).cos()).collect();
        triangular_lin(&x, &w).1.tape_bytes()
    };
    assert_eq!(bytes(40) - bytes(20), 20 * (8 + 8 + 8));
}

#[test]
fn a_local_array_no_longer_written_is_saved_once() {
    let p = [0.2, -0.4, 0.1];
    let data: Vec<f64> = (0..30).map(|i| (i as f64 * 0.61).sin()).collect();
    let (v, g) = scaled_fit_vjp(&p, &data, 1.0);
    assert_eq!(v, scaled_fit(&p, &data));
    assert_close(&g, &fd(|p| scaled_fit(p, &data), &p));
    // Ten times the data points, no more tape: `s[j]` is read again
    // from `s`, and `r` recomputed from it, in every iteration (it was
    // saved per point and parameter, 8 bytes each).
    let bytes = |points: usize| {
        let data: Vec<f64> = (0..3 * points).map(|i| (i as f64 * 0.61).sin()).collect();
        scaled_fit_lin(&p, &data).1.tape_bytes()
    };
    assert_eq!(bytes(100), bytes(10));
}

#[test]
fn fixed_arrays_by_value_are_copied_and_written_in_place() {
    let x = [0.7, -0.4, 1.3, 0.2];
    let w = 0.35;
    let as_fn = |v: &[f64]| smoothed([v[0], v[1], v[2], v[3]], v[4]);
    let (v, (gx, gw)) = smoothed_vjp(x, w, 1.0);
    assert_eq!(v, smoothed(x, w));
    let mut both = gx.to_vec();
    both.push(gw);
    let all = [x[0], x[1], x[2], x[3], w];
    assert_close(&both, &fd(as_fn, &all));
    // Forward mode along each direction gives the gradient's components.
    for (j, g) in both.iter().enumerate() {
        let mut dx = [0.0; 4];
        let mut dw = 0.0;
        if j < 4 {
            dx[j] = 1.0;
        } else {
            dw = 1.0;
        }
        let (_, d) = smoothed_jvp(x, w, dx, dw);
        assert!(close(d, *g, 1e-12), "{j}: {d} vs {g}");
    }
    // The caller's array is its own: `smoothed` wrote a copy.
    assert_eq!(x, [0.7, -0.4, 1.3, 0.2]);

    for k in 0..3 {
        let x = [0.9, -1.1, 0.6];
        let (v, g) = scaled_copy_vjp(x, k, 1.0);
        assert_eq!(v, scaled_copy(x, k));
        assert_close(&g, &fd(|v| scaled_copy([v[0], v[1], v[2]], k), &x));
    }
}

/// Elements written in place through `iter_mut()` and `&mut a`: each name
/// is the element itself (`*b`), read and written.
#[differentiable]
pub fn ramp_squares(x: f64) -> f64 {
    let mut buf = [0.0; 4];
    for (k, b) in buf.iter_mut().enumerate() {
        *b = x * k as f64;
    }
    for b in &mut buf {
        *b *= *b + 1.0;
    }
    buf.iter().sum::<f64>()
}

#[differentiable]
pub fn scale_all(xs: &[f64], s: f64) -> Vec<f64> {
    let mut out = xs.to_vec();
    for v in out.iter_mut() {
        *v *= s;
    }
    out
}

#[test]
fn elements_written_through_iter_mut() {
    // b_k = k x, then b_k (b_k + 1): the sum is 14 x² + 6 x.
    let (v, d) = ramp_squares_vjp(2.0, 1.0);
    assert_eq!(v, 68.0);
    assert_eq!(d, 62.0);
    let (y, (gx, gs)) = scale_all_vjp(&[1.0, 2.0], 3.0, vec![1.0, 0.5]);
    assert_eq!(y, vec![3.0, 6.0]);
    assert_eq!(gx, vec![3.0, 1.5]);
    assert_eq!(gs, 2.0);
}
