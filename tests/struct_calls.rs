//! Structs passed from one differentiable function to another (issue 10):
//! by reference and by value, a caller's own struct parameter, a field
//! holding a nested struct, a struct the caller builds, and a struct
//! result passed on. The struct crosses the call as its flat value and the
//! callee rebuilds it (`linear_core::expand::companions`). Each caller is
//! checked by central differences, the dot-product identity between
//! `f_jvp` and `f_vjp`, and `f_lin`'s agreement with both.
#![deny(warnings)]

mod support;

use linear_ad::{differentiable, LinearMap};
use shapes::{Body, BodyTangent, Vec2, Vec2Tangent};
use support::{check, check_xy};

mod shapes {
    use linear_ad::{differentiable, Differentiable};

    #[derive(Differentiable, Clone, Copy, Debug)]
    pub struct Vec2 {
        pub x: f64,
        pub y: f64,
    }

    #[derive(Differentiable, Clone, Copy, Debug)]
    pub struct Body {
        pub pos: Vec2,
        pub vel: [f64; 2],
        pub mass: f64,
    }

    /// By reference.
    #[differentiable]
    pub fn kinetic(b: &Body) -> f64 {
        0.5 * b.mass * (b.vel[0] * b.vel[0] + b.vel[1] * b.vel[1])
    }

    /// By value, between a float and a constant, with a struct result.
    #[differentiable]
    pub fn shifted(t: f64, p: Vec2, #[nondiff] k: f64) -> Vec2 {
        Vec2 {
            x: p.x + k * t,
            y: p.y * t.sin(),
        }
    }
}

/// Every way a struct reaches a call.
#[differentiable]
fn energy(b: &Body, g: f64) -> f64 {
    let q = shapes::shifted(g, b.pos, 2.0);
    let moved = Body {
        pos: q,
        vel: [b.vel[1], g],
        mass: b.mass * g,
    };
    let r = shapes::shifted(b.mass, q, -1.0);
    shapes::kinetic(b) + shapes::kinetic(&moved) * r.x + g * q.y
}

fn body(a: &[f64]) -> Body {
    Body {
        pos: Vec2 { x: a[0], y: a[1] },
        vel: [a[2], a[3]],
        mass: a[4],
    }
}

fn body_t(a: &[f64]) -> BodyTangent {
    BodyTangent {
        pos: Vec2Tangent { x: a[0], y: a[1] },
        vel: [a[2], a[3]],
        mass: a[4],
    }
}

fn flat_body(t: &BodyTangent) -> Vec<f64> {
    vec![t.pos.x, t.pos.y, t.vel[0], t.vel[1], t.mass]
}

/// `energy` written out without calls, for the value.
fn energy_by_hand(b: &Body, g: f64) -> f64 {
    let kinetic = |m: f64, v: [f64; 2]| 0.5 * m * (v[0] * v[0] + v[1] * v[1]);
    let (qx, qy) = (b.pos.x + 2.0 * g, b.pos.y * g.sin());
    let rx = qx - b.mass;
    kinetic(b.mass, b.vel) + kinetic(b.mass * g, [b.vel[1], g]) * rx + g * qy
}

#[test]
fn structs_cross_calls_by_reference_and_by_value() {
    for x in [
        [0.3, -1.2, 0.5, 2.0, 1.5, 0.8],
        [-2.0, 0.7, -0.4, 0.1, 0.6, -1.3],
    ] {
        let split = |a: &[f64]| (body(&a[..5]), a[5]);
        let (b, g) = split(&x);
        let want = energy_by_hand(&b, g);
        assert!((energy(&b, g) - want).abs() < 1e-12 * (1.0 + want.abs()));
        check(
            &x,
            1,
            |a| {
                let (b, g) = split(a);
                vec![energy(&b, g)]
            },
            |a, d| {
                let (b, g) = split(a);
                let (y, dy) = energy_jvp(&b, g, &body_t(&d[..5]), d[5]);
                assert_eq!(y, energy(&b, g));
                vec![dy]
            },
            |a, w| {
                let (b, g) = split(a);
                let (_, (db, dg)) = energy_vjp(&b, g, w[0]);
                let mut v = flat_body(&db);
                v.push(dg);
                v
            },
            |a, d, w| {
                let (b, g) = split(a);
                let (_, l) = energy_lin(&b, g);
                let dy = l.apply((body_t(&d[..5]), d[5]));
                let (db, dg) = l.transpose(w[0]);
                let mut v = flat_body(&db);
                v.push(dg);
                (vec![dy], v)
            },
        );
    }
}

