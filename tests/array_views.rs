//! Fixed-size arrays held by value indexed by a run-time integer (issue
//! 10): a `[f64; N]` parameter and a struct's array field read as `a[i]`
//! in `for` and `while` loops, nested loops, a loop inside a branch, and
//! straight-line code indexed by a constant parameter. Each array is
//! copied once into a local array before the loop that reads it
//! (`linear_core::lower::view`). Each function is checked against plain
//! Rust written otherwise (where there is a shorter way to write it), by
//! central differences of the function as written, the dot-product
//! identity and agreement of its three modes.

#![deny(warnings)]

mod support;

use linear_ad::{differentiable, Differentiable, LinearMap};
use support::{assert_close, check};

/// `for` over a range, two arrays held by value.
#[differentiable]
fn weighted(a: [f64; 4], w: [f64; 4]) -> f64 {
    let mut s = 0.0;
    for i in 0..4 {
        s += w[i] * a[i].sin();
    }
    s
}

fn weighted_by_hand(a: [f64; 4], w: [f64; 4]) -> f64 {
    (0..4).map(|i| w[i] * a[i].sin()).sum()
}

#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Body {
    pub pos: [f64; 3],
    pub vel: [f64; 3],
    pub mass: f64,
}

/// A struct's array fields, nested loops (an outer product), a loop
/// inside a branch and a `while` loop.
#[differentiable]
fn moments(b: &Body, k: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        for j in 0..3 {
            s += b.pos[i] * b.vel[j] * (i as f64 - j as f64);
        }
    }
    if k > 0.0 {
        for i in 0..3 {
            s += k * b.vel[i] * b.vel[i];
        }
    } else {
        s -= k * b.mass;
    }
    let mut n = 0;
    while n < 3 && b.pos[n] < 10.0 {
        s += b.mass * b.pos[n];
        n += 1;
    }
    s
}

/// Straight-line code indexed by a constant parameter, and a loop that
/// writes another array while it reads this one.
#[differentiable]
fn picked(a: [f64; 3], #[nondiff] k: usize) -> f64 {
    let mut c = [0.0; 3];
    for i in 0..3 {
        c[i] = a[i] * a[(i + 1) % 3];
    }
    a[k] * a[k] + c[k]
}

fn picked_by_hand(a: [f64; 3], k: usize) -> f64 {
    let c: Vec<f64> = (0..3).map(|i| a[i] * a[(i + 1) % 3]).collect();
    a[k] * a[k] + c[k]
}

/// A row read by value from an array of rows, indexed by the inner loop:
/// its copy is made per row, before the inner loop.
#[differentiable]
fn weighted_rows(pts: &[[f64; 3]]) -> f64 {
    let mut s = 0.0;
    for p in pts.iter() {
        for j in 0..3 {
            s += p[j].abs() * (j as f64 + 1.0) * p[(j + 1) % 3];
        }
    }
    s
}

fn weighted_rows_by_hand(pts: &[[f64; 3]]) -> f64 {
    let mut s = 0.0;
    for p in pts {
        for j in 0..3 {
            s += p[j].abs() * (j as f64 + 1.0) * p[(j + 1) % 3];
        }
    }
    s
}

#[test]
fn rows_copied_from_an_array_of_rows() {
    let x = [0.3, -1.2, 0.8, 2.45, 1.7, 0.1];
    let rows = |v: &[f64]| -> Vec<[f64; 3]> {
        v.chunks(3)
            .map(|c| <[f64; 3]>::try_from(c).unwrap())
            .collect()
    };
    let flat = |r: &[[f64; 3]]| r.iter().flatten().copied().collect::<Vec<f64>>();
    assert_close(
        &[weighted_rows(&rows(&x))],
        &[weighted_rows_by_hand(&rows(&x))],
        1e-12,
    );
    check(
        &x,
        1,
        |v| vec![weighted_rows_by_hand(&rows(v))],
        |v, d| vec![weighted_rows_jvp(&rows(v), &rows(d)).1],
        |v, c| flat(&weighted_rows_vjp(&rows(v), c[0]).1),
        |v, d, c| {
            let (_, l) = weighted_rows_lin(&rows(v));
            (vec![l.apply(rows(d))], flat(&l.transpose(c[0])))
        },
    );
}

#[test]
fn arrays_held_by_value_in_a_loop() {
    let x = [0.3, -1.2, 0.8, 2.45, 1.7, 0.1, -0.3, 0.9];
    let split = |v: &[f64]| {
        let (a, w) = v.split_at(4);
        (
            <[f64; 4]>::try_from(a).unwrap(),
            <[f64; 4]>::try_from(w).unwrap(),
        )
    };
    let (a, w) = split(&x);
    assert_close(&[weighted(a, w)], &[weighted_by_hand(a, w)], 1e-12);
    check(
        &x,
        1,
        |v| {
            let (a, w) = split(v);
            vec![weighted_by_hand(a, w)]
        },
        |v, d| {
            let ((a, w), (da, dw)) = (split(v), split(d));
            vec![weighted_jvp(a, w, da, dw).1]
        },
        |v, c| {
            let (a, w) = split(v);
            let (_, (da, dw)) = weighted_vjp(a, w, c[0]);
            [da, dw].concat()
        },
        |v, d, c| {
            let ((a, w), (da, dw)) = (split(v), split(d));
            let (_, l) = weighted_lin(a, w);
            let (ca, cw) = l.transpose(c[0]);
            (vec![l.apply((da, dw))], [ca, cw].concat())
        },
    );
}

#[test]
fn a_struct_s_array_fields_in_nested_loops_branches_and_while() {
    let body = |v: &[f64]| Body {
        pos: [v[0], v[1], v[2]],
        vel: [v[3], v[4], v[5]],
        mass: v[6],
    };
    let tangent = |v: &[f64]| BodyTangent {
        pos: [v[0], v[1], v[2]],
        vel: [v[3], v[4], v[5]],
        mass: v[6],
    };
    let flat = |t: &BodyTangent| [t.pos.as_slice(), &t.vel, &[t.mass]].concat();
    for k in [0.7, -0.4] {
        let x = [0.3, -1.2, 0.8, 2.45, 1.7, 0.1, 1.3, k];
        check(
            &x,
            1,
            |v| vec![moments(&body(v), v[7])],
            |v, d| vec![moments_jvp(&body(v), v[7], &tangent(d), d[7]).1],
            |v, c| {
                let (_, (db, dk)) = moments_vjp(&body(v), v[7], c[0]);
                [flat(&db), vec![dk]].concat()
            },
            |v, d, c| {
                let (_, l) = moments_lin(&body(v), v[7]);
                let (db, dk) = l.transpose(c[0]);
                (
                    vec![l.apply((tangent(d), d[7]))],
                    [flat(&db), vec![dk]].concat(),
                )
            },
        );
    }
}

#[test]
fn straight_line_index_by_a_constant() {
    for k in 0..3 {
        let x = [0.3, -1.2, 0.8];
        let arr = |v: &[f64]| <[f64; 3]>::try_from(v).unwrap();
        assert_close(&[picked(arr(&x), k)], &[picked_by_hand(arr(&x), k)], 1e-12);
        check(
            &x,
            1,
            |v| vec![picked_by_hand(arr(v), k)],
            |v, d| vec![picked_jvp(arr(v), k, arr(d)).1],
            |v, c| picked_vjp(arr(v), k, c[0]).1.to_vec(),
            |v, d, c| {
                let (_, l) = picked_lin(arr(v), k);
                (vec![l.apply(arr(d))], l.transpose(c[0]).to_vec())
            },
        );
    }
}
