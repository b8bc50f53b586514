//! Calls of methods from differentiable code (issue 10): `p.m(..)`,
//! `Type::m(&p, ..)`, `self.m(..)` and `Self::m(..)`, within a
//! `#[differentiable] impl` block (whose own methods' signatures are
//! known, so their results need no annotation) and from free functions
//! and other blocks (a result that is not a float takes a `let` type).
//! Each caller is checked by central differences, the dot-product identity
//! and agreement of its three modes, and against a version written without
//! calls.

#![deny(warnings)]

mod support;

use linear_ad::{differentiable, Differentiable, LinearMap};
use support::{assert_close, check};

#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Particle {
    pub pos: [f64; 2],
    pub vel: [f64; 2],
    pub mass: f64,
}

#[differentiable]
impl Particle {
    #[differentiable]
    pub fn kinetic(&self) -> f64 {
        0.5 * self.mass * (self.vel[0] * self.vel[0] + self.vel[1] * self.vel[1])
    }

    #[differentiable]
    pub fn potential(&self, g: f64) -> f64 {
        self.mass * g * self.pos[1]
    }

    /// Calls within the block: by `self.m()` and by `Self::m(self, ..)`.
    #[differentiable]
    pub fn energy(&self, g: f64) -> f64 {
        self.kinetic() + Self::potential(self, g)
    }

    #[differentiable]
    pub fn momentum(&self) -> (f64, f64) {
        (self.mass * self.vel[0], self.mass * self.vel[1])
    }

    /// A tuple result of a method of the same block, with no annotation.
    #[differentiable]
    pub fn speed2(&self) -> f64 {
        let (px, py) = self.momentum();
        (px * px + py * py) / (self.mass * self.mass)
    }

    #[differentiable]
    pub fn moved(&self, dt: f64) -> Particle {
        Particle {
            pos: [
                self.pos[0] + dt * self.vel[0],
                self.pos[1] + dt * self.vel[1],
            ],
            vel: self.vel,
            mass: self.mass,
        }
    }

    /// A struct result of the same block, then a method of it.
    #[differentiable]
    pub fn potential_after(&self, dt: f64, g: f64) -> f64 {
        let q = self.moved(dt);
        q.potential(g)
    }

    /// A private method: callers in this module reach it too.
    #[differentiable]
    fn spread(&self) -> f64 {
        (self.pos[0] - self.pos[1]).sin()
    }

    /// The receiver by value.
    #[differentiable]
    pub fn weighed(self, k: f64) -> f64 {
        self.mass * k + self.spread()
    }

    /// No receiver.
    #[differentiable]
    pub fn at(x: f64, y: f64) -> Particle {
        Particle {
            pos: [x, y],
            vel: [y, -x],
            mass: 1.0 + x * x,
        }
    }
}

/// Two particles' energies, by method call syntax and by path.
#[differentiable]
fn total_energy(a: &Particle, b: &Particle, g: f64) -> f64 {
    a.energy(g) + Particle::energy(b, g)
}

fn total_energy_by_hand(a: &Particle, b: &Particle, g: f64) -> f64 {
    let e = |p: &Particle| {
        0.5 * p.mass * (p.vel[0] * p.vel[0] + p.vel[1] * p.vel[1]) + p.mass * g * p.pos[1]
    };
    e(a) + e(b)
}

/// Results that are not floats, from outside the block: typed by the `let`
/// (through a `clone`, which is the value itself).
#[differentiable]
#[allow(clippy::clone_on_copy)]
fn after_step(p: &Particle, dt: f64, g: f64) -> f64 {
    let q: Particle = p.moved(dt).clone();
    let (px, py): (f64, f64) = q.momentum();
    q.potential(g) + px * py + p.weighed(dt)
}

/// A struct built by an associated function, calls in a loop (the tape
/// holds one callee tape per iteration), and a private method.
#[differentiable]
fn built(x: f64, y: f64, g: f64) -> f64 {
    let p: Particle = Particle::at(x, y);
    let mut e = p.spread();
    for k in 0..3 {
        e += p.potential(g * (k as f64 + 1.0)) * e;
    }
    e
}

