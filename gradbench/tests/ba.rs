//! The whole sparse BA Jacobian, on a problem where cameras, points and
//! weights all differ (the eval's inputs repeat one of each, and its
//! output shows only the first block): assembled densely from its
//! compressed rows and compared, zeros included, with central differences
//! of the objective, so every value and every column index is checked.

// Index loops over the dense matrix.
#![allow(clippy::needless_range_loop)]

use linear_ad_gradbench::evals::ba::{jacobian, objective, Problem};

/// A fixed problem: 3 cameras (the second with zero rotation, the
/// branch of the small-angle formula), 4 points, 7 observations.
fn problem() -> Problem {
    let (n, m, p) = (3, 4, 7);
    let mut seed = 7_u64;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut cams: Vec<f64> = (0..11 * n).map(|_| next()).collect();
    for c in 0..n {
        cams[11 * c + 6] = 100.0 + 100.0 * next();
        cams[11 * c + 9] *= 1e-3;
        cams[11 * c + 10] *= 1e-4;
    }
    cams[11..14].fill(0.0);
    let x = (0..3 * m)
        .map(|j| next() + if j % 3 == 2 { 5.0 } else { 0.0 })
        .collect();
    Problem {
        n,
        m,
        p,
        cams,
        x,
        w: (0..p).map(|_| 0.5 + next()).collect(),
        feats: (0..2 * p).map(|_| next()).collect(),
        obs: (0..p).map(|i| ((i * 2) % n, (i * 3 + 1) % m)).collect(),
    }
}

/// Residuals then weight errors.
fn residuals(pr: &Problem) -> Vec<f64> {
    let o = objective(pr);
    [o.reproj_err, o.w_err].concat()
}

/// The parameter `k` of the stacked (cameras, points, weights).
fn param(pr: &mut Problem, k: usize) -> &mut f64 {
    let (a, b) = (pr.cams.len(), pr.x.len());
    if k < a {
        &mut pr.cams[k]
    } else if k < a + b {
        &mut pr.x[k - a]
    } else {
        &mut pr.w[k - a - b]
    }
}

#[test]
fn sparse_jacobian_matches_central_differences() {
    let mut pr = problem();
    let j = jacobian(&pr);
    let (rows, cols) = (3 * pr.p, pr.cams.len() + pr.x.len() + pr.w.len());
    assert_eq!(j.rows.len(), rows + 1);
    assert_eq!(j.rows[0], 0);
    assert_eq!(*j.rows.last().unwrap(), j.cols.len());
    assert_eq!(j.cols.len(), j.vals.len());
    let mut dense = vec![vec![0.0; cols]; rows];
    for r in 0..rows {
        for e in j.rows[r]..j.rows[r + 1] {
            assert!(
                j.cols[e] < cols,
                "row {r}: column {} out of range",
                j.cols[e]
            );
            dense[r][j.cols[e]] += j.vals[e];
        }
    }
    for k in 0..cols {
        let x = *param(&mut pr, k);
        let h = 1e-6 * x.abs().max(1.0);
        *param(&mut pr, k) = x + h;
        let up = residuals(&pr);
        *param(&mut pr, k) = x - h;
        let down = residuals(&pr);
        *param(&mut pr, k) = x;
        for r in 0..rows {
            let fd = (up[r] - down[r]) / (2.0 * h);
            let scale = fd.abs().max(dense[r][k].abs()).max(1.0);
            assert!(
                (fd - dense[r][k]).abs() <= 1e-5 * scale,
                "∂row {r}/∂param {k}: Jacobian {}, differences {fd}",
                dense[r][k]
            );
        }
    }
}
