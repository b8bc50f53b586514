//! Arrays read by index: slices, `Vec`s and references to fixed-size
//! arrays as parameters, dynamic indexing, `len`, iteration and
//! reductions. Each function is checked against finite differences and
//! forward against reverse mode (the dot-product identity), in debug and
//! release builds alike.

use linear_ad::{differentiable, LinearMap};

#[differentiable]
fn rosenbrock(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
    }
    s
}

#[differentiable]
fn dot(x: &[f64], y: &[f64]) -> f64 {
    x.iter().zip(y.iter()).map(|(a, b)| a * b).sum::<f64>()
}

// `&Vec<T>` is accepted as written (clippy prefers `&[T]`).
#[allow(clippy::ptr_arg)]
#[differentiable]
fn log_sum_exp(x: &Vec<f64>) -> f64 {
    let mut m = x[0];
    for &v in x.iter() {
        if v > m {
            m = v;
        }
    }
    let mut s = 0.0;
    for v in x {
        s += (*v - m).exp();
    }
    m + s.ln()
}

#[differentiable]
fn least_squares(w: &[f64; 2], #[nondiff] xs: &[f64], #[nondiff] ys: &[f64]) -> f64 {
    let mut loss = 0.0;
    for (k, &x) in xs.iter().enumerate() {
        let r = w[0] * x + w[1] - ys[k];
        loss += r * r;
    }
    loss / xs.len() as f64
}

#[differentiable]
fn weighted(p: Vec<(f64, f64)>, s: f64) -> (f64, f64) {
    let mut a = 0.0;
    let mut b = 0.0;
    for (i, q) in p.iter().enumerate().rev() {
        a += q.0 * s * (i as f64 + 1.0);
        b += q.1 * q.0;
    }
    (a, b)
}

#[differentiable]
fn weighted_by_data(x: f64, #[nondiff] w: &[f64]) -> f64 {
    let mut s = 0.0;
    for wi in w.iter() {
        s += wi * x;
    }
    s
}

/// Log-sum-exp with `f64::max`: the max's derivative selects one of its
/// operands by a 0/1 coefficient `c` and its complement `1 - c`.
#[differentiable]
fn lse_by_max(x: &[f64]) -> f64 {
    let mut m = x[0];
    for v in x.iter() {
        m = m.max(*v);
    }
    let mut s = 0.0;
    for v in x.iter() {
        s += (v - m).exp();
    }
    m + s.ln()
}

#[differentiable]
fn fold_max(x: &[f64]) -> f64 {
    x.iter().fold(0.0, |acc, v| acc * 0.5 + v.sin())
}

/// x' A x with A stored row-major in a slice: nested loops over two arrays
/// with a computed index.
#[differentiable]
fn quadratic_form(a: &[f64], x: &[f64], n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        let mut row = 0.0;
        for j in 0..n {
            row += a[i * n + j] * x[j];
        }
        s += x[i] * row;
    }
    s
}

/// A branch inside the loop, in single precision.
#[differentiable]
fn relu_sum(x: &[f32], w: f32) -> f32 {
    let mut s = 0.0;
    for &v in x.iter() {
        if v * w > 0.0 {
            s += v * w;
        }
    }
    s
}

/// A fixed-size array by reference, closures with typed parameters.
#[differentiable]
fn norm3(p: &[f64; 3]) -> f64 {
    p.iter().map(|v: &f64| v * v).sum::<f64>().sqrt()
}

/// Binomial checkpointing asked for a loop that reads an array by its
/// index: the index is needed by the reverse sweep, so the loop falls back
/// to saving its records, with the same derivatives.
#[allow(clippy::needless_range_loop)]
#[differentiable(checkpoint = "binomial", snapshots = 4)]
fn decay(x: &[f64], k: f64) -> f64 {
    let mut s = 1.0;
    for i in 0..x.len() {
        s = s * (k * x[i]).tanh() + 0.5;
    }
    s
}

const H: f64 = 1e-6;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs() + b.abs())
}

/// Central differences of `f` at `x` along each coordinate.
fn fd(f: impl Fn(&[f64]) -> f64, x: &[f64]) -> Vec<f64> {
    (0..x.len())
        .map(|i| {
            let (mut a, mut b) = (x.to_vec(), x.to_vec());
            a[i] += H;
            b[i] -= H;
            (f(&a) - f(&b)) / (2.0 * H)
        })
        .collect()
}