fn built_by_hand(x: f64, y: f64, g: f64) -> f64 {
    let p = Particle::at(x, y);
    let mut e = (p.pos[0] - p.pos[1]).sin();
    for k in 0..3 {
        e += p.mass * g * (k as f64 + 1.0) * p.pos[1] * e;
    }
    e
}

/// A system holding particles: another block's methods call a nested
/// struct's methods.
#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    pub a: Particle,
    pub b: Particle,
}

#[differentiable]
impl Pair {
    #[differentiable]
    pub fn energy(&self, g: f64) -> f64 {
        self.a.energy(g) + self.b.energy(g) + self.a.speed2() * self.b.potential_after(0.5, g)
    }
}

fn particle(a: &[f64]) -> Particle {
    Particle {
        pos: [a[0], a[1]],
        vel: [a[2], a[3]],
        mass: a[4],
    }
}

fn tangent(a: &[f64]) -> ParticleTangent {
    ParticleTangent {
        pos: [a[0], a[1]],
        vel: [a[2], a[3]],
        mass: a[4],
    }
}

fn flat(t: &ParticleTangent) -> Vec<f64> {
    vec![t.pos[0], t.pos[1], t.vel[0], t.vel[1], t.mass]
}

const A: [f64; 5] = [0.3, -1.2, 0.8, 0.45, 1.7];
const B: [f64; 5] = [-0.6, 0.9, -0.35, 1.1, 0.6];

#[test]
fn methods_call_methods_of_their_block() {
    let p = particle(&A);
    let g = 9.81;
    let by_hand =
        0.5 * p.mass * (p.vel[0] * p.vel[0] + p.vel[1] * p.vel[1]) + p.mass * g * p.pos[1];
    assert!((p.energy(g) - by_hand).abs() < 1e-12);
    let x = [A.as_slice(), &[g]].concat();
    check(
        &x,
        1,
        |a| vec![particle(a).energy(a[5])],
        |a, d| {
            let (y, dy) = particle(a).energy_jvp(a[5], &tangent(d), d[5]);
            assert_eq!(y, particle(a).energy(a[5]));
            vec![dy]
        },
        |a, w| {
            let (_, (dp, dg)) = particle(a).energy_vjp(a[5], w[0]);
            [flat(&dp), vec![dg]].concat()
        },
        |a, d, w| {
            let (_, l) = particle(a).energy_lin(a[5]);
            let (dp, dg) = l.transpose(w[0]);
            (
                vec![l.apply((tangent(d), d[5]))],
                [flat(&dp), vec![dg]].concat(),
            )
        },
    );
    // The gradient in the mass is |v|²/2 + g y, in the velocity m v.
    let (_, (dp, dg)) = p.energy_vjp(g, 1.0);
    let want = [
        0.0,
        p.mass * g,
        p.mass * p.vel[0],
        p.mass * p.vel[1],
        by_hand / p.mass,
    ];
    assert_close(&flat(&dp), &want, 1e-12);
    assert!((dg - p.mass * p.pos[1]).abs() < 1e-12);
    for (f, v) in [
        (
            Particle::speed2 as fn(&Particle) -> f64,
            (p.vel[0] * p.vel[0] + p.vel[1] * p.vel[1]),
        ),
        (Particle::kinetic, by_hand - p.mass * g * p.pos[1]),
    ] {
        assert!((f(&p) - v).abs() < 1e-12);
    }
    check(
        &A,
        1,
        |a| vec![particle(a).speed2()],
        |a, d| vec![particle(a).speed2_jvp(&tangent(d)).1],
        |a, w| flat(&particle(a).speed2_vjp(w[0]).1),
        |a, d, w| {
            let (_, l) = particle(a).speed2_lin();
            (vec![l.apply(tangent(d))], flat(&l.transpose(w[0])))
        },
    );
    let x = [A.as_slice(), &[0.4, g]].concat();
    check(
        &x,
        1,
        |a| vec![particle(a).potential_after(a[5], a[6])],
        |a, d| {
            vec![
                particle(a)
                    .potential_after_jvp(a[5], a[6], &tangent(d), d[5], d[6])
                    .1,
            ]
        },
        |a, w| {
            let (_, (dp, dt, dg)) = particle(a).potential_after_vjp(a[5], a[6], w[0]);
            [flat(&dp), vec![dt, dg]].concat()
        },
        |a, d, w| {
            let (_, l) = particle(a).potential_after_lin(a[5], a[6]);
            let (dp, dt, dg) = l.transpose(w[0]);
            (
                vec![l.apply((tangent(d), d[5], d[6]))],
                [flat(&dp), vec![dt, dg]].concat(),
            )
        },
    );
}

