//! Methods (issue 10): `#[differentiable]` on an inherent `impl` block
//! differentiates the methods marked inside it, with `&self`, `self` or
//! no receiver, and `#[nondiff] &self`. The receiver is the first slot of
//! every tangent and cotangent list. Each method is checked by central
//! differences, the dot-product identity between `m_jvp` and `m_vjp`, and
//! `m_lin`'s agreement with both.

mod support;

use linear_ad::{differentiable, Differentiable, LinearMap};
use support::check;

#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Vec2 {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
impl Vec2 {
    /// Polar coordinates to a point: no receiver, `Self` as the result.
    #[differentiable]
    pub fn from_polar(r: f64, theta: f64) -> Self {
        Self {
            x: r * theta.cos(),
            y: r * theta.sin(),
        }
    }

    /// The receiver by reference, another struct by reference.
    #[differentiable]
    pub fn dot(&self, other: &Vec2) -> f64 {
        self.x * other.x + self.y * other.y
    }

    /// The receiver by value, `Self` spelled in the body.
    #[differentiable]
    pub fn scaled(self, k: f64) -> Self {
        let Self { x, y } = self;
        Self { x: x * k, y: y * k }
    }

    /// A method left alone: the block keeps it as written.
    pub fn norm2(&self) -> f64 {
        self.x * self.x + self.y * self.y
    }
}

fn v2(a: &[f64]) -> Vec2 {
    Vec2 { x: a[0], y: a[1] }
}

fn v2t(a: &[f64]) -> Vec2Tangent {
    Vec2Tangent { x: a[0], y: a[1] }
}

fn flat(t: &Vec2Tangent) -> Vec<f64> {
    vec![t.x, t.y]
}

#[test]
fn no_receiver() {
    check(
        &[1.5, 0.7],
        2,
        |a| flat_point(Vec2::from_polar(a[0], a[1])),
        |a, d| {
            let (y, dy) = Vec2::from_polar_jvp(a[0], a[1], d[0], d[1]);
            assert_eq!(y, Vec2::from_polar(a[0], a[1]));
            flat(&dy)
        },
        |a, w| {
            let (_, (dr, dt)) = Vec2::from_polar_vjp(a[0], a[1], v2t(w));
            vec![dr, dt]
        },
        |a, d, w| {
            let (_, l) = Vec2::from_polar_lin(a[0], a[1]);
            let (dr, dt) = l.transpose(v2t(w));
            (flat(&l.apply((d[0], d[1]))), vec![dr, dt])
        },
    );
}

fn flat_point(p: Vec2) -> Vec<f64> {
    vec![p.x, p.y]
}

#[test]
fn reference_receiver_is_the_first_slot() {
    check(
        &[1.0, -2.0, 0.5, 3.0],
        1,
        |a| vec![v2(a).dot(&v2(&a[2..]))],
        |a, d| {
            let (p, q) = (v2(a), v2(&a[2..]));
            let (y, dy) = p.dot_jvp(&q, &v2t(d), &v2t(&d[2..]));
            assert_eq!(y, p.dot(&q));
            vec![dy]
        },
        |a, w| {
            let (_, (dp, dq)) = v2(a).dot_vjp(&v2(&a[2..]), w[0]);
            [flat(&dp), flat(&dq)].concat()
        },
        |a, d, w| {
            let (_, l) = v2(a).dot_lin(&v2(&a[2..]));
            let dy = l.apply((v2t(d), v2t(&d[2..])));
            let (dp, dq) = l.transpose(w[0]);
            (vec![dy], [flat(&dp), flat(&dq)].concat())
        },
    );
    // The gradient of p·q in p is q.
    let (_, (dp, dq)) = Vec2::dot_vjp(&v2(&[1.0, -2.0]), &v2(&[0.5, 3.0]), 1.0);
    assert_eq!((dp, dq), (v2t(&[0.5, 3.0]), v2t(&[1.0, -2.0])));
}

#[test]
fn value_receiver_and_self_in_the_body() {
    check(
        &[1.0, -2.0, 0.25],
        2,
        |a| flat_point(v2(a).scaled(a[2])),
        |a, d| {
            let (y, dy) = v2(a).scaled_jvp(a[2], v2t(d), d[2]);
            assert_eq!(y, v2(a).scaled(a[2]));
            flat(&dy)
        },
        |a, w| {
            let (_, (dp, dk)) = v2(a).scaled_vjp(a[2], v2t(w));
            [flat(&dp), vec![dk]].concat()
        },
        |a, d, w| {
            let (_, l) = v2(a).scaled_lin(a[2]);
            let dy = l.apply((v2t(d), d[2]));
            let (dp, dk) = l.transpose(v2t(w));
            (flat(&dy), [flat(&dp), vec![dk]].concat())
        },
    );
    assert_eq!(v2(&[3.0, 4.0]).norm2(), 25.0);
}

/// A dense layer with fixed weights: `#[nondiff] &self` holds the
/// receiver constant, so the derivatives are in the input alone.
#[derive(Debug)]
pub struct Fixed {
    pub w: [f64; 2],
    pub b: f64,
}

#[differentiable]
impl Fixed {
    #[differentiable]
    pub fn forward(#[nondiff] &self, x: [f64; 2]) -> f64 {
        (self.w[0] * x[0] + self.w[1] * x[1] + self.b).tanh()
    }
}

#[test]
fn constant_receiver() {
    let layer = Fixed {
        w: [0.3, -0.8],
        b: 0.1,
    };
    check(
        &[0.4, 0.9],
        1,
        |a| vec![layer.forward([a[0], a[1]])],
        |a, d| vec![layer.forward_jvp([a[0], a[1]], [d[0], d[1]]).1],
        |a, w| layer.forward_vjp([a[0], a[1]], w[0]).1.to_vec(),
        |a, d, w| {
            let (_, l) = layer.forward_lin([a[0], a[1]]);
            (vec![l.apply([d[0], d[1]])], l.transpose(w[0]).to_vec())
        },
    );
}
