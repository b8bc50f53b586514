//! Two particles joined by a spring under gravity, as structs with
//! methods: the potential energy, a `&self` method of the system that
//! calls the particles' own methods, has for gradient (from
//! `potential_vjp`) minus the forces; gradient descent on it finds the rest
//! position. A particle's `fixed` flag is a constant field: it crosses
//! the calls with the particle and is read by the descent.
//!
//! `cargo run --example particles`

use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy, Debug)]
pub struct Particle {
    pub pos: [f64; 2],
    pub mass: f64,
    #[nondiff]
    pub fixed: bool,
}

#[differentiable]
impl Particle {
    /// Gravitational potential energy.
    #[differentiable]
    pub fn gravity(&self, g: f64) -> f64 {
        self.mass * g * self.pos[1]
    }

    /// Distance to another particle.
    #[differentiable]
    pub fn distance(&self, other: &Particle) -> f64 {
        let dx = other.pos[0] - self.pos[0];
        let dy = other.pos[1] - self.pos[1];
        (dx * dx + dy * dy).sqrt()
    }
}

#[derive(Differentiable, Clone, Copy, Debug)]
pub struct System {
    pub a: Particle,
    pub b: Particle,
    pub stiffness: f64,
    pub rest_length: f64,
}

#[differentiable]
impl System {
    /// Gravity on both particles plus the spring's elastic energy.
    #[differentiable]
    pub fn potential(&self) -> f64 {
        let g = 9.81;
        let stretch = self.a.distance(&self.b) - self.rest_length;
        self.a.gravity(g) + self.b.gravity(g) + 0.5 * self.stiffness * stretch * stretch
    }
}

fn main() {
    let mut s = System {
        a: Particle {
            pos: [0.0, 0.0],
            mass: 1.0,
            fixed: true,
        },
        b: Particle {
            pos: [0.5, -0.5],
            mass: 2.0,
            fixed: false,
        },
        stiffness: 100.0,
        rest_length: 1.0,
    };
    let (e, grad) = s.potential_vjp(1.0);
    println!(
        "energy {e:.4}, force on b: ({:.4}, {:.4})",
        -grad.b.pos[0], -grad.b.pos[1]
    );
    // Relax b (a is fixed): step against the gradient.
    for _ in 0..2000 {
        let (_, grad) = s.potential_vjp(1.0);
        for (p, g) in [(&mut s.a, grad.a), (&mut s.b, grad.b)] {
            if !p.fixed {
                p.pos[0] -= 1e-3 * g.pos[0];
                p.pos[1] -= 1e-3 * g.pos[1];
            }
        }
    }
    let (e, grad) = s.potential_vjp(1.0);
    let [x, y] = s.b.pos;
    println!(
        "at rest: b = ({x:.4}, {y:.4}), energy {e:.4}, residual force ({:.1e}, {:.1e})",
        -grad.b.pos[0], -grad.b.pos[1]
    );
    // At rest the spring holds b's weight: stretch = m g / k, straight down.
    let stretch = 2.0 * 9.81 / 100.0;
    assert!((y + 1.0 + stretch).abs() < 1e-6 && x.abs() < 1e-6);
    // The derivative along the stiffness: how the energy at rest moves.
    let (_, de) = s.potential_jvp(&SystemTangent {
        stiffness: 1.0,
        ..Default::default()
    });
    println!("d energy / d stiffness = {de:.6}");
}
