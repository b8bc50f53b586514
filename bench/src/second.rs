//! Second derivatives: `f_hvp` against the gradient and a hand-written
//! Hessian-vector product, `f_hessian` against num-dual's hyper-dual
//! `hessian` (`benches/second_order.rs`).

use linear_ad::differentiable;

/// The extended Rosenbrock function over a slice.
#[differentiable(order = 2)]
pub fn rosenbrock_slice(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    s
}

/// Its value, gradient and Hessian times `v` by hand, in one pass: the
/// Hessian is tridiagonal (`H[i][i]`, `H[i][i+1] = -400 x[i]`).
pub fn rosenbrock_slice_hvp_hand(x: &[f64], v: &[f64]) -> (f64, Vec<f64>, Vec<f64>) {
    let n = x.len();
    let (mut s, mut g, mut hv) = (0.0, vec![0.0; n], vec![0.0; n]);
    for i in 0..n - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
        g[i] += -2.0 * a - 400.0 * x[i] * b;
        g[i + 1] += 200.0 * b;
        let hii = 2.0 - 400.0 * b + 800.0 * x[i] * x[i];
        let hij = -400.0 * x[i];
        hv[i] += hii * v[i] + hij * v[i + 1];
        hv[i + 1] += hij * v[i] + 200.0 * v[i + 1];
    }
    (s, g, hv)
}

/// The Coulomb energy of three charges in the plane, `1/r` summed over
/// pairs, plus a harmonic tether of each to the origin: six coordinates.
#[differentiable(order = 2)]
pub fn coulomb(p: [f64; 6]) -> f64 {
    let [ax, ay, bx, by, cx, cy] = p;
    let ab = ((ax - bx) * (ax - bx) + (ay - by) * (ay - by)).sqrt();
    let bc = ((bx - cx) * (bx - cx) + (by - cy) * (by - cy)).sqrt();
    let ca = ((cx - ax) * (cx - ax) + (cy - ay) * (cy - ay)).sqrt();
    let tether = ax * ax + ay * ay + bx * bx + by * by + cx * cx + cy * cy;
    1.0 / ab + 1.0 / bc + 1.0 / ca + 0.5 * tether
}

/// `1/r` between two charges: the callee of [`coulomb_calls`], with
/// `lanes`, so that `coulomb_calls_hessian` applies its gradient's
/// linearization to all unit directions at once through the calls.
#[differentiable(order = 2, lanes)]
pub fn inverse_distance(ax: f64, ay: f64, bx: f64, by: f64) -> f64 {
    1.0 / ((ax - bx) * (ax - bx) + (ay - by) * (ay - by)).sqrt()
}

/// [`coulomb`] with each pair's term a call: its second derivatives go
/// through the callee's (`order = 2` on both).
#[differentiable(order = 2)]
pub fn coulomb_calls(p: [f64; 6]) -> f64 {
    let [ax, ay, bx, by, cx, cy] = p;
    let tether = ax * ax + ay * ay + bx * bx + by * by + cx * cx + cy * cy;
    inverse_distance(ax, ay, bx, by)
        + inverse_distance(bx, by, cx, cy)
        + inverse_distance(cx, cy, ax, ay)
        + 0.5 * tether
}

/// A charge's position: the struct [`coulomb_structs`] and
/// [`coulomb_methods`] pass to their pair terms.
#[derive(linear_ad::Differentiable, Clone, Copy, Debug)]
pub struct Charge {
    pub x: f64,
    pub y: f64,
}

/// `1/r` between two charges passed as structs (no `lanes`, which
/// structs do not have yet).
#[differentiable(order = 2)]
pub fn pair_term(a: Charge, b: &Charge) -> f64 {
    1.0 / ((a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y)).sqrt()
}

#[differentiable]
impl Charge {
    /// `1/r` to another charge, as a method.
    #[differentiable(order = 2)]
    pub fn inverse_distance_to(&self, b: &Charge) -> f64 {
        1.0 / ((self.x - b.x) * (self.x - b.x) + (self.y - b.y) * (self.y - b.y)).sqrt()
    }
}

/// [`coulomb`] with each pair's term a call passing structs.
#[differentiable(order = 2)]
pub fn coulomb_structs(p: [f64; 6]) -> f64 {
    let [ax, ay, bx, by, cx, cy] = p;
    let (a, b, c) = (
        Charge { x: ax, y: ay },
        Charge { x: bx, y: by },
        Charge { x: cx, y: cy },
    );
    let tether = ax * ax + ay * ay + bx * bx + by * by + cx * cx + cy * cy;
    pair_term(a, &b) + pair_term(b, &c) + pair_term(c, &a) + 0.5 * tether
}

/// [`coulomb`] with each pair's term a method call.
#[differentiable(order = 2)]
pub fn coulomb_methods(p: [f64; 6]) -> f64 {
    let [ax, ay, bx, by, cx, cy] = p;
    let (a, b, c) = (
        Charge { x: ax, y: ay },
        Charge { x: bx, y: by },
        Charge { x: cx, y: cy },
    );
    let tether = ax * ax + ay * ay + bx * bx + by * by + cx * cx + cy * cy;
    a.inverse_distance_to(&b) + b.inverse_distance_to(&c) + c.inverse_distance_to(&a) + 0.5 * tether
}

/// Twenty steps of symplectic Euler for a particle in a softened central
/// field, from the position and velocity `q`, scored by a quadratic of
/// the final state: a loop whose `f_vjp` keeps a record per step, so
/// `f_hessian` linearizes the gradient through those records once.
#[differentiable(order = 2)]
pub fn orbit(q: [f64; 4]) -> f64 {
    let [x0, y0, vx0, vy0] = q;
    let (mut x, mut y, mut vx, mut vy) = (x0, y0, vx0, vy0);
    for _ in 0..20 {
        let r2 = x * x + y * y + 0.1;
        let inv = 1.0 / (r2 * r2.sqrt());
        vx -= 0.05 * x * inv;
        vy -= 0.05 * y * inv;
        x += 0.05 * vx;
        y += 0.05 * vy;
    }
    x * x + 2.0 * y * y + vx * vy
}

/// `⟨a, b⟩`: the callee of [`slice_calls`].
#[differentiable(order = 2)]
pub fn sdot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

/// `Σ ln cosh yᵢ`: the other callee of [`slice_calls`].
#[differentiable(order = 2)]
pub fn log_cosh(y: &[f64]) -> f64 {
    let mut s = 0.0;
    for &v in y {
        s += v.cosh().ln();
    }
    s
}

/// `⟨x, y⟩² + sin ‖x‖² + Σ ln cosh yᵢ` through calls that pass slices
/// (one passes `x` twice): its second derivatives go through the callees'.
#[differentiable(order = 2)]
pub fn slice_calls(x: &[f64], y: &[f64]) -> f64 {
    let d = sdot(x, y);
    d * d + sdot(x, x).sin() + log_cosh(y)
}

/// [`slice_calls`] as one loop, as it is written without helpers.
#[differentiable(order = 2)]
pub fn slice_calls_inline(x: &[f64], y: &[f64]) -> f64 {
    let (mut d, mut xx, mut lc) = (0.0, 0.0, 0.0);
    for i in 0..x.len() {
        d += x[i] * y[i];
        xx += x[i] * x[i];
        lc += y[i].cosh().ln();
    }
    d * d + xx.sin() + lc
}
