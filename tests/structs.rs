//! Structs with `#[derive(Differentiable)]` (issue 10): parameters by
//! value and by reference, field reads, constant fields, struct literals
//! with `..base`, struct results and destructuring, nested structs, tuple
//! structs, structs carried through loops and branches. Each function is
//! checked by central differences, the dot-product identity between
//! `f_jvp` and `f_vjp`, and `f_lin`'s agreement with both.

mod support;

use linear_ad::{differentiable, Differentiable, LinearMap};
use support::check;

#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Vec3 {
    pub x: f64,
    pub y: f64,
    pub z: f64,
}

#[derive(Differentiable, Clone, Copy, Debug)]
pub struct Particle {
    pub pos: Vec3,
    pub vel: [f64; 3],
    pub mass: f64,
    #[nondiff]
    pub id: usize,
}

/// A tuple struct whose constant field sits between two differentiable
/// ones: its tangent is `PairTangent(f64, f64)`.
#[derive(Differentiable, Clone, Copy, Debug)]
pub struct Pair(pub f64, #[nondiff] pub usize, pub f64);

fn v3(a: &[f64]) -> Vec3 {
    Vec3 {
        x: a[0],
        y: a[1],
        z: a[2],
    }
}

fn v3t(a: &[f64]) -> Vec3Tangent {
    Vec3Tangent {
        x: a[0],
        y: a[1],
        z: a[2],
    }
}

fn flat3(v: &Vec3Tangent) -> Vec<f64> {
    vec![v.x, v.y, v.z]
}

fn particle(a: &[f64]) -> Particle {
    Particle {
        pos: v3(&a[0..3]),
        vel: [a[3], a[4], a[5]],
        mass: a[6],
        id: 3,
    }
}

fn particle_t(a: &[f64]) -> ParticleTangent {
    ParticleTangent {
        pos: v3t(&a[0..3]),
        vel: [a[3], a[4], a[5]],
        mass: a[6],
    }
}

fn flat_particle(t: &ParticleTangent) -> Vec<f64> {
    let mut v = flat3(&t.pos);
    v.extend(t.vel);
    v.push(t.mass);
    v
}

#[differentiable]
fn energy(p: &Particle, g: f64) -> f64 {
    let v2 = p.vel[0] * p.vel[0] + p.vel[1] * p.vel[1] + p.vel[2] * p.vel[2];
    0.5 * p.mass * v2 + p.mass * g * p.pos.z + (p.id as f64) * p.pos.x
}

#[test]
fn reference_parameter_nested_fields_and_a_constant_field() {
    let x = [1.0, 2.0, 3.0, 0.5, -1.0, 2.0, 2.0, 9.81];
    let split = |a: &[f64]| (particle(&a[..7]), a[7]);
    check(
        &x,
        1,
        |a| {
            let (p, g) = split(a);
            vec![energy(&p, g)]
        },
        |a, d| {
            let (p, g) = split(a);
            let (y, dy) = energy_jvp(&p, g, &particle_t(&d[..7]), d[7]);
            assert_eq!(y, energy(&p, g));
            vec![dy]
        },
        |a, w| {
            let (p, g) = split(a);
            let (_, (dp, dg)) = energy_vjp(&p, g, w[0]);
            let mut v = flat_particle(&dp);
            v.push(dg);
            v
        },
        |a, d, w| {
            let (p, g) = split(a);
            let (_, l) = energy_lin(&p, g);
            let dy = l.apply((particle_t(&d[..7]), d[7]));
            let (dp, dg) = l.transpose(w[0]);
            let mut v = flat_particle(&dp);
            v.push(dg);
            (vec![dy], v)
        },
    );
    // The constant field is read from the parameter: x's derivative is id.
    let p = particle(&x[..7]);
    let (_, (dp, _)) = energy_vjp(&p, 9.81, 1.0);
    assert_eq!(dp.pos.x, 3.0);
}

/// A symplectic Euler step: a struct by value in, a struct literal out.
#[differentiable]
fn step(p: Particle, dt: f64) -> Vec3 {
    let Vec3 { x, y, z } = p.pos;
    let v = p.vel;
    Vec3 {
        x: x + dt * v[0],
        y: y + dt * v[1],
        z: z + dt * (v[2] - 9.81 * dt),
    }
}

#[test]
fn struct_by_value_and_struct_result() {
    let x = [1.0, 2.0, 3.0, 0.5, -1.0, 2.0, 2.0, 0.1];
    let split = |a: &[f64]| (particle(&a[..7]), a[7]);
    check(
        &x,
        3,
        |a| {
            let (p, dt) = split(a);
            let y = step(p, dt);
            vec![y.x, y.y, y.z]
        },
        |a, d| {
            let (p, dt) = split(a);
            let (y, dy) = step_jvp(p, dt, particle_t(&d[..7]), d[7]);
            assert_eq!(y, step(p, dt));
            flat3(&dy)
        },
        |a, w| {
            let (p, dt) = split(a);
            let (_, (dp, ddt)) = step_vjp(p, dt, v3t(w));
            let mut v = flat_particle(&dp);
            v.push(ddt);
            v
        },
        |a, d, w| {
            let (p, dt) = split(a);
            let (_, l) = step_lin(p, dt);
            let dy = l.apply((particle_t(&d[..7]), d[7]));
            let (dp, ddt) = l.transpose(v3t(w));
            let mut v = flat_particle(&dp);
            v.push(ddt);
            (flat3(&dy), v)
        },
    );
}

/// `..base` takes the fields not written from another value; the struct
/// is carried through a loop and a branch.
#[differentiable]
fn drift(v: Vec3, k: f64, n: usize) -> Vec3 {
    let mut s = v;
    for i in 0..n {
        s = Vec3 {
            x: s.x + k * s.y,
            ..s
        };
        if i % 2 == 0 {
            s = Vec3 {
                z: s.z * s.x.sin(),
                ..s
            };
        }
    }
    s
}

#[test]
fn functional_update_through_a_loop_and_a_branch() {
    let x = [0.3, -0.7, 1.2, 0.4];
    check(
        &x,
        3,
        |a| flat3_of(drift(v3(a), a[3], 5)),
        |a, d| {
            let (y, dy) = drift_jvp(v3(a), a[3], 5, v3t(d), d[3]);
            assert_eq!(y, drift(v3(a), a[3], 5));
            flat3(&dy)
        },
        |a, w| {
            let (_, (dv, dk)) = drift_vjp(v3(a), a[3], 5, v3t(w));
            let mut v = flat3(&dv);
            v.push(dk);
            v
        },
        |a, d, w| {
            let (_, l) = drift_lin(v3(a), a[3], 5);
            let dy = l.apply((v3t(d), d[3]));
            let (dv, dk) = l.transpose(v3t(w));
            let mut v = flat3(&dv);
            v.push(dk);
            (flat3(&dy), v)
        },
    );
}

fn flat3_of(v: Vec3) -> Vec<f64> {
    vec![v.x, v.y, v.z]
}

#[differentiable]
fn pair_product(p: Pair) -> f64 {
    let Pair(a, _, b) = p;
    a * b + p.1 as f64 * p.2
}

#[test]
fn tuple_struct_with_a_constant_field() {
    let p = Pair(1.5, 4, -2.0);
    let (y, dp) = pair_product_vjp(p, 1.0);
    assert_eq!(y, pair_product(p));
    // The tangent numbers its fields anew: 0 is `a`, 1 is `b`.
    let PairTangent(da, db) = dp;
    assert_eq!((da, db), (-2.0, 1.5 + 4.0));
    let (_, dy) = pair_product_jvp(p, PairTangent(1.0, 0.5));
    assert_eq!(dy, -2.0 + 0.5 * 5.5);
}

#[test]
fn tangent_structs_are_vectors() {
    let a = ParticleTangent {
        pos: Vec3Tangent {
            x: 1.0,
            y: 2.0,
            z: 3.0,
        },
        vel: [1.0, 0.0, -1.0],
        mass: 0.5,
    };
    // Copy: every field is.
    let b = a;
    let zero = ParticleTangent::default();
    assert_eq!(a + zero, a);
    assert_eq!(a - b, zero);
    assert_eq!(-a + a, zero);
    let twice = a * 2.0;
    assert_eq!(twice.pos.z, 6.0);
    assert_eq!(twice.vel, [2.0, 0.0, -2.0]);
    assert_eq!(twice, a + b);
    fn tangent_of<T: Differentiable>(_: &T) -> std::marker::PhantomData<T::Tangent> {
        std::marker::PhantomData
    }
    let _: std::marker::PhantomData<ParticleTangent> = tangent_of(&particle(&[0.0; 7]));
}

/// A struct holding a `Vec`: its tangent holds one too, and is not
/// `Copy`; its operations go element by element.
#[derive(Differentiable, Clone, Debug)]
pub struct Cloud {
    pub points: Vec<[f64; 2]>,
    pub weight: f64,
}

#[test]
fn tangents_with_vec_fields() {
    let a = CloudTangent {
        points: vec![[1.0, 2.0], [3.0, 4.0]],
        weight: 1.0,
    };
    let b = a.clone() * 3.0 - a.clone();
    assert_eq!(b.points, vec![[2.0, 4.0], [6.0, 8.0]]);
    assert_eq!(b.weight, 2.0);
    assert!(CloudTangent::default().points.is_empty());
}

/// Settings of constant code: no derive, built and read in the body.
pub struct Config {
    pub steps: usize,
    pub scale: f64,
}

/// `Vec3` is named only through `Particle`'s field: its layout comes with
/// `Particle`'s.
#[differentiable]
fn nested_literal(p: Particle) -> f64 {
    let c = Config {
        steps: 2,
        scale: 0.5,
    };
    let mut q = Vec3 {
        x: p.pos.x * 2.0,
        ..p.pos
    };
    for _ in 0..c.steps {
        q = Vec3 {
            y: q.y * q.x * c.scale,
            ..q
        };
    }
    q.y + q.z * p.mass
}

#[test]
fn literal_of_a_nested_struct_beside_constant_structs() {
    let x = [0.5, -1.5, 2.0, 0.0, 0.0, 0.0, 3.0];
    let f = |a: &[f64]| vec![nested_literal(particle(a))];
    check(
        &x,
        1,
        f,
        |a, d| vec![nested_literal_jvp(particle(a), particle_t(d)).1],
        |a, w| flat_particle(&nested_literal_vjp(particle(a), w[0]).1),
        |a, d, w| {
            let (_, l) = nested_literal_lin(particle(a));
            (
                vec![l.apply(particle_t(d))],
                flat_particle(&l.transpose(w[0])),
            )
        },
    );
}

/// Tangent structs are structs in differentiable code: built (nested, and a
/// tuple struct's), taken as a parameter, read by field.
#[differentiable]
pub fn with_tangents(p: &Particle, t: PairTangent, x: f64) -> f64 {
    let d = ParticleTangent {
        pos: Vec3Tangent {
            x,
            y: 2.0 * x,
            z: p.mass,
        },
        vel: [x, 0.0, 1.0],
        mass: t.1,
    };
    d.pos.x * d.pos.y + d.pos.z * p.pos.x + d.vel[0] * t.0 + d.mass
}

#[test]
fn tangent_structs_are_structs_in_differentiable_code() {
    let p = Particle {
        pos: Vec3 {
            x: 0.5,
            y: 1.0,
            z: -1.0,
        },
        vel: [0.0; 3],
        mass: 2.0,
        id: 7,
    };
    let (t, x) = (PairTangent(0.3, -0.4), 0.6);
    // 2x² + mass·pos.x + x·t.0 + t.1
    let v = 2.0 * x * x + p.mass * p.pos.x + x * t.0 + t.1;
    assert_eq!(with_tangents(&p, t, x), v);
    let (_, (gp, gt, gx)) = with_tangents_vjp(&p, t, x, 1.0);
    assert_eq!((gp.mass, gp.pos.x, gp.pos.y), (p.pos.x, p.mass, 0.0));
    assert_eq!((gt.0, gt.1), (x, 1.0));
    assert!((gx - (4.0 * x + t.0)).abs() < 1e-15, "{gx}");
}
