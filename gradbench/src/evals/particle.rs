//! `particle`: the control `w` that makes a charged particle, pushed by
//! the field of two charges at `(10, 10 − w)` and `(10, 0)`, cross the
//! x-axis at the origin: `argmin_w x₀(t_f)²`, by gradient descent.
//!
//! The trajectory is Euler's method on the force `−∇ₓp(x; w)`, the
//! gradient of the potential `p`, until the particle would cross the
//! x-axis, then a linear interpolation to the crossing (the README's
//! `naive_euler`). The outer descent needs the derivative of the
//! crossing in `w`, through every step's inner gradient: the outer
//! derivative differentiates the inner one.
//!
//! The four functions pick the mode of each: the first letter the
//! outer's (`naive_euler_*_jvp` or `_vjp`), the second the inner's
//! (`p_jvp` along the unit vectors of `x`, or `p_vjp`). `p_jvp` and
//! `p_vjp` are differentiable because `p` is `order = 2`; nothing is
//! written by hand but the solver, which is plain Rust.

use linear_ad::differentiable;
use serde::Deserialize;

use super::solver::{argmin, modes, Mode};
use super::{run, unknown, Evaluated, Input};

/// The potential of the two charges at `x`.
#[differentiable(order = 2)]
pub fn p(x: [f64; 2], w: f64) -> f64 {
    let a = [x[0] - 10.0, x[1] - (10.0 - w)];
    let b = [x[0] - 10.0, x[1]];
    1.0 / (a[0] * a[0] + a[1] * a[1]).sqrt() + 1.0 / (b[0] * b[0] + b[1] * b[1]).sqrt()
}

/// `∇ₓp` by forward mode: `p_jvp` along each unit vector of `x`.
#[differentiable]
pub fn grad_forward(x: [f64; 2], w: f64) -> [f64; 2] {
    let (_, g0) = p_jvp(x, w, [1.0, 0.0], 0.0);
    let (_, g1) = p_jvp(x, w, [0.0, 1.0], 0.0);
    [g0, g1]
}

/// `∇ₓp` by reverse mode: `p_vjp` at cotangent 1.
#[differentiable]
pub fn grad_reverse(x: [f64; 2], w: f64) -> [f64; 2] {
    let (_, (g, _)) = p_vjp(x, w, 1.0);
    g
}

/// `x₀(t_f)²` for control `w`, the force by `$grad`. Stamped once per
/// inner mode.
macro_rules! naive_euler {
    ($(#[$doc:meta])* $name:ident, $grad:ident) => {
        $(#[$doc])*
        #[differentiable]
        pub fn $name(w: f64) -> f64 {
            let mut x: [f64; 2] = [0.0, 8.0];
            let mut xdot: [f64; 2] = [0.75, 0.0];
            let delta_t: f64 = 0.1;
            loop {
                let x_new: [f64; 2] = [x[0] + delta_t * xdot[0], x[1] + delta_t * xdot[1]];
                if x_new[1] <= 0.0 {
                    break;
                }
                let g = $grad(x, w);
                x = x_new;
                xdot = [xdot[0] - delta_t * g[0], xdot[1] - delta_t * g[1]];
            }
            let delta_t_f = -x[1] / xdot[1];
            let x_t_f = x[0] + delta_t_f * xdot[0];
            x_t_f * x_t_f
        }
    };
}

naive_euler!(
    /// `x₀(t_f)²` for control `w`, the force by forward mode.
    naive_euler_f,
    grad_forward
);
naive_euler!(
    /// `x₀(t_f)²` for control `w`, the force by reverse mode.
    naive_euler_r,
    grad_reverse
);

/// The control from `w0`, the outer derivative in mode `outer`, the
/// inner in mode `inner`.
pub fn particle(w0: f64, outer: Mode, inner: Mode) -> f64 {
    let f = |w: [f64; 1]| match inner {
        Mode::Forward => naive_euler_f(w[0]),
        Mode::Reverse => naive_euler_r(w[0]),
    };
    let grad = |w: [f64; 1]| -> [f64; 1] {
        [match (outer, inner) {
            (Mode::Forward, Mode::Forward) => naive_euler_f_jvp(w[0], 1.0).1,
            (Mode::Forward, Mode::Reverse) => naive_euler_r_jvp(w[0], 1.0).1,
            (Mode::Reverse, Mode::Forward) => naive_euler_f_vjp(w[0], 1.0).1,
            (Mode::Reverse, Mode::Reverse) => naive_euler_r_vjp(w[0], 1.0).1,
        }]
    };
    argmin(f, grad, [w0])[0]
}

#[derive(Deserialize)]
pub struct ParticleInput {
    pub w: f64,
}

impl Input for ParticleInput {}

pub fn evaluate(function: &str, input: serde_json::Value) -> Evaluated {
    let Some(modes) = modes(function) else {
        return unknown("particle", function, &["ff", "fr", "rf", "rr"]);
    };
    run(input, |i: &ParticleInput| particle(i.w, modes.0, modes.1))
}