#[test]
fn rosenbrock_gradient_matches_finite_differences_and_modes() {
    let x = [0.3, -1.2, 0.8, 1.1, 0.5];
    let (y, g) = rosenbrock_vjp(&x, 1.0);
    assert_eq!(y, rosenbrock(&x));
    let want = fd(rosenbrock, &x);
    assert_eq!(g.len(), x.len());
    for (a, b) in g.iter().zip(&want) {
        assert!(close(*a, *b, 1e-6), "{g:?} vs {want:?}");
    }
    // Forward along a direction equals the gradient's dot product with it.
    let dx = [0.1, 0.2, -0.3, 0.4, -0.5];
    let (y2, dy) = rosenbrock_jvp(&x, &dx);
    assert_eq!(y2, y);
    let expect: f64 = g.iter().zip(&dx).map(|(a, b)| a * b).sum();
    assert!(close(dy, expect, 1e-12));
    // One tape, both directions.
    let (y3, map) = rosenbrock_lin(&x);
    assert_eq!(y3, y);
    assert!(close(map.apply(dx.to_vec()), dy, 1e-12));
    assert_eq!(map.transpose(1.0), g);
}

#[test]
fn dot_product_of_two_slices() {
    let (x, y) = ([1.0, 2.0, 3.0], [4.0, -5.0, 6.0]);
    let (v, (gx, gy)) = dot_vjp(&x, &y, 2.0);
    assert_eq!(v, 12.0);
    assert_eq!(v, dot(&x, &y));
    assert_eq!(gx, vec![8.0, -10.0, 12.0]);
    assert_eq!(gy, vec![2.0, 4.0, 6.0]);
    // `zip` stops at the shorter slice, as the original does.
    let (v, (gx, gy)) = dot_vjp(&x[..2], &y, 1.0);
    assert_eq!(v, -6.0);
    assert_eq!((gx, gy), (vec![4.0, -5.0], vec![1.0, 2.0, 0.0]));
}

#[test]
fn log_sum_exp_with_the_max_shift() {
    let x = vec![0.5, 2.0, -1.0, 1.5];
    let (y, g) = log_sum_exp_vjp(&x, 1.0);
    let direct = x.iter().map(|v| v.exp()).sum::<f64>().ln();
    assert!(close(y, direct, 1e-14));
    assert_eq!(y, log_sum_exp(&x));
    // The gradient is the softmax (the shift's derivative cancels).
    let z: f64 = x.iter().map(|v| v.exp()).sum();
    for (gi, xi) in g.iter().zip(&x) {
        assert!(close(*gi, xi.exp() / z, 1e-12), "{g:?}");
    }
}

#[test]
fn least_squares_over_nondiff_data() {
    let xs = [0.0, 1.0, 2.0, 3.0];
    let ys = [1.0, 3.2, 4.9, 7.1];
    let w = [1.5, 0.5];
    let (l, g) = least_squares_vjp(&w, &xs, &ys, 1.0);
    assert!(close(l, least_squares(&w, &xs, &ys), 1e-15));
    let want = fd(|w| least_squares(&[w[0], w[1]], &xs, &ys), &w);
    for (a, b) in g.iter().zip(&want) {
        assert!(close(*a, *b, 1e-6), "{g:?} vs {want:?}");
    }
}

#[test]
fn vec_of_tuples_by_value_reversed_enumeration() {
    let p = vec![(1.0, 2.0), (3.0, -1.0), (0.5, 0.25)];
    let s = 0.7;
    let (y, (gp, gs)) = weighted_vjp(p.clone(), s, (1.0, 0.0));
    assert_eq!(y, weighted(p.clone(), s));
    // d a / d p_i.0 = s (i + 1); d a / d s = sum p_i.0 (i + 1).
    for (i, g) in gp.iter().enumerate() {
        assert!(close(g.0, s * (i as f64 + 1.0), 1e-15));
        assert_eq!(g.1, 0.0);
    }
    assert!(close(gs, 1.0 + 6.0 + 1.5, 1e-15));
    let (_, (gp, gs)) = weighted_vjp(p.clone(), s, (0.0, 1.0));
    assert_eq!(gs, 0.0);
    assert_eq!(gp, vec![(2.0, 1.0), (-1.0, 3.0), (0.25, 0.5)]);
    let (_, dy) = weighted_jvp(p.clone(), s, vec![(1.0, 0.0); 3], 0.0);
    assert!(close(dy.0, s * 6.0, 1e-15));
}

