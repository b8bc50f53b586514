//! Reversed loops entered with zero cotangents are skipped
//! (`Loop::zero_skip`): a `min` passes the derivative to one side only,
//! so the reverse pass runs the other side's loop only where that side
//! was selected. The derivatives are those of the loops run in full:
//! checked against finite differences and forward mode, first and second
//! order, with the selected side changing from point to point. Where the
//! side not selected has an infinite coefficient (`sqrt` at 0), running
//! its loop would add `0 × ∞`, a NaN, to the gradient; skipped, it adds
//! nothing, which is the derivative.
#![deny(warnings)]

mod support;

use linear_ad::differentiable;
use support::{assert_close, close, dot, fd_along};

/// The k-means cost: for each point, the smallest squared distance to a
/// centroid (`k` rows of `d` in `c`), summed.
#[differentiable(order = 2)]
pub fn nearest(#[nondiff] p: &[f64], c: &[f64], #[nondiff] d: usize) -> f64 {
    let mut total = 0.0;
    for i in 0..p.len() / d {
        let mut closest = f64::MAX;
        for j in 0..c.len() / d {
            let mut dist = 0.0;
            for l in 0..d {
                let e = c[j * d + l] - p[i * d + l];
                dist += e * e;
            }
            closest = closest.min(dist);
        }
        total += closest;
    }
    total
}

fn data() -> (Vec<f64>, Vec<f64>) {
    let p: Vec<f64> = (0..24)
        .map(|i| ((i * 7 % 11) as f64 * 0.37).sin())
        .collect();
    // Each centroid near one of the first three points.
    let c: Vec<f64> = (0..9).map(|i| p[i] + 0.05 * (i as f64).cos()).collect();
    (p, c)
}

#[test]
fn skipped_loops_leave_the_gradient_of_the_loops_run_in_full() {
    let (p, c) = data();
    let d = 3;
    // Every centroid is nearest to some point, so every centroid's loop
    // over coordinates runs backwards for some points and is skipped for
    // the others.
    let nearest_to = |i: usize| {
        (0..3)
            .min_by(|&a, &b| {
                let dist = |j: usize| {
                    (0..d)
                        .map(|l| (c[j * d + l] - p[i * d + l]).powi(2))
                        .sum::<f64>()
                };
                dist(a).total_cmp(&dist(b))
            })
            .unwrap()
    };
    let mut chosen: Vec<usize> = (0..8).map(nearest_to).collect();
    chosen.sort();
    chosen.dedup();
    assert_eq!(
        chosen,
        vec![0, 1, 2],
        "every centroid is nearest to a point"
    );
    let (v, g) = nearest_vjp(&p, &c, d, 1.0);
    assert_eq!(v, nearest(&p, &c, d));
    let f = |c: &[f64]| vec![nearest(&p, c, d)];
    for k in 0..c.len() {
        let mut e = vec![0.0; c.len()];
        e[k] = 1.0;
        let fd = fd_along(f, &c, &e)[0];
        assert!(
            close(g[k], fd, 1e-6),
            "component {k}: {} against {fd}",
            g[k]
        );
    }
    let dc: Vec<f64> = (0..c.len()).map(|i| (i as f64 * 0.9).sin()).collect();
    let (_, dv) = nearest_jvp(&p, &c, d, &dc);
    assert!(
        close(dv, dot(&g, &dc), 1e-12),
        "{dv} against {}",
        dot(&g, &dc)
    );
}

#[test]
fn skipped_loops_leave_the_hessian_vector_product() {
    let (p, c) = data();
    let d = 3;
    let dc: Vec<f64> = (0..c.len()).map(|i| (i as f64 * 0.4).cos()).collect();
    let (_, g, hv) = nearest_hvp(&p, &c, d, &dc);
    assert_eq!(g, nearest_vjp(&p, &c, d, 1.0).1);
    let grad = |c: &[f64]| nearest_vjp(&p, c, d, 1.0).1;
    assert_close(&hv, &fd_along(grad, &c, &dc), 1e-6);
}

/// The smaller of `x` and a sum of square roots.
#[differentiable]
pub fn capped(x: f64, ys: &[f64]) -> f64 {
    let mut s = 0.0;
    for y in ys.iter() {
        s += y.sqrt();
    }
    x.min(s)
}

#[test]
fn a_side_not_selected_adds_nothing_even_through_an_infinite_slope() {
    // `x` is smaller: the sum gets no cotangent, and `sqrt`'s slope at 0
    // is infinite. The derivative in `ys` is 0.
    let ys = [0.0, 1.0, 4.0];
    let (v, (gx, gys)) = capped_vjp(-1.0, &ys, 1.0);
    assert_eq!(v, -1.0);
    assert_eq!(gx, 1.0);
    assert_eq!(gys, vec![0.0, 0.0, 0.0]);
    // Selected, the sum's loop runs, and the slope at 0 is infinite.
    let (_, (gx, gys)) = capped_vjp(10.0, &ys, 1.0);
    assert_eq!(gx, 0.0);
    assert_eq!(gys[1..], [0.5, 0.25]);
    assert!(gys[0].is_infinite());
}
