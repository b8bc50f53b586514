#![deny(warnings)]
// Index loops, as numeric code writes them.
#![allow(clippy::needless_range_loop)]

//! `#[differentiable(lanes)]`: `apply_lanes` runs the linearization's
//! residual on `K` tangents at once. Lane `j` of its result must be what
//! `apply` gives for lane `j` of the inputs, bit for bit (the same
//! operations in the same order), through loops, branches, local arrays,
//! tuples, fixed arrays and `Vec` results, in `f64` and `f32`; and the
//! lanes seeded with the unit vectors must be the Jacobian, whose rows
//! `transpose` gives independently.

use linear_ad::{differentiable, Lanes, LinearMap};

/// Loops over slices, a data-dependent branch, a local array written in
/// place and read at an offset, and a `Vec` result.
#[differentiable(lanes)]
fn smooth(x: &[f64], w: &[f64], #[nondiff] data: &[f64]) -> Vec<f64> {
    let n = x.len();
    let mut y = vec![0.0; n];
    for i in 0..n {
        let t = x[i] * data[i] + w[i % w.len()];
        y[i] = if t > 0.5 {
            t.sin() * x[i]
        } else {
            t * t - w[0]
        };
    }
    for i in 1..n {
        y[i] += 0.5 * y[i - 1] * x[i];
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i].exp() * 0.1;
    }
    y.push(s);
    y
}

/// Tuples, a fixed array and a scalar, with a `while` loop.
#[differentiable(lanes)]
fn spiral(p: (f64, f64), q: [f64; 3], r: f64) -> ([f64; 2], f64) {
    let (mut a, mut b) = p;
    let mut k = 0;
    while k < 4 {
        let c = a * q[k % 3].cos() - b * r;
        b = b * a.sin() + q[(k + 1) % 3] * c;
        a = c;
        k += 1;
    }
    ([a * r, b + q[2]], (a * b).tanh())
}

/// The same in `f32`.
#[differentiable(lanes)]
fn spiral32(a: f32, b: f32) -> (f32, f32) {
    let mut s = (a, b);
    for k in 0..5 {
        let t = s.0 * (k as f32 + 0.5) - s.1.sin();
        s = (t * s.1, s.0 + t.cos());
    }
    s
}