#[test]
fn iteration_over_nondiff_data() {
    let w = [0.5, -2.0, 4.0];
    let (y, g) = weighted_by_data_vjp(1.5, &w, 1.0);
    assert_eq!(y, weighted_by_data(1.5, &w));
    assert_eq!(g, 2.5);
    assert_eq!(weighted_by_data_jvp(1.5, &w, 2.0).1, 5.0);
}

/// `fold` from a float type's constant: the accumulator is typed by it.
#[differentiable]
fn soft_max(x: &[f64], beta: f64) -> f64 {
    let m = x.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let s: f64 = x.iter().map(|&v| ((v - m) * beta).exp()).sum();
    m + s.ln() / beta
}

#[test]
fn fold_from_a_float_constant() {
    let x = [0.5, 2.0, -1.0];
    let (y, (g, _)) = soft_max_vjp(&x, 3.0, 1.0);
    assert_eq!(y, soft_max(&x, 3.0));
    // The gradient of a log-sum-exp is the softmax: it sums to 1.
    assert!(close(g.iter().sum::<f64>(), 1.0, 1e-14), "{g:?}");
    let e: Vec<f64> = x.iter().map(|v| ((v - 2.0) * 3.0f64).exp()).collect();
    let z: f64 = e.iter().sum();
    for (gi, ei) in g.iter().zip(&e) {
        assert!(close(*gi, ei / z, 1e-14), "{gi} vs {}", ei / z);
    }
}

/// `fold` given a float's method by its path (`f64::max`, `f64::min`)
/// instead of a closure.
#[differentiable]
fn spread_by_paths(x: &[f64]) -> f64 {
    let hi = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lo = x.iter().copied().fold(f64::INFINITY, f64::min);
    (hi - lo) * x.iter().copied().fold(0.0, f64::hypot)
}

#[test]
fn fold_with_a_method_path() {
    let x = [0.5, 2.0, -1.0];
    let (y, g) = spread_by_paths_vjp(&x, 1.0);
    assert_eq!(y, spread_by_paths(&x));
    // (max - min) · ‖x‖: by hand, 3 · ‖x‖ with ‖x‖ = √5.25.
    let n = 5.25f64.sqrt();
    assert!(close(y, 3.0 * n, 1e-14));
    let want = [1.5 / n, n + 6.0 / n, -n - 3.0 / n];
    for (gi, wi) in g.iter().zip(want) {
        assert!(close(*gi, wi, 1e-14), "{g:?} vs {want:?}");
    }
}

/// Windows and chunks in reductions and collections, and a `for` over
/// windows: total variation, the trapezoid rule, first differences, and
/// products within chunks (the last one shorter).
#[differentiable]
fn total_variation(x: &[f64]) -> f64 {
    x.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f64>()
}

#[differentiable]
fn trapezoid(y: &[f64], h: f64) -> f64 {
    let mut s = 0.0;
    for w in y.windows(2) {
        s += 0.5 * h * (w[0] + w[1]);
    }
    s
}

#[differentiable]
fn first_differences(x: &[f64]) -> Vec<f64> {
    x.windows(2).map(|w| w[1] - w[0]).collect()
}

#[differentiable]
fn chunk_ends(x: &[f64]) -> f64 {
    x.chunks(2).map(|c| c[0] * c[c.len() - 1]).sum::<f64>()
}

/// Maps of maps: `Σ pᵢ²` of the softmax `p`.
#[differentiable]
fn softmax_purity(x: &[f64]) -> f64 {
    let e: Vec<f64> = x.iter().map(|a| a.exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).map(|p| p * p).sum::<f64>()
}

#[test]
fn maps_of_maps() {
    let x = [0.5, 2.0, -1.0];
    let (v, g) = softmax_purity_vjp(&x, 1.0);
    assert_eq!(v, softmax_purity(&x));
    let z: f64 = x.iter().map(|a| a.exp()).sum();
    let p: Vec<f64> = x.iter().map(|a| a.exp() / z).collect();
    let q: f64 = p.iter().map(|p| p * p).sum();
    assert!(close(v, q, 1e-15));
    // ∂(Σ p²)/∂xⱼ = 2 pⱼ (pⱼ - Σ p²).
    for j in 0..3 {
        let want = 2.0 * p[j] * (p[j] - q);
        assert!(close(g[j], want, 1e-14), "{g:?}");
    }
}

