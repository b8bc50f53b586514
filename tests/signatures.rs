//! A caller knows its callee's signature: the result of a call to a
//! `#[differentiable]` or `#[linear]` function needs no annotation, whatever
//! its type (floats, tuples, arrays, structs, `Vec`s and `Vec`s of rows),
//! by name, by path, through a `use`, and in a method.
#![deny(warnings)]
// Index loops and pushes are the numeric code under test.
#![allow(clippy::needless_range_loop, clippy::vec_init_then_push)]

mod support;

use linear_ad::{differentiable, linear, Differentiable};

mod geometry {
    use linear_ad::{differentiable, Differentiable};

    #[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
    pub struct Point {
        pub x: f64,
        pub y: f64,
    }

    /// A tuple result.
    #[differentiable]
    pub fn polar(x: f64, y: f64) -> (f64, f64) {
        ((x * x + y * y).sqrt(), y.atan2(x))
    }

    /// An array result.
    #[differentiable]
    pub fn project(p: [f64; 3], f: f64) -> [f64; 2] {
        [f * p[0] / p[2], f * p[1] / p[2]]
    }

    /// A struct result, of a struct the caller does not import.
    #[differentiable]
    pub fn rotate(x: f64, y: f64, a: f64) -> Point {
        Point {
            x: a.cos() * x - a.sin() * y,
            y: a.sin() * x + a.cos() * y,
        }
    }

    /// A nested tuple.
    #[differentiable]
    pub fn moments(a: f64, b: f64) -> ((f64, f64), f64) {
        ((a + b, a * b), a - b)
    }
}

mod imported {
    use super::geometry::{polar, project};
    use linear_ad::differentiable;

    /// Calls through a `use`: the function, its signature and its
    /// linearization come with one import.
    #[differentiable]
    pub fn through_use(x: f64, y: f64) -> f64 {
        let (r, t) = polar(x, y);
        let q = project([x, y, 2.0 + r], 3.0);
        r * t + q[0] - q[1]
    }
}

#[linear]
fn halves(#[linear] x: f64, #[linear] y: f64) -> (f64, f64) {
    (0.5 * x, 0.5 * y - x)
}

#[differentiable]
fn unannotated(x: f64, y: f64) -> f64 {
    let p = geometry::polar(x, y);
    let q = geometry::project([x, y, 3.0], 2.0);
    let r = geometry::rotate(x, y, 0.3);
    let ((s, m), d) = geometry::moments(x, p.0);
    let h = halves(x, y);
    // Nested calls: the inner call's result is an argument.
    let n = geometry::polar(geometry::polar(x, y).0, halves(y, x).1);
    p.0 * p.1 + q[0] * q[1] + r.x - 2.0 * r.y + s * m - d + h.0 * h.1 + n.0 * n.1
}

fn by_hand(x: f64, y: f64) -> f64 {
    let p = ((x * x + y * y).sqrt(), y.atan2(x));
    let q = [2.0 * x / 3.0, 2.0 * y / 3.0];
    let (c, s) = (0.3f64.cos(), 0.3f64.sin());
    let r = (c * x - s * y, s * x + c * y);
    let (s2, m, d) = (x + p.0, x * p.0, x - p.0);
    let h = (0.5 * x, 0.5 * y - x);
    let (a, b) = (p.0, 0.5 * x - y);
    let n = ((a * a + b * b).sqrt(), b.atan2(a));
    p.0 * p.1 + q[0] * q[1] + r.0 - 2.0 * r.1 + s2 * m - d + h.0 * h.1 + n.0 * n.1
}

#[test]
fn results_of_every_shape_need_no_annotation() {
    for (x, y) in [(0.3, -0.7), (1.2, 0.4), (-0.9, 0.25)] {
        let want = by_hand(x, y);
        assert!((unannotated(x, y) - want).abs() < 1e-12 * (1.0 + want.abs()));
        support::check_xy(
            (x, y),
            unannotated,
            unannotated_jvp,
            unannotated_vjp,
            unannotated_lin,
        );
    }
}

