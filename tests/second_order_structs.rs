//! Second derivatives (`order = 2`) through calls that pass structs: by
//! value and by reference, built by the caller or received, and with
//! constant (`#[nondiff]`) fields, which cross calls as their origin. The
//! caller's `f_hvp` goes through each callee's `_jvp` differentiated
//! again, and its `f_vjp`'s derivatives through each callee's `_vjp`,
//! never an inlined copy of a callee's body. Checked against the caller's
//! twin with the callees written inline, against central finite
//! differences, and by the dot-product identity; in the crate's own build
//! profile (debug in `cargo test`, release in `.ci/run`).
#![deny(warnings)]

mod support;

use linear_ad::{differentiable, Differentiable};
use support::{assert_central, close};

const EPS: f64 = 1e-5;

#[derive(Differentiable, Clone, Copy, Debug)]
pub struct Vec2 {
    pub x: f64,
    pub y: f64,
}

/// A spring with a constant rest length and coil count.
#[derive(Differentiable, Clone, Debug)]
pub struct Spring {
    pub k: f64,
    #[nondiff]
    pub rest: f64,
    #[nondiff]
    pub coils: usize,
}

#[differentiable(order = 2)]
pub fn norm2(p: &Vec2, k: f64) -> f64 {
    (p.x * p.x + p.y * p.y * k).sin()
}

#[differentiable(order = 2)]
pub fn cross(p: Vec2, q: Vec2) -> f64 {
    p.x * q.y - p.y * q.x
}

#[differentiable(order = 2)]
pub fn stretch(s: &Spring, l: f64) -> f64 {
    let d = l - s.rest;
    0.5 * s.k * d * d * s.coils as f64
}

#[differentiable(order = 2)]
pub fn stretch_owned(s: Spring, l: f64) -> f64 {
    let d = l - s.rest;
    s.k * d * d * d / s.coils as f64
}

/// Structs built here and received, passed by value and by reference, in
/// a loop and in both arms of a branch.
#[differentiable(order = 2)]
pub fn energy(x: f64, y: f64, s: &Spring) -> f64 {
    let p = Vec2 { x, y: x * y };
    let q = Vec2 { x: y, y: 0.5 };
    let mut e = norm2(&p, y) * x + stretch(s, y);
    for i in 0..2 {
        if e > 0.0 {
            e += cross(p, q) * i as f64;
        } else {
            e -= stretch_owned(s.clone(), x);
        }
    }
    e
}

#[differentiable(order = 2)]
pub fn energy_inline(x: f64, y: f64, s: &Spring) -> f64 {
    let (px, py) = (x, x * y);
    let (qx, qy) = (y, 0.5);
    let d = y - s.rest;
    let mut e = (px * px + py * py * y).sin() * x + 0.5 * s.k * d * d * s.coils as f64;
    for i in 0..2 {
        if e > 0.0 {
            e += (px * qy - py * qx) * i as f64;
        } else {
            let c = x - s.rest;
            e -= s.k * c * c * c / s.coils as f64;
        }
    }
    e
}

/// `(x, y, k)` with the spring's constants fixed: the first point takes the
/// first arm of the branch, the second the other.
fn points() -> Vec<(f64, f64, Spring)> {
    let s = |k: f64| Spring {
        k,
        rest: 0.4,
        coils: 3,
    };
    vec![
        (0.3, 0.7, s(1.3)),
        (-0.8, 0.2, s(-2.0)),
        (1.1, -0.6, s(0.5)),
    ]
}

type Grad = (f64, f64, SpringTangent);

fn flat(g: &Grad) -> [f64; 3] {
    [g.0, g.1, g.2.k]
}

fn directions() -> Vec<Grad> {
    vec![
        (1.0, 0.5, SpringTangent { k: 0.7 }),
        (0.0, 1.0, SpringTangent { k: 0.0 }),
        (0.0, 0.0, SpringTangent { k: -1.0 }),
    ]
}