#[test]
fn windows_and_chunks_in_reductions() {
    let x = [0.5, 2.0, -1.0, 0.25, 3.0];
    let (v, g) = total_variation_vjp(&x, 1.0);
    assert_eq!(v, total_variation(&x));
    assert_eq!(v, 1.5 + 3.0 + 1.25 + 2.75);
    // ∂/∂xᵢ of Σ|xᵢ₊₁ - xᵢ|: the signs of the differences on each side.
    assert_eq!(g, vec![-1.0, 2.0, -2.0, 0.0, 1.0]);
    let (t, (gy, gh)) = trapezoid_vjp(&x, 0.1, 1.0);
    assert_eq!(t, trapezoid(&x, 0.1));
    for (g, w) in gy.iter().zip([0.05, 0.1, 0.1, 0.1, 0.05]) {
        assert!(close(*g, w, 1e-15), "{gy:?}");
    }
    assert!(close(gh, t / 0.1, 1e-14));
    let dx = [1.0, 0.0, 0.0, 0.0, 2.0];
    let (d, dd) = first_differences_jvp(&x, &dx);
    assert_eq!(d, first_differences(&x));
    assert_eq!(dd, vec![-1.0, 0.0, 0.0, 2.0]);
    // Chunks [0.5, 2], [-1, 0.25], [3]: 0.5·2 - 0.25 + 9.
    let (c, gc) = chunk_ends_vjp(&x, 1.0);
    assert_eq!(c, chunk_ends(&x));
    assert_eq!(c, 1.0 - 0.25 + 9.0);
    assert_eq!(gc, vec![2.0, 0.5, 0.25, -1.0, 6.0]);
    // Fewer elements than a window: no window.
    assert_eq!(total_variation_vjp(&[1.5], 1.0), (0.0, vec![0.0]));
}

#[test]
fn fold_reduction() {
    let x = [0.2, -0.4, 1.3];
    let (y, g) = fold_max_vjp(&x, 1.0);
    assert!(close(y, fold_max(&x), 1e-15));
    let want = fd(fold_max, &x);
    for (a, b) in g.iter().zip(&want) {
        assert!(close(*a, *b, 1e-6), "{g:?} vs {want:?}");
    }
}

#[test]
#[allow(clippy::needless_range_loop)]
fn out_of_bounds_panics_as_the_original() {
    #[differentiable]
    fn third(x: &[f64]) -> f64 {
        x[2] * 2.0
    }
    assert!(std::panic::catch_unwind(|| third(&[1.0])).is_err());
    assert!(std::panic::catch_unwind(|| third_vjp(&[1.0], 1.0)).is_err());
    assert_eq!(third_vjp(&[1.0, 2.0, 3.0], 1.0).1, vec![0.0, 0.0, 2.0]);
}

#[test]
fn quadratic_form_over_a_flat_matrix() {
    let a = [2.0, 1.0, 0.5, 1.0, 3.0, -1.0, 0.5, -1.0, 4.0];
    let x = [0.3, -0.7, 1.1];
    let (v, (ga, gx)) = quadratic_form_vjp(&a, &x, 3, 1.0);
    assert!(close(v, quadratic_form(&a, &x, 3), 1e-15));
    // d/dx (x'Ax) = (A + A')x, d/dA_ij = x_i x_j.
    for i in 0..3 {
        let want: f64 = (0..3).map(|j| (a[i * 3 + j] + a[j * 3 + i]) * x[j]).sum();
        assert!(close(gx[i], want, 1e-14), "{gx:?}");
        for j in 0..3 {
            assert!(close(ga[i * 3 + j], x[i] * x[j], 1e-14));
        }
    }
    let (_, dv) = quadratic_form_jvp(&a, &x, 3, &[0.0; 9], &[1.0, 0.0, 0.0]);
    assert!(close(dv, gx[0], 1e-14));
}

#[test]
fn branch_in_a_loop_in_single_precision() {
    let x = [0.5f32, -1.0, 2.0, -0.25];
    let (s, (gx, gw)) = relu_sum_vjp(&x, 1.5, 1.0);
    assert_eq!(s, relu_sum(&x, 1.5));
    assert_eq!(gx, vec![1.5, 0.0, 1.5, 0.0]);
    assert_eq!(gw, 2.5);
    let (_, ds) = relu_sum_jvp(&x, -1.0, &[0.0; 4], 1.0);
    assert_eq!(ds, -1.25);
}

