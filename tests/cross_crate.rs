//! Calls into another crate (`tests/callee`): a caller reaches the
//! callee's generated code and its signature through the path it writes,
//! so `pub` functions of a dependency are callable with each result shape
//! and no annotation, as in-crate ones are, and a dependency's derived
//! structs are parameters like local ones (see `linear_core::namesake`).
#![deny(warnings)]

mod support;

use linear_ad::differentiable;
use linear_ad_callee::{body_at, nested, polar, powers, project, shear, soft_abs, Body, Pinned};

#[differentiable]
fn uses_a_dependency(x: f64, y: f64) -> f64 {
    let a = soft_abs(x - y, 0.1);
    let (r, t) = polar(x, y);
    let q = project([x, y, 2.0 + r], 3.0);
    let s = shear(x, y, 0.5);
    let l = nested::logistic(x * y);
    let full = linear_ad_callee::nested::logistic(y);
    let p = powers(y, 3);
    let sum = p.iter().sum::<f64>();
    let b = body_at(x, y);
    a * t + q[0] - q[1] + s.0 * s.1 + l + full + sum * x + b.mass * b.pos[1]
}

/// The same calls with `let` annotations, which stay accepted.
#[differentiable]
fn annotated(x: f64, y: f64) -> f64 {
    let (r, t): (f64, f64) = polar(x, y);
    let q: [f64; 2] = project([x, y, 2.0 + r], 3.0);
    let p: Vec<f64> = powers(y, 3);
    t * q[1] + p[2]
}

/// Functions of the same tokens in two modules of the dependency.
#[differentiable]
fn stamped(x: f64, y: f64) -> f64 {
    let (a, _) = linear_ad_callee::twice::scaled(x);
    let (b, c) = linear_ad_callee::thrice::scaled(y);
    a + b * c
}

/// A dependency's struct as a parameter, read field by field and passed to
/// a dependency's function.
#[differentiable]
fn weight(b: &Body, g: f64) -> f64 {
    b.mass * g * b.pos[1] + b.pos[0] * b.pos[0] + linear_ad_callee::kinetic(b)
}

/// A dependency's methods: by method syntax and by path, one with a
/// struct result typed by the `let`.
#[differentiable]
fn methods_of_a_dependency(b: &Body, g: f64) -> f64 {
    let s: Body = b.shifted(g);
    s.weight(g) * s.pos[0] + Body::weight(b, s.pos[1])
}

/// A dependency's struct with a constant field, passed to its method.
#[differentiable]
fn pulled(p: &Pinned, q: &Pinned, to: f64) -> f64 {
    p.pull(to) * q.pos[1] + Pinned::pull(q, to)
}

fn by_hand(x: f64, y: f64) -> f64 {
    let a = ((x - y) * (x - y) + 0.01).sqrt();
    let r = (x * x + y * y).sqrt();
    let t = y.atan2(x);
    let q = [3.0 * x / (2.0 + r), 3.0 * y / (2.0 + r)];
    let s = (x + 0.5 * y, y);
    let logistic = |z: f64| 1.0 / (1.0 + (-z).exp());
    let sum = y + y * y + y * y * y;
    a * t + q[0] - q[1] + s.0 * s.1 + logistic(x * y) + logistic(y) + sum * x + x * y * y
}

#[test]
fn a_dependency_s_functions_are_callable_with_every_result_shape() {
    for (x, y) in [(0.3, -0.7), (1.2, 0.4), (-0.9, 0.25)] {
        let want = by_hand(x, y);
        let got = uses_a_dependency(x, y);
        assert!(
            (got - want).abs() < 1e-12 * (1.0 + want.abs()),
            "{got} {want}"
        );
        support::check_xy(
            (x, y),
            uses_a_dependency,
            uses_a_dependency_jvp,
            uses_a_dependency_vjp,
            uses_a_dependency_lin,
        );
    }
}

#[test]
fn a_dependency_s_companions_are_callable_directly() {
    let (v, (dx, dy)) = linear_ad_callee::polar_vjp(0.6, 0.8, (1.0, 0.0));
    assert_eq!(v, polar(0.6, 0.8));
    assert!((dx - 0.6).abs() < 1e-12 && (dy - 0.8).abs() < 1e-12);
    assert_eq!(
        linear_ad_callee::shear_transpose(0.5, (1.0, 2.0)),
        (1.0, 2.5)
    );
}

#[test]
fn annotations_on_a_dependency_s_results_stay_accepted() {
    for (x, y) in [(0.3f64, -0.7f64), (1.2, 0.4)] {
        let r = (x * x + y * y).sqrt();
        let want = y.atan2(x) * 3.0 * y / (2.0 + r) + y * y * y;
        let got = annotated(x, y);
        assert!((got - want).abs() < 1e-12, "{got} {want}");
        support::check_xy(
            (x, y),
            annotated,
            annotated_jvp,
            annotated_vjp,
            annotated_lin,
        );
    }
}

