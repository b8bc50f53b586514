//! Control-flow workloads: Horner evaluation of a degree-1000 polynomial,
//! RK4 integration of a 4-dimensional ODE over 1000 steps, a Newton
//! iteration in a `while` loop, and a Huber loss with a branch per term.
//! Each has its `#[differentiable]` form and hand-written forward (tangent)
//! and reverse (adjoint) derivatives. The hand-written adjoints keep what a
//! person would keep: the per-iteration values the reverse sweep needs, in
//! a `Vec` (`*_tape_bytes` says how much).

use linear_ad::differentiable;

/// p(x) = Σ c_i x^i by Horner's rule.
#[differentiable]
pub fn horner(x: f64, #[nondiff] c: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in (0..c.len()).rev() {
        s = s * x + c[i];
    }
    s
}

/// p'(x)·dx alongside p(x).
#[inline]
pub fn horner_hand_jvp(x: f64, c: &[f64], dx: f64) -> (f64, f64) {
    let (mut s, mut ds) = (0.0, 0.0);
    for &ci in c.iter().rev() {
        ds = ds * x + s * dx;
        s = s * x + ci;
    }
    (s, ds)
}

/// The adjoint: the forward sweep stores `s` before each step.
pub fn horner_hand_vjp(x: f64, c: &[f64], sbar: f64) -> (f64, f64) {
    let mut tape = Vec::with_capacity(c.len());
    let mut s = 0.0;
    for &ci in c.iter().rev() {
        tape.push(s);
        s = s * x + ci;
    }
    let (mut sb, mut xb) = (sbar, 0.0);
    for &si in tape.iter().rev() {
        xb += sb * si;
        sb *= x;
    }
    (s, xb)
}

/// Bytes the hand-written Horner adjoint stores per iteration.
pub const HORNER_HAND_BYTES_PER_ITER: usize = 8;

/// The right-hand side of a 4-dimensional ODE: two oscillators coupled
/// nonlinearly, with stiffness `k`.
#[differentiable]
pub fn ode_rhs(y: [f64; 4], k: f64) -> [f64; 4] {
    [
        y[1],
        -k * y[0] - 0.1 * y[1] + 0.5 * y[2].sin(),
        y[3],
        -y[2] + 0.2 * y[0] * y[1],
    ]
}