#[test]
fn free_functions_call_methods() {
    let x = [A.as_slice(), &B, &[9.81]].concat();
    let (a, b) = (particle(&A), particle(&B));
    assert!((total_energy(&a, &b, 9.81) - total_energy_by_hand(&a, &b, 9.81)).abs() < 1e-12);
    check(
        &x,
        1,
        |v| {
            vec![total_energy_by_hand(
                &particle(v),
                &particle(&v[5..]),
                v[10],
            )]
        },
        |v, d| {
            let (a, b) = (particle(v), particle(&v[5..]));
            let (y, dy) = total_energy_jvp(&a, &b, v[10], &tangent(d), &tangent(&d[5..]), d[10]);
            assert_eq!(y, total_energy(&a, &b, v[10]));
            vec![dy]
        },
        |v, w| {
            let (a, b) = (particle(v), particle(&v[5..]));
            let (_, (da, db, dg)) = total_energy_vjp(&a, &b, v[10], w[0]);
            [flat(&da), flat(&db), vec![dg]].concat()
        },
        |v, d, w| {
            let (a, b) = (particle(v), particle(&v[5..]));
            let (_, l) = total_energy_lin(&a, &b, v[10]);
            let (da, db, dg) = l.transpose(w[0]);
            (
                vec![l.apply((tangent(d), tangent(&d[5..]), d[10]))],
                [flat(&da), flat(&db), vec![dg]].concat(),
            )
        },
    );
}

#[test]
fn annotated_results_of_methods_from_outside_the_block() {
    let x = [A.as_slice(), &[0.3, 9.81]].concat();
    let plain = |v: &[f64]| {
        let p = particle(v);
        let q = p.moved(v[5]);
        let (px, py) = q.momentum();
        q.potential(v[6]) + px * py + p.weighed(v[5])
    };
    assert!((after_step(&particle(&A), 0.3, 9.81) - plain(&x)).abs() < 1e-12);
    check(
        &x,
        1,
        |v| vec![plain(v)],
        |v, d| vec![after_step_jvp(&particle(v), v[5], v[6], &tangent(d), d[5], d[6]).1],
        |v, w| {
            let (_, (dp, dt, dg)) = after_step_vjp(&particle(v), v[5], v[6], w[0]);
            [flat(&dp), vec![dt, dg]].concat()
        },
        |v, d, w| {
            let (_, l) = after_step_lin(&particle(v), v[5], v[6]);
            let (dp, dt, dg) = l.transpose(w[0]);
            (
                vec![l.apply((tangent(d), d[5], d[6]))],
                [flat(&dp), vec![dt, dg]].concat(),
            )
        },
    );
}

#[test]
fn associated_functions_private_methods_and_calls_in_loops() {
    let x = [0.7, -0.4, 2.0];
    assert!((built(0.7, -0.4, 2.0) - built_by_hand(0.7, -0.4, 2.0)).abs() < 1e-12);
    check(
        &x,
        1,
        |v| vec![built_by_hand(v[0], v[1], v[2])],
        |v, d| vec![built_jvp(v[0], v[1], v[2], d[0], d[1], d[2]).1],
        |v, w| {
            let (_, (a, b, c)) = built_vjp(v[0], v[1], v[2], w[0]);
            vec![a, b, c]
        },
        |v, d, w| {
            let (_, l) = built_lin(v[0], v[1], v[2]);
            let (a, b, c) = l.transpose(w[0]);
            (vec![l.apply((d[0], d[1], d[2]))], vec![a, b, c])
        },
    );
}

