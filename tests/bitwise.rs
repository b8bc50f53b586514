//! Integer bitwise operators (`& | ^ << >> !` and their assignments) on
//! integers carried by loops of a differentiable function: bit masks and
//! Gray codes choosing which inputs a term multiplies, checked against
//! closed forms and between modes, in the crate's own build profile.
#![deny(warnings)]

mod support;

use linear_ad::{differentiable, LinearMap};

/// Σ over every subset S of the inputs of Π_{i∈S} xᵢ, the subsets
/// visited in Gray-code order and each product read off its bit mask:
/// equal to Π (1 + xᵢ).
#[differentiable]
pub fn subset_products(x: &[f64]) -> f64 {
    let n = x.len();
    let mut seen = 0u64;
    let mut parity = 0u64;
    let mut total = 0.0;
    for k in 0..(1usize << n) {
        let gray = (k ^ (k >> 1)) as u64;
        // Every mask is new: `seen` records the Gray codes' bits so far.
        seen |= gray;
        // The Gray codes are 0..2ⁿ in another order: their XOR is 0 (n ≥ 2).
        parity ^= gray;
        let mut bits = gray & !(u64::MAX << n);
        let mut i = 0usize;
        let mut p = 1.0;
        while bits != 0 {
            if bits & 1 == 1 {
                p *= x[i];
            }
            bits >>= 1;
            i += 1;
        }
        total += p;
    }
    // All n bits were seen, and the XOR is 0: adds zero.
    let missing = !seen & !(u64::MAX << n);
    total + ((missing + parity) as f64) * x[0]
}

/// The first-free-column search of an expansion by minors: each row
/// takes the lowest column its mask leaves free, marks it with `|=`, and
/// the last row's column is cleared again with `&=` and `<<=`.
#[differentiable]
pub fn diagonal_by_mask(a: &[f64], n: usize) -> f64 {
    let mut used = 0u64;
    let mut s = 0.0;
    for row in 0..n {
        let mut col = 0usize;
        while (used >> col) & 1 == 1 {
            col += 1;
        }
        used |= 1 << col;
        let mut probe = 1u64;
        probe <<= col;
        if row + 1 == n {
            used &= !probe;
        }
        s += a[row * n + col] * a[row * n + col];
    }
    // `used` lost the last column again: n - 1 bits remain.
    let t = (used.count_ones() as f64) / ((n - 1) as f64);
    s * t
}

#[test]
fn gray_code_subsets_give_the_product_of_one_plus_each_input() {
    let x = [0.5, -1.25, 2.0, 0.75, 1.5];
    let want: f64 = x.iter().map(|v| 1.0 + v).product();
    assert!(support::close(subset_products(&x), want, 1e-14));
    let (v, grad) = subset_products_vjp(&x, 1.0);
    assert!(support::close(v, want, 1e-14));
    for (j, g) in grad.iter().enumerate() {
        let others: f64 = (0..x.len())
            .filter(|i| *i != j)
            .map(|i| 1.0 + x[i])
            .product();
        assert!(
            support::close(*g, others, 1e-12),
            "∂/∂x{j}: {g} vs {others}"
        );
    }
    support::check(
        &x,
        1,
        |x| vec![subset_products(x)],
        |x, d| vec![subset_products_jvp(x, d).1],
        |x, w| subset_products_vjp(x, w[0]).1,
        |x, d, w| {
            let (_, lin) = subset_products_lin(x);
            (vec![lin.apply(d.to_vec())], lin.transpose(w[0]))
        },
    );
}

#[test]
fn a_mask_carried_by_a_loop_picks_the_diagonal() {
    let n = 3;
    let a: Vec<f64> = (0..n * n).map(|i| 0.5 + i as f64 * 0.25).collect();
    let diag: f64 = (0..n).map(|i| a[i * n + i] * a[i * n + i]).sum();
    assert!(support::close(diagonal_by_mask(&a, n), diag, 1e-14));
    let (v, grad) = diagonal_by_mask_vjp(&a, n, 1.0);
    assert_eq!(v, diagonal_by_mask(&a, n));
    for (k, g) in grad.iter().enumerate() {
        let want = if k % (n + 1) == 0 { 2.0 * a[k] } else { 0.0 };
        assert_eq!(*g, want, "element {k}");
    }
}