#[test]
fn fixed_size_array_by_reference() {
    let p = [1.0, 2.0, 2.0];
    let (n, g) = norm3_vjp(&p, 1.0);
    assert_eq!(n, 3.0);
    assert_eq!(n, norm3(&p));
    let g: [f64; 3] = g;
    assert!(g.iter().zip(&p).all(|(gi, pi)| close(*gi, pi / 3.0, 1e-15)));
    let (_, dn) = norm3_jvp(&p, &[0.0, 3.0, 0.0]);
    assert!(close(dn, 2.0, 1e-15));
    let (_, map) = norm3_lin(&p);
    assert!(close(map.apply([1.0, 0.0, 0.0]), 1.0 / 3.0, 1e-15));
}

#[test]
fn binomial_request_on_an_array_loop_falls_back() {
    let x = [0.2, -0.5, 0.9, 0.1, -0.3];
    let (v, (gx, gk)) = decay_vjp(&x, 0.7, 1.0);
    assert!(close(v, decay(&x, 0.7), 1e-15));
    let want = fd(|x| decay(x, 0.7), &x);
    for (a, b) in gx.iter().zip(&want) {
        assert!(close(*a, *b, 1e-6), "{gx:?} vs {want:?}");
    }
    let dk = (decay(&x, 0.7 + H) - decay(&x, 0.7 - H)) / (2.0 * H);
    assert!(close(gk, dk, 1e-6));
}

/// `f_lin` keeps input arrays without copying their elements: borrowed
/// (the linearization's lifetime is the inputs'), or moved in when `f`
/// takes a `Vec` by value. Forward and reverse from one tape agree.
#[test]
fn linearizations_keep_their_input_arrays() {
    let (x, y) = (vec![1.0, -2.0, 0.5], vec![0.25, 4.0, -1.0]);
    let (v, map) = dot_lin(&x, &y);
    assert_eq!(v, dot(&x, &y));
    let (dx, dy) = (vec![0.5, 0.5, -1.0], vec![1.0, 0.0, 2.0]);
    let forward = map.apply((dx.clone(), dy.clone()));
    let (cx, cy) = map.transpose(1.0);
    let reverse: f64 = cx
        .iter()
        .zip(&dx)
        .chain(cy.iter().zip(&dy))
        .map(|(a, b)| a * b)
        .sum();
    assert!(close(forward, reverse, 1e-15));
    assert_eq!((cx, cy), (y.clone(), x.clone()));

    let p = vec![(1.0, 2.0), (3.0, -1.0)];
    let (w, map) = weighted_lin(p.clone(), 0.5);
    assert_eq!(w, weighted(p, 0.5));
    let (gp, gs) = map.transpose((1.0, 1.0));
    let dp = vec![(0.1, 0.2), (-0.3, 0.4)];
    let (da, db) = map.apply((dp.clone(), 2.0));
    let lhs = da + db;
    let rhs: f64 = gp
        .iter()
        .zip(&dp)
        .map(|(g, d)| g.0 * d.0 + g.1 * d.1)
        .sum::<f64>()
        + gs * 2.0;
    assert!(close(lhs, rhs, 1e-14));
}

/// Rosenbrock kept in full: every intermediate its derivative reads, per
/// element.
#[differentiable(checkpoint = "save")]
fn rosenbrock_saved(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
    }
    s
}

/// The default policy keeps nothing per element for a reduction over an
/// array (the reverse sweep reads the array again and recomputes, as a
/// hand-written adjoint does); `"save"` keeps the intermediates. Both give
/// the same gradient, bit for bit.
#[test]
fn reductions_keep_no_per_element_tape() {
    use linear_ad::TapeSize;
    let bytes = |n: usize| {
        let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
        assert_eq!(rosenbrock(&x), rosenbrock_saved(&x));
        assert_eq!(rosenbrock_vjp(&x, 1.0), rosenbrock_saved_vjp(&x, 1.0));
        (
            rosenbrock_lin(&x).1.tape_bytes(),
            rosenbrock_saved_lin(&x).1.tape_bytes(),
        )
    };
    let ((small, small_saved), (large, large_saved)) = (bytes(10), bytes(1000));
    assert_eq!(small, large, "the default tape grows with n");
    assert!(
        large_saved >= small_saved + 990 * 8,
        "{small_saved} {large_saved}"
    );
}

/// Autocorrelation at lag `j`, a parameter: the index `i + j` is computed
/// from the loop index and a value bound once, outside the loop.
#[differentiable]
fn lagged(x: &[f64], j: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - j {
        s += x[i] * x[i + j];
    }
    s
}

