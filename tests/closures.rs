//! Closures bound by `let` and called by name: each call is the closure's
//! body in place (`linear_core::lower::closure`), so its derivative is that
//! of the body written there. What a closure captures is what its
//! variables were bound to where it was defined. Checked against hand
//! derivations and finite differences, in the crate's own build profile.
#![deny(warnings)]
// Index loops, as numeric code writes them.
#![allow(clippy::needless_range_loop)]

use linear_ad::{differentiable, LinearMap};

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs() + b.abs())
}

/// Closures of one and two parameters, a `move` closure capturing a
/// constant later shadowed, and a call with constant arguments.
#[differentiable]
pub fn helpers(x: f64, y: f64) -> f64 {
    let sq = |v: f64| v * v;
    let k = 0.5;
    let scaled = move |v: f64, w: f64| k * v + w.sin();
    let k = 3.0;
    sq(x) + sq(y) * k + scaled(x, y) + sq(2.0)
}

#[test]
fn closures_are_their_bodies_in_place() {
    for (x, y) in [(0.3, -1.2), (2.0, 0.7)] {
        let (v, (gx, gy)) = helpers_vjp(x, y, 1.0);
        assert_eq!(v, helpers(x, y));
        // x² + 3y² + (x/2 + sin y) + 4: the captured k is 0.5.
        assert!(close(
            v,
            x * x + 3.0 * y * y + 0.5 * x + y.sin() + 4.0,
            1e-15
        ));
        assert!(close(gx, 2.0 * x + 0.5, 1e-15), "{gx}");
        assert!(close(gy, 6.0 * y + y.cos(), 1e-15), "{gy}");
    }
}

/// A closure capturing a differentiable value, one calling another, a
/// tuple parameter and a block body, called in a loop over a slice and in
/// a branch.
#[differentiable]
pub fn in_loops(x: &[f64], a: f64) -> f64 {
    let w = a * a;
    let term = |v: f64| w * v.sin();
    let pair = |(p, q): (f64, f64)| {
        let r = p * q;
        term(r) + r
    };
    let mut s = 0.0;
    for i in 0..x.len() {
        if x[i] > 0.0 {
            s += term(x[i]);
        } else {
            s += pair((x[i], a));
        }
    }
    s
}

#[test]
fn closures_in_loops_and_branches() {
    let x = [0.4, -0.9, 1.3, -0.2];
    let a = 0.7;
    let (v, (gx, ga)) = in_loops_vjp(&x, a, 1.0);
    assert_eq!(v, in_loops(&x, a));
    let h = 1e-6;
    for i in 0..x.len() {
        let (mut p, mut m) = (x, x);
        p[i] += h;
        m[i] -= h;
        let fd = (in_loops(&p, a) - in_loops(&m, a)) / (2.0 * h);
        assert!(close(gx[i], fd, 1e-7), "x[{i}]: {} against {fd}", gx[i]);
    }
    let fd = (in_loops(&x, a + h) - in_loops(&x, a - h)) / (2.0 * h);
    assert!(close(ga, fd, 1e-7), "a: {ga} against {fd}");
    // The three modes agree.
    let (_, l) = in_loops_lin(&x, a);
    let dx = [0.3, 0.1, -0.2, 0.5];
    let (_, d) = in_loops_jvp(&x, a, &dx, 0.25);
    let want: f64 = gx.iter().zip(&dx).map(|(g, d)| g * d).sum::<f64>() + ga * 0.25;
    assert!(close(d, want, 1e-13), "{d} against {want}");
    assert!(close(l.apply((dx.to_vec(), 0.25)), d, 1e-13));
}

/// A closure, and a differentiable function, given to `map` by name.
#[differentiable]
pub fn cube(v: f64) -> f64 {
    v * v * v
}

#[differentiable]
pub fn mapped(x: &[f64], a: f64) -> f64 {
    let scaled = |v: f64| a * v.sin();
    let s: f64 = x.iter().copied().map(scaled).sum();
    let c: Vec<f64> = x.iter().copied().map(cube).collect();
    s + c.iter().sum::<f64>()
}

#[test]
fn closures_and_functions_given_to_map_by_name() {
    let (x, a) = ([0.4, -0.9, 1.3], 0.7);
    let (v, (gx, ga)) = mapped_vjp(&x, a, 1.0);
    assert_eq!(v, mapped(&x, a));
    // Σ a sin xᵢ + xᵢ³.
    for i in 0..3 {
        let want = a * x[i].cos() + 3.0 * x[i] * x[i];
        assert!(close(gx[i], want, 1e-14), "{gx:?}");
    }
    let want: f64 = x.iter().map(|v| v.sin()).sum();
    assert!(close(ga, want, 1e-14), "{ga} against {want}");
}
