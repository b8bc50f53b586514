//! Arrays of structs as differentiable parameters (`&[Body]`,
//! `&Vec<Spring>`, `Vec<Body>`): each element read whole (`let b =
//! bodies[i];`, `for b in bodies`, `&bodies[i]`) or by field
//! (`bodies[i].x`, `s.a.v` of a nested struct), in loops and iterator
//! chains. The tangents have the parameters' types of tangent structs
//! (`&[BodyTangent]`), the cotangents are `Vec`s of them. Each function
//! is checked against central differences and across modes, on the
//! structs' fields flattened in order.
#![deny(warnings)]

mod support;

use linear_ad::num_traits::Float;
use linear_ad::{differentiable, Differentiable, LinearMap};

#[derive(Clone, Copy, Debug, PartialEq, Differentiable)]
pub struct Body {
    pub x: f64,
    pub v: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Differentiable)]
pub struct Spring {
    pub a: Body,
    pub k: f64,
}

/// Three kinds of array of structs, read whole, by field and through
/// references (`&Vec<Spring>` on purpose: each kind is its own case).
#[allow(clippy::ptr_arg)]
#[differentiable]
fn energy(bodies: &[Body], springs: &Vec<Spring>, w: Vec<Body>) -> f64 {
    let mut e = 0.0;
    for i in 0..bodies.len() {
        let b = bodies[i];
        let c = &w[i];
        e += b.x * b.v * c.x + (b.v - c.v).sin();
    }
    for (i, s) in springs.iter().enumerate() {
        let d = s.a.x - bodies[i].x;
        e += 0.5 * s.k * d * d + s.a.v * s.a.v;
    }
    e + bodies.iter().map(|b| (0.5 * b.x).exp()).sum::<f64>()
}

fn bodies(v: &[f64]) -> Vec<Body> {
    v.chunks(2).map(|c| Body { x: c[0], v: c[1] }).collect()
}

fn springs(v: &[f64]) -> Vec<Spring> {
    v.chunks(3)
        .map(|c| Spring {
            a: Body { x: c[0], v: c[1] },
            k: c[2],
        })
        .collect()
}

fn flat_bodies(bs: &[BodyTangent]) -> Vec<f64> {
    bs.iter().flat_map(|b| [b.x, b.v]).collect()
}

fn flat_springs(ss: &[SpringTangent]) -> Vec<f64> {
    ss.iter().flat_map(|s| [s.a.x, s.a.v, s.k]).collect()
}

fn body_tangents(v: &[f64]) -> Vec<BodyTangent> {
    v.chunks(2)
        .map(|c| BodyTangent { x: c[0], v: c[1] })
        .collect()
}

fn spring_tangents(v: &[f64]) -> Vec<SpringTangent> {
    v.chunks(3)
        .map(|c| SpringTangent {
            a: BodyTangent { x: c[0], v: c[1] },
            k: c[2],
        })
        .collect()
}

#[test]
fn arrays_of_structs_differentiate_through_every_read() {
    // 3 bodies, 2 springs, 3 weights: 6 + 6 + 6 inputs.
    let x = [
        0.3, -0.7, 1.1, 0.4, -0.2, 0.9, //
        0.5, 0.25, 2.0, -0.4, 1.5, 0.75, //
        1.0, 0.1, -0.5, 0.2, 0.8, -0.3,
    ];
    let split = |v: &[f64]| (bodies(&v[..6]), springs(&v[6..12]), bodies(&v[12..]));
    let split_t = |v: &[f64]| {
        (
            body_tangents(&v[..6]),
            spring_tangents(&v[6..12]),
            body_tangents(&v[12..]),
        )
    };
    let f = |v: &[f64]| {
        let (b, s, w) = split(v);
        vec![energy(&b, &s, w)]
    };
    support::check(
        &x,
        1,
        f,
        |v, d| {
            let ((b, s, w), (db, ds, dw)) = (split(v), split_t(d));
            vec![energy_jvp(&b, &s, w, &db, &ds, dw).1]
        },
        |v, c| {
            let (b, s, w) = split(v);
            let (_, (gb, gs, gw)) = energy_vjp(&b, &s, w, c[0]);
            [flat_bodies(&gb), flat_springs(&gs), flat_bodies(&gw)].concat()
        },
        |v, d, c| {
            let (b, s, w) = split(v);
            let (_, l) = energy_lin(&b, &s, w);
            let dy = l.apply(split_t(d));
            let (gb, gs, gw) = l.transpose(c[0]);
            (
                vec![dy],
                [flat_bodies(&gb), flat_springs(&gs), flat_bodies(&gw)].concat(),
            )
        },
    );
    let (b, s, w) = split(&x);
    assert_eq!(energy_vjp(&b, &s, w.clone(), 1.0).0, energy(&b, &s, w));
}