/// RK4 over `steps` steps of size `h`, then the squared norm of the state:
/// one body, differentiated under each checkpoint policy.
macro_rules! rk4_fn {
    ($(#[$attr:meta])* $name:ident) => {
        $(#[$attr])*
        pub fn $name(y0: [f64; 4], k: f64, #[nondiff] steps: usize, #[nondiff] h: f64) -> f64 {
    let mut y = y0;
    for _ in 0..steps {
        let k1: [f64; 4] = ode_rhs(y, k);
        let y2 = [
            y[0] + 0.5 * h * k1[0],
            y[1] + 0.5 * h * k1[1],
            y[2] + 0.5 * h * k1[2],
            y[3] + 0.5 * h * k1[3],
        ];
        let k2: [f64; 4] = ode_rhs(y2, k);
        let y3 = [
            y[0] + 0.5 * h * k2[0],
            y[1] + 0.5 * h * k2[1],
            y[2] + 0.5 * h * k2[2],
            y[3] + 0.5 * h * k2[3],
        ];
        let k3: [f64; 4] = ode_rhs(y3, k);
        let y4 = [
            y[0] + h * k3[0],
            y[1] + h * k3[1],
            y[2] + h * k3[2],
            y[3] + h * k3[3],
        ];
        let k4: [f64; 4] = ode_rhs(y4, k);
        y = [
            y[0] + h / 6.0 * (k1[0] + 2.0 * k2[0] + 2.0 * k3[0] + k4[0]),
            y[1] + h / 6.0 * (k1[1] + 2.0 * k2[1] + 2.0 * k3[1] + k4[1]),
            y[2] + h / 6.0 * (k1[2] + 2.0 * k2[2] + 2.0 * k3[2] + k4[2]),
            y[3] + h / 6.0 * (k1[3] + 2.0 * k2[3] + 2.0 * k3[3] + k4[3]),
        ];
    }
    y[0] * y[0] + y[1] * y[1] + y[2] * y[2] + y[3] * y[3]
}
    };
}

rk4_fn!(
    #[differentiable]
    rk4
);
rk4_fn!(
    /// [`rk4`] keeping only the state of each step for the reverse sweep.
    #[differentiable(checkpoint = "state")]
    rk4_state
);
rk4_fn!(
    /// [`rk4`] keeping the initial state only; the reverse sweep holds at
    /// most 4 states and recomputes the others.
    #[differentiable(checkpoint = "binomial", snapshots = 4)]
    rk4_binomial4
);
rk4_fn!(
    /// [`rk4`] with binomial checkpointing in 16 snapshots.
    #[differentiable(checkpoint = "binomial", snapshots = 16)]
    rk4_binomial16
);
rk4_fn!(
    /// [`rk4`] with binomial checkpointing in 64 snapshots.
    #[differentiable(checkpoint = "binomial", snapshots = 64)]
    rk4_binomial64
);

type V4 = [f64; 4];

#[inline]
fn rhs(y: V4, k: f64) -> V4 {
    [
        y[1],
        -k * y[0] - 0.1 * y[1] + 0.5 * y[2].sin(),
        y[3],
        -y[2] + 0.2 * y[0] * y[1],
    ]
}

/// The tangent of `rhs` at (y, k) along (dy, dk).
#[inline]
fn rhs_t(y: V4, k: f64, dy: V4, dk: f64) -> V4 {
    [
        dy[1],
        -dk * y[0] - k * dy[0] - 0.1 * dy[1] + 0.5 * y[2].cos() * dy[2],
        dy[3],
        -dy[2] + 0.2 * (dy[0] * y[1] + y[0] * dy[1]),
    ]
}

/// The adjoint of `rhs` at (y, k): (ȳ, k̄) for the output cotangent `f`.
#[inline]
fn rhs_a(y: V4, k: f64, f: V4) -> (V4, f64) {
    let yb = [
        -k * f[1] + 0.2 * y[1] * f[3],
        f[0] - 0.1 * f[1] + 0.2 * y[0] * f[3],
        0.5 * y[2].cos() * f[1] - f[3],
        f[2],
    ];
    (yb, -y[0] * f[1])
}

#[inline]
fn axpy(y: V4, a: f64, x: V4) -> V4 {
    [
        y[0] + a * x[0],
        y[1] + a * x[1],
        y[2] + a * x[2],
        y[3] + a * x[3],
    ]
}

#[inline]
fn norm2(y: V4) -> f64 {
    y[0] * y[0] + y[1] * y[1] + y[2] * y[2] + y[3] * y[3]
}

/// RK4 with its tangent propagated alongside (the tangent linear model).
pub fn rk4_hand_jvp(y0: V4, k: f64, steps: usize, h: f64, dy0: V4, dk: f64) -> (f64, f64) {
    let (mut y, mut dy) = (y0, dy0);
    for _ in 0..steps {
        let k1 = rhs(y, k);
        let d1 = rhs_t(y, k, dy, dk);
        let (y2, dy2) = (axpy(y, 0.5 * h, k1), axpy(dy, 0.5 * h, d1));
        let k2 = rhs(y2, k);
        let d2 = rhs_t(y2, k, dy2, dk);
        let (y3, dy3) = (axpy(y, 0.5 * h, k2), axpy(dy, 0.5 * h, d2));
        let k3 = rhs(y3, k);
        let d3 = rhs_t(y3, k, dy3, dk);
        let (y4, dy4) = (axpy(y, h, k3), axpy(dy, h, d3));
        let k4 = rhs(y4, k);
        let d4 = rhs_t(y4, k, dy4, dk);
        for j in 0..4 {
            y[j] += h / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]);
            dy[j] += h / 6.0 * (d1[j] + 2.0 * d2[j] + 2.0 * d3[j] + d4[j]);
        }
    }
    let dn = 2.0 * (y[0] * dy[0] + y[1] * dy[1] + y[2] * dy[2] + y[3] * dy[3]);
    (norm2(y), dn)
}