#[test]
fn struct_calls_have_the_hvp_of_their_inlined_twin() {
    let mut arms = [false; 2];
    for (x, y, s) in points() {
        let p = (x * x + x * x * y * y * y).sin() * x;
        let d = y - s.rest;
        arms[usize::from(p + 0.5 * s.k * d * d * 3.0 > 0.0)] = true;
        for v in directions() {
            let (e, g, hv) = energy_hvp(x, y, &s, v.0, v.1, &v.2);
            let (f, h, hu) = energy_inline_hvp(x, y, &s, v.0, v.1, &v.2);
            assert!(close(e, f, 1e-14), "value {e} against {f}");
            for (a, b) in flat(&g).into_iter().zip(flat(&h)) {
                assert!(close(a, b, 1e-13), "gradient {g:?} against {h:?}");
            }
            for (a, b) in flat(&hv).into_iter().zip(flat(&hu)) {
                assert!(close(a, b, 1e-12), "H·v {hv:?} against {hu:?}");
            }
        }
    }
    assert_eq!(arms, [true; 2], "the points take both arms of the branch");
}

#[test]
fn struct_calls_have_the_finite_difference_hvp() {
    for (x, y, s) in points() {
        for v in directions() {
            let (_, g, hv) = energy_hvp(x, y, &s, v.0, v.1, &v.2);
            let grad = |t: f64| {
                let st = Spring {
                    k: s.k + t * v.2.k,
                    ..s.clone()
                };
                flat(&energy_vjp(x + t * v.0, y + t * v.1, &st, 1.0).1)
            };
            assert_eq!(flat(&g), grad(0.0));
            assert_central(&flat(&hv), grad, EPS, 1e-7);
        }
    }
}

#[test]
fn the_vjp_of_a_function_with_struct_calls_has_its_own_derivatives() {
    for (x, y, s) in points() {
        let v = (0.4, -0.3, SpringTangent { k: 0.9 });
        let dc = -0.7;
        let ((e, g), (de, dg)) = energy_vjp_jvp(x, y, &s, 1.5, v.0, v.1, &v.2, dc);
        let (e0, g0) = energy_vjp(x, y, &s, 1.5);
        assert_eq!((e, flat(&g)), (e0, flat(&g0)));
        // The cotangent of `s` is its tangent struct.
        let _: &SpringTangent = &dg.2;
        let ((_, h), (_, dh)) = energy_inline_vjp_jvp(x, y, &s, 1.5, v.0, v.1, &v.2, dc);
        for (a, b) in flat(&g)
            .into_iter()
            .chain(flat(&dg))
            .zip(flat(&h).into_iter().chain(flat(&dh)))
        {
            assert!(
                close(a, b, 1e-12),
                "{g:?} {dg:?} against the inlined twin's {h:?} {dh:?}"
            );
        }
        let at = |t: f64| {
            let st = Spring {
                k: s.k + t * v.2.k,
                ..s.clone()
            };
            energy_vjp(x + t * v.0, y + t * v.1, &st, 1.5 + t * dc)
        };
        let ((e1, g1), (e2, g2)) = (at(EPS), at(-EPS));
        let fd = |p: f64, m: f64| (p - m) / (2.0 * EPS);
        assert!(close(de, fd(e1, e2), 1e-7), "{de}");
        for (i, d) in flat(&dg).into_iter().enumerate() {
            assert!(close(d, fd(flat(&g1)[i], flat(&g2)[i]), 1e-6), "{dg:?}");
        }
        // `energy_vjp_vjp` is its transpose: ⟨w, J·d⟩ = ⟨Jᵀw, d⟩.
        let w = (0.6, (1.0, -0.5, SpringTangent { k: 0.25 }));
        let (_, (bx, by, bs, bc)) = energy_vjp_vjp(x, y, &s, 1.5, w);
        let lhs = w.0 * de
            + flat(&w.1)
                .iter()
                .zip(flat(&dg))
                .map(|(a, b)| a * b)
                .sum::<f64>();
        let rhs = bx * v.0 + by * v.1 + bs.k * v.2.k + bc * dc;
        assert!(close(lhs, rhs, 1e-12), "{lhs} against {rhs}");
    }
}

/// The squared norm of `energy`'s gradient, through `energy_vjp`, whose
/// cotangent of `s` is a `SpringTangent` read by field.
#[differentiable]
pub fn energy_grad_norm(x: f64, y: f64, s: &Spring) -> f64 {
    let (_, (gx, gy, gs)) = energy_vjp(x, y, s, 1.0);
    gx * gx + gy * gy + gs.k * gs.k
}

#[differentiable]
pub fn energy_inline_grad_norm(x: f64, y: f64, s: &Spring) -> f64 {
    let (_, (gx, gy, gs)) = energy_inline_vjp(x, y, s, 1.0);
    gx * gx + gy * gy + gs.k * gs.k
}