#[test]
fn a_dependency_s_struct_is_a_parameter() {
    let b = Body {
        pos: [0.4, -1.3],
        mass: 2.5,
    };
    let g = 9.8;
    let (v, (db, dg)) = weight_vjp(&b, g, 1.0);
    assert_eq!(v, weight(&b, g));
    // By hand, with kinetic = mass·(x² + y²)/2: d/dmass = g·y + (x² + y²)/2,
    // d/dx = 2x + mass·x, d/dy = mass·g + mass·y, d/dg = mass·y.
    let (x, y, m) = (b.pos[0], b.pos[1], b.mass);
    let want = [
        g * y + (x * x + y * y) / 2.0,
        2.0 * x + m * x,
        m * g + m * y,
        m * y,
    ];
    let got = [db.mass, db.pos[0], db.pos[1], dg];
    for (got, want) in got.iter().zip(want) {
        assert!((got - want).abs() < 1e-12, "{got} {want}");
    }
    let tangent = linear_ad_callee::BodyTangent {
        pos: [1.0, 0.5],
        mass: -2.0,
    };
    let (_, dv) = weight_jvp(&b, g, &tangent, 0.25);
    let by_vjp = db.pos[0] + 0.5 * db.pos[1] - 2.0 * db.mass + 0.25 * dg;
    assert!((dv - by_vjp).abs() < 1e-12, "{dv} {by_vjp}");
}

#[test]
fn a_dependency_s_methods_are_called() {
    let plain = |m: f64, x: f64, y: f64, g: f64| m * g * (x + g) + m * (y - g);
    let b = |v: &[f64]| Body {
        pos: [v[1], v[2]],
        mass: v[0],
    };
    let t = |v: &[f64]| linear_ad_callee::BodyTangent {
        pos: [v[1], v[2]],
        mass: v[0],
    };
    let x = [2.5, 0.4, -1.3, 0.7];
    assert!((methods_of_a_dependency(&b(&x), x[3]) - plain(x[0], x[1], x[2], x[3])).abs() < 1e-12);
    support::check(
        &x,
        1,
        |v| vec![plain(v[0], v[1], v[2], v[3])],
        |v, d| vec![methods_of_a_dependency_jvp(&b(v), v[3], &t(d), d[3]).1],
        |v, w| {
            let (_, (db, dg)) = methods_of_a_dependency_vjp(&b(v), v[3], w[0]);
            vec![db.mass, db.pos[0], db.pos[1], dg]
        },
        |v, d, w| {
            let (_, l) = methods_of_a_dependency_lin(&b(v), v[3]);
            let (db, dg) = linear_ad::LinearMap::transpose(&l, w[0]);
            (
                vec![linear_ad::LinearMap::apply(&l, (t(d), d[3]))],
                vec![db.mass, db.pos[0], db.pos[1], dg],
            )
        },
    );
}

#[test]
fn stamped_copies_of_one_function_are_told_apart() {
    for (x, y) in [(0.3, -0.7), (1.2, 0.4)] {
        let want = 2.0 * x * x + 3.0 * y * y * y;
        let got = stamped(x, y);
        assert!((got - want).abs() < 1e-12, "{got} {want}");
        support::check_xy((x, y), stamped, stamped_jvp, stamped_vjp, stamped_lin);
    }
}

#[test]
fn a_dependency_s_struct_with_a_constant_field_crosses_calls() {
    let pull = |p: &Pinned, to: f64| {
        if p.pinned {
            0.0
        } else {
            (p.pos[0] - to) * (p.pos[0] - to) + p.pos[1] * p.pos[1]
        }
    };
    for pins in [(false, false), (true, false), (false, true)] {
        let pq = |v: &[f64]| {
            (
                Pinned {
                    pos: [v[0], v[1]],
                    pinned: pins.0,
                },
                Pinned {
                    pos: [v[2], v[3]],
                    pinned: pins.1,
                },
            )
        };
        let t = |v: &[f64]| {
            (
                linear_ad_callee::PinnedTangent { pos: [v[0], v[1]] },
                linear_ad_callee::PinnedTangent { pos: [v[2], v[3]] },
            )
        };
        let plain = |v: &[f64]| {
            let (p, q) = pq(v);
            vec![pull(&p, v[4]) * q.pos[1] + pull(&q, v[4])]
        };
        let x = [0.4, -1.1, 0.9, 1.6, 0.25];
        let (p, q) = pq(&x);
        assert!((pulled(&p, &q, x[4]) - plain(&x)[0]).abs() < 1e-12);
        support::check(
            &x,
            1,
            plain,
            |v, d| {
                let ((p, q), (dp, dq)) = (pq(v), t(d));
                vec![pulled_jvp(&p, &q, v[4], &dp, &dq, d[4]).1]
            },
            |v, w| {
                let (p, q) = pq(v);
                let (_, (dp, dq, dt)) = pulled_vjp(&p, &q, v[4], w[0]);
                vec![dp.pos[0], dp.pos[1], dq.pos[0], dq.pos[1], dt]
            },
            |v, d, w| {
                let ((p, q), (tp, tq)) = (pq(v), t(d));
                let (_, l) = pulled_lin(&p, &q, v[4]);
                let (dp, dq, dt) = linear_ad::LinearMap::transpose(&l, w[0]);
                (
                    vec![linear_ad::LinearMap::apply(&l, (tp, tq, d[4]))],
                    vec![dp.pos[0], dp.pos[1], dq.pos[0], dq.pos[1], dt],
                )
            },
        );
    }
}
