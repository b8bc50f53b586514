//! `saddle`: the saddle point `min_x max_y f(x, y)` of
//! `f(x, y) = (x₁² + y₁²) − (x₂² + y₂²)` (the README's `x` and `y` are
//! the points `p1 = (x₁, y₁)` and `p = (x₂, y₂)`), by gradient descent
//! nested in gradient descent: the outer `argmin` over `p1` needs the
//! gradient of `max_p f(p1, p)`, whose inner `argmax` runs on `f`'s
//! gradient in `p`. So the outer gradient differentiates the inner one.
//!
//! The four functions pick the mode of each: the first letter the
//! outer's (`r1_f_jvp` or `r1_r_vjp` of the inner maximum), the second
//! the inner's (`f_jvp` along unit vectors, or `f_vjp`). `f_jvp` and
//! `f_vjp` are differentiable because `f` is `order = 2`; nothing is
//! written by hand but the solver, which is plain Rust.

use linear_ad::differentiable;
use serde::Deserialize;

use super::solver::{argmax, argmin, modes, Mode, TOLERANCE};
use super::{run, unknown, Evaluated, Input};

/// The README's `f`.
#[differentiable(order = 2)]
pub fn f(p1: [f64; 2], p: [f64; 2]) -> f64 {
    (p1[0] * p1[0] + p1[1] * p1[1]) - (p[0] * p[0] + p[1] * p[1])
}

/// `∇_p f` by forward mode: `f_jvp` along each unit vector of `p`.
#[differentiable]
pub fn grad_p_forward(p1: [f64; 2], p: [f64; 2]) -> [f64; 2] {
    let (_, g0) = f_jvp(p1, p, [0.0, 0.0], [1.0, 0.0]);
    let (_, g1) = f_jvp(p1, p, [0.0, 0.0], [0.0, 1.0]);
    [g0, g1]
}

/// `∇_p f` by reverse mode: `f_vjp` at cotangent 1.
#[differentiable]
pub fn grad_p_reverse(p1: [f64; 2], p: [f64; 2]) -> [f64; 2] {
    let (_, (_, g)) = f_vjp(p1, p, 1.0);
    g
}

/// `max_p f(p1, p)` from `start`, the inner gradient by `$grad`: the
/// solver's loop ([`super::solver::argmax`]) written out, so that it is
/// differentiated in `p1`. Stamped once per inner mode.
macro_rules! inner_max {
    ($(#[$doc:meta])* $name:ident, $grad:ident) => {
        $(#[$doc])*
        #[differentiable]
        pub fn $name(p1: [f64; 2], start: [f64; 2]) -> f64 {
            let mut p = start;
            let mut fp = -f(p1, p);
            let g = $grad(p1, p);
            let mut gp = [-g[0], -g[1]];
            let mut eta: f64 = TOLERANCE;
            let mut i = 0;
            loop {
                if (gp[0] * gp[0] + gp[1] * gp[1]).sqrt() <= TOLERANCE {
                    break;
                }
                if i == 10 {
                    eta *= 2.0;
                    i = 0;
                } else {
                    let q = [p[0] - eta * gp[0], p[1] - eta * gp[1]];
                    let step = [q[0] - p[0], q[1] - p[1]];
                    if (step[0] * step[0] + step[1] * step[1]).sqrt() <= TOLERANCE {
                        break;
                    }
                    let fq = -f(p1, q);
                    if fq < fp {
                        let g = $grad(p1, q);
                        p = q;
                        fp = fq;
                        gp = [-g[0], -g[1]];
                        i += 1;
                    } else {
                        eta /= 2.0;
                        i = 0;
                    }
                }
            }
            f(p1, p)
        }
    };
}

inner_max!(
    /// `max_p f(p1, p)`, the inner gradient by forward mode.
    r1_f,
    grad_p_forward
);
inner_max!(
    /// `max_p f(p1, p)`, the inner gradient by reverse mode.
    r1_r,
    grad_p_reverse
);

/// `[x₁, y₁, x₂, y₂]`: the saddle point from `start`, the outer
/// derivative in mode `outer`, the inner in mode `inner`; the second
/// step's `argmax` uses the outer mode, as the README asks.
pub fn saddle(start: [f64; 2], outer: Mode, inner: Mode) -> [f64; 4] {
    let r1 = |p1: [f64; 2]| match inner {
        Mode::Forward => r1_f(p1, start),
        Mode::Reverse => r1_r(p1, start),
    };
    let unit = |k: usize| {
        let mut e = [0.0; 2];
        e[k] = 1.0;
        e
    };
    let grad_r1 = |p1: [f64; 2]| -> [f64; 2] {
        match (outer, inner) {
            (Mode::Reverse, Mode::Forward) => r1_f_vjp(p1, start, 1.0).1 .0,
            (Mode::Reverse, Mode::Reverse) => r1_r_vjp(p1, start, 1.0).1 .0,
            (Mode::Forward, Mode::Forward) => {
                [0, 1].map(|k| r1_f_jvp(p1, start, unit(k), [0.0; 2]).1)
            }
            (Mode::Forward, Mode::Reverse) => {
                [0, 1].map(|k| r1_r_jvp(p1, start, unit(k), [0.0; 2]).1)
            }
        }
    };
    let x = argmin(r1, grad_r1, start);
    let grad_f = |p: [f64; 2]| -> [f64; 2] {
        match outer {
            Mode::Forward => [0, 1].map(|k| f_jvp(x, p, [0.0; 2], unit(k)).1),
            Mode::Reverse => f_vjp(x, p, 1.0).1 .1,
        }
    };
    let y = argmax(|p| f(x, p), grad_f, start);
    [x[0], x[1], y[0], y[1]]
}

#[derive(Deserialize)]
pub struct SaddleInput {
    pub start: [f64; 2],
}

impl Input for SaddleInput {}

pub fn evaluate(function: &str, input: serde_json::Value) -> Evaluated {
    let Some(modes) = modes(function) else {
        return unknown("saddle", function, &["ff", "fr", "rf", "rr"]);
    };
    run(input, |i: &SaddleInput| saddle(i.start, modes.0, modes.1))
}
