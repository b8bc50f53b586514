//! Writes to the fields of a local struct (issue 10): `c.pos[0] += ..`,
//! `c.mass *= ..`, a tuple struct's `q.1 = ..`, a nested struct's
//! `s.a.pos[1] -= ..`, in straight-line code, a loop and a branch; a
//! written struct passed on to another function, and the constant fields
//! of a written struct read from its parameter. Each function is checked
//! against plain Rust (where it is not the function itself), by central
//! differences, the dot-product identity and agreement of its three modes.

#![deny(warnings)]

mod support;

use linear_ad::{differentiable, Differentiable, LinearMap};
use support::{assert_close, check};

#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Body {
    pub pos: [f64; 2],
    pub vel: [f64; 2],
    pub mass: f64,
}

#[differentiable]
fn kinetic(b: &Body) -> f64 {
    0.5 * b.mass * (b.vel[0] * b.vel[0] + b.vel[1] * b.vel[1])
}

/// Straight-line writes, each reading fields written before, then the
/// written struct passed on.
#[differentiable]
fn kicked(b: &Body, dt: f64) -> f64 {
    let mut c = *b;
    c.vel[0] += dt * c.pos[1];
    c.pos[0] = c.pos[1] + dt * c.vel[0];
    c.mass *= 1.0 + dt;
    kinetic(&c) + c.pos[0] * b.pos[0]
}

fn kicked_by_hand(b: &Body, dt: f64) -> f64 {
    let mut c = *b;
    c.vel[0] += dt * c.pos[1];
    c.pos[0] = c.pos[1] + dt * c.vel[0];
    c.mass *= 1.0 + dt;
    0.5 * c.mass * (c.vel[0] * c.vel[0] + c.vel[1] * c.vel[1]) + c.pos[0] * b.pos[0]
}

/// A struct carried by a loop (semi-implicit Euler under gravity with
/// drag) and written in a branch.
#[differentiable]
fn fall(b: Body, dt: f64, drag: f64) -> f64 {
    let mut c = b;
    for _ in 0..5 {
        c.vel[1] -= dt * 9.81;
        if c.vel[1] < 0.0 {
            c.vel[1] *= 1.0 - drag * dt;
        } else {
            c.vel[0] *= 1.0 - drag * dt;
        }
        c.pos[0] += dt * c.vel[0];
        c.pos[1] += dt * c.vel[1];
    }
    c.pos[1] * c.mass + c.pos[0]
}

/// A tuple struct whose first field is constant: `q.1` is the first
/// component of its flat value.
#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Tagged(#[nondiff] pub usize, pub f64, pub f64);

#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    pub a: Body,
    pub t: Tagged,
}

/// Writes through nested structs, and constant fields read from a
/// written struct (from the parameter it was read from).
#[differentiable]
fn nested(p: &Pair, k: f64) -> f64 {
    let mut s = *p;
    s.a.pos[1] -= k * s.t.2;
    s.t.1 *= s.a.pos[1];
    s.t.2 = s.t.1 + s.a.mass;
    let mut q = p.t;
    q.2 += k;
    s.t.1 * s.t.2 * s.t.0 as f64 + q.2 * q.0 as f64 + kinetic(&s.a)
}

fn nested_by_hand(p: &Pair, k: f64) -> f64 {
    let mut s = *p;
    s.a.pos[1] -= k * s.t.2;
    s.t.1 *= s.a.pos[1];
    s.t.2 = s.t.1 + s.a.mass;
    let mut q = p.t;
    q.2 += k;
    let a = s.a;
    s.t.1 * s.t.2 * s.t.0 as f64
        + q.2 * q.0 as f64
        + 0.5 * a.mass * (a.vel[0] * a.vel[0] + a.vel[1] * a.vel[1])
}

fn body(a: &[f64]) -> Body {
    Body {
        pos: [a[0], a[1]],
        vel: [a[2], a[3]],
        mass: a[4],
    }
}

fn body_tangent(a: &[f64]) -> BodyTangent {
    BodyTangent {
        pos: [a[0], a[1]],
        vel: [a[2], a[3]],
        mass: a[4],
    }
}

fn body_flat(t: &BodyTangent) -> Vec<f64> {
    vec![t.pos[0], t.pos[1], t.vel[0], t.vel[1], t.mass]
}

const X: [f64; 7] = [0.3, 1.2, 0.8, 2.45, 1.7, 0.1, 0.3];

#[test]
fn straight_line_field_writes() {
    let x = &X[0..6];
    assert_close(
        &[kicked(&body(x), x[5])],
        &[kicked_by_hand(&body(x), x[5])],
        1e-12,
    );
    check(
        x,
        1,
        |a| vec![kicked_by_hand(&body(a), a[5])],
        |a, d| vec![kicked_jvp(&body(a), a[5], &body_tangent(d), d[5]).1],
        |a, w| {
            let (_, (db, dt)) = kicked_vjp(&body(a), a[5], w[0]);
            [body_flat(&db), vec![dt]].concat()
        },
        |a, d, w| {
            let (_, l) = kicked_lin(&body(a), a[5]);
            let (db, dt) = l.transpose(w[0]);
            (
                vec![l.apply((body_tangent(d), d[5]))],
                [body_flat(&db), vec![dt]].concat(),
            )
        },
    );
}

#[test]
fn a_struct_written_in_a_loop_and_a_branch() {
    let x = &X;
    // `fall` is the function as written, which the attribute keeps: the
    // central differences are taken of it.
    check(
        x,
        1,
        |a| vec![fall(body(a), a[5], a[6])],
        |a, d| vec![fall_jvp(body(a), a[5], a[6], body_tangent(d), d[5], d[6]).1],
        |a, w| {
            let (_, (db, dt, dd)) = fall_vjp(body(a), a[5], a[6], w[0]);
            [body_flat(&db), vec![dt, dd]].concat()
        },
        |a, d, w| {
            let (_, l) = fall_lin(body(a), a[5], a[6]);
            let (db, dt, dd) = l.transpose(w[0]);
            (
                vec![l.apply((body_tangent(d), d[5], d[6]))],
                [body_flat(&db), vec![dt, dd]].concat(),
            )
        },
    );
}

#[test]
fn nested_and_tuple_struct_field_writes() {
    let pair = |a: &[f64]| Pair {
        a: body(a),
        t: Tagged(3, a[5], a[6]),
    };
    let tangent = |d: &[f64]| PairTangent {
        a: body_tangent(d),
        t: TaggedTangent(d[5], d[6]),
    };
    let flat = |t: &PairTangent| [body_flat(&t.a), vec![t.t.0, t.t.1]].concat();
    let x = [X.as_slice(), &[0.7]].concat();
    assert_close(
        &[nested(&pair(&x), x[7])],
        &[nested_by_hand(&pair(&x), x[7])],
        1e-12,
    );
    check(
        &x,
        1,
        |a| vec![nested_by_hand(&pair(a), a[7])],
        |a, d| vec![nested_jvp(&pair(a), a[7], &tangent(d), d[7]).1],
        |a, w| {
            let (_, (dp, dk)) = nested_vjp(&pair(a), a[7], w[0]);
            [flat(&dp), vec![dk]].concat()
        },
        |a, d, w| {
            let (_, l) = nested_lin(&pair(a), a[7]);
            let (dp, dk) = l.transpose(w[0]);
            (
                vec![l.apply((tangent(d), d[7]))],
                [flat(&dp), vec![dk]].concat(),
            )
        },
    );
}