/// The RK4 adjoint: the forward sweep stores the state at each step (32
/// bytes); the reverse sweep recomputes the stages of that step from it.
pub fn rk4_hand_vjp(y0: V4, k: f64, steps: usize, h: f64, nbar: f64) -> (f64, (V4, f64)) {
    let mut tape = Vec::with_capacity(steps);
    let mut y = y0;
    for _ in 0..steps {
        tape.push(y);
        let k1 = rhs(y, k);
        let k2 = rhs(axpy(y, 0.5 * h, k1), k);
        let k3 = rhs(axpy(y, 0.5 * h, k2), k);
        let k4 = rhs(axpy(y, h, k3), k);
        for j in 0..4 {
            y[j] += h / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]);
        }
    }
    let n = norm2(y);
    let mut yb = [
        2.0 * nbar * y[0],
        2.0 * nbar * y[1],
        2.0 * nbar * y[2],
        2.0 * nbar * y[3],
    ];
    let mut kb = 0.0;
    for &y in tape.iter().rev() {
        let k1 = rhs(y, k);
        let y2 = axpy(y, 0.5 * h, k1);
        let k2 = rhs(y2, k);
        let y3 = axpy(y, 0.5 * h, k2);
        let k3 = rhs(y3, k);
        let y4 = axpy(y, h, k3);
        // y' = y + h/6 (k1 + 2k2 + 2k3 + k4)
        let (f1, f2, f3, f4) = (
            yb.map(|v| h / 6.0 * v),
            yb.map(|v| h / 3.0 * v),
            yb.map(|v| h / 3.0 * v),
            yb.map(|v| h / 6.0 * v),
        );
        let mut acc = yb;
        let (y4b, k4b) = rhs_a(y4, k, f4);
        kb += k4b;
        // y4 = y + h k3
        let f3 = axpy(f3, h, y4b);
        acc = axpy(acc, 1.0, y4b);
        let (y3b, k3b) = rhs_a(y3, k, f3);
        kb += k3b;
        let f2 = axpy(f2, 0.5 * h, y3b);
        acc = axpy(acc, 1.0, y3b);
        let (y2b, k2b) = rhs_a(y2, k, f2);
        kb += k2b;
        let f1 = axpy(f1, 0.5 * h, y2b);
        acc = axpy(acc, 1.0, y2b);
        let (y1b, k1b) = rhs_a(y, k, f1);
        kb += k1b;
        yb = axpy(acc, 1.0, y1b);
    }
    (n, (yb, kb))
}

/// Bytes the hand-written RK4 adjoint stores per step.
pub const RK4_HAND_BYTES_PER_ITER: usize = 32;

