//! The gradient-descent `argmin` that `saddle` and `particle` nest
//! derivatives inside (GradBench's reference solver, after Pearlmutter
//! and Siskind): steps against the gradient with a step size `eta` that
//! starts at 1e-5, doubles after every 10 accepted steps in a row and
//! halves on a rejected one; it stops when the gradient or the step is
//! at most 1e-5 long.
//!
//! This is the *outer* optimisation, plain Rust that calls generated
//! derivatives (`f_jvp` or `f_vjp`, passed in as `grad`). The inner
//! optimisations, whose results are differentiated, are written inside
//! `#[differentiable]` functions in the eval modules, the same loop
//! spelled in the differentiable subset.

/// The modes of the outer and the inner derivative.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Forward,
    Reverse,
}

/// The modes a nested eval's function names: `ff`, `fr`, `rf`, `rr`,
/// the outer derivative's first.
pub fn modes(function: &str) -> Option<(Mode, Mode)> {
    let mode = |c| match c {
        b'f' => Some(Mode::Forward),
        b'r' => Some(Mode::Reverse),
        _ => None,
    };
    match function.as_bytes() {
        [a, b] => Some((mode(*a)?, mode(*b)?)),
        _ => None,
    }
}

/// The tolerance on the gradient's and the step's lengths.
pub const TOLERANCE: f64 = 1e-5;

/// The point where descent from `x` on `f` stops, `grad` its gradient.
pub fn argmin<const N: usize>(
    f: impl Fn([f64; N]) -> f64,
    grad: impl Fn([f64; N]) -> [f64; N],
    x: [f64; N],
) -> [f64; N] {
    let (mut x, mut fx, mut gx) = (x, f(x), grad(x));
    let (mut eta, mut i) = (TOLERANCE, 0);
    loop {
        if magnitude(gx) <= TOLERANCE {
            return x;
        }
        if i == 10 {
            eta *= 2.0;
            i = 0;
            continue;
        }
        let x_prime: [f64; N] = std::array::from_fn(|k| x[k] - eta * gx[k]);
        if distance(x, x_prime) <= TOLERANCE {
            return x;
        }
        let fx_prime = f(x_prime);
        if fx_prime < fx {
            (x, fx, gx) = (x_prime, fx_prime, grad(x_prime));
            i += 1;
        } else {
            eta /= 2.0;
            i = 0;
        }
    }
}

/// The point where ascent from `x` on `f` stops: descent on `-f`.
pub fn argmax<const N: usize>(
    f: impl Fn([f64; N]) -> f64,
    grad: impl Fn([f64; N]) -> [f64; N],
    x: [f64; N],
) -> [f64; N] {
    argmin(|x| -f(x), |x| grad(x).map(|g| -g), x)
}

fn magnitude<const N: usize>(v: [f64; N]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

fn distance<const N: usize>(u: [f64; N], v: [f64; N]) -> f64 {
    magnitude(std::array::from_fn::<f64, N, _>(|k| u[k] - v[k]))
}
