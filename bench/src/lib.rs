//! The benchmark workloads: each as a `#[differentiable]` function (the
//! primal and what linear-ad differentiates), and a derivative written by
//! hand. The baselines' generic versions live in `benches/derivatives.rs`,
//! next to the AD types they are instantiated with.

pub mod arrays;
pub mod control;
pub mod second;

use linear_ad::differentiable;

/// f(x) = exp(x) / sqrt(sin(x)³ + cos(x)³).
#[differentiable]
#[inline]
pub fn scalar(x: f64) -> f64 {
    let (s, c) = (x.sin(), x.cos());
    x.exp() / (s.powi(3) + c.powi(3)).sqrt()
}

/// f'(x) by hand: with u = s³ + c³, f' = f (1 - u' / 2u).
#[inline]
pub fn scalar_hand(x: f64) -> (f64, f64) {
    let (s, c) = (x.sin(), x.cos());
    let u = s * s * s + c * c * c;
    let f = x.exp() / u.sqrt();
    let du = 3.0 * s * c * (s - c);
    (f, f * (1.0 - du / (2.0 * u)))
}

/// The 2-D Rosenbrock function.
#[differentiable]
#[inline]
pub fn rosenbrock(x: f64, y: f64) -> f64 {
    let a = 1.0 - x;
    let b = y - x * x;
    a * a + 100.0 * b * b
}

#[inline]
pub fn rosenbrock_hand(x: f64, y: f64) -> (f64, (f64, f64)) {
    let a = 1.0 - x;
    let b = y - x * x;
    (a * a + 100.0 * b * b, (-2.0 * a - 400.0 * x * b, 200.0 * b))
}

/// An expression of 53 operations over 4 inputs.
#[differentiable]
#[inline]
pub fn long(a: f64, b: f64, c: f64, d: f64) -> f64 {
    let s1 = a * b + c.sin() - d.cos() * a;
    let s2 = (s1 * s1 + 1.0).sqrt() / (b * b + 2.0);
    let s3 = s2.exp() * c - (a - d).tanh() + s1 * d;
    let s4 = (s3 * s3 + s2 * s2 + 1.0).ln() + (a * c).sin();
    let s5 = s4 * s1 - s3 / (1.0 + s2 * s2) + (c * d).sin() * (a * b).cos();
    let s6 = s5 * s5 + s4 - s3 * s2 + s1;
    let s7 = (s6 * 0.1).tanh() * s5 + (s4 * s4 + 1.0).sqrt();
    s7 * s6 - s2.exp()
}

/// The gradient of [`long`] by a hand-written adjoint sweep.
#[inline]
pub fn long_hand(a: f64, b: f64, c: f64, d: f64) -> (f64, [f64; 4]) {
    let ab = a * b;
    let (sc, cdd) = (c.sin(), d.cos());
    let s1 = ab + sc - cdd * a;
    let q = s1 * s1 + 1.0;
    let rq = q.sqrt();
    let den2 = b * b + 2.0;
    let s2 = rq / den2;
    let e2 = s2.exp();
    let th = (a - d).tanh();
    let s3 = e2 * c - th + s1 * d;
    let w = s3 * s3 + s2 * s2 + 1.0;
    let ac = a * c;
    let s4 = w.ln() + ac.sin();
    let p = 1.0 + s2 * s2;
    let cdp = c * d;
    let (scdp, cab) = (cdp.sin(), ab.cos());
    let s5 = s4 * s1 - s3 / p + scdp * cab;
    let s6 = s5 * s5 + s4 - s3 * s2 + s1;
    let t = (s6 * 0.1).tanh();
    let r = (s4 * s4 + 1.0).sqrt();
    let s7 = t * s5 + r;
    let out = s7 * s6 - e2;

    let s7b = s6;
    let mut s6b = s7;
    let mut s2b = -e2;
    let tb = s7b * s5;
    let mut s5b = s7b * t;
    let rb = s7b;
    s6b += tb * (1.0 - t * t) * 0.1;
    let mut s4b = rb * s4 / r;
    s5b += s6b * 2.0 * s5;
    s4b += s6b;
    let mut s3b = -s6b * s2;
    s2b -= s6b * s3;
    let mut s1b = s6b;
    let s4b_total = s4b + s5b * s1;
    s1b += s5b * s4;
    s3b -= s5b / p;
    let pb = s5b * s3 / (p * p);
    let cdpb = s5b * cdp.cos() * cab;
    let mut abb = -s5b * scdp * ab.sin();
    s2b += pb * 2.0 * s2;
    let mut gc = cdpb * d;
    let mut gd = cdpb * c;
    let wb = s4b_total / w;
    let acb = s4b_total * ac.cos();
    s3b += wb * 2.0 * s3;
    s2b += wb * 2.0 * s2;
    let mut ga = acb * c;
    gc += acb * a;
    let e2b = s3b * c;
    gc += s3b * e2;
    let thb = -s3b;
    s1b += s3b * d;
    gd += s3b * s1;
    s2b += e2b * e2;
    let dth = thb * (1.0 - th * th);
    ga += dth;
    gd -= dth;
    let rqb = s2b / den2;
    let den2b = -s2b * s2 / den2;
    let qb = rqb / (2.0 * rq);
    s1b += qb * 2.0 * s1;
    let mut gb = den2b * 2.0 * b;
    abb += s1b;
    gc += s1b * c.cos();
    let cddb = -s1b * a;
    ga -= s1b * cdd;
    gd -= cddb * d.sin();
    ga += abb * b;
    gb += abb * a;
    (out, [ga, gb, gc, gd])
}