/// An array result built from an array of structs.
#[differentiable]
fn stepped(bodies: &[Body], dt: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(bodies.len());
    for b in bodies.iter() {
        out.push(b.x + dt * b.v);
    }
    out
}

#[test]
fn results_built_from_arrays_of_structs() {
    let bs = bodies(&[1.0, 2.0, 3.0, 4.0]);
    // By hand: y = x + dt·v.
    let (y, (gb, gdt)) = stepped_vjp(&bs, 0.1, vec![1.0, 2.0]);
    assert_eq!(y, stepped(&bs, 0.1));
    assert_eq!(gb, body_tangents(&[1.0, 0.1, 2.0, 0.2]));
    assert!(support::close(gdt, 2.0 + 2.0 * 4.0, 1e-15));
    let db = body_tangents(&[1.0, 0.0, 0.0, 1.0]);
    let (_, dy) = stepped_jvp(&bs, 0.1, &db, 1.0);
    support::assert_close(&dy, &[1.0 + 2.0, 0.1 + 4.0], 1e-15);
}

#[derive(Clone, Copy, Debug, PartialEq, Differentiable)]
pub struct P2<T: Float> {
    pub x: T,
    pub y: T,
}

/// A generic float, and a struct generic in it.
#[differentiable]
fn perimeter<T: Float>(pts: &[P2<T>]) -> T {
    let mut s = T::zero();
    for i in 1..pts.len() {
        let (dx, dy) = (pts[i].x - pts[i - 1].x, pts[i].y - pts[i - 1].y);
        s = s + (dx * dx + dy * dy).sqrt();
    }
    s
}

#[test]
fn generic_structs_in_arrays() {
    let pts = [P2 { x: 0.0f32, y: 0.0 }, P2 { x: 3.0, y: 4.0 }];
    let (v, g) = perimeter_vjp(&pts, 1.0);
    assert_eq!(v, perimeter(&pts));
    assert_eq!(v, 5.0);
    // By hand: the unit vector from one point to the other.
    assert_eq!(
        g,
        vec![P2Tangent { x: -0.6, y: -0.8 }, P2Tangent { x: 0.6, y: 0.8 }]
    );
}

/// Constant structs passed to an array-of-structs parameter, and a
/// method taking one.
#[differentiable]
fn kinetic(bodies: &[Body]) -> f64 {
    bodies.iter().map(|b| 0.5 * b.v * b.v).sum()
}

#[differentiable]
fn scaled_kinetic(#[nondiff] bs: &[Body], s: f64) -> f64 {
    s * kinetic(bs)
}

pub struct World {
    pub g: f64,
}

#[differentiable]
impl World {
    #[differentiable]
    pub fn potential(#[nondiff] &self, bodies: &[Body]) -> f64 {
        let mut e = 0.0;
        for b in bodies {
            e += self.g * b.x * b.x;
        }
        e
    }
}

#[test]
fn constant_arrays_of_structs_and_methods() {
    let bs = bodies(&[1.0, 2.0, 3.0, 4.0]);
    assert_eq!(scaled_kinetic(&bs, 2.0), 20.0);
    assert_eq!(scaled_kinetic_vjp(&bs, 2.0, 1.0), (20.0, 10.0));
    let w = World { g: 0.5 };
    let (v, g) = w.potential_vjp(&bs, 1.0);
    assert_eq!(v, w.potential(&bs));
    assert_eq!(g, body_tangents(&[1.0, 0.0, 3.0, 0.0]));
}

