//! `ba`: ADBench's bundle adjustment, the reprojection error of `p`
//! observations of `m` points by `n` cameras and the weight error of each
//! observation, and the Jacobian of both as a sparse matrix.
//!
//! A camera is 11 numbers: Rodrigues rotation (3), centre (3), focal
//! length, principal point (2), radial distortion (2). Observation `i`
//! sees point `i mod m` from camera `i mod n` with weight `wᵢ` at feature
//! `fᵢ`; its residual is `wᵢ·(project(cam, X) - fᵢ)` (2 numbers) and its
//! weight error `1 - wᵢ²`. The input gives one camera, point, weight and
//! feature, which every camera, point, observation and feature repeats
//! (expanded while the input is decoded, outside the timing, as
//! GradBench's C++ reference does).
//!
//! The Jacobian has a 2×15 block per observation (camera, point, weight)
//! and one entry per weight error, in compressed sparse rows. Each block
//! comes from one linearization of the residual transposed twice, once
//! per residual row: one forward sweep and tape per observation.
//!
//! Outputs follow GradBench's reference: the objective as the first
//! residual pair and weight error with how often each repeats, the
//! Jacobian as the first 30 entries of its `rows`, `cols` and `vals` and
//! the last one.

use linear_ad::{differentiable, LinearMap};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::json;

use super::{run, unknown, Evaluated, Input};

/// Camera parameters per camera.
const CAM: usize = 11;

/// `pt` rotated by the angle-axis vector `rot`; to first order when the
/// angle is 0, where the closed form divides by it.
#[differentiable]
pub fn rodrigues_rotate_point(rot: [f64; 3], pt: [f64; 3]) -> [f64; 3] {
    let sqtheta = rot[0] * rot[0] + rot[1] * rot[1] + rot[2] * rot[2];
    if sqtheta != 0.0 {
        let theta = sqtheta.sqrt();
        let (cos, sin) = (theta.cos(), theta.sin());
        let inv = 1.0 / theta;
        let w = [rot[0] * inv, rot[1] * inv, rot[2] * inv];
        let cross = [
            w[1] * pt[2] - w[2] * pt[1],
            w[2] * pt[0] - w[0] * pt[2],
            w[0] * pt[1] - w[1] * pt[0],
        ];
        let tmp = (w[0] * pt[0] + w[1] * pt[1] + w[2] * pt[2]) * (1.0 - cos);
        [
            pt[0] * cos + cross[0] * sin + w[0] * tmp,
            pt[1] * cos + cross[1] * sin + w[1] * tmp,
            pt[2] * cos + cross[2] * sin + w[2] * tmp,
        ]
    } else {
        [
            pt[0] + (rot[1] * pt[2] - rot[2] * pt[1]),
            pt[1] + (rot[2] * pt[0] - rot[0] * pt[2]),
            pt[2] + (rot[0] * pt[1] - rot[1] * pt[0]),
        ]
    }
}

/// The projection of `x` by `cam`, in pixels.
#[differentiable]
pub fn project(cam: [f64; 11], x: [f64; 3]) -> [f64; 2] {
    let centred = [x[0] - cam[3], x[1] - cam[4], x[2] - cam[5]];
    let q = rodrigues_rotate_point([cam[0], cam[1], cam[2]], centred);
    let (u, v) = (q[0] / q[2], q[1] / q[2]);
    // Radial distortion.
    let rsq = u * u + v * v;
    let l = 1.0 + cam[9] * rsq + cam[10] * rsq * rsq;
    [u * l * cam[6] + cam[7], v * l * cam[6] + cam[8]]
}

/// One observation's weighted reprojection error.
#[differentiable]
pub fn reproj_error(cam: [f64; 11], x: [f64; 3], w: f64, #[nondiff] feat: [f64; 2]) -> [f64; 2] {
    let proj = project(cam, x);
    [w * (proj[0] - feat[0]), w * (proj[1] - feat[1])]
}

/// One observation's weight error.
#[differentiable]
pub fn w_error(w: f64) -> f64 {
    1.0 - w * w
}

/// The problem with every camera, point, weight and feature spelled out;
/// decoded from the eval's input, which gives one of each and how often
/// they repeat.
#[derive(Deserialize)]
#[serde(try_from = "Wire")]
pub struct Problem {
    pub n: usize,
    pub m: usize,
    pub p: usize,
    /// n×11.
    pub cams: Vec<f64>,
    /// m×3.
    pub x: Vec<f64>,
    pub w: Vec<f64>,
    /// p×2.
    pub feats: Vec<f64>,
    /// Per observation, its camera and its point.
    pub obs: Vec<(usize, usize)>,
}

impl Problem {
    fn cam(&self, c: usize) -> [f64; 11] {
        self.cams[CAM * c..CAM * (c + 1)].try_into().unwrap()
    }
    fn point(&self, pt: usize) -> [f64; 3] {
        self.x[3 * pt..3 * pt + 3].try_into().unwrap()
    }
    fn feat(&self, i: usize) -> [f64; 2] {
        [self.feats[2 * i], self.feats[2 * i + 1]]
    }
}

