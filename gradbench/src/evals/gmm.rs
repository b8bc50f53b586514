//! `gmm`: the log-likelihood objective of a Gaussian
//! mixture model with a Wishart prior on the precisions, from ADBench,
//! and its gradient with respect to the weights `alpha`, the `means` and
//! the inverse-covariance factors `icf`, concatenated in that order.
//!
//! Component `k`'s precision factor is `Q = diag(exp(qₖ)) + L`, with `qₖ`
//! the first `d` entries of `icf[k]` and the strictly lower triangle `L`
//! filled column by column from the rest. The objective is
//!
//! ```text
//! Σᵢ LSEₖ(αₖ + Σ qₖ - ½‖Qₖ(xᵢ - μₖ)‖²) - n·LSE(α)
//!   + Σₖ (½γ²(‖exp qₖ‖² + ‖Lₖ‖²) - m·Σ qₖ) - k·C(d, γ, m) - ½·n·d·ln 2π
//! ```
//!
//! written as loops over flat row-major arrays, as ADBench's C++ writes
//! it: `exp(qₖ)` and `Σ qₖ` once per component, then one pass over the
//! points. `C` and the last term are constants of the input sizes and
//! `γ`, computed as ordinary Rust. Each LSE's max shift is held by
//! `stop_gradient`, as JAX's `logsumexp` holds it: the result does not
//! depend on it in exact arithmetic, so the gradient is the same, and
//! reverse mode neither records the maxima nor runs their loops backwards.

// Index loops, as the eval's formulas are written.
#![allow(clippy::needless_range_loop)]

use linear_ad::{differentiable, stop_gradient};
use serde::{Deserialize, Deserializer};

use super::{run, unknown, Evaluated, Input};

/// The objective; `means` is k×d, `icf` k×(d + d(d-1)/2) and `x` n×d, all
/// flat and row-major.
#[allow(clippy::too_many_arguments)]
#[differentiable]
pub fn objective(
    alpha: &[f64],
    means: &[f64],
    icf: &[f64],
    #[nondiff] x: &[f64],
    d: usize,
    k: usize,
    n: usize,
    #[nondiff] gamma: f64,
    m: usize,
) -> f64 {
    let width = d * (d + 1) / 2;
    // exp(q) and Σ q, per component.
    let mut qdiag = vec![0.0; k * d];
    let mut sum_q = vec![0.0; k];
    for c in 0..k {
        let mut s = 0.0;
        for j in 0..d {
            qdiag[c * d + j] = icf[c * width + j].exp();
            s += icf[c * width + j];
        }
        sum_q[c] = s;
    }
    let mut centred = vec![0.0; d];
    let mut qx = vec![0.0; d];
    let mut terms = vec![0.0; k];
    let mut likelihood = 0.0;
    for i in 0..n {
        for c in 0..k {
            for j in 0..d {
                centred[j] = x[i * d + j] - means[c * d + j];
            }
            for j in 0..d {
                qx[j] = qdiag[c * d + j] * centred[j];
            }
            // L's column j holds rows j+1..d, after the columns before it.
            for j in 0..d {
                let column = d + j * d - j * (j + 1) / 2;
                for l in (j + 1)..d {
                    qx[l] += icf[c * width + column + (l - j - 1)] * centred[j];
                }
            }
            let mut norm = 0.0;
            for j in 0..d {
                norm += qx[j] * qx[j];
            }
            terms[c] = alpha[c] + sum_q[c] - 0.5 * norm;
        }
        // LSE over the components, with the max trick.
        let mut top = terms[0];
        for c in 1..k {
            top = top.max(terms[c]);
        }
        let top = stop_gradient(top);
        let mut sum = 0.0;
        for c in 0..k {
            sum += (terms[c] - top).exp();
        }
        likelihood += top + sum.ln();
    }
    // n·LSE(α).
    let mut top = alpha[0];
    for c in 1..k {
        top = top.max(alpha[c]);
    }
    let top = stop_gradient(top);
    let mut sum = 0.0;
    for c in 0..k {
        sum += (alpha[c] - top).exp();
    }
    let lse_alpha = top + sum.ln();
    // The Wishart prior.
    let mut prior = 0.0;
    for c in 0..k {
        let mut frobenius = 0.0;
        for j in 0..d {
            frobenius += qdiag[c * d + j] * qdiag[c * d + j];
        }
        for j in d..width {
            frobenius += icf[c * width + j] * icf[c * width + j];
        }
        prior += 0.5 * gamma * gamma * frobenius - (m as f64) * sum_q[c];
    }
    let constant = -(n as f64) * (d as f64) * 0.5 * (2.0 * std::f64::consts::PI).ln();
    let wishart = (k as f64) * wishart_constant(d, gamma, m);
    constant + likelihood - (n as f64) * lse_alpha + prior - wishart
}

