//! `ht`: ADBench's hand tracking, the distances from observed points to a
//! skinned hand model posed by 26 parameters, and their Jacobian with
//! respect to the pose (and, in the "complicated" variant, to each
//! point's barycentric coordinates on its triangle).
//!
//! The model is a skeleton of bones, each with a transform relative to
//! its parent and the inverse of its absolute rest transform, and a mesh
//! whose vertices are weighted sums over the bones. `theta` is the global
//! rotation (angle-axis), the global translation, and four angles per
//! finger; they fill a 3×(bones + 3) table of pose parameters as GradBench's
//! `to_pose_params` does. Each bone's relative transform is turned by the
//! Euler angles of its column (`Rz·Ry·Rx`, the angles stored `x, z, y`);
//! absolutes are products down the skeleton (parents come first); the
//! vertices are skinned by `absolute · inverse rest`, mirrored if the model
//! is, then rotated and translated globally. A residual is `point -
//! vertex`, the vertex interpolated on a triangle by `u` when `us` is
//! given.
//!
//! The Jacobian is forward mode from one linearization, applied in lanes
//! (`apply_lanes`, [`LANES`] columns per run): one column per pose
//! parameter, and, with `us`, two more whose tangent sets every point's
//! first (then second) coordinate at once: each residual depends only on
//! its own point's `u`, so the two columns hold the block diagonal.
//! Applied one column at a time, the 26 applications read the tape and
//! ran the skinning loop 26 times, at 2.4 times the cost.
//!
//! Matrices are flat and row-major; inputs come as GradBench sends them
//! (`base_relatives[b][r][c]` is row `r`, column `c` of bone `b`'s
//! matrix, as the reference reads it).

// Index loops, as the eval's formulas are written.
#![allow(clippy::needless_range_loop)]

use linear_ad::{differentiable, Lanes};
use serde::Deserialize;

use super::{run, unknown, Evaluated, Input};

/// The pose parameters.
const THETA: usize = 26;

