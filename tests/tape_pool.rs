//! Loop tapes are recycled (`linear_ad::tape_pool`): a gradient computed
//! again takes its tapes from the buffers the previous one freed, with the
//! same results, and nothing of the caller's changes.
//!
//! Each test runs on its own thread, so each has a pool of its own.

// Index loops, as numeric code is often written.
#![allow(clippy::needless_range_loop)]

use linear_ad::{differentiable, tape_pool, LinearMap};

/// A range loop (its trip count known when its tape is allocated) and a
/// `while` loop (a tape that grows).
#[differentiable]
pub fn walk(x: &[f64], #[nondiff] steps: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += (x[i] * s).sin() + x[i];
    }
    let mut k = 0usize;
    while k < steps {
        s = s * 0.999 + (s * 0.5).cos();
        k += 1;
    }
    s
}

/// A loop inside a loop: the inner loop's tapes are held by the outer
/// one's records.
#[differentiable]
pub fn grid(x: &[f64], #[nondiff] rows: usize) -> f64 {
    let mut total = 0.0;
    for r in 0..rows {
        let t = r as f64 / rows as f64;
        let mut acc = 0.0;
        for j in 0..x.len() {
            acc += (x[j] * t).exp();
        }
        total += acc.ln();
    }
    total
}

fn input(n: usize) -> Vec<f64> {
    (0..n).map(|i| ((i as f64) * 0.37).sin() * 0.1).collect()
}

#[test]
fn a_second_gradient_reuses_the_first_ones_tapes() {
    let x = input(100_000);
    tape_pool::release();
    let (y1, g1) = walk_vjp(&x, 50_000, 1.0);
    let held = tape_pool::pooled();
    // Both loops' records went back to the pool (8 bytes each at least).
    assert!(held >= (100_000 + 50_000) * 8, "{held} bytes pooled");
    let (y2, g2) = walk_vjp(&x, 50_000, 1.0);
    assert_eq!(y1.to_bits(), y2.to_bits());
    assert!(g1.iter().zip(&g2).all(|(a, b)| a.to_bits() == b.to_bits()));
    assert_eq!(
        tape_pool::pooled(),
        held,
        "the same buffers, taken and given back"
    );
}

#[test]
fn recycling_changes_no_result() {
    let x = input(20_000);
    tape_pool::release();
    let (y1, g1) = walk_vjp(&x, 30_000, 1.0);
    let (h1, k1) = grid_vjp(&x, 40, 1.0);
    tape_pool::set_limit(0);
    let (y0, g0) = walk_vjp(&x, 30_000, 1.0);
    let (h0, k0) = grid_vjp(&x, 40, 1.0);
    tape_pool::set_limit(256 << 20);
    assert_eq!(
        tape_pool::pooled(),
        0,
        "nothing was pooled with a limit of 0"
    );
    assert_eq!((y1.to_bits(), h1.to_bits()), (y0.to_bits(), h0.to_bits()));
    assert_eq!(g1, g0);
    assert_eq!(k1, k0);
}

#[test]
fn a_linearization_holds_its_tapes_until_it_is_dropped() {
    let x = input(100_000);
    tape_pool::release();
    let (y, lin) = walk_lin(&x, 10);
    assert_eq!(tape_pool::pooled(), 0, "the tapes are in use");
    let g = lin.transpose(1.0);
    let d = lin.apply(x.clone());
    // The dot-product identity, from one tape read twice.
    let gx: f64 = g.iter().zip(&x).map(|(a, b)| a * b).sum();
    assert!(
        (gx - d).abs() <= 1e-9 * gx.abs().max(1.0),
        "{gx} against {d}"
    );
    drop(lin);
    assert!(tape_pool::pooled() >= 100_000 * 8);
    let (y2, _) = walk_lin(&x, 10);
    assert_eq!(y.to_bits(), y2.to_bits());
}

#[test]
fn gradients_agree_with_finite_differences_through_nested_tapes() {
    let x = input(64);
    let (_, g) = grid_vjp(&x, 8, 1.0);
    let (_, g_again) = grid_vjp(&x, 8, 1.0);
    assert_eq!(g, g_again);
    for k in [0, 17, 63] {
        let h = 1e-6;
        let mut xp = x.clone();
        xp[k] += h;
        let mut xm = x.clone();
        xm[k] -= h;
        let fd = (grid(&xp, 8) - grid(&xm, 8)) / (2.0 * h);
        assert!(
            (fd - g[k]).abs() <= 1e-6 * fd.abs().max(1.0),
            "{k}: {fd} against {}",
            g[k]
        );
    }
}
