//! `#[nondiff]` data read by index in a function with an array interface:
//! the IR reads it as a data array (no tangent), and the reverse pass reads
//! it again instead of keeping its elements on the tape.

use linear_ad::{differentiable, LinearMap, TapeSize};

/// A weighted line fit: data as a slice, a `&Vec` and a fixed-size array.
#[allow(clippy::ptr_arg)]
#[differentiable]
fn fit(
    w: &[f64; 2],
    #[nondiff] xs: &[f64],
    #[nondiff] ys: &Vec<f64>,
    #[nondiff] c: &[f64; 3],
) -> f64 {
    let mut loss = 0.0;
    for i in 0..xs.len() {
        let r = w[0] * xs[i] + w[1] - ys[i];
        if r > 0.0 {
            loss += c[i % 3] * r * r;
        } else {
            loss += c[(i + 1) % 3] * r.abs();
        }
    }
    let mut k = 0;
    while k < 2 {
        loss += w[k] * xs[k];
        k += 1;
    }
    loss / xs.len() as f64
}

/// A line fit with no branch: its reverse pass needs nothing per element
/// but the data, which it reads again.
#[differentiable]
fn line_fit(w: &[f64; 2], #[nondiff] xs: &[f64], #[nondiff] ys: &[f64]) -> f64 {
    let mut loss = 0.0;
    for (i, x) in xs.iter().enumerate() {
        let r = w[0] * x + w[1] - ys[i];
        loss += r * r;
    }
    loss
}

/// A line fit with scalar parameters: a function others may call, whose
/// linearization keeps the elements it reads (see `lower::inactive`).
#[differentiable]
fn fit_scalar(a: f64, b: f64, #[nondiff] xs: &[f64], #[nondiff] ys: &[f64]) -> f64 {
    let mut loss = 0.0;
    for i in 0..xs.len() {
        let r = a * xs[i] + b - ys[i];
        loss += r * r;
    }
    loss
}

#[differentiable]
fn calls_fit_scalar(a: f64, #[nondiff] xs: &[f64], #[nondiff] ys: &[f64]) -> f64 {
    2.0 * fit_scalar(a, a * a, xs, ys)
}

fn data(n: usize) -> (Vec<f64>, Vec<f64>) {
    let xs: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
    let ys: Vec<f64> = (0..n).map(|i| (i as f64 * 0.11).cos()).collect();
    (xs, ys)
}

#[test]
fn data_gradient_matches_finite_differences_and_both_modes() {
    let (xs, ys) = data(25);
    let c = [1.0, 0.5, 2.0];
    let w = [0.7, -0.2];
    let (y, g) = fit_vjp(&w, &xs, &ys, &c, 1.0);
    assert_eq!(y, fit(&w, &xs, &ys, &c));
    let h = 1e-6;
    for k in 0..2 {
        let (mut p, mut m) = (w, w);
        p[k] += h;
        m[k] -= h;
        let fd = (fit(&p, &xs, &ys, &c) - fit(&m, &xs, &ys, &c)) / (2.0 * h);
        assert!((g[k] - fd).abs() < 1e-6, "{k}: {} vs {fd}", g[k]);
    }
    // One tape, both directions: <J v, 1> = <v, J^T 1>.
    let (y2, lin) = fit_lin(&w, &xs, &ys, &c);
    assert_eq!(y2, y);
    let v = [0.3, -1.1];
    let jv = lin.apply(v);
    assert_eq!(fit_jvp(&w, &xs, &ys, &c, &v).1, jv);
    let ct = lin.transpose(1.0);
    assert_eq!(ct, g);
    assert!((jv - (v[0] * ct[0] + v[1] * ct[1])).abs() < 1e-12);
}

#[test]
fn data_is_read_again_not_saved() {
    let w = [0.7, -0.2];
    let bytes = |n: usize| {
        let (xs, ys) = data(n);
        let (a, b) = (
            line_fit_vjp(&w, &xs, &ys, 1.0),
            fit_scalar_vjp(w[0], w[1], &xs, &ys, 1.0),
        );
        assert_eq!(a.0, line_fit(&w, &xs, &ys));
        assert_eq!((a.0, a.1[0], a.1[1]), (b.0, b.1 .0, b.1 .1));
        line_fit_lin(&w, &xs, &ys).1.tape_bytes()
    };
    assert_eq!(bytes(10), bytes(1010), "the tape grows with the data");
    let scalar = |n: usize| {
        let (xs, ys) = data(n);
        fit_scalar_lin(0.5, 0.1, &xs, &ys).1.tape_bytes()
    };
    // The callable form keeps what it reads: more than a tag per element.
    assert!(scalar(1010) - scalar(10) >= 1000 * 8);
}

/// Linear blend skinning: a weight read from data outside the loop that
/// multiplies by it, transforms computed into a local array first.
#[differentiable]
fn skin(t: &[f64], #[nondiff] base: &[f64], #[nondiff] weights: &[f64], nv: usize) -> Vec<f64> {
    let nb = t.len() / 12;
    let mut tr = vec![0.0; 12 * nb];
    for e in 0..12 * nb {
        tr[e] = t[e].sin();
    }
    let mut pos = vec![0.0; 3 * nv];
    for b in 0..nb {
        for v in 0..nv {
            let w = weights[v * nb + b];
            for r in 0..3 {
                let mut s = 0.0;
                for k in 0..4 {
                    s += tr[12 * b + 4 * r + k] * base[4 * v + k];
                }
                pos[3 * v + r] += s * w;
            }
        }
    }
    pos
}

#[test]
fn a_data_weight_in_a_loop_puts_nothing_on_the_tape_per_iteration() {
    let t: Vec<f64> = (0..24).map(|i| 0.1 * i as f64).collect();
    let run = |nv: usize| {
        let base: Vec<f64> = (0..4 * nv).map(|i| (i as f64 * 0.3).cos()).collect();
        let weights: Vec<f64> = (0..2 * nv).map(|i| 0.5 + 0.1 * (i % 5) as f64).collect();
        let (y, lin) = skin_lin(&t, &base, &weights, nv);
        assert_eq!(y, skin(&t, &base, &weights, nv));
        // <J v, c> = <v, Jᵀ c> from the one tape.
        let v: Vec<f64> = (0..24).map(|i| (i as f64).sin()).collect();
        let c: Vec<f64> = (0..3 * nv).map(|i| (i as f64 * 0.7).cos()).collect();
        let (jv, jtc) = (lin.apply(v.clone()), lin.transpose(c.clone()));
        let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
        assert!((dot(&jv, &c) - dot(&v, &jtc)).abs() < 1e-10);
        lin.tape_bytes()
    };
    // Before, the sum `s` was saved per (b, v, r) and an index per k.
    assert_eq!(run(10), run(200), "the tape grows with the vertices");
}

#[test]
fn a_function_reading_data_is_still_callable() {
    let (xs, ys) = data(7);
    let a = 0.4;
    let (y, g) = calls_fit_scalar_vjp(a, &xs, &ys, 1.0);
    assert_eq!(y, calls_fit_scalar(a, &xs, &ys));
    let h = 1e-6;
    let fd = (calls_fit_scalar(a + h, &xs, &ys) - calls_fit_scalar(a - h, &xs, &ys)) / (2.0 * h);
    assert!((g - fd).abs() < 1e-5, "{g} vs {fd}");
}
