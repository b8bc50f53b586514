//! Two particles joined by a spring under gravity, as structs: the
//! potential energy, a `&self` method of the system, has for gradient
//! (from `potential_vjp`) minus the forces; gradient descent on it finds
//! the rest position.
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
        let (a, b) = (self.a, self.b);
        let dx = b.pos[0] - a.pos[0];
        let dy = b.pos[1] - a.pos[1];
        let stretch = (dx * dx + dy * dy).sqrt() - self.rest_length;
        a.mass * g * a.pos[1] + b.mass * g * b.pos[1] + 0.5 * self.stiffness * stretch * stretch
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
