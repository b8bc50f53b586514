//! `kmeans`: the k-means cost `Σᵢ minⱼ |Cⱼ − Pᵢ|²` and the Newton
//! direction `J·H⁻¹` of its minimisation over the centroids `C`.
//!
//! The cost is written as the README describes it (a minimum over
//! centroids of squared distances, summed over points) under
//! `#[differentiable(order = 2)]`. Its Hessian in `C` is diagonal (the
//! README: "nonzero elements only along the diagonal"), so it is `H·1`,
//! one Hessian-vector product with the direction of all ones, which
//! `cost_hvp` returns beside the gradient `J`: no derivative is written
//! by hand, and the division by the diagonal is the README's `H⁻¹`.

use linear_ad::differentiable;
use serde::{Deserialize, Deserializer};

use super::{run, unknown, Evaluated, Input};

/// The cost of centroids `c` (`k` rows of `d`, concatenated) for points
/// `p` (`n` rows of `d`).
#[differentiable(order = 2)]
pub fn cost(#[nondiff] p: &[f64], c: &[f64], #[nondiff] d: usize) -> f64 {
    let n: usize = p.len() / d;
    let k: usize = c.len() / d;
    let mut total = 0.0;
    for i in 0..n {
        let mut closest: f64 = f64::MAX;
        for j in 0..k {
            let mut dist = 0.0;
            for l in 0..d {
                let diff = c[j * d + l] - p[i * d + l];
                dist += diff * diff;
            }
            closest = closest.min(dist);
        }
        total += closest;
    }
    total
}

/// `J·H⁻¹`, row by row: the gradient divided elementwise by the
/// Hessian's diagonal.
pub fn dir(p: &[f64], c: &[f64], d: usize) -> Vec<Vec<f64>> {
    let ones = vec![1.0; c.len()];
    let (_, j, h) = cost_hvp(p, c, d, &ones);
    j.iter()
        .zip(&h)
        .map(|(j, h)| j / h)
        .collect::<Vec<f64>>()
        .chunks(d)
        .map(<[f64]>::to_vec)
        .collect()
}

/// A matrix as the eval sends it, rows concatenated.
pub struct Rows {
    pub data: Vec<f64>,
    pub rows: usize,
    /// The common length of the rows; `None` if they differ.
    pub cols: Option<usize>,
}

fn rows<'de, D: Deserializer<'de>>(de: D) -> Result<Rows, D::Error> {
    let rows = Vec::<Vec<f64>>::deserialize(de)?;
    let width = rows.first().map_or(0, Vec::len);
    Ok(Rows {
        cols: rows.iter().all(|r| r.len() == width).then_some(width),
        rows: rows.len(),
        data: rows.concat(),
    })
}

#[derive(Deserialize)]
pub struct KMeansInput {
    #[serde(deserialize_with = "rows")]
    pub points: Rows,
    #[serde(deserialize_with = "rows")]
    pub centroids: Rows,
}

impl KMeansInput {
    fn d(&self) -> usize {
        self.centroids.cols.unwrap_or(0)
    }
}

impl Input for KMeansInput {
    fn problem(&self) -> Option<String> {
        let (p, c) = (&self.points, &self.centroids);
        match (p.cols, c.cols) {
            (None, _) | (_, None) => Some("rows of different lengths".into()),
            _ if p.rows == 0 || c.rows == 0 || self.d() == 0 => {
                Some("no points, no centroids, or points of no dimension".into())
            }
            (Some(a), Some(b)) if a != b => {
                Some(format!("points have {a} coordinates and centroids {b}"))
            }
            _ => None,
        }
    }
}

pub fn evaluate(function: &str, input: serde_json::Value) -> Evaluated {
    match function {
        "cost" => run(input, |i: &KMeansInput| {
            cost(&i.points.data, &i.centroids.data, i.d())
        }),
        "dir" => run(input, |i: &KMeansInput| {
            dir(&i.points.data, &i.centroids.data, i.d())
        }),
        _ => unknown("kmeans", function, &["cost", "dir"]),
    }
}
