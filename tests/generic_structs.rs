//! Structs generic in their float type (issue 10): `#[derive(Differentiable)]`
//! on `struct V2<T: Float>`, a nested `V2<F>` in a struct with a `where`
//! clause and a constant field, a generic tuple struct; `#[differentiable]`
//! on `impl<T: Float>` blocks whose methods take `&self`, `self` or no
//! receiver and call each other, across blocks, by `v.m(..)` and by
//! `V2::m(..)`; generic free functions that take, write and return such
//! structs in a loop; and non-generic callers at `f64`. One generic body
//! is checked against the same body written for `f64` and for `f32`
//! (equal values and derivatives), and at `f64` by central differences,
//! the dot-product identity and agreement of its three modes.

#![deny(warnings)]

mod support;

use linear_ad::num_traits::Float;
use linear_ad::{differentiable, Differentiable, LinearMap};
use support::check;

#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct V2<T: Float> {
    pub x: T,
    pub y: T,
}

#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Body<F>
where
    F: Float,
{
    pub pos: V2<F>,
    pub vel: [F; 2],
    pub mass: F,
    #[nondiff]
    pub id: usize,
}

/// A tuple struct with a constant field between its floats.
#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Gain<T: Float>(pub T, pub u8, pub T);

#[differentiable]
impl<T: Float> V2<T> {
    /// No receiver.
    #[differentiable]
    pub fn new(x: T, y: T) -> Self {
        V2 { x, y }
    }

    #[differentiable]
    pub fn dot(&self, o: &Self) -> T {
        self.x * o.x + self.y * o.y
    }

    /// Calls a method of its own block.
    #[differentiable]
    pub fn norm(&self) -> T {
        self.dot(self).sqrt()
    }

    /// The receiver by value, `Self` built.
    #[differentiable]
    pub fn scaled(self, k: T) -> Self {
        Self {
            x: self.x * k,
            y: self.y * k,
        }
    }
}

#[differentiable]
impl<T: Float> Body<T> {
    /// Calls `V2`'s methods (another generic block) by path and by
    /// receiver, and branches on the constant field.
    #[differentiable]
    pub fn energy(&self, g: T) -> T {
        let half = T::from(0.5).unwrap();
        let v: V2<T> = V2::new(self.vel[0], self.vel[1]);
        let kinetic = half * self.mass * v.dot(&v);
        let height = if self.id == 0 {
            self.pos.y
        } else {
            self.pos.norm()
        };
        kinetic + self.mass * g * height
    }
}

fn energy_by_hand(b: &Body<f64>, g: f64) -> f64 {
    let kinetic = 0.5 * b.mass * (b.vel[0] * b.vel[0] + b.vel[1] * b.vel[1]);
    let height = if b.id == 0 {
        b.pos.y
    } else {
        (b.pos.x * b.pos.x + b.pos.y * b.pos.y).sqrt()
    };
    kinetic + b.mass * g * height
}

/// A generic free function: a struct copied, its fields written in a
/// loop, a method's struct result returned; the tuple struct's constant
/// field read.
#[differentiable]
pub fn drift<T: Float>(b: &Body<T>, k: Gain<T>, dt: T) -> V2<T> {
    let mut q = b.pos;
    for i in 0..3 {
        let s = T::from(i).unwrap() + T::one();
        q.x = q.x + dt * b.vel[0] * k.0 / s;
        q.y = q.y + dt * b.vel[1] * k.2;
    }
    let r: V2<T> = q.scaled(T::from(k.1).unwrap());
    r
}

#[differentiable]
pub fn drift_f64(b: &Body<f64>, k: Gain<f64>, dt: f64) -> V2<f64> {
    let mut q = b.pos;
    for i in 0..3 {
        let s = i as f64 + 1.0;
        q.x += dt * b.vel[0] * k.0 / s;
        q.y += dt * b.vel[1] * k.2;
    }
    V2 {
        x: q.x * k.1 as f64,
        y: q.y * k.1 as f64,
    }
}

#[differentiable]
pub fn drift_f32(b: &Body<f32>, k: Gain<f32>, dt: f32) -> V2<f32> {
    let mut q = b.pos;
    for i in 0..3 {
        let s = i as f32 + 1.0;
        q.x += dt * b.vel[0] * k.0 / s;
        q.y += dt * b.vel[1] * k.2;
    }
    V2 {
        x: q.x * k.1 as f32,
        y: q.y * k.1 as f32,
    }
}

