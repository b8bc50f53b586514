#![deny(warnings)]

//! Writes to parts of tuples and of fixed-size arrays held by value:
//! `t.0 = e`, `t.1 += e`, `p.0.1 *= e`, `u[2] = e`, in straight-line code,
//! loops and branches. Each function is checked against finite
//! differences and every mode against the others.

use linear_ad::{differentiable, LinearMap};

/// Straight-line writes, each reading the parts written before.
#[differentiable]
fn swap_mix(x: f64, y: f64) -> (f64, f64) {
    let mut t = (x, y);
    t.0 = t.1 * t.0.cos();
    t.1 += x.sin();
    t.0 -= t.1 / 3.0;
    t
}

/// A tuple carried by a loop, written part by part; a constant start.
#[differentiable]
fn moments(xs: &[f64]) -> f64 {
    let mut acc = (0.0, 0.0);
    for v in xs.iter() {
        acc.0 += v;
        acc.1 += v * v;
    }
    let n = xs.len() as f64;
    acc.1 / n - (acc.0 / n).powi(2)
}

/// Writes in the arms of a branch, one arm writing one part each, and a
/// nested part.
#[differentiable]
fn branchy(x: f64, y: f64) -> f64 {
    let mut p = ((x, y), 1.0);
    if x > y {
        p.0 .0 = x * y;
    } else {
        p.1 -= y.exp();
    }
    p.0 .1 *= p.1 + x;
    p.0 .0 + p.0 .1 + p.1
}

/// Elements of a fixed-size array held by value, by literal index.
#[differentiable]
fn cross_z(a: [f64; 3], k: f64) -> [f64; 3] {
    let mut u = a;
    u[2] = u[0] * u[1];
    u[0] += k;
    u[1] *= u[2];
    u
}

const H: f64 = 1e-6;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs() + b.abs())
}

fn fd(f: impl Fn(&[f64]) -> Vec<f64>, x: &[f64], d: &[f64]) -> Vec<f64> {
    let at = |t: f64| -> Vec<f64> {
        let p: Vec<f64> = x.iter().zip(d).map(|(x, d)| x + t * d).collect();
        f(&p)
    };
    let (a, b) = (at(H), at(-H));
    a.iter().zip(&b).map(|(a, b)| (a - b) / (2.0 * H)).collect()
}

fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (a, b) in got.iter().zip(want) {
        assert!(close(*a, *b, 1e-6), "{got:?} vs {want:?}");
    }
}

#[test]
fn straight_line_part_writes() {
    let (x, y, dx, dy) = (0.7, -1.3, 0.4, 0.9);
    let (v, dv) = swap_mix_jvp(x, y, dx, dy);
    assert_eq!(v, swap_mix(x, y));
    let f = |p: &[f64]| {
        let r = swap_mix(p[0], p[1]);
        vec![r.0, r.1]
    };
    assert_close(&[dv.0, dv.1], &fd(f, &[x, y], &[dx, dy]));
    let ct = (1.5, -0.5);
    let (_, (gx, gy)) = swap_mix_vjp(x, y, ct);
    assert!(close(ct.0 * dv.0 + ct.1 * dv.1, gx * dx + gy * dy, 1e-12));
    let (_, lin) = swap_mix_lin(x, y);
    assert_eq!(lin.apply((dx, dy)), dv);
    assert_eq!(lin.transpose(ct), (gx, gy));
}

#[test]
fn a_tuple_carried_by_a_loop() {
    let xs = [0.5, 1.5, -2.0, 3.0];
    let (_, g) = moments_vjp(&xs, 1.0);
    // d var / d x_i = 2 (x_i - mean) / n.
    let mean = xs.iter().sum::<f64>() / 4.0;
    for (gi, xi) in g.iter().zip(&xs) {
        assert!(close(*gi, 2.0 * (xi - mean) / 4.0, 1e-12), "{g:?}");
    }
    let d = [0.1, -0.2, 0.3, 0.4];
    let (_, dv) = moments_jvp(&xs, &d);
    assert_close(&[dv], &fd(|p| vec![moments(p)], &xs, &d));
}

#[test]
fn part_writes_in_branches() {
    for (x, y) in [(1.2, 0.3), (-0.4, 0.8)] {
        let (dx, dy) = (0.3, -0.7);
        let (v, dv) = branchy_jvp(x, y, dx, dy);
        assert_eq!(v, branchy(x, y));
        assert_close(
            &[dv],
            &fd(|p| vec![branchy(p[0], p[1])], &[x, y], &[dx, dy]),
        );
        let (_, (gx, gy)) = branchy_vjp(x, y, 1.0);
        assert!(close(dv, gx * dx + gy * dy, 1e-12));
    }
}

#[test]
fn elements_of_an_array_held_by_value() {
    let (a, k) = ([0.5, -1.5, 2.0], 0.3);
    let (da, dk) = ([0.2, 0.1, -0.4], 1.0);
    let (u, du) = cross_z_jvp(a, k, da, dk);
    assert_eq!(u, cross_z(a, k));
    let f = |p: &[f64]| cross_z([p[0], p[1], p[2]], p[3]).to_vec();
    assert_close(
        &du,
        &fd(f, &[a[0], a[1], a[2], k], &[da[0], da[1], da[2], dk]),
    );
    let ct = [1.0, -2.0, 0.5];
    let (_, (ga, gk)) = cross_z_vjp(a, k, ct);
    let lhs: f64 = ct.iter().zip(&du).map(|(c, d)| c * d).sum();
    let rhs: f64 = ga.iter().zip(&da).map(|(g, d)| g * d).sum::<f64>() + gk * dk;
    assert!(close(lhs, rhs, 1e-12));
}