#[derive(Clone, Copy, Debug, PartialEq, Differentiable)]
pub struct Particle {
    pub x: f64,
    pub v: f64,
    #[nondiff]
    pub m: f64,
    pub id: usize,
}

/// Constant fields of the elements, read whole and by index, in a
/// condition too.
#[differentiable]
fn weighted(ps: &[Particle], g: f64) -> f64 {
    let mut e = 0.0;
    for p in ps {
        e += 0.5 * p.m * p.v * p.v + p.m * g * p.x;
    }
    for i in 1..ps.len() {
        if ps[i].id.is_multiple_of(2) {
            let q = &ps[i - 1];
            e += q.m * ps[i].x;
        }
    }
    e
}

#[test]
fn constant_fields_of_elements_are_read_from_the_parameter() {
    let ps = [
        Particle {
            x: 1.0,
            v: 2.0,
            m: 3.0,
            id: 1,
        },
        Particle {
            x: 3.0,
            v: 4.0,
            m: 0.5,
            id: 2,
        },
        Particle {
            x: -1.0,
            v: 0.5,
            m: 2.0,
            id: 3,
        },
    ];
    let g = 9.8;
    // By hand: ∂/∂xᵢ = mᵢ g (+ m of the one before, for an even id),
    // ∂/∂vᵢ = mᵢ vᵢ, ∂/∂g = Σ mᵢ xᵢ.
    let want = vec![
        ParticleTangent { x: 3.0 * g, v: 6.0 },
        ParticleTangent {
            x: 0.5 * g + 3.0,
            v: 2.0,
        },
        ParticleTangent { x: 2.0 * g, v: 1.0 },
    ];
    let (v, (gp, gg)) = weighted_vjp(&ps, g, 1.0);
    assert_eq!(v, weighted(&ps, g));
    assert_eq!(gp.len(), 3);
    for (a, b) in gp.iter().zip(&want) {
        assert!(support::close(a.x, b.x, 1e-15) && support::close(a.v, b.v, 1e-15));
    }
    assert!(support::close(gg, 3.0 + 1.5 - 2.0, 1e-15));
    let d = [
        ParticleTangent { x: 1.0, v: 0.0 },
        ParticleTangent { x: 0.0, v: 1.0 },
        ParticleTangent { x: 0.5, v: 0.5 },
    ];
    let (_, dv) = weighted_jvp(&ps, g, &d, 0.25);
    let by_hand = want[0].x + want[1].v + 0.5 * (want[2].x + want[2].v) + 0.25 * gg;
    assert!(support::close(dv, by_hand, 1e-14));
    let (_, l) = weighted_lin(&ps, g);
    assert!(support::close(l.apply((d.to_vec(), 0.25)), dv, 1e-14));
}

#[differentiable]
fn momentum(b: &Body) -> f64 {
    b.x * b.v
}

/// Elements passed on to another differentiable function, by reference.
#[allow(clippy::needless_range_loop)]
#[differentiable]
fn total_momentum(bodies: &[Body]) -> f64 {
    let mut e = 0.0;
    for i in 0..bodies.len() {
        e += momentum(&bodies[i]);
    }
    e
}

#[test]
fn elements_passed_to_calls() {
    let bs = bodies(&[1.0, 2.0, 3.0, 4.0]);
    let (v, g) = total_momentum_vjp(&bs, 1.0);
    assert_eq!((v, momentum(&bs[0])), (total_momentum(&bs), 2.0));
    assert_eq!(g, body_tangents(&[2.0, 1.0, 4.0, 3.0]));
}

#[derive(Clone, Copy, Debug, PartialEq, Differentiable)]
pub struct Star {
    pub pos: [f64; 3],
    pub vel: [f64; 3],
    #[nondiff]
    pub m: f64,
}