#[test]
fn another_block_calls_methods_of_nested_structs() {
    let pair = |v: &[f64]| Pair {
        a: particle(v),
        b: particle(&v[5..]),
    };
    let pair_t = |v: &[f64]| PairTangent {
        a: tangent(v),
        b: tangent(&v[5..]),
    };
    let pflat = |t: &PairTangent| [flat(&t.a), flat(&t.b)].concat();
    let x = [A.as_slice(), &B, &[9.81]].concat();
    let plain = |v: &[f64]| {
        let (a, b) = (particle(v), particle(&v[5..]));
        a.energy(v[10]) + b.energy(v[10]) + a.speed2() * b.potential_after(0.5, v[10])
    };
    assert!((pair(&x).energy(9.81) - plain(&x)).abs() < 1e-12);
    check(
        &x,
        1,
        |v| vec![plain(v)],
        |v, d| vec![pair(v).energy_jvp(v[10], &pair_t(d), d[10]).1],
        |v, w| {
            let (_, (dp, dg)) = pair(v).energy_vjp(v[10], w[0]);
            [pflat(&dp), vec![dg]].concat()
        },
        |v, d, w| {
            let (_, l) = pair(v).energy_lin(v[10]);
            let (dp, dg) = l.transpose(w[0]);
            (
                vec![l.apply((pair_t(d), d[10]))],
                [pflat(&dp), vec![dg]].concat(),
            )
        },
    );
}

#[derive(Differentiable, Clone, Copy, Debug)]
pub struct Scale {
    pub a: f64,
}

#[differentiable]
impl Scale {
    #[differentiable]
    pub fn energy(&self, x: f64) -> f64 {
        0.5 * self.a * x * x
    }

    #[differentiable]
    pub fn held(#[nondiff] &self, x: f64) -> f64 {
        self.a * x.sin()
    }

    /// Methods of its own block called on a `#[nondiff]` struct: the
    /// receiver crosses as a constant (its flat value to `energy`, whose
    /// receiver is differentiable; itself to `held`, whose receiver is
    /// `#[nondiff]`), as the block's signatures say.
    #[differentiable]
    pub fn both(&self, #[nondiff] other: &Scale, x: f64) -> f64 {
        other.energy(x) * self.a + other.held(x)
    }
}

#[test]
fn methods_of_a_constant_struct_within_their_block() {
    let (p, q) = (Scale { a: 2.0 }, Scale { a: 3.0 });
    for x in [1.5, -0.4] {
        let (v, (gp, gx)) = p.both_vjp(&q, x, 1.0);
        assert_eq!(v, p.both(&q, x));
        // By hand: ½ q.a x² p.a + q.a sin x.
        assert_close(
            &[gp.a, gx],
            &[0.5 * q.a * x * x, q.a * p.a * x + q.a * x.cos()],
            1e-14,
        );
        check(
            &[p.a, x],
            1,
            |u| vec![Scale { a: u[0] }.both(&q, u[1])],
            |u, d| {
                vec![
                    Scale { a: u[0] }
                        .both_jvp(&q, u[1], &ScaleTangent { a: d[0] }, d[1])
                        .1,
                ]
            },
            |u, w| {
                let (_, (g, h)) = Scale { a: u[0] }.both_vjp(&q, u[1], w[0]);
                vec![g.a, h]
            },
            |u, d, w| {
                let (_, map) = Scale { a: u[0] }.both_lin(&q, u[1]);
                let dy = map.apply((ScaleTangent { a: d[0] }, d[1]));
                let (g, h) = map.transpose(w[0]);
                (vec![dy], vec![g.a, h])
            },
        );
    }
}