/// A non-generic caller of the generic blocks' methods, at `f64`.
#[differentiable]
pub fn total(a: &Body<f64>, b: &Body<f64>, g: f64) -> f64 {
    a.energy(g) + Body::energy(b, g) + a.pos.dot(&b.pos)
}

fn body(v: &[f64], id: usize) -> Body<f64> {
    Body {
        pos: V2 { x: v[0], y: v[1] },
        vel: [v[2], v[3]],
        mass: v[4],
        id,
    }
}

fn body_tangent(v: &[f64]) -> BodyTangent<f64> {
    BodyTangent {
        pos: V2Tangent { x: v[0], y: v[1] },
        vel: [v[2], v[3]],
        mass: v[4],
    }
}

fn flat(t: &BodyTangent<f64>) -> Vec<f64> {
    vec![t.pos.x, t.pos.y, t.vel[0], t.vel[1], t.mass]
}

fn cast(b: &Body<f64>) -> Body<f32> {
    Body {
        pos: V2 {
            x: b.pos.x as f32,
            y: b.pos.y as f32,
        },
        vel: [b.vel[0] as f32, b.vel[1] as f32],
        mass: b.mass as f32,
        id: b.id,
    }
}

const X: [f64; 11] = [0.3, 1.2, -0.7, 0.4, 1.8, -0.2, 0.9, 2.0, 0.5, -1.1, 0.6];

#[test]
fn methods_of_generic_blocks_across_blocks() {
    for id in [0, 3] {
        let (a, b) = (body(&X[..5], id), body(&X[5..10], 1 - id.min(1)));
        let g = X[10];
        let want =
            energy_by_hand(&a, g) + energy_by_hand(&b, g) + a.pos.x * b.pos.x + a.pos.y * b.pos.y;
        assert!((total(&a, &b, g) - want).abs() < 1e-12);
        check(
            &X,
            1,
            |v| {
                vec![total(
                    &body(&v[..5], id),
                    &body(&v[5..10], 1 - id.min(1)),
                    v[10],
                )]
            },
            |v, d| {
                let (a, b) = (body(&v[..5], id), body(&v[5..10], 1 - id.min(1)));
                let (da, db) = (body_tangent(&d[..5]), body_tangent(&d[5..10]));
                vec![total_jvp(&a, &b, v[10], &da, &db, d[10]).1]
            },
            |v, w| {
                let (a, b) = (body(&v[..5], id), body(&v[5..10], 1 - id.min(1)));
                let (_, (ga, gb, gg)) = total_vjp(&a, &b, v[10], w[0]);
                [flat(&ga), flat(&gb), vec![gg]].concat()
            },
            |v, d, w| {
                let (a, b) = (body(&v[..5], id), body(&v[5..10], 1 - id.min(1)));
                let (_, l) = total_lin(&a, &b, v[10]);
                let (da, db) = (body_tangent(&d[..5]), body_tangent(&d[5..10]));
                let (ga, gb, gg) = l.transpose(w[0]);
                (
                    vec![l.apply((da, db, d[10]))],
                    [flat(&ga), flat(&gb), vec![gg]].concat(),
                )
            },
        );
    }
}

