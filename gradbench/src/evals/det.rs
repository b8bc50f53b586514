//! `det`: the determinant of an ℓ×ℓ matrix by expansion by minors along
//! the first row, cmpad's `det_by_minor`, and its gradient.
//!
//! cmpad writes the expansion recursively, removing rows and columns from
//! linked lists `r` and `c` (`r[i]` is the row after row `i`, `r[ℓ]` the
//! first) so no minor is copied. A differentiable function cannot call
//! itself, so the recursion is written as a loop over an explicit stack
//! with one frame per minor size: the same lists, the same visiting order
//! and the same sums, so the same rounding. The loop visits every one of
//! the ℓ!·(1 + 1/1! + … ) frames, and reverse mode replays them backwards
//! from the tape, one entry per visit.

// Index loops, as the eval's formulas are written.
#![allow(clippy::needless_range_loop)]

use linear_ad::differentiable;
use serde::Deserialize;

use super::{run, unknown, Evaluated, Input};

/// det(A), for `a` holding A (ℓ×ℓ, ℓ ≤ 16) in row-major order.
#[differentiable]
pub fn det(a: &[f64], ell: usize) -> f64 {
    let n = ell;
    // The sum of each open minor's terms so far, by depth.
    let mut sum = vec![0.0; n];
    // The determinant of the minor the last frame finished.
    let mut minor = 0.0;
    // Columns taken by the rows above the current depth (a bit each).
    let mut used = 0u64;
    // Each depth's current column, 4 bits per depth.
    let mut cols = 0u64;
    // A bit per depth: its current term is subtracted.
    let mut minus = 0u64;
    let mut depth = 0usize;
    let mut entering = true;
    loop {
        if entering {
            // The minor at `depth` has rows depth..n and the free columns.
            let mut first = 0usize;
            while (used >> first) & 1 == 1 {
                first += 1;
            }
            if depth + 1 == n {
                minor = a[depth * n + first];
                entering = false;
                if depth == 0 {
                    break;
                }
                depth -= 1;
            } else {
                sum[depth] = 0.0;
                cols = (cols & !(15 << (4 * depth))) | ((first as u64) << (4 * depth));
                minus &= !(1 << depth);
                used |= 1 << first;
                depth += 1;
            }
        } else {
            // The sub-minor without this depth's current column is done.
            let col = ((cols >> (4 * depth)) & 15) as usize;
            let m0j = a[depth * n + col];
            // Subtracting is adding the negated product: the same rounding.
            let sign = if (minus >> depth) & 1 == 0 { 1.0 } else { -1.0 };
            sum[depth] += sign * (m0j * minor);
            used &= !(1 << col);
            let later = !used & !((2 << col) - 1) & ((1 << n) - 1);
            if later != 0 {
                let mut next = col + 1;
                while (later >> next) & 1 == 0 {
                    next += 1;
                }
                cols = (cols & !(15 << (4 * depth))) | ((next as u64) << (4 * depth));
                minus ^= 1 << depth;
                used |= 1 << next;
                depth += 1;
                entering = true;
            } else {
                minor = sum[depth];
                if depth == 0 {
                    break;
                }
                depth -= 1;
            }
        }
    }
    minor
}

/// ∇det(A), row-major like `a`.
pub fn gradient(a: &[f64], ell: usize) -> Vec<f64> {
    det_vjp(a, ell, 1.0).1
}

#[derive(Deserialize)]
pub struct DetInput {
    #[serde(rename = "A")]
    pub a: Vec<f64>,
    pub ell: usize,
}

impl Input for DetInput {
    fn problem(&self) -> Option<String> {
        if self.ell == 0 || self.ell > 16 {
            Some(format!(
                "`ell` is {}; this tool expands minors of 1 to 16 rows",
                self.ell
            ))
        } else if self.a.len() != self.ell * self.ell {
            Some(format!(
                "`A` has {} elements, and ell² is {}",
                self.a.len(),
                self.ell * self.ell
            ))
        } else {
            None
        }
    }
}

pub fn evaluate(function: &str, input: serde_json::Value) -> Evaluated {
    match function {
        "primal" => run(input, |i: &DetInput| det(&i.a, i.ell)),
        "gradient" => run(input, |i: &DetInput| gradient(&i.a, i.ell)),
        _ => unknown("det", function, &["primal", "gradient"]),
    }
}