include!("reprojection.rs");

include!(concat!(env!("OUT_DIR"), "/rosenbrock_n.rs"));

/// The Rosenbrock sum and its gradient by hand, for any N. Takes its
/// input by value, as the generated functions do, so that the benchmark
/// compares the derivatives and not the calling conventions.
#[inline]
pub fn rosenbrock_n_hand<const N: usize>(x: [f64; N]) -> (f64, [f64; N]) {
    let mut f = 0.0;
    let mut g = [0.0; N];
    for i in 0..N - 1 {
        let t = x[i + 1] - x[i] * x[i];
        let u = 1.0 - x[i];
        f += 100.0 * t * t + u * u;
        g[i] += -400.0 * t * x[i] - 2.0 * u;
        g[i + 1] += 200.0 * t;
    }
    (f, g)
}

type M3 = [[f64; 3]; 3];

fn mat_mul(a: &M3, b: &M3) -> M3 {
    let mut c = [[0.0; 3]; 3];
    for (i, row) in c.iter_mut().enumerate() {
        for (j, cij) in row.iter_mut().enumerate() {
            *cij = a[i][0] * b[0][j] + a[i][1] * b[1][j] + a[i][2] * b[2][j];
        }
    }
    c
}

fn skew(a: [f64; 3]) -> M3 {
    [[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]]
}

/// The residual and its 2×15 Jacobian (columns: the 11 camera parameters,
/// the 3 point coordinates, the weight) written by hand from closed forms
/// per stage: the rotation's Jacobian is Gallego & Yezzi's
/// ∂(Rp)/∂r = −R[p]×(r rᵀ + (Rᵀ − I)[r]×)/‖r‖², then the projection,
/// distortion and scaling as small matrices.
#[inline]
pub fn reprojection_jacobian_hand(
    cam: [f64; 11],
    x: [f64; 3],
    w: f64,
    feat: [f64; 2],
) -> ([f64; 2], [[f64; 15]; 2]) {
    let r = [cam[0], cam[1], cam[2]];
    let (f, u0, v0, k1, k2) = (cam[6], cam[7], cam[8], cam[9], cam[10]);
    let p = [x[0] - cam[3], x[1] - cam[4], x[2] - cam[5]];
    let t2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
    let theta = t2.sqrt();
    let (c, s) = (theta.cos(), theta.sin());
    let k = [r[0] / theta, r[1] / theta, r[2] / theta];
    let kx = skew(k);
    let mut rot = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            let id = if i == j { 1.0 } else { 0.0 };
            rot[i][j] = c * id + s * kx[i][j] + (1.0 - c) * k[i] * k[j];
        }
    }
    let q: [f64; 3] =
        std::array::from_fn(|i| rot[i][0] * p[0] + rot[i][1] * p[1] + rot[i][2] * p[2]);
    // ∂q/∂r = −R [p]× (r rᵀ + (Rᵀ − I)[r]×) / θ².
    let rx = skew(r);
    let mut m = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            let mut acc = r[i] * r[j];
            for l in 0..3 {
                let rt_minus_i = rot[l][i] - if l == i { 1.0 } else { 0.0 };
                acc += rt_minus_i * rx[l][j];
            }
            m[i][j] = acc / t2;
        }
    }
    let neg_r_px = mat_mul(&rot, &skew(p)).map(|row| row.map(|v| -v));
    let dq_dr = mat_mul(&neg_r_px, &m);
    // Projection and distortion.
    let (m0, m1) = (q[0] / q[2], q[1] / q[2]);
    let rsq = m0 * m0 + m1 * m1;
    let l = 1.0 + k1 * rsq + k2 * rsq * rsq;
    let dl = k1 + 2.0 * k2 * rsq;
    let d = [m0 * l, m1 * l];
    let proj = [f * d[0] + u0, f * d[1] + v0];
    let err = [w * (proj[0] - feat[0]), w * (proj[1] - feat[1])];
    // ∂d/∂m = L I + 2 dL m mᵀ; ∂m/∂q; then A = w f ∂d/∂m ∂m/∂q (2×3).
    let dd_dm = [
        [l + 2.0 * dl * m0 * m0, 2.0 * dl * m0 * m1],
        [2.0 * dl * m1 * m0, l + 2.0 * dl * m1 * m1],
    ];
    let iq2 = 1.0 / q[2];
    let dm_dq = [[iq2, 0.0, -m0 * iq2], [0.0, iq2, -m1 * iq2]];
    let mut a = [[0.0; 3]; 2];
    for i in 0..2 {
        for j in 0..3 {
            a[i][j] = w * f * (dd_dm[i][0] * dm_dq[0][j] + dd_dm[i][1] * dm_dq[1][j]);
        }
    }
    let mut jac = [[0.0; 15]; 2];
    for i in 0..2 {
        for j in 0..3 {
            let ar = a[i][0] * dq_dr[0][j] + a[i][1] * dq_dr[1][j] + a[i][2] * dq_dr[2][j];
            let ap = a[i][0] * rot[0][j] + a[i][1] * rot[1][j] + a[i][2] * rot[2][j];
            jac[i][j] = ar;
            jac[i][3 + j] = -ap;
            jac[i][11 + j] = ap;
        }
        let mi = if i == 0 { m0 } else { m1 };
        jac[i][6] = w * d[i];
        jac[i][7 + i] = w;
        jac[i][9] = w * f * mi * rsq;
        jac[i][10] = w * f * mi * rsq * rsq;
        jac[i][14] = proj[i] - feat[i];
    }
    (err, jac)
}