#[test]
fn generated_methods_of_a_generic_block_at_both_float_types() {
    let b = body(&X[..5], 2);
    // The method's own vjp, at f64 against the hand gradient of the
    // kinetic and potential terms, and at f32 against f64.
    let (e, (gb, gg)) = b.energy_vjp(9.8, 1.0);
    let r = (b.pos.x * b.pos.x + b.pos.y * b.pos.y).sqrt();
    assert!((e - energy_by_hand(&b, 9.8)).abs() < 1e-12);
    let want = [
        b.mass * 9.8 * b.pos.x / r,
        b.mass * 9.8 * b.pos.y / r,
        b.mass * b.vel[0],
        b.mass * b.vel[1],
        0.5 * (b.vel[0] * b.vel[0] + b.vel[1] * b.vel[1]) + 9.8 * r,
    ];
    support::assert_close(&flat(&gb), &want, 1e-12);
    assert!((gg - b.mass * r).abs() < 1e-12);
    let (e32, (gb32, gg32)) = cast(&b).energy_vjp(9.8f32, 1.0);
    assert!(((e32 as f64) - e).abs() < 1e-5 * e.abs());
    let g32 = [gb32.pos.x, gb32.pos.y, gb32.vel[0], gb32.vel[1], gb32.mass];
    for (a, b) in g32.iter().zip(&want) {
        assert!(
            ((*a as f64) - b).abs() < 1e-4 * (1.0 + b.abs()),
            "{a} vs {b}"
        );
    }
    assert!(((gg32 as f64) - gg).abs() < 1e-4 * (1.0 + gg.abs()));
    // An associated function and a by-value receiver.
    let (v, (dx, dy)) = V2::new_vjp(1.5, -2.0, V2Tangent { x: 2.0, y: 3.0 });
    assert_eq!((v, dx, dy), (V2 { x: 1.5, y: -2.0 }, 2.0, 3.0));
    let (s, (dv, dk)) = V2 { x: 1.5f32, y: -2.0 }.scaled_vjp(3.0, V2Tangent { x: 1.0, y: 1.0 });
    assert_eq!(s, V2 { x: 4.5, y: -6.0 });
    assert_eq!((dv, dk), (V2Tangent { x: 3.0, y: 3.0 }, -0.5));
}

#[test]
fn one_generic_body_at_f64_and_f32() {
    for k1 in [1u8, 2] {
        let (b, dt) = (body(&X[..5], 0), 0.3);
        let k = Gain(0.8, k1, -1.4);
        let (db, dk) = (body_tangent(&X[5..10]), GainTangent(0.5, -0.3));
        let w = V2Tangent { x: 0.7, y: -1.1 };
        assert_eq!(drift(&b, k, dt), drift_f64(&b, k, dt));
        assert_eq!(
            drift_jvp(&b, k, dt, &db, dk, 0.2),
            drift_f64_jvp(&b, k, dt, &db, dk, 0.2)
        );
        assert_eq!(drift_vjp(&b, k, dt, w), drift_f64_vjp(&b, k, dt, w));
        let (b32, k32) = (cast(&b), Gain(0.8f32, k1, -1.4));
        let w32 = V2Tangent { x: 0.7f32, y: -1.1 };
        assert_eq!(drift(&b32, k32, 0.3), drift_f32(&b32, k32, 0.3));
        assert_eq!(
            drift_vjp(&b32, k32, 0.3, w32),
            drift_f32_vjp(&b32, k32, 0.3, w32)
        );
        let (_, l) = drift_lin(&b32, k32, 0.3);
        let (_, l32) = drift_f32_lin(&b32, k32, 0.3);
        assert_eq!(l.transpose(w32), l32.transpose(w32));

        // And they are derivatives, at f64.
        let at = |v: &[f64]| (body(&v[..5], 0), Gain(v[5], k1, v[6]), v[7]);
        check(
            &X[..8],
            2,
            |v| {
                let (b, k, dt) = at(v);
                let r = drift(&b, k, dt);
                vec![r.x, r.y]
            },
            |v, d| {
                let (b, k, dt) = at(v);
                let (_, t) = drift_jvp(
                    &b,
                    k,
                    dt,
                    &body_tangent(&d[..5]),
                    GainTangent(d[5], d[6]),
                    d[7],
                );
                vec![t.x, t.y]
            },
            |v, w| {
                let (b, k, dt) = at(v);
                let (_, (gb, gk, gdt)) = drift_vjp(&b, k, dt, V2Tangent { x: w[0], y: w[1] });
                [flat(&gb), vec![gk.0, gk.1, gdt]].concat()
            },
            |v, d, w| {
                let (b, k, dt) = at(v);
                let (_, l) = drift_lin(&b, k, dt);
                let t = l.apply((body_tangent(&d[..5]), GainTangent(d[5], d[6]), d[7]));
                let (gb, gk, gdt) = l.transpose(V2Tangent { x: w[0], y: w[1] });
                (vec![t.x, t.y], [flat(&gb), vec![gk.0, gk.1, gdt]].concat())
            },
        );
    }
}