/// Every residual and weight error.
pub struct Objective {
    pub reproj_err: Vec<f64>,
    pub w_err: Vec<f64>,
}

pub fn objective(pr: &Problem) -> Objective {
    let mut reproj_err = Vec::with_capacity(2 * pr.p);
    for (i, &(c, pt)) in pr.obs.iter().enumerate() {
        reproj_err.extend(reproj_error(pr.cam(c), pr.point(pt), pr.w[i], pr.feat(i)));
    }
    let w_err = pr.w.iter().map(|&w| w_error(w)).collect();
    Objective { reproj_err, w_err }
}

/// A matrix in compressed sparse rows: row `r`'s entries are
/// `cols[rows[r]..rows[r + 1]]` and `vals[..]` alike.
pub struct SparseMat {
    pub rows: Vec<usize>,
    pub cols: Vec<usize>,
    pub vals: Vec<f64>,
}

/// The Jacobian of the residuals (rows `2i`, `2i + 1`) and weight errors
/// (rows `2p + i`) in the cameras, points and weights (columns `11c + j`,
/// `11n + 3pt + j`, `11n + 3m + i`).
pub fn jacobian(pr: &Problem) -> SparseMat {
    let block = CAM + 3 + 1;
    let mut j = SparseMat {
        rows: Vec::with_capacity(3 * pr.p + 1),
        cols: Vec::with_capacity((2 * block + 1) * pr.p),
        vals: Vec::with_capacity((2 * block + 1) * pr.p),
    };
    j.rows.push(0);
    let (points, weights) = (CAM * pr.n, CAM * pr.n + 3 * pr.m);
    for (i, &(c, pt)) in pr.obs.iter().enumerate() {
        let (_, lin) = reproj_error_lin(pr.cam(c), pr.point(pt), pr.w[i], pr.feat(i));
        for row in [[1.0, 0.0], [0.0, 1.0]] {
            let (dcam, dx, dw) = lin.transpose(row);
            j.cols.extend((0..CAM).map(|k| CAM * c + k));
            j.cols.extend((0..3).map(|k| points + 3 * pt + k));
            j.cols.push(weights + i);
            j.vals.extend_from_slice(&dcam);
            j.vals.extend_from_slice(&dx);
            j.vals.push(dw);
            j.rows.push(j.cols.len());
        }
    }
    for (i, &w) in pr.w.iter().enumerate() {
        j.cols.push(weights + i);
        j.vals.push(w_error_vjp(w, 1.0).1);
        j.rows.push(j.cols.len());
    }
    j
}

/// The first `k` entries and the last, as the reference abbreviates.
fn abbreviated<T: Copy>(v: &[T], k: usize) -> Vec<T> {
    let mut out = v[..k.min(v.len())].to_vec();
    out.extend(v.last());
    out
}

impl Serialize for Objective {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        json!({
            "reproj_error": {
                "elements": &self.reproj_err[..2],
                "repeated": self.reproj_err.len() / 2,
            },
            "w_err": {"element": self.w_err[0], "repeated": self.w_err.len()},
        })
        .serialize(s)
    }
}

impl Serialize for SparseMat {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Two rows of one observation's block.
        let k = 2 * (CAM + 3 + 1);
        json!({
            "rows": abbreviated(&self.rows, k),
            "cols": abbreviated(&self.cols, k),
            "vals": abbreviated(&self.vals, k),
        })
        .serialize(s)
    }
}

/// The input as it comes.
#[derive(Deserialize)]
struct Wire {
    n: usize,
    m: usize,
    p: usize,
    cam: Vec<f64>,
    x: Vec<f64>,
    w: f64,
    feat: Vec<f64>,
}

impl TryFrom<Wire> for Problem {
    type Error = String;
    fn try_from(w: Wire) -> Result<Self, String> {
        if w.cam.len() != CAM || w.x.len() != 3 || w.feat.len() != 2 {
            return Err("`cam`, `x` and `feat` must have 11, 3 and 2 numbers".into());
        }
        if w.n == 0 || w.m == 0 || w.p == 0 {
            return Err("`n`, `m` and `p` must be positive".into());
        }
        Ok(Problem {
            n: w.n,
            m: w.m,
            p: w.p,
            cams: w.cam.repeat(w.n),
            x: w.x.repeat(w.m),
            w: vec![w.w; w.p],
            feats: w.feat.repeat(w.p),
            obs: (0..w.p).map(|i| (i % w.n, i % w.m)).collect(),
        })
    }
}

impl Input for Problem {}

pub fn evaluate(function: &str, input: serde_json::Value) -> Evaluated {
    match function {
        "objective" => run(input, objective),
        "jacobian" => run(input, jacobian),
        _ => unknown("ba", function, &["objective", "jacobian"]),
    }
}