/// Column `j` of points, a parameter: a run-time column of a row.
#[allow(clippy::needless_range_loop)]
#[differentiable]
fn column_norm(p: &[[f64; 3]], j: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..p.len() {
        s += p[i][j] * p[i][j];
    }
    s
}

/// A parameter read inside a loop (an index offset, a column) is bound
/// once at the top of the function: the reverse pass reads it from the
/// tape once, not from a record per iteration.
#[test]
fn loop_invariant_indices_keep_no_per_iteration_record() {
    use linear_ad::TapeSize;
    let x: Vec<f64> = (0..1000).map(|i| (i as f64 * 0.37).sin()).collect();
    let (y, g) = lagged_vjp(&x, 3, 1.0);
    assert_eq!(y, lagged(&x, 3));
    for (k, gk) in g.iter().enumerate() {
        let left = if k >= 3 { x[k - 3] } else { 0.0 };
        let right = if k + 3 < x.len() { x[k + 3] } else { 0.0 };
        assert!(close(*gk, left + right, 1e-15), "{k}");
    }
    assert_eq!(
        lagged_lin(&x[..10], 3).1.tape_bytes(),
        lagged_lin(&x, 3).1.tape_bytes()
    );
    let p: Vec<[f64; 3]> = (0..500).map(|i| [i as f64, 0.5, -(i as f64)]).collect();
    let (y, gp) = column_norm_vjp(&p, 2, 1.0);
    assert_eq!(y, column_norm(&p, 2));
    assert_eq!(gp[7], [0.0, 0.0, -14.0]);
    assert_eq!(
        column_norm_lin(&p[..5], 2).1.tape_bytes(),
        column_norm_lin(&p, 2).1.tape_bytes()
    );
}

#[test]
fn the_max_loop_records_one_value_per_element() {
    let x = vec![0.5, 2.0, -1.0, 1.5, 2.0];
    let (y, g) = lse_by_max_vjp(&x, 1.0);
    assert_eq!(y, lse_by_max(&x));
    let z: f64 = x.iter().map(|v| v.exp()).sum();
    assert!(close(y, z.ln(), 1e-14));
    // The softmax; at the tie the max's derivative goes to one operand.
    for (gi, xi) in g.iter().zip(&x) {
        assert!(close(*gi, xi.exp() / z, 1e-12), "{g:?}");
    }
    // Per element, the max loop saves its coefficient `c` (8 bytes) and
    // computes `1 - c` again; the index comes from the range again; the
    // sum of exponentials reads `x` again but saves each `exp` (8 bytes),
    // which would cost more to compute twice than to store and load.
    let bytes = |n: usize| {
        let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.9).sin()).collect();
        linear_ad::TapeSize::tape_bytes(&lse_by_max_lin(&x).1)
    };
    assert_eq!(bytes(300) - bytes(100), 200 * (8 + 8));
}

/// Points stored flat, two coordinates each, visited with `chunks(2)`.
#[differentiable]
pub fn nearest(p: &[f64], q: (f64, f64)) -> f64 {
    let mut best = f64::INFINITY;
    for c in p.chunks(2) {
        best = best.min((c[0] - q.0).hypot(c[1] - q.1));
    }
    best
}

/// `chunks_exact` drops the remainder; `chunks`' last chunk is shorter.
#[differentiable]
pub fn chunk_products(p: &[f64]) -> (f64, f64) {
    let mut exact = 0.0;
    for c in p.chunks_exact(3) {
        exact += c[0] * c[1] * c[2];
    }
    let mut ragged = 0.0;
    for c in p.chunks(2) {
        ragged += c[c.len() - 1] * c.len() as f64;
    }
    (exact, ragged)
}

#[test]
fn loops_over_chunks() {
    let (d, (gp, gq)) = nearest_vjp(&[0.0, 0.0, 3.0, 4.0], (3.0, 3.0), 1.0);
    assert_eq!(d, 1.0);
    assert_eq!(gp, vec![0.0, 0.0, 0.0, 1.0]);
    assert_eq!(gq, (0.0, -1.0));
    let p = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0];
    // exact: 1·2·3 + 4·5·6; ragged: 2·2 + 4·2 + 6·2 + 7·1.
    let ((e, r), g) = chunk_products_vjp(&p, (1.0, 1.0));
    assert_eq!((e, r), (126.0, 31.0));
    assert_eq!(g, vec![6.0, 5.0, 2.0, 32.0, 24.0, 22.0, 1.0]);
}