/// Fixed-size array fields, read by literal index and, bound first, by a
/// loop's index; constant fields beside them.
#[differentiable]
fn gravity(stars: &[Star], g: f64) -> f64 {
    let mut e = 0.0;
    for s in stars {
        e += 0.5 * s.m * (s.vel[0] * s.vel[0] + s.vel[1] * s.vel[1] + s.vel[2] * s.vel[2]);
        e += s.m * g * s.pos[2];
    }
    for i in 0..stars.len() {
        for j in (i + 1)..stars.len() {
            let (a, b) = (stars[i], stars[j]);
            let mut r2 = 0.0;
            for k in 0..3 {
                let d = a.pos[k] - b.pos[k];
                r2 += d * d;
            }
            e -= a.m * b.m / r2.sqrt();
        }
    }
    e
}

#[test]
fn array_fields_of_elements() {
    let masses = [2.0, 3.0, 0.5];
    let stars_of = |v: &[f64]| -> Vec<Star> {
        v.chunks(6)
            .zip(masses)
            .map(|(c, m)| Star {
                pos: [c[0], c[1], c[2]],
                vel: [c[3], c[4], c[5]],
                m,
            })
            .collect()
    };
    let tangents_of = |v: &[f64]| -> Vec<StarTangent> {
        v.chunks(6)
            .map(|c| StarTangent {
                pos: [c[0], c[1], c[2]],
                vel: [c[3], c[4], c[5]],
            })
            .collect()
    };
    let flat = |ts: &[StarTangent]| -> Vec<f64> {
        ts.iter()
            .flat_map(|t| t.pos.into_iter().chain(t.vel))
            .collect()
    };
    let x = [
        0.0, 0.0, 1.0, 1.0, 0.0, 0.0, //
        1.0, 0.5, 0.0, 0.0, 1.0, 0.2, //
        -0.5, 1.5, 0.25, 0.3, -0.2, 0.1,
    ];
    let g = 9.8;
    support::check(
        &x,
        1,
        |v| vec![gravity(&stars_of(v), g)],
        |v, d| vec![gravity_jvp(&stars_of(v), g, &tangents_of(d), 0.0).1],
        |v, c| flat(&gravity_vjp(&stars_of(v), g, c[0]).1 .0),
        |v, d, c| {
            let (_, l) = gravity_lin(&stars_of(v), g);
            (
                vec![l.apply((tangents_of(d), 0.0))],
                flat(&l.transpose(c[0]).0),
            )
        },
    );
    // By hand: ∂/∂g = Σ mᵢ zᵢ.
    let (_, (_, gg)) = gravity_vjp(&stars_of(&x), g, 1.0);
    assert!(support::close(
        gg,
        2.0 * 1.0 + 3.0 * 0.0 + 0.5 * 0.25,
        1e-15
    ));
}

/// A `Vec` of structs as a result: built by pushes of struct literals and
/// of elements, over a local array of structs reassigned in a loop.
#[allow(clippy::needless_range_loop)]
#[differentiable]
fn leapfrog(bodies: &[Body], dt: f64, #[nondiff] steps: usize) -> Vec<Body> {
    let mut out: Vec<Body> = Vec::new();
    for b in bodies {
        out.push(*b);
    }
    for _ in 0..steps {
        let mut next: Vec<Body> = Vec::with_capacity(out.len());
        for i in 0..out.len() {
            let b = out[i];
            let v = b.v - dt * b.x.sin();
            next.push(Body { x: b.x + dt * v, v });
        }
        out = next;
    }
    out
}

fn leapfrog_by_hand(bodies: &[Body], dt: f64, steps: usize) -> Vec<Body> {
    let mut out = bodies.to_vec();
    for _ in 0..steps {
        for b in out.iter_mut() {
            b.v -= dt * b.x.sin();
            b.x += dt * b.v;
        }
    }
    out
}