/// The residuals, 3 per point.
#[allow(clippy::too_many_arguments)]
#[differentiable(lanes)]
pub fn objective(
    theta: &[f64],
    us: &[f64],
    #[nondiff] parents: &[i64],
    #[nondiff] base_relatives: &[f64],
    #[nondiff] inverse_base_absolutes: &[f64],
    #[nondiff] base_positions: &[f64],
    #[nondiff] weights: &[f64],
    #[nondiff] triangles: &[usize],
    #[nondiff] correspondences: &[usize],
    #[nondiff] points: &[f64],
    is_mirrored: bool,
) -> Vec<f64> {
    let bones = parents.len();
    let nv = base_positions.len() / 4;
    // The pose parameters, column c at 3c..3c+3: global rotation, scale
    // (fixed at 1), translation, then one column per bone; each finger
    // (bones 2 + 4f..) gets two angles at its base and one at the next two
    // joints, its tip none.
    let mut pose = vec![0.0; 3 * (bones + 3)];
    for r in 0..3 {
        pose[r] = theta[r];
        pose[3 + r] = 1.0;
        pose[6 + r] = theta[3 + r];
    }
    for f in 0..5 {
        let (t, c) = (6 + 4 * f, 5 + 4 * f);
        pose[3 * c] = theta[t];
        pose[3 * c + 1] = theta[t + 1];
        pose[3 * (c + 1)] = theta[t + 2];
        pose[3 * (c + 2)] = theta[t + 3];
    }
    // Posed relatives: base_relative · [R 0; 0 1], R = Rz·Ry·Rx.
    let mut rel = vec![0.0; 16 * bones];
    for b in 0..bones {
        let c = 3 * (b + 3);
        let (tx, tz, ty) = (pose[c], pose[c + 1], pose[c + 2]);
        let (cx, sx, cy, sy, cz, sz) = (tx.cos(), tx.sin(), ty.cos(), ty.sin(), tz.cos(), tz.sin());
        let rot = [
            cz * cy,
            -sz * cx + cz * sy * sx,
            sz * sx + cz * sy * cx,
            sz * cy,
            cz * cx + sz * sy * sx,
            -cz * sx + sz * sy * cx,
            -sy,
            cy * sx,
            cy * cx,
        ];
        for r in 0..4 {
            for c in 0..3 {
                let mut s = 0.0;
                for k in 0..3 {
                    s += base_relatives[16 * b + 4 * r + k] * rot[3 * k + c];
                }
                rel[16 * b + 4 * r + c] = s;
            }
            rel[16 * b + 4 * r + 3] = base_relatives[16 * b + 4 * r + 3];
        }
    }
    // Absolutes, down the skeleton.
    let mut abs = vec![0.0; 16 * bones];
    for b in 0..bones {
        if parents[b] < 0 {
            for e in 0..16 {
                abs[16 * b + e] = rel[16 * b + e];
            }
        } else {
            let p = parents[b] as usize;
            for r in 0..4 {
                for c in 0..4 {
                    let mut s = 0.0;
                    for k in 0..4 {
                        s += abs[16 * p + 4 * r + k] * rel[16 * b + 4 * k + c];
                    }
                    abs[16 * b + 4 * r + c] = s;
                }
            }
        }
    }
    // Bone transforms (their first three rows): absolute · inverse rest.
    let mut tr = vec![0.0; 12 * bones];
    for b in 0..bones {
        for r in 0..3 {
            for c in 0..4 {
                let mut s = 0.0;
                for k in 0..4 {
                    s += abs[16 * b + 4 * r + k] * inverse_base_absolutes[16 * b + 4 * k + c];
                }
                tr[12 * b + 4 * r + c] = s;
            }
        }
    }
    // Skinning: each vertex the weighted sum of its bones' transforms.
    let mut pos = vec![0.0; 3 * nv];
    for b in 0..bones {
        for v in 0..nv {
            let w = weights[v * bones + b];
            for r in 0..3 {
                let mut s = 0.0;
                for k in 0..4 {
                    s += tr[12 * b + 4 * r + k] * base_positions[4 * v + k];
                }
                pos[3 * v + r] += s * w;
            }
        }
    }
    if is_mirrored {
        for v in 0..nv {
            pos[3 * v] = -pos[3 * v];
        }
    }
    // The global rotation (the identity below a small angle), then the
    // translation; the scale column is 1.
    let (a0, a1, a2) = (pose[0], pose[1], pose[2]);
    let norm = (a0 * a0 + a1 * a1 + a2 * a2).sqrt();
    let g = if norm < 0.0001 {
        [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    } else {
        let (x, y, z) = (a0 / norm, a1 / norm, a2 / norm);
        let (s, c) = (norm.sin(), norm.cos());
        [
            x * x + (1.0 - x * x) * c,
            x * y * (1.0 - c) - z * s,
            x * z * (1.0 - c) + y * s,
            x * y * (1.0 - c) + z * s,
            y * y + (1.0 - y * y) * c,
            y * z * (1.0 - c) - x * s,
            x * z * (1.0 - c) - y * s,
            z * y * (1.0 - c) + x * s,
            z * z + (1.0 - z * z) * c,
        ]
    };
    let mut world = vec![0.0; 3 * nv];
    for v in 0..nv {
        for r in 0..3 {
            let mut s = 0.0;
            for k in 0..3 {
                s += g[3 * r + k] * pos[3 * v + k];
            }
            world[3 * v + r] = s + pose[6 + r];
        }
    }
    let n = correspondences.len();
    let mut err = vec![0.0; 3 * n];
    if us.is_empty() {
        for i in 0..n {
            let v = correspondences[i];
            for j in 0..3 {
                err[3 * i + j] = points[3 * i + j] - world[3 * v + j];
            }
        }
    } else {
        for i in 0..n {
            let t = 3 * correspondences[i];
            let (v0, v1, v2) = (triangles[t], triangles[t + 1], triangles[t + 2]);
            let (u0, u1) = (us[2 * i], us[2 * i + 1]);
            for j in 0..3 {
                let hand = u0 * world[3 * v0 + j]
                    + u1 * world[3 * v1 + j]
                    + (1.0 - u0 - u1) * world[3 * v2 + j];
                err[3 * i + j] = points[3 * i + j] - hand;
            }
        }
    }
    err
}

impl HtInput {
    fn objective(&self) -> Vec<f64> {
        let m = &self.model;
        objective(
            &self.theta,
            &self.us,
            &m.parents,
            &m.base_relatives,
            &m.inverse_base_absolutes,
            &m.base_positions,
            &m.weights,
            &m.triangles,
            &self.correspondences,
            &self.points,
            m.is_mirrored,
        )
    }

    /// Rows of `[∂/∂u₀, ∂/∂u₁,] ∂/∂θ₀ … ∂/∂θ₂₅`, one per residual.
    fn jacobian(&self) -> Vec<Vec<f64>> {
        let m = &self.model;
        let (_, lin) = objective_lin(
            &self.theta,
            &self.us,
            &m.parents,
            &m.base_relatives,
            &m.inverse_base_absolutes,
            &m.base_positions,
            &m.weights,
            &m.triangles,
            &self.correspondences,
            &self.points,
            m.is_mirrored,
        );
        let first = if self.us.is_empty() { 0 } else { 2 };
        let width = first + self.theta.len();
        let mut rows = vec![Vec::with_capacity(width); 3 * self.correspondences.len()];
        for start in (0..width).step_by(LANES) {
            // Column `c` of this run is lane `c - start`; in the last run,
            // the lanes past the last column are never seeded.
            let seed = |c: usize| match c.checked_sub(start) {
                Some(lane) if lane < LANES => Lanes::unit(lane),
                _ => Lanes::zero(),
            };
            let dt = (0..self.theta.len()).map(|j| seed(first + j)).collect();
            let du = (0..self.us.len()).map(|i| seed(i % 2)).collect();
            let cols: Vec<Lanes<f64, LANES>> = lin.apply_lanes((dt, du));
            let used = LANES.min(width - start);
            for (row, l) in rows.iter_mut().zip(&cols) {
                row.extend_from_slice(&l.0[..used]);
            }
        }
        rows
    }
}

/// Columns per run of `apply_lanes`: the 26 (or 28) columns in two runs.
/// Measured (derivative ÷ primal, geometric mean of the four workloads):
/// 8 lanes 22.1, 14 lanes 16.7, 28 lanes (one run) 16.1; one column per
/// `apply`, 40. Each lane is a float operation of its own, so past a few
/// lanes the run costs what its arithmetic costs.
const LANES: usize = 14;

/// The hand model, its matrices flattened row by row.
pub struct Model {
    pub parents: Vec<i64>,
    pub base_relatives: Vec<f64>,
    pub inverse_base_absolutes: Vec<f64>,
    pub base_positions: Vec<f64>,
    pub weights: Vec<f64>,
    pub triangles: Vec<usize>,
    pub is_mirrored: bool,
}

/// The eval's input, flattened as it is decoded.
#[derive(Deserialize)]
#[serde(try_from = "Wire")]
pub struct HtInput {
    pub theta: Vec<f64>,
    pub us: Vec<f64>,
    pub model: Model,
    pub correspondences: Vec<usize>,
    pub points: Vec<f64>,
}

#[derive(Deserialize)]
struct Wire {
    theta: Vec<f64>,
    data: WireData,
    #[serde(default)]
    us: Vec<Vec<f64>>,
}

#[derive(Deserialize)]
struct WireData {
    model: WireModel,
    correspondences: Vec<usize>,
    points: Vec<Vec<f64>>,
}

#[derive(Deserialize)]
struct WireModel {
    parents: Vec<i64>,
    base_relatives: Vec<Vec<Vec<f64>>>,
    inverse_base_absolutes: Vec<Vec<Vec<f64>>>,
    base_positions: Vec<Vec<f64>>,
    weights: Vec<Vec<f64>>,
    triangles: Vec<Vec<usize>>,
    is_mirrored: bool,
}

/// `rows`, concatenated, if each has `width` numbers.
fn flat<T: Clone>(name: &str, rows: &[Vec<T>], width: usize) -> Result<Vec<T>, String> {
    match rows.iter().position(|r| r.len() != width) {
        Some(i) => Err(format!("`{name}[{i}]` must have {width} numbers")),
        None => Ok(rows.concat()),
    }
}

/// 4×4 matrices, flattened row by row.
fn matrices(name: &str, ms: &[Vec<Vec<f64>>], bones: usize) -> Result<Vec<f64>, String> {
    if ms.len() != bones {
        return Err(format!("`{name}` must have one matrix per bone ({bones})"));
    }
    let rows: Vec<Vec<f64>> = ms.iter().flatten().cloned().collect();
    if rows.len() != 4 * bones {
        return Err(format!("`{name}` must hold 4×4 matrices"));
    }
    flat(name, &rows, 4)
}

impl TryFrom<Wire> for HtInput {
    type Error = String;
    fn try_from(w: Wire) -> Result<Self, String> {
        let m = w.data.model;
        let bones = m.parents.len();
        let nv = m.base_positions.len();
        let ntri = m.triangles.len();
        let n = w.data.correspondences.len();
        if let Some(b) = (0..bones).find(|&b| m.parents[b] >= b as i64) {
            return Err(format!("bone {b}'s parent must come before it"));
        }
        if w.theta.len() != THETA || bones < 22 {
            return Err(format!(
                "`theta` must have {THETA} numbers and the model at least 22 bones"
            ));
        }
        if !w.us.is_empty() && w.us.len() != n {
            return Err("`us` must be empty or have one pair per point".into());
        }
        let bound = if w.us.is_empty() { nv } else { ntri };
        if w.data.correspondences.iter().any(|&c| c >= bound) {
            return Err("a correspondence is out of range".into());
        }
        let triangles = flat("triangles", &m.triangles, 3)?;
        if triangles.iter().any(|&v| v >= nv) {
            return Err("a triangle's vertex is out of range".into());
        }
        let model = Model {
            base_relatives: matrices("base_relatives", &m.base_relatives, bones)?,
            inverse_base_absolutes: matrices(
                "inverse_base_absolutes",
                &m.inverse_base_absolutes,
                bones,
            )?,
            base_positions: flat("base_positions", &m.base_positions, 4)?,
            weights: flat("weights", &m.weights, bones)?,
            triangles,
            parents: m.parents,
            is_mirrored: m.is_mirrored,
        };
        Ok(HtInput {
            theta: w.theta,
            us: flat("us", &w.us, 2)?,
            model,
            correspondences: w.data.correspondences,
            points: flat("points", &w.data.points, 3)?,
        })
    }
}

impl Input for HtInput {
    fn problem(&self) -> Option<String> {
        (self.points.len() != 3 * self.correspondences.len())
            .then(|| "`points` must have one row per correspondence".into())
    }
}

pub fn evaluate(function: &str, input: serde_json::Value) -> Evaluated {
    match function {
        "objective" => run(input, HtInput::objective),
        "jacobian" => run(input, HtInput::jacobian),
        _ => unknown("ht", function, &["objective", "jacobian"]),
    }
}