/// Deterministic values in (-1, 1).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut z = seed;
    (0..n)
        .map(|_| {
            z = z
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((z >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// `K` random directions for `smooth`'s `x` (`n` long) and `w` (3 long),
/// one by one and held lane-wise.
#[allow(clippy::type_complexity)]
fn directions<const K: usize>(
    n: usize,
    seed: u64,
) -> (
    Vec<(Vec<f64>, Vec<f64>)>,
    Vec<Lanes<f64, K>>,
    Vec<Lanes<f64, K>>,
) {
    let dirs: Vec<(Vec<f64>, Vec<f64>)> = (0..K as u64)
        .map(|j| (values(n, seed + j), values(3, seed + 100 + j)))
        .collect();
    let dx = (0..n)
        .map(|i| Lanes(std::array::from_fn(|j| dirs[j].0[i])))
        .collect();
    let dw = (0..3)
        .map(|i| Lanes(std::array::from_fn(|j| dirs[j].1[i])))
        .collect();
    (dirs, dx, dw)
}

#[test]
fn each_lane_is_apply_of_that_lane_bit_for_bit() {
    const K: usize = 5;
    let n = 9;
    let (x, w, data) = (values(n, 1), values(3, 2), values(n, 3));
    let (y, lin) = smooth_lin(&x, &w, &data);
    assert_eq!(y, smooth(&x, &w, &data));
    let (dirs, dx, dw) = directions::<K>(n, 10);
    let dy = lin.apply_lanes((dx, dw));
    assert_eq!(dy.len(), y.len());
    for (j, (a, b)) in dirs.iter().enumerate() {
        let want = lin.apply((a.clone(), b.clone()));
        let got: Vec<f64> = dy.iter().map(|l| l[j]).collect();
        assert_eq!(got, want, "lane {j}");
    }
}

#[test]
fn unit_lanes_give_the_jacobian_whose_rows_transpose_gives() {
    const K: usize = 6;
    let n = K - 3;
    let (x, w, data) = (values(n, 4), values(3, 5), values(n, 6));
    let (y, lin) = smooth_lin(&x, &w, &data);
    // Lane j seeds input j: x's n entries, then w's 3.
    let dx = (0..n).map(Lanes::unit).collect();
    let dw = (0..3).map(|i| Lanes::unit(n + i)).collect();
    let cols: Vec<Lanes<f64, K>> = lin.apply_lanes((dx, dw));
    for (r, row) in cols.iter().enumerate() {
        let mut ct = vec![0.0; y.len()];
        ct[r] = 1.0;
        let (gx, gw) = lin.transpose(ct);
        let want: Vec<f64> = gx.iter().chain(&gw).copied().collect();
        for (j, g) in want.iter().enumerate() {
            assert!(
                (row[j] - g).abs() <= 1e-12 * (1.0 + g.abs()),
                "J[{r}][{j}]: lanes {} against transpose {g}",
                row[j]
            );
        }
    }
}

#[test]
fn tuples_fixed_arrays_and_while_loops() {
    const K: usize = 6;
    let (v, lin) = spiral_lin((0.3, -0.7), [0.2, 0.9, -0.4], 1.1);
    assert_eq!(v, spiral((0.3, -0.7), [0.2, 0.9, -0.4], 1.1));
    let u = Lanes::<f64, K>::unit;
    let (dp, dq, dr) = ((u(0), u(1)), [u(2), u(3), u(4)], u(5));
    let ([da, db], dt) = lin.apply_lanes((dp, dq, dr));
    for j in 0..K {
        let mut e = [0.0; K];
        e[j] = 1.0;
        let ([a, b], t) = lin.apply(((e[0], e[1]), [e[2], e[3], e[4]], e[5]));
        assert_eq!([da[j], db[j], dt[j]], [a, b, t], "lane {j}");
    }
}

#[test]
fn f32_lanes() {
    let (v, lin) = spiral32_lin(0.4, 0.8);
    assert_eq!(v, spiral32(0.4, 0.8));
    let (ds, dt) = lin.apply_lanes((Lanes([1.0f32, 0.0, 0.5]), Lanes([0.0f32, 1.0, -2.0])));
    for (j, (a, b)) in [(1.0, 0.0), (0.0, 1.0), (0.5, -2.0)]
        .into_iter()
        .enumerate()
    {
        assert_eq!((ds[j], dt[j]), lin.apply((a, b)), "lane {j}");
    }
}

/// A function of a fixed array and a float, differentiated twice.
#[differentiable(order = 2)]
fn energy(p: [f64; 4], k: f64) -> f64 {
    let d = (p[0] - p[2]).hypot(p[1] - p[3]);
    let mut s = k / d;
    for i in 0..4 {
        s += (p[i] * k).sin() * 0.25;
    }
    s
}

#[test]
fn the_hessian_in_lanes_is_the_gradients_map_applied_per_direction() {
    let (p, k) = ([0.3, -0.2, 1.1, 0.7], 0.9);
    let (y, g, h) = energy_hessian(p, k);
    assert_eq!(y, energy(p, k));
    let ((y1, g1), map) = energy_vjp_lin(p, k, 1.0);
    assert_eq!((y, g), (y1, g1));
    for (r, row) in h.iter().enumerate() {
        let mut e = [0.0; 5];
        e[r] = 1.0;
        let (_, (hp, hk)) = map.apply(([e[0], e[1], e[2], e[3]], e[4], 0.0));
        assert_eq!(*row, [hp[0], hp[1], hp[2], hp[3], hk], "row {r}");
    }
    // And symmetric, as a Hessian is (to rounding: the rows come from
    // different directions).
    for i in 0..5 {
        for j in 0..5 {
            assert!((h[i][j] - h[j][i]).abs() <= 1e-12 * (1.0 + h[i][j].abs()));
        }
    }
}

/// A planar arm of three links: joint angles to the end effector and its
/// heading, as forward kinematics is written.
#[differentiable(lanes)]
fn arm(q: &[f64; 3], lengths: (f64, f64)) -> ([f64; 2], f64) {
    let mut p = [0.0, 0.0];
    let mut angle = 0.0;
    for i in 0..3 {
        angle += q[i];
        let l = if i == 0 { lengths.0 } else { lengths.1 };
        p[0] += l * angle.cos();
        p[1] += l * angle.sin();
    }
    (p, angle)
}

#[test]
fn the_jacobian_is_apply_of_each_unit_vector_and_transpose_of_each() {
    let (q, lengths) = ([0.3, -0.9, 1.4], (1.0, 0.6));
    let (y, jac) = arm_jacobian(&q, lengths);
    let (y1, lin) = arm_lin(&q, lengths);
    assert_eq!(y, y1);
    assert_eq!(y, arm(&q, lengths));
    // 3 outputs (p, then the heading) by 5 inputs (q, then the lengths).
    let unit = |j: usize| {
        let mut e = [0.0; 5];
        e[j] = 1.0;
        e
    };
    for (j, e) in (0..5).map(|j| (j, unit(j))) {
        let ([a, b], c) = lin.apply(([e[0], e[1], e[2]], (e[3], e[4])));
        assert_eq!([jac[0][j], jac[1][j], jac[2][j]], [a, b, c], "column {j}");
    }
    for (i, row) in jac.iter().enumerate() {
        let mut ct = ([0.0; 2], 0.0);
        match i {
            2 => ct.1 = 1.0,
            _ => ct.0[i] = 1.0,
        }
        let (gq, (g0, g1)) = lin.transpose(ct);
        let want = [gq[0], gq[1], gq[2], g0, g1];
        for j in 0..5 {
            assert!((row[j] - want[j]).abs() <= 1e-14, "J[{i}][{j}]");
        }
    }
    // The heading is the sum of the angles, whatever the lengths.
    assert_eq!(jac[2], [1.0, 1.0, 1.0, 0.0, 0.0]);
}

#[test]
fn f32_jacobian() {
    let (v, jac) = spiral32_jacobian(0.4, 0.8);
    assert_eq!(v, spiral32(0.4, 0.8));
    let (_, lin) = spiral32_lin(0.4, 0.8);
    for j in 0..2 {
        let (a, b) = lin.apply(if j == 0 { (1.0, 0.0) } else { (0.0, 1.0) });
        assert_eq!([jac[0][j], jac[1][j]], [a, b], "column {j}");
    }
}

/// Twenty coordinates: the Hessian and the Jacobian take two runs of
/// lanes each (16, then 4).
#[differentiable(order = 2, lanes)]
fn chain20(x: [f64; 20]) -> f64 {
    let mut s = 0.0;
    for i in 1..20 {
        s += (x[i] - x[i - 1] * x[i - 1]).sin() * (i as f64);
    }
    s
}

#[differentiable(lanes)]
fn moments20(x: [f64; 20]) -> [f64; 3] {
    let mut m = [0.0; 3];
    for i in 0..20 {
        m[0] += x[i];
        m[1] += x[i] * x[i];
        m[2] += (x[i] * (i as f64)).cos();
    }
    m
}

#[test]
fn more_coordinates_than_lanes_take_several_runs() {
    let x: [f64; 20] = std::array::from_fn(|i| 0.1 * i as f64 - 0.7);
    let (y, g, h) = chain20_hessian(x);
    assert_eq!(y, chain20(x));
    let ((_, g1), map) = chain20_vjp_lin(x, 1.0);
    assert_eq!(g, g1);
    for (r, row) in h.iter().enumerate() {
        let mut e = [0.0; 20];
        e[r] = 1.0;
        let (_, hv) = map.apply((e, 0.0));
        assert_eq!(*row, hv, "row {r}");
    }
    let (m, jac) = moments20_jacobian(x);
    assert_eq!(m, moments20(x));
    let (_, lin) = moments20_lin(x);
    for j in 0..20 {
        let mut e = [0.0; 20];
        e[j] = 1.0;
        let col = lin.apply(e);
        assert_eq!([jac[0][j], jac[1][j], jac[2][j]], col, "column {j}");
    }
}

/// A segment of the arm, as a function of its own.
#[differentiable(lanes)]
fn segment(angle: f64, l: f64) -> [f64; 2] {
    [l * angle.cos(), l * angle.sin()]
}

/// `arm` again, each link's offset a call: the caller's lanes run through
/// the callee's own (`__apply_lanes`).
#[differentiable(lanes)]
fn arm_of_links(q: &[f64; 3], lengths: (f64, f64)) -> ([f64; 2], f64) {
    let mut p = [0.0, 0.0];
    let mut angle = 0.0;
    for i in 0..3 {
        angle += q[i];
        let l = if i == 0 { lengths.0 } else { lengths.1 };
        let d = segment(angle, l);
        p[0] += d[0];
        p[1] += d[1];
    }
    (p, angle)
}

#[test]
fn lanes_run_through_calls() {
    let (q, lengths) = ([0.3, -0.9, 1.4], (1.0, 0.6));
    let (y, jac) = arm_of_links_jacobian(&q, lengths);
    assert_eq!(y, arm_of_links(&q, lengths));
    let (y_inline, jac_inline) = arm_jacobian(&q, lengths);
    assert_eq!(y, y_inline);
    for i in 0..3 {
        for j in 0..5 {
            assert!((jac[i][j] - jac_inline[i][j]).abs() <= 1e-14, "J[{i}][{j}]");
        }
    }
    // Lane by lane, what `apply` gives through the callee's `__apply`.
    let (_, lin) = arm_of_links_lin(&q, lengths);
    for j in 0..5 {
        let mut e = [0.0; 5];
        e[j] = 1.0;
        let ([a, b], c) = lin.apply(([e[0], e[1], e[2]], (e[3], e[4])));
        assert_eq!([jac[0][j], jac[1][j], jac[2][j]], [a, b, c], "column {j}");
    }
}

#[test]
fn a_tangent_of_the_wrong_length_is_named_under_apply_lanes() {
    let (x, w, data) = (values(4, 1), values(3, 2), values(4, 3));
    let (_, lin) = smooth_lin(&x, &w, &data);
    let err = std::panic::catch_unwind(|| {
        let dx = vec![Lanes::<f64, 2>::zero(); 5];
        let dw = vec![Lanes::zero(); 3];
        lin.apply_lanes((dx, dw))
    })
    .expect_err("a tangent of 5 for an input of 4 panics");
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.contains("`apply_lanes` of `smooth_lin`'s linearization: the tangent of parameter 1 has the wrong length"),
        "{msg}"
    );
}

#[test]
fn f_jvp_lanes_is_f_jvp_lane_by_lane() {
    const K: usize = 3;
    let n = 6;
    let (x, w, data) = (values(n, 7), values(3, 8), values(n, 9));
    let (dirs, dx, dw) = directions::<K>(n, 30);
    let (y, dy) = smooth_jvp_lanes(&x, &w, &data, &dx, &dw);
    assert_eq!(y, smooth(&x, &w, &data));
    for (j, (a, b)) in dirs.iter().enumerate() {
        let (_, want) = smooth_jvp(&x, &w, &data, a, b);
        let got: Vec<f64> = dy.iter().map(|l| l[j]).collect();
        assert_eq!(got, want, "lane {j}");
    }
    // Through a `while` loop, tuples and arrays; and in f32.
    let u = Lanes::<f64, 6>::unit;
    let (v, ([da, db], dt)) = spiral_jvp_lanes(
        (0.3, -0.7),
        [0.2, 0.9, -0.4],
        1.1,
        (u(0), u(1)),
        [u(2), u(3), u(4)],
        u(5),
    );
    assert_eq!(v, spiral((0.3, -0.7), [0.2, 0.9, -0.4], 1.1));
    for j in 0..6 {
        let mut e = [0.0; 6];
        e[j] = 1.0;
        let (_, ([a, b], t)) = spiral_jvp(
            (0.3, -0.7),
            [0.2, 0.9, -0.4],
            1.1,
            (e[0], e[1]),
            [e[2], e[3], e[4]],
            e[5],
        );
        assert_eq!([da[j], db[j], dt[j]], [a, b, t], "lane {j}");
    }
    let (_, (ds, dt)) = spiral32_jvp_lanes(0.4, 0.8, Lanes([1.0f32, 0.0]), Lanes([0.0f32, 1.0]));
    assert_eq!((ds[0], dt[0]), spiral32_jvp(0.4, 0.8, 1.0, 0.0).1);
    assert_eq!((ds[1], dt[1]), spiral32_jvp(0.4, 0.8, 0.0, 1.0).1);
}

#[test]
fn f_jvp_lanes_runs_through_calls() {
    let (q, lengths) = ([0.3, -0.9, 1.4], (1.0, 0.6));
    let u = Lanes::<f64, 5>::unit;
    let (y, ([dx, dy], dh)) =
        arm_of_links_jvp_lanes(&q, lengths, &[u(0), u(1), u(2)], (u(3), u(4)));
    assert_eq!(y, arm_of_links(&q, lengths));
    let (_, jac) = arm_of_links_jacobian(&q, lengths);
    for j in 0..5 {
        let col = [dx[j], dy[j], dh[j]];
        for i in 0..3 {
            assert!((col[i] - jac[i][j]).abs() <= 1e-14, "J[{i}][{j}]");
        }
    }
}

/// A loop whose reverse sweep replays its states from snapshots: the
/// residual's loops, and so the lanes, are the same under every policy.
#[differentiable(lanes, checkpoint = "binomial", snapshots = 3)]
fn orbit(x: f64, y: f64) -> f64 {
    let mut s = (x, y);
    for _ in 0..20 {
        s = (s.0 + 0.1 * s.1.sin(), s.1 - 0.1 * s.0.cos());
    }
    s.0 * s.1
}

#[test]
fn lanes_under_binomial_checkpointing() {
    let (v, lin) = orbit_lin(0.3, -1.2);
    assert_eq!(v, orbit(0.3, -1.2));
    let d = lin.apply_lanes((Lanes([1.0, 0.0, 0.5]), Lanes([0.0, 1.0, -2.0])));
    for (j, t) in [(1.0, 0.0), (0.0, 1.0), (0.5, -2.0)]
        .into_iter()
        .enumerate()
    {
        assert_eq!(d[j], lin.apply(t), "lane {j}");
    }
    let (_, jac) = orbit_jacobian(0.3, -1.2);
    let (_, (gx, gy)) = orbit_vjp(0.3, -1.2, 1.0);
    assert!((jac[0][0] - gx).abs() <= 1e-13 && (jac[0][1] - gy).abs() <= 1e-13);
}

/// `total[r] += x[j]·w[0]` over `j`: the loop reaches `total` at one
/// element, which code generation carries as a value (a cell), here a
/// value in lanes.
#[differentiable(lanes)]
fn into_one(x: &[f64], w: &[f64], #[nondiff] r: usize) -> Vec<f64> {
    let mut total = vec![0.0; 3];
    for j in 0..x.len() {
        total[r] += x[j] * w[0];
    }
    total
}

#[test]
fn a_cell_in_lanes_is_apply_lane_by_lane() {
    const K: usize = 4;
    let n = 7;
    let (x, w) = (values(n, 4), values(3, 5));
    let (y, lin) = into_one_lin(&x, &w, 1);
    assert_eq!(y, into_one(&x, &w, 1));
    let (dirs, dx, dw) = directions::<K>(n, 20);
    let dy = lin.apply_lanes((dx, dw));
    for (j, (a, b)) in dirs.iter().enumerate() {
        let want = lin.apply((a.clone(), b.clone()));
        let got: Vec<f64> = dy.iter().map(|l| l[j]).collect();
        assert_eq!(got, want, "lane {j}");
        assert_eq!((want[0], want[2]), (0.0, 0.0));
    }
}
