//! Differentiable operator impls (issue 10): `#[differentiable] impl Add
//! for V` (and `Sub`, `Mul<f64>`, `Div<f64>`, `Mul<V>`, `Neg`) makes
//! `a + b`, `v * k`, `-v` on the struct differentiable in other
//! differentiable code, each a call of the method the impl amounts to
//! (`V::add`, `V::mul_f64`, ..), whose `_jvp`, `_lin` and `_vjp` the impl
//! also generates. Checked by central differences, the dot-product identity
//! and mode agreement, and against the same code on plain floats.

#![deny(warnings)]

mod support;

use std::ops::{Add, Div, Mul, Neg, Sub};

use linear_ad::{differentiable, Differentiable, LinearMap};
use support::check;

#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct V2 {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
impl Add for V2 {
    type Output = V2;
    fn add(self, o: V2) -> V2 {
        V2 {
            x: self.x + o.x,
            y: self.y + o.y,
        }
    }
}

#[differentiable]
impl Sub for V2 {
    type Output = Self;
    fn sub(self, o: Self) -> Self::Output {
        V2 {
            x: self.x - o.x,
            y: self.y - o.y,
        }
    }
}

#[differentiable]
impl Mul<f64> for V2 {
    type Output = V2;
    fn mul(self, k: f64) -> V2 {
        V2 {
            x: self.x * k,
            y: self.y * k,
        }
    }
}

/// The elementwise product, beside `Mul<f64>`.
#[differentiable]
impl Mul for V2 {
    type Output = V2;
    fn mul(self, o: V2) -> V2 {
        V2 {
            x: self.x * o.x,
            y: self.y * o.y,
        }
    }
}

#[differentiable]
impl Div<f64> for V2 {
    type Output = V2;
    fn div(self, k: f64) -> V2 {
        V2 {
            x: self.x / k,
            y: self.y / k,
        }
    }
}

#[differentiable]
impl Neg for V2 {
    type Output = V2;
    fn neg(self) -> V2 {
        V2 {
            x: -self.x,
            y: -self.y,
        }
    }
}

/// A spring force between two points, written with the operators.
#[differentiable]
fn spring(a: V2, b: V2, k: f64) -> V2 {
    let d = b - a;
    let len = (d.x * d.x + d.y * d.y).sqrt();
    let f = d * (k * (len - 1.0)) / len;
    -f + a * b
}

fn spring_by_hand(a: [f64; 2], b: [f64; 2], k: f64) -> [f64; 2] {
    let d = [b[0] - a[0], b[1] - a[1]];
    let len = (d[0] * d[0] + d[1] * d[1]).sqrt();
    let s = k * (len - 1.0) / len;
    [-(d[0] * s) + a[0] * b[0], -(d[1] * s) + a[1] * b[1]]
}

fn v(a: &[f64]) -> V2 {
    V2 { x: a[0], y: a[1] }
}

fn t(a: &[f64]) -> V2Tangent {
    V2Tangent { x: a[0], y: a[1] }
}

#[test]
fn operators_on_structs_are_differentiable() {
    let x = [0.3, -1.1, 1.4, 0.6, 2.5];
    let r = spring(v(&x), v(&x[2..]), x[4]);
    let want = spring_by_hand([x[0], x[1]], [x[2], x[3]], x[4]);
    assert!((r.x - want[0]).abs() < 1e-12 && (r.y - want[1]).abs() < 1e-12);
    check(
        &x,
        2,
        |a| spring_by_hand([a[0], a[1]], [a[2], a[3]], a[4]).to_vec(),
        |a, d| {
            let (_, dy) = spring_jvp(v(a), v(&a[2..]), a[4], t(d), t(&d[2..]), d[4]);
            vec![dy.x, dy.y]
        },
        |a, w| {
            let (_, (da, db, dk)) = spring_vjp(v(a), v(&a[2..]), a[4], t(w));
            vec![da.x, da.y, db.x, db.y, dk]
        },
        |a, d, w| {
            let (_, l) = spring_lin(v(a), v(&a[2..]), a[4]);
            let dy = l.apply((t(d), t(&d[2..]), d[4]));
            let (da, db, dk) = l.transpose(t(w));
            (vec![dy.x, dy.y], vec![da.x, da.y, db.x, db.y, dk])
        },
    );
}

#[test]
fn operator_impls_have_their_own_derivatives() {
    let (a, b) = (V2 { x: 1.0, y: 2.0 }, V2 { x: -3.0, y: 0.5 });
    assert_eq!(a + b, V2 { x: -2.0, y: 2.5 });
    // d(a·b)/da = b, elementwise.
    let (p, (da, db)) = V2::mul_vjp(a, b, V2Tangent { x: 1.0, y: 1.0 });
    assert_eq!(p, a * b);
    assert_eq!(
        (da, db),
        (V2Tangent { x: -3.0, y: 0.5 }, V2Tangent { x: 1.0, y: 2.0 })
    );
    let (q, (dv, dk)) = V2::mul_f64_vjp(a, 3.0, V2Tangent { x: 1.0, y: 0.0 });
    assert_eq!((q, dv, dk), (a * 3.0, V2Tangent { x: 3.0, y: 0.0 }, 1.0));
    let (n, dn) = V2::neg_jvp(a, V2Tangent { x: 0.5, y: 1.0 });
    assert_eq!((n, dn), (-a, V2Tangent { x: -0.5, y: -1.0 }));
    assert_eq!(a - b, V2 { x: 4.0, y: 1.5 });
    assert_eq!(a / 2.0, V2 { x: 0.5, y: 1.0 });
}