#[test]
fn vecs_of_structs_as_results() {
    let x = [0.3, -0.7, 1.1, 0.4, -0.2, 0.9];
    let dt = 0.1;
    for steps in [0, 1, 3] {
        let bs = bodies(&x);
        let want = leapfrog_by_hand(&bs, dt, steps);
        assert_eq!(leapfrog(&bs, dt, steps), want);
        assert_eq!(
            leapfrog_vjp(&bs, dt, steps, body_tangents(&[0.0; 6])).0,
            want
        );
        let flat_out = |bs: Vec<Body>| -> Vec<f64> { bs.iter().flat_map(|b| [b.x, b.v]).collect() };
        let flat_t = |ts: Vec<BodyTangent>| -> Vec<f64> { flat_bodies(&ts) };
        support::check(
            &[x.as_slice(), &[dt]].concat(),
            6,
            |v| flat_out(leapfrog(&bodies(&v[..6]), v[6], steps)),
            |v, d| {
                flat_t(leapfrog_jvp(&bodies(&v[..6]), v[6], steps, &body_tangents(&d[..6]), d[6]).1)
            },
            |v, c| {
                let (_, (g, gdt)) = leapfrog_vjp(&bodies(&v[..6]), v[6], steps, body_tangents(c));
                [flat_bodies(&g), vec![gdt]].concat()
            },
            |v, d, c| {
                let (_, l) = leapfrog_lin(&bodies(&v[..6]), v[6], steps);
                let dy = flat_t(l.apply((body_tangents(&d[..6]), d[6])));
                let (g, gdt) = l.transpose(body_tangents(c));
                (dy, [flat_bodies(&g), vec![gdt]].concat())
            },
        );
    }
}

/// A `Vec` of structs without an annotation: the struct literal it is
/// pushed names its elements.
#[differentiable]
fn drifted(bodies: &[Body], dt: f64) -> Vec<Body> {
    let mut out = Vec::with_capacity(bodies.len());
    for b in bodies {
        out.push(Body {
            x: b.x + dt * b.v,
            v: b.v,
        });
    }
    out
}

#[test]
fn a_pushed_struct_literal_names_the_elements() {
    let bs = bodies(&[1.0, 2.0, 3.0, 4.0]);
    let (y, (g, gdt)) = drifted_vjp(&bs, 0.5, body_tangents(&[1.0, 0.0, 0.0, 1.0]));
    assert_eq!(y, drifted(&bs, 0.5));
    // By hand: x' = x + dt·v, v' = v.
    assert_eq!(g, body_tangents(&[1.0, 0.5, 0.0, 1.0]));
    assert_eq!(gdt, 2.0);
}

/// Fields of the elements of a local copy written in place, as an
/// integrator writes them (`out[i].x += dt * out[i].v`).
#[allow(clippy::needless_range_loop)]
#[differentiable]
fn euler(bodies: &[Body], dt: f64) -> Vec<Body> {
    let mut out = bodies.to_vec();
    for i in 0..out.len() {
        out[i].v -= dt * out[i].x.sin();
        out[i].x += dt * out[i].v;
    }
    out
}

#[test]
fn element_fields_written_in_place() {
    let x = [0.3, -0.7, 1.1, 0.4];
    let dt = 0.25;
    let bs = bodies(&x);
    assert_eq!(euler(&bs, dt), leapfrog_by_hand(&bs, dt, 1));
    assert_eq!(
        euler_vjp(&bs, dt, body_tangents(&[0.0; 4])).0,
        leapfrog_by_hand(&bs, dt, 1)
    );
    let flat_out = |bs: Vec<Body>| -> Vec<f64> { bs.iter().flat_map(|b| [b.x, b.v]).collect() };
    support::check(
        &[x.as_slice(), &[dt]].concat(),
        4,
        |v| flat_out(euler(&bodies(&v[..4]), v[4])),
        |v, d| flat_bodies(&euler_jvp(&bodies(&v[..4]), v[4], &body_tangents(&d[..4]), d[4]).1),
        |v, c| {
            let (_, (g, gdt)) = euler_vjp(&bodies(&v[..4]), v[4], body_tangents(c));
            [flat_bodies(&g), vec![gdt]].concat()
        },
        |v, d, c| {
            let (_, l) = euler_lin(&bodies(&v[..4]), v[4]);
            let dy = flat_bodies(&l.apply((body_tangents(&d[..4]), d[4])));
            let (g, gdt) = l.transpose(body_tangents(c));
            (dy, [flat_bodies(&g), vec![gdt]].concat())
        },
    );
}