/// The real root of x³ + a x − b (a > 0) by Newton's method from x = b,
/// iterating while the update is large; under three checkpoint policies.
macro_rules! newton_fn {
    ($(#[$attr:meta])* $name:ident) => {
        $(#[$attr])*
        pub fn $name(a: f64, b: f64) -> f64 {
    let mut x = b;
    let mut step: f64 = 1.0;
    let mut n = 0;
    while step.abs() > 1e-12 && n < 100 {
        step = (x * x * x + a * x - b) / (3.0 * x * x + a);
        x -= step;
        n += 1;
    }
    x
}
    };
}

newton_fn!(
    #[differentiable]
    newton
);
newton_fn!(
    /// [`newton`] keeping only each iteration's state for the reverse sweep.
    #[differentiable(checkpoint = "state")]
    newton_state
);
newton_fn!(
    /// [`newton`] keeping only the initial state for the reverse sweep.
    #[differentiable(checkpoint = "binomial", snapshots = 4)]
    newton_binomial
);

/// Newton's iteration with tangents propagated (differentiating the
/// iteration, as AD does, not the implicit function).
pub fn newton_hand_jvp(a: f64, b: f64, da: f64, db: f64) -> (f64, f64) {
    let (mut x, mut dx) = (b, db);
    let mut step: f64 = 1.0;
    let mut n = 0;
    while step.abs() > 1e-12 && n < 100 {
        let f = x * x * x + a * x - b;
        let g = 3.0 * x * x + a;
        let df = (3.0 * x * x + a) * dx + x * da - db;
        let dg = 6.0 * x * dx + da;
        step = f / g;
        let dstep = (df - step * dg) / g;
        x -= step;
        dx -= dstep;
        n += 1;
    }
    (x, dx)
}

/// The adjoint of the iteration: the forward sweep stores each iterate.
pub fn newton_hand_vjp(a: f64, b: f64, xbar: f64) -> (f64, (f64, f64)) {
    let mut tape = Vec::new();
    let mut x = b;
    let mut step: f64 = 1.0;
    let mut n = 0;
    while step.abs() > 1e-12 && n < 100 {
        tape.push(x);
        step = (x * x * x + a * x - b) / (3.0 * x * x + a);
        x -= step;
        n += 1;
    }
    let (mut xb, mut ab, mut bb) = (xbar, 0.0, 0.0);
    for &xi in tape.iter().rev() {
        let f = xi * xi * xi + a * xi - b;
        let g = 3.0 * xi * xi + a;
        let s = f / g;
        // x' = xi - s, s = f / g
        let sb = -xb;
        let (fb, gb) = (sb / g, -sb * s / g);
        xb += fb * (3.0 * xi * xi + a) + gb * 6.0 * xi;
        ab += fb * xi + gb;
        bb -= fb;
    }
    (x, (ab, bb + xb))
}

/// Bytes the hand-written Newton adjoint stores per iteration.
pub const NEWTON_HAND_BYTES_PER_ITER: usize = 8;

/// The mean Huber loss (δ = 1) of a line fit over data.
#[differentiable]
pub fn huber(w: f64, b: f64, #[nondiff] xs: &[f64], #[nondiff] ys: &[f64]) -> f64 {
    let mut total = 0.0;
    for i in 0..xs.len() {
        let r = w * xs[i] + b - ys[i];
        if r.abs() <= 1.0 {
            total += 0.5 * r * r;
        } else {
            total += r.abs() - 0.5;
        }
    }
    total / xs.len() as f64
}

/// The Huber loss with its directional derivative.
pub fn huber_hand_jvp(w: f64, b: f64, xs: &[f64], ys: &[f64], dw: f64, db: f64) -> (f64, f64) {
    let (mut t, mut dt) = (0.0, 0.0);
    for (&x, &y) in xs.iter().zip(ys) {
        let r = w * x + b - y;
        let dr = dw * x + db;
        if r.abs() <= 1.0 {
            t += 0.5 * r * r;
            dt += r * dr;
        } else {
            t += r.abs() - 0.5;
            dt += r.signum() * dr;
        }
    }
    let n = xs.len() as f64;
    (t / n, dt / n)
}

/// The Huber gradient as a person writes it: one pass, nothing stored.
pub fn huber_hand_vjp(w: f64, b: f64, xs: &[f64], ys: &[f64], tbar: f64) -> (f64, (f64, f64)) {
    let (mut t, mut gw, mut gb) = (0.0, 0.0, 0.0);
    for (&x, &y) in xs.iter().zip(ys) {
        let r = w * x + b - y;
        let g = if r.abs() <= 1.0 {
            t += 0.5 * r * r;
            r
        } else {
            t += r.abs() - 0.5;
            r.signum()
        };
        gw += g * x;
        gb += g;
    }
    let s = tbar / xs.len() as f64;
    (t / xs.len() as f64, (gw * s, gb * s))
}

/// Bytes the hand-written Huber gradient stores per term.
pub const HUBER_HAND_BYTES_PER_ITER: usize = 0;

/// Eight fixed steps: a loop with a literal trip count, whose tape is kept
/// inline in the linearization. The benchmarks check it in the release
/// profile (the tests do in debug).
#[differentiable]
pub fn eight_steps(x: f64, y0: f64) -> f64 {
    let mut y = y0;
    for _ in 0..8 {
        y = (y * x).sin() + y;
    }
    y
}