#[test]
fn calls_through_a_use_declaration() {
    let f = |x: f64, y: f64| {
        let r = (x * x + y * y).sqrt();
        r * y.atan2(x) + 3.0 * x / (2.0 + r) - 3.0 * y / (2.0 + r)
    };
    let (x, y) = (0.8, 0.45);
    let (v, (gx, gy)) = imported::through_use_vjp(x, y, 1.0);
    assert!((v - f(x, y)).abs() < 1e-12);
    assert_eq!(v, imported::through_use(x, y));
    let h = 1e-6;
    let nx = (f(x + h, y) - f(x - h, y)) / (2.0 * h);
    let ny = (f(x, y + h) - f(x, y - h)) / (2.0 * h);
    assert!(
        (gx - nx).abs() < 1e-6 && (gy - ny).abs() < 1e-6,
        "{gx} {nx} {gy} {ny}"
    );
}

#[derive(Differentiable, Clone, Copy, Debug)]
struct Arm {
    length: f64,
    angle: f64,
}

#[differentiable]
impl Arm {
    /// A method calling a free function with a tuple result.
    #[differentiable]
    fn reach(&self, base: f64) -> f64 {
        let (r, t) = geometry::polar(self.length, base);
        r * t.cos() + self.angle
    }
}

#[test]
fn methods_call_free_functions_without_annotations() {
    let arm = Arm {
        length: 1.3,
        angle: 0.2,
    };
    let (v, (da, db)) = arm.reach_vjp(0.7, 1.0);
    assert_eq!(v, arm.reach(0.7));
    let f = |l: f64, b: f64| {
        let r = (l * l + b * b).sqrt();
        r * b.atan2(l).cos()
    };
    let h = 1e-6;
    let nl = (f(1.3 + h, 0.7) - f(1.3 - h, 0.7)) / (2.0 * h);
    let nb = (f(1.3, 0.7 + h) - f(1.3, 0.7 - h)) / (2.0 * h);
    assert!((da.length - nl).abs() < 1e-6 && (da.angle - 1.0).abs() < 1e-12);
    assert!((db - nb).abs() < 1e-6);
}

mod arrays {
    use linear_ad::differentiable;

    /// A `Vec` the callee builds, of a length the caller does not know.
    #[differentiable]
    pub fn powers(x: f64, #[nondiff] n: usize) -> Vec<f64> {
        let mut y = Vec::new();
        let mut p = 1.0;
        for _ in 0..n {
            p *= x;
            y.push(p);
        }
        y
    }

    /// A `Vec` of rows.
    #[differentiable]
    pub fn pairs(x: f64, y: f64) -> Vec<[f64; 2]> {
        let mut v: Vec<[f64; 2]> = Vec::new();
        v.push([x * y, x]);
        v.push([y, x - y]);
        v
    }

    /// A fixed-size array the callee writes element by element.
    #[differentiable]
    pub fn basis(a: f64, b: f64) -> [f64; 3] {
        let mut y = [0.0; 3];
        for i in 0..3 {
            y[i] = a * (i as f64) + b * b;
        }
        y
    }
}

/// Reads a `Vec` result by index in a loop, calls the same callee twice,
/// and reads a fixed-size array result by literal indices (the caller
/// sees `[f64; 3]`, a value like any array held by value).
#[differentiable]
fn uses_array_results(x: f64, y: f64) -> f64 {
    let p = arrays::powers(x, 4);
    let q = arrays::powers(y, 2);
    let b = arrays::basis(x, y);
    let mut s = 0.0;
    for i in 0..p.len() {
        s += p[i] * (i as f64 + 1.0);
    }
    let r = arrays::pairs(x, y);
    s * b[0] + q[1] * b[2] - q[0] * b[1] + r[1][1] * r[0][0]
}

fn array_results_by_hand(x: f64, y: f64) -> f64 {
    let p = [x, x * x, x * x * x, x * x * x * x];
    let b = [y * y, x + y * y, 2.0 * x + y * y];
    let mut s = 0.0;
    for i in 0..4 {
        s += p[i] * (i as f64 + 1.0);
    }
    s * b[0] + y * y * b[2] - y * b[1] + (x - y) * x * y
}

#[test]
fn vec_and_built_array_results_need_no_annotation() {
    for (x, y) in [(0.3, -0.7), (1.2, 0.4), (-0.9, 0.25)] {
        let want = array_results_by_hand(x, y);
        let got = uses_array_results(x, y);
        assert!(
            (got - want).abs() < 1e-12 * (1.0 + want.abs()),
            "{got} {want}"
        );
        support::check_xy(
            (x, y),
            uses_array_results,
            uses_array_results_jvp,
            uses_array_results_vjp,
            uses_array_results_lin,
        );
    }
}