/// The gradient of a callee's struct parameter, read from the caller.
#[test]
fn a_callee_s_struct_gradient_reaches_the_caller() {
    #[differentiable]
    fn twice_kinetic(b: &Body) -> f64 {
        2.0 * shapes::kinetic(b)
    }
    let b = body(&[0.0, 0.0, 3.0, -4.0, 2.0]);
    let (v, db) = twice_kinetic_vjp(&b, 1.0);
    assert_eq!(v, twice_kinetic(&b));
    assert_eq!(v, 50.0);
    // d/dv (m v²) = 2 m v, d/dm = v² = 25; the position does not count.
    assert_eq!(flat_body(&db), vec![0.0, 0.0, 12.0, -16.0, 25.0]);
}

/// A struct that the function's signature does not name, built in its
/// body and passed on: its layout is fetched when lowering meets it.
#[differentiable]
fn built_inside(x: f64, y: f64) -> f64 {
    let p = Vec2 { x, y: x * y };
    let q = shapes::shifted(y, p, 0.5);
    q.x * q.y + p.x
}

#[test]
fn a_struct_named_only_in_the_body_is_built_and_passed() {
    let by_hand = |x: f64, y: f64| (x + 0.5 * y) * ((x * y) * y.sin()) + x;
    for (x, y) in [(0.3, -1.2), (1.5, 0.7)] {
        assert!((built_inside(x, y) - by_hand(x, y)).abs() < 1e-14);
        check_xy(
            (x, y),
            by_hand,
            built_inside_jvp,
            built_inside_vjp,
            built_inside_lin,
        );
    }
}

/// A struct with a constant field, which crosses calls as its origin.
#[derive(linear_ad::Differentiable, Clone, Copy, Debug)]
struct Anchor {
    k: f64,
    #[nondiff]
    at: f64,
}

#[differentiable]
fn pull(a: &Anchor, x: f64) -> f64 {
    let d = x - a.at;
    0.5 * a.k * d * d
}

/// A struct taken by value.
#[differentiable]
fn weight(b: Body) -> f64 {
    b.mass * b.vel[0]
}

/// `#[nondiff]` structs passed to differentiable struct parameters: a
/// borrowed one by reference and by value (`*b`), an owned one by
/// reference, one with a constant field, in a loop over a slice. Each
/// crosses as a constant with a zero tangent: its flat value, or its
/// origin where it has constant fields.
#[differentiable]
fn held(#[nondiff] b: &Body, #[nondiff] v: Vec2, #[nondiff] a: &Anchor, xs: &[f64]) -> f64 {
    let mut e = 0.0;
    for x in xs {
        let q = shapes::shifted(*x, v, 2.0);
        e += shapes::kinetic(b) * x + pull(a, *x) + q.y * weight(*b);
    }
    e
}

/// The same with the structs differentiable: its gradient in `xs` is
/// `held`'s.
#[differentiable]
fn held_twin(b: &Body, v: Vec2, a: &Anchor, xs: &[f64]) -> f64 {
    let mut e = 0.0;
    for x in xs {
        let q = shapes::shifted(*x, v, 2.0);
        e += shapes::kinetic(b) * x + pull(a, *x) + q.y * weight(*b);
    }
    e
}

#[test]
fn constant_structs_passed_to_differentiable_parameters() {
    let b = body(&[0.3, -0.2, 0.7, 0.4, 1.5]);
    let v = Vec2 { x: 0.4, y: -0.9 };
    let a = Anchor { k: 1.3, at: 0.2 };
    let xs = [0.5, -0.3, 1.1];
    let (e, gx) = held_vjp(&b, v, &a, &xs, 1.0);
    let (f, (_, _, _, hx)) = held_twin_vjp(&b, v, &a, &xs, 1.0);
    assert_eq!(e, held(&b, v, &a, &xs));
    assert_eq!(e, f);
    assert_eq!(f, held_twin(&b, v, &a, &xs));
    support::assert_close(&gx, &hx, 1e-14);
    check(
        &xs,
        1,
        |x| vec![held(&b, v, &a, x)],
        |x, d| vec![held_jvp(&b, v, &a, x, d).1],
        |x, w| held_vjp(&b, v, &a, x, w[0]).1,
        |x, d, w| {
            let (_, map) = held_lin(&b, v, &a, x);
            (vec![map.apply(d.to_vec())], map.transpose(w[0]))
        },
    );
}