/// `C(d, γ, m)`, the log normalising constant of one component's Wishart
/// prior, with `p = d + m + 1` degrees of freedom.
fn wishart_constant(d: usize, gamma: f64, m: usize) -> f64 {
    let p = (d + m + 1) as f64;
    let d = d as f64;
    // The log of the multivariate gamma function Γ_d(p/2).
    let mut log_gamma_d = 0.25 * d * (d - 1.0) * std::f64::consts::PI.ln();
    for j in 1..=(d as usize) {
        log_gamma_d += libm::lgamma(0.5 * p + 0.5 * (1.0 - j as f64));
    }
    p * d * (gamma.ln() - 0.5 * std::f64::consts::LN_2) - log_gamma_d
}

/// The gradient in `alpha`, `means` and `icf`, concatenated.
pub fn jacobian(g: &GmmInput) -> Vec<f64> {
    let (_, (da, dm, di)) = objective_vjp(
        &g.alpha, &g.means, &g.icf, &g.x, g.d, g.k, g.n, g.gamma, g.m, 1.0,
    );
    let mut out = da;
    out.extend_from_slice(&dm);
    out.extend_from_slice(&di);
    out
}

/// The eval's input, its matrices flattened row by row as it is decoded.
#[derive(Deserialize)]
pub struct GmmInput {
    pub d: usize,
    pub k: usize,
    pub n: usize,
    pub alpha: Vec<f64>,
    #[serde(deserialize_with = "rows")]
    pub means: Vec<f64>,
    #[serde(deserialize_with = "rows")]
    pub icf: Vec<f64>,
    #[serde(deserialize_with = "rows")]
    pub x: Vec<f64>,
    pub gamma: f64,
    pub m: usize,
}

/// An array of rows, concatenated; the sizes are checked against `d`,
/// `k` and `n` afterwards.
fn rows<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    let rows = Vec::<Vec<f64>>::deserialize(d)?;
    Ok(rows.concat())
}

impl Input for GmmInput {
    fn problem(&self) -> Option<String> {
        let width = self.d * (self.d + 1) / 2;
        let sizes = [
            ("alpha", self.alpha.len(), self.k, "k"),
            ("means", self.means.len(), self.k * self.d, "k·d"),
            ("icf", self.icf.len(), self.k * width, "k·d(d+1)/2"),
            ("x", self.x.len(), self.n * self.d, "n·d"),
        ];
        if self.k == 0 || self.d == 0 {
            return Some("`k` and `d` must be positive".into());
        }
        sizes
            .iter()
            .find(|(_, len, want, _)| len != want)
            .map(|(name, len, want, what)| {
                format!("`{name}` has {len} numbers, and {what} is {want}")
            })
    }
}

pub fn evaluate(function: &str, input: serde_json::Value) -> Evaluated {
    match function {
        "objective" => run(input, |g: &GmmInput| {
            objective(
                &g.alpha, &g.means, &g.icf, &g.x, g.d, g.k, g.n, g.gamma, g.m,
            )
        }),
        "jacobian" => run(input, jacobian),
        _ => unknown("gmm", function, &["objective", "jacobian"]),
    }
}