#[test]
fn the_vjp_of_a_function_with_struct_calls_is_differentiable() {
    for (x, y, s) in points() {
        let (v, g) = energy_grad_norm_vjp(x, y, &s, 1.0);
        let (u, h) = energy_inline_grad_norm_vjp(x, y, &s, 1.0);
        assert!(close(v, u, 1e-13), "{v} against {u}");
        for (a, b) in flat(&g).into_iter().zip(flat(&h)) {
            assert!(close(a, b, 1e-11), "{g:?} against the inlined twin's {h:?}");
        }
        for (i, d) in directions().into_iter().enumerate() {
            let at = |t: f64| {
                let st = Spring {
                    k: s.k + t * d.2.k,
                    ..s.clone()
                };
                energy_grad_norm(x + t * d.0, y + t * d.1, &st)
            };
            let fd = (at(EPS) - at(-EPS)) / (2.0 * EPS);
            let dot: f64 = flat(&g).iter().zip(flat(&d)).map(|(a, b)| a * b).sum();
            assert!(close(dot, fd, 1e-6), "direction {i}: {dot} against {fd}");
        }
    }
}

/// `cross_jvp`, differentiable because `cross` has `order = 2`, called
/// with a direction built in differentiable code: a tangent struct is a
/// struct like any other there.
#[differentiable]
pub fn along_cross(x: f64, y: f64) -> f64 {
    let (p, q) = (Vec2 { x, y }, Vec2 { x: y, y: 1.0 });
    let dp = Vec2Tangent { x: 1.0, y: x };
    let (v, dv) = cross_jvp(p, q, dp, Vec2Tangent { x: 0.0, y: 0.5 });
    v * dv
}

#[test]
fn the_jvp_of_a_struct_function_is_a_callee() {
    for (x, y) in [(0.3, 0.7), (-1.1, 0.4)] {
        // cross(p, q) = x·1 − y·y; along (1, x) and (0, 0.5) for q.y: 1·1
        // − x·y + x·0.5.
        let (v, dv) = (x - y * y, 1.0 - x * y + 0.5 * x);
        assert!(close(along_cross(x, y), v * dv, 1e-15));
        let (_, (gx, gy)) = along_cross_vjp(x, y, 1.0);
        // d(v·dv)/dx = dv + v·(−y + 0.5); d/dy = −2y·dv + v·(−x).
        assert!(close(gx, dv + v * (0.5 - y), 1e-14), "{gx}");
        assert!(close(gy, -2.0 * y * dv - v * x, 1e-14), "{gy}");
    }
}

mod geo {
    use linear_ad::Differentiable;

    /// A struct with a constant field, in a module of its own.
    #[derive(Differentiable, Clone, Debug)]
    pub struct Anchor {
        pub w: f64,
        #[nondiff]
        pub at: f64,
    }
}

// Only `Anchor` is imported: generated code names its tangent through it.
use geo::Anchor;

#[differentiable(order = 2)]
pub fn pull(a: &Anchor, x: f64) -> f64 {
    let d = x - a.at;
    a.w * d * d * d
}

#[differentiable(order = 2)]
pub fn pulled(x: f64, a: &Anchor) -> f64 {
    pull(a, x) * x
}

#[test]
fn a_struct_from_another_module_crosses_calls() {
    let a = Anchor { w: 1.3, at: 0.4 };
    let x = 0.9;
    let t = geo::AnchorTangent { w: 0.7 };
    let ((_, (_, g)), (_, (dgx, dg))) = pulled_vjp_jvp(x, &a, 1.0, 1.0, &t, 0.0);
    // pulled = w·(x − at)³·x: ∂/∂w = (x − at)³·x, whose derivative along
    // (1, 0.7) is 3(x − at)²·x + (x − at)³.
    let d = x - a.at;
    assert!(close(g.w, d * d * d * x, 1e-14), "{g:?}");
    assert!(close(dg.w, 3.0 * d * d * x + d * d * d, 1e-13), "{dg:?}");
    // ∂/∂x = w(3d²x + d³); along (1, 0.7): w(6dx + 6d²) + 0.7(3d²x + d³).
    let want = a.w * (6.0 * d * x + 6.0 * d * d) + 0.7 * (3.0 * d * d * x + d * d * d);
    assert!(close(dgx, want, 1e-13), "{dgx} against {want}");
}
