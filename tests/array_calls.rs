#![deny(warnings)]

//! Calls between differentiable functions that pass arrays (`&[T]`):
//! parameters of the caller, arrays it builds, results of
//! other calls, the same array twice, `#[nondiff]` arrays, and parts of
//! arrays (`&a[lo..hi]`), in loops and branches, through chains of calls. Each caller's gradient is
//! checked against finite differences, and its three modes against each
//! other (`support::check`), in debug and release builds alike.

mod support;

use linear_ad::{differentiable, Lanes, LinearMap};
use num_traits::Float;
use support::{assert_close, check, fd_along};

#[differentiable]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

/// The same array passed twice: its tangent is lent to both parameters,
/// and their cotangents are summed into one buffer.
#[differentiable]
fn norm(x: &[f64]) -> f64 {
    dot(x, x).sqrt()
}

#[differentiable]
fn scaled(x: &[f64], k: f64) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    for i in 0..x.len() {
        y[i] = k * x[i].sin();
    }
    y
}

/// Arrays of every origin: parameters, a local array, a call's result.
#[differentiable]
fn mixed(x: &[f64], y: &[f64], k: f64) -> f64 {
    let mut r = vec![0.0; x.len()];
    for i in 0..x.len() {
        r[i] = x[i] * y[i] - k;
    }
    let s = scaled(&r, k);
    dot(x, y) + norm(&r) * dot(&s, y) + norm(&scaled(x, 2.0))
}

/// A `#[nondiff]` array read by the callee's derivative.
#[differentiable]
fn weighted(x: &[f64], #[nondiff] w: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += w[i] * x[i] * x[i];
    }
    s
}

/// Constant arrays passed on: to a `#[nondiff]` parameter, and to a
/// differentiable one (whose tangent is then zero).
#[differentiable]
fn with_data(x: &[f64], #[nondiff] w: &[f64]) -> f64 {
    weighted(x, w) * dot(w, x) + dot(x, w).cos()
}

/// An array built from constants: its tangent is zero.
#[differentiable]
fn against_ones(x: &[f64]) -> f64 {
    let ones = vec![1.0; x.len()];
    dot(x, &ones) * norm(x)
}

/// Calls in a loop and in a branch.
#[differentiable]
fn controlled(x: &[f64], y: &[f64], n: usize) -> f64 {
    let mut s = 0.0;
    for k in 0..n {
        let t = dot(x, y) * (k as f64 + 1.0);
        s = if t > 0.0 {
            s + t * norm(x)
        } else {
            s - dot(y, y)
        };
    }
    s
}

/// A chain: `outer` calls `mixed`, which calls the others.
#[differentiable]
fn outer(x: &[f64], y: &[f64]) -> f64 {
    mixed(x, y, 0.3) * norm(y)
}

/// Row `off / m` of a row-major matrix `a` dotted with `x`: the whole
/// array and the row's offset cross the call.
#[differentiable]
fn row_dot(a: &[f64], off: usize, x: &[f64]) -> f64 {
    let mut s = 0.0;
    for j in 0..x.len() {
        s += a[off + j] * x[j];
    }
    s
}

/// `‖A x‖²` row by row, through calls in a loop.
#[differentiable]
fn rows_energy(a: &[f64], x: &[f64]) -> f64 {
    let m = x.len();
    let mut e = 0.0;
    for i in 0..a.len() / m {
        let y = row_dot(a, i * m, x);
        e += y * y;
    }
    e
}

/// `‖A x‖²` row by row, each row passed as a part of `a`: the twin of
/// [`rows_energy`], which passes the whole array and an offset.
#[differentiable]
fn rows_energy_by_parts(a: &[f64], x: &[f64]) -> f64 {
    let m = x.len();
    let mut e = 0.0;
    for i in 0..a.len() / m {
        let y = dot(&a[i * m..(i + 1) * m], x);
        e += y * y;
    }
    e
}

/// Parts of every kind: two parts of one array in one call, open and
/// inclusive ranges, a part of a `#[nondiff]` array, the whole array
/// after a part of it, a part of an array the function builds, and a
/// part in a branch.
#[differentiable]
fn halves(x: &[f64], #[nondiff] w: &[f64]) -> f64 {
    let h = x.len() / 2;
    let mut sq = vec![0.0; x.len()];
    for i in 0..x.len() {
        sq[i] = x[i] * x[i];
    }
    let mut s = dot(&x[..h], &x[h..]) + dot(&w[1..], &x[..x.len() - 1]);
    s += dot(&x[1..=h], &sq[h - 1..2 * h - 1]) * dot(&x[h..], x);
    if s > 0.0 {
        s += norm(&sq[h..]);
    }
    s
}

/// Takes no differentiable slice: a part of a constant array passed to
/// it is an ordinary constant.
#[differentiable]
fn weigh(#[nondiff] w: &[f64], x: f64) -> f64 {
    w[0] * x
}

#[differentiable]
fn weighed_by_a_part(x: f64, #[nondiff] w: &[f64]) -> f64 {
    weigh(&w[1..], x) * x
}

#[differentiable(lanes)]
fn lanes_by_parts(x: &[f64], #[nondiff] w: &[f64]) -> f64 {
    let h = x.len() / 2;
    ldot(&x[..h], &x[h..]) + ldot(&w[..h], &x[h..])
}

/// `lanes` through calls passing slices: the callees' own `apply_lanes`
/// and `f_jvp_lanes` run behind the calls.
#[differentiable(lanes)]
fn ldot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i].sin();
    }
    s
}

#[differentiable(lanes)]
fn lanes_caller(x: &[f64], #[nondiff] w: &[f64]) -> f64 {
    let mut r = vec![0.0; x.len()];
    for i in 0..x.len() {
        r[i] = x[i] * x[i];
    }
    ldot(x, &r) * ldot(w, x) + ldot(&r, w)
}

/// Methods taking slices, called from a free function and from another
/// method of their block.
#[derive(linear_ad::Differentiable, Clone, Debug)]
struct Spring {
    k: f64,
    rest: f64,
}

#[differentiable]
impl Spring {
    #[differentiable]
    fn energy(&self, x: &[f64]) -> f64 {
        let mut s = 0.0;
        for &xi in x {
            let d = xi - self.rest;
            s += 0.5 * self.k * d * d;
        }
        s
    }

    #[differentiable]
    fn scaled_energy(&self, x: &[f64], c: f64) -> f64 {
        c * self.energy(x)
    }

    /// The energy of the first half, passed as a part of `x`.
    #[differentiable]
    fn front_energy(&self, x: &[f64]) -> f64 {
        self.energy(&x[..x.len() / 2])
    }
}

#[differentiable]
fn springs_by_parts(s: &Spring, x: &[f64]) -> f64 {
    2.0 * s.energy(&x[1..]) + s.front_energy(x)
}

#[differentiable]
fn springs(s: &Spring, x: &[f64]) -> f64 {
    s.energy(x) + s.scaled_energy(x, 2.0) * norm(x)
}

#[differentiable]
fn gdot<T: Float>(a: &[T], b: &[T]) -> T {
    let mut s = T::zero();
    for i in 0..a.len() {
        s = s + a[i] * b[i];
    }
    s
}

#[differentiable]
fn generic_caller(x: &[f32]) -> f32 {
    gdot(x, x) * 0.5
}

/// A callee whose tape holds more than 16 values: its linearization keeps
/// them in group fields (`__tape0`, ...), and the caller holds it detached
/// from `x`.
#[differentiable]
fn long_tail(x: &[f64], a: f64) -> f64 {
    let mut s = 0.0;
    for &xi in x.iter() {
        s += xi * a;
    }
    let b = a.sin() * s;
    let c = b.exp() / (1.0 + a * a);
    let d = c.tanh() * b + a.cos();
    let e = d * d + c.sqrt() * b;
    let f = e.sin() + d.cos() * c;
    let g = f * e - b.exp() * 0.1;
    let h = g.tanh() + f.sin() * d;
    let k = h * g + e.cos() * a;
    let m = k.sin() * h + g.exp() * 0.01;
    let n = m.tanh() + k * f;
    let o = n * m - h.cos();
    let p = o.sin() + n.tanh() * k;
    r_of(p, o, m) * s
}

#[differentiable]
fn r_of(p: f64, o: f64, m: f64) -> f64 {
    let q = p * o + m.cos() * 0.3;
    q.tanh() * p + o.sin()
}

#[differentiable]
fn long_tails(x: &[f64], a: f64) -> f64 {
    let u = long_tail(x, a);
    let v = long_tail(x, a * 0.5);
    u * v + u.sin()
}

type Pair<'a> = (&'a [f64], &'a [f64]);

/// Checks a function of two arrays of one length by [`check`], given its
/// value, `_jvp`'s tangent, `_vjp`'s cotangents, and from its `_lin`, the
/// map applied to a tangent and transposed on a cotangent.
fn check_pair(
    (x, y): (Vec<f64>, Vec<f64>),
    f: impl Fn(Pair) -> f64,
    jvp: impl Fn(Pair, Pair) -> f64,
    vjp: impl Fn(Pair, f64) -> (Vec<f64>, Vec<f64>),
    lin: impl Fn(Pair, Pair, f64) -> (f64, (Vec<f64>, Vec<f64>)),
) {
    let n = x.len();
    let xy: Vec<f64> = x.iter().chain(&y).copied().collect();
    let join = |(a, b): (Vec<f64>, Vec<f64>)| -> Vec<f64> { a.into_iter().chain(b).collect() };
    check(
        &xy,
        1,
        |v| vec![f((&v[..n], &v[n..]))],
        |v, d| vec![jvp((&v[..n], &v[n..]), (&d[..n], &d[n..]))],
        |v, w| join(vjp((&v[..n], &v[n..]), w[0])),
        |v, d, w| {
            let (dy, ct) = lin((&v[..n], &v[n..]), (&d[..n], &d[n..]), w[0]);
            (vec![dy], join(ct))
        },
    );
}

fn xs(n: usize, a: f64) -> Vec<f64> {
    (0..n)
        .map(|i| a + 0.37 * i as f64 - 0.05 * (i * i) as f64)
        .collect()
}

#[test]
fn the_same_array_twice() {
    let x = xs(4, 0.2);
    let (v, g) = norm_vjp(&x, 1.0);
    assert_eq!(v, norm(&x));
    let want: Vec<f64> = x.iter().map(|xi| xi / v).collect();
    assert_close(&g, &want, 1e-12);
    let d = xs(4, -0.4);
    let (_, dv) = norm_jvp(&x, &d);
    assert_close(&[dv], &fd_along(|x| vec![norm(x)], &x, &d), 1e-6);
}

#[test]
fn parameters_local_arrays_and_results_of_calls() {
    check_pair(
        (xs(5, 0.3), xs(5, -0.6)),
        |(x, y)| mixed(x, y, 0.7),
        |(x, y), (dx, dy)| mixed_jvp(x, y, 0.7, dx, dy, 0.0).1,
        |(x, y), w| {
            let (_, (gx, gy, _)) = mixed_vjp(x, y, 0.7, w);
            (gx, gy)
        },
        |(x, y), (dx, dy), w| {
            let (_, l) = mixed_lin(x, y, 0.7);
            let (gx, gy, _) = l.transpose(w);
            (l.apply((dx.to_vec(), dy.to_vec(), 0.0)), (gx, gy))
        },
    );
}

#[test]
fn calls_in_loops_and_branches() {
    // Both arms of the branch.
    for (y, n) in [(xs(3, 0.1), 3), (xs(3, -1.4), 2)] {
        check_pair(
            (xs(3, 0.5), y),
            |(x, y)| controlled(x, y, n),
            |(x, y), (dx, dy)| controlled_jvp(x, y, n, dx, dy).1,
            |(x, y), w| controlled_vjp(x, y, n, w).1,
            |(x, y), (dx, dy), w| {
                let (_, l) = controlled_lin(x, y, n);
                (l.apply((dx.to_vec(), dy.to_vec())), l.transpose(w))
            },
        );
    }
}

#[test]
fn constant_arrays_passed_on() {
    let (x, w) = (xs(4, 0.2), xs(4, 1.1));
    let (v, g) = with_data_vjp(&x, &w, 1.0);
    assert_eq!(v, with_data(&x, &w));
    for (k, gk) in g.iter().enumerate() {
        let mut e = vec![0.0; 4];
        e[k] = 1.0;
        let fd = fd_along(|x| vec![with_data(x, &w)], &x, &e)[0];
        assert!(support::close(*gk, fd, 1e-6), "{k}: {gk} vs {fd}");
    }
    let d = xs(4, -0.3);
    let (_, dv) = with_data_jvp(&x, &w, &d);
    let (_, l) = with_data_lin(&x, &w);
    assert_close(&[l.apply(d.clone())], &[dv], 1e-12);
    assert_close(&l.transpose(1.0), &g, 1e-12);
}

#[test]
fn a_chain_of_calls() {
    let (x, y) = (xs(3, 0.4), xs(3, -0.2));
    let (v, (gx, gy)) = outer_vjp(&x, &y, 1.0);
    assert_eq!(v, outer(&x, &y));
    let (d, e) = (xs(3, 0.9), xs(3, -0.7));
    let (_, dv) = outer_jvp(&x, &y, &d, &e);
    let fd = fd_along(
        |v| vec![outer(&v[..3], &v[3..])],
        &[x.clone(), y.clone()].concat(),
        &[d.clone(), e.clone()].concat(),
    );
    assert_close(&[dv], &fd, 1e-6);
    let dot = |a: &[f64], b: &[f64]| -> f64 { a.iter().zip(b).map(|(p, q)| p * q).sum() };
    assert!(support::close(dv, dot(&gx, &d) + dot(&gy, &e), 1e-10));
}

#[test]
fn a_generic_callee() {
    let x = vec![0.5f32, -1.25, 2.0];
    let (v, g) = generic_caller_vjp(&x, 1.0);
    assert_eq!(v, generic_caller(&x));
    assert_eq!(g, x);
}

#[test]
fn an_array_built_from_constants() {
    let x = xs(4, 0.6);
    let (v, g) = against_ones_vjp(&x, 1.0);
    assert_eq!(v, against_ones(&x));
    let (s, n) = (x.iter().sum::<f64>(), norm(&x));
    let want: Vec<f64> = x.iter().map(|xi| n + s * xi / n).collect();
    assert_close(&g, &want, 1e-12);
}

#[test]
fn lanes_through_calls() {
    let (x, w) = (xs(4, 0.3), xs(4, -0.8));
    let (v, l) = lanes_caller_lin(&x, &w);
    let r: Vec<f64> = x.iter().map(|xi| xi * xi).collect();
    assert_eq!(v, lanes_caller(&x, &w));
    assert_eq!(v, ldot(&x, &r) * ldot(&w, &x) + ldot(&r, &w));
    // Lane j seeded with the j-th unit vector: the gradient, lane by lane.
    let seeds: Vec<Lanes<f64, 4>> = (0..4).map(Lanes::unit).collect();
    let lanes = l.apply_lanes(seeds.clone());
    let (_, g) = lanes_caller_vjp(&x, &w, 1.0);
    assert_close(&lanes.0, &g, 1e-12);
    let (_, jl) = lanes_caller_jvp_lanes(&x, &w, &seeds);
    assert_close(&jl.0, &g, 1e-12);
    for (j, gj) in g.iter().enumerate() {
        let mut e = vec![0.0; 4];
        e[j] = 1.0;
        assert!(support::close(l.apply(e), *gj, 1e-12));
    }
}

#[test]
fn matrix_rows_through_calls_in_a_loop() {
    let (a, x) = (xs(6, 0.2), xs(2, -0.5));
    let (v, (ga, gx)) = rows_energy_vjp(&a, &x, 1.0);
    assert_eq!(v, rows_energy(&a, &x));
    // By hand: y = A x, e = ‖y‖², ∂e/∂A = 2 y xᵀ, ∂e/∂x = 2 Aᵀ y.
    let y: Vec<f64> = (0..3)
        .map(|i| a[2 * i] * x[0] + a[2 * i + 1] * x[1])
        .collect();
    let want_a: Vec<f64> = (0..6).map(|k| 2.0 * y[k / 2] * x[k % 2]).collect();
    let want_x: Vec<f64> = (0..2)
        .map(|j| (0..3).map(|i| 2.0 * a[2 * i + j] * y[i]).sum())
        .collect();
    assert_close(&ga, &want_a, 1e-12);
    assert_close(&gx, &want_x, 1e-12);
}

#[test]
fn parts_of_arrays_have_the_gradient_of_offsets() {
    let (a, x) = (xs(12, 0.2), xs(3, -0.5));
    let (v, (ga, gx)) = rows_energy_by_parts_vjp(&a, &x, 1.0);
    let (u, (ha, hx)) = rows_energy_vjp(&a, &x, 1.0);
    assert_eq!(v, u);
    assert_close(&ga, &ha, 1e-14);
    assert_close(&gx, &hx, 1e-14);
    let ax: Vec<f64> = a.iter().chain(&x).copied().collect();
    let join = |(p, q): (Vec<f64>, Vec<f64>)| -> Vec<f64> { p.into_iter().chain(q).collect() };
    check(
        &ax,
        1,
        |v| vec![rows_energy_by_parts(&v[..12], &v[12..])],
        |v, d| vec![rows_energy_by_parts_jvp(&v[..12], &v[12..], &d[..12], &d[12..]).1],
        |v, w| join(rows_energy_by_parts_vjp(&v[..12], &v[12..], w[0]).1),
        |v, d, w| {
            let (_, l) = rows_energy_by_parts_lin(&v[..12], &v[12..]);
            let dy = l.apply((d[..12].to_vec(), d[12..].to_vec()));
            (vec![dy], join(l.transpose(w[0])))
        },
    );
}

#[test]
fn parts_of_every_kind() {
    let w = xs(6, -0.3);
    for a in [0.4, -1.1] {
        let x = xs(6, a);
        let (v, gx) = halves_vjp(&x, &w, 1.0);
        assert_eq!(v, halves(&x, &w));
        // By hand, the same sums over index ranges.
        let h = 3;
        let d = |p: &[f64], q: &[f64]| p.iter().zip(q).map(|(a, b)| a * b).sum::<f64>();
        let sq: Vec<f64> = x.iter().map(|t| t * t).collect();
        let mut want = d(&x[..h], &x[h..]) + d(&w[1..], &x[..5]);
        want += d(&x[1..=h], &sq[h - 1..2 * h - 1]) * d(&x[h..], &x);
        if want > 0.0 {
            want += d(&sq[h..], &sq[h..]).sqrt();
        }
        assert!(support::close(v, want, 1e-14), "{v} against {want}");
        let fd: Vec<f64> = (0..6)
            .map(|i| {
                let mut e = vec![0.0; 6];
                e[i] = 1.0;
                fd_along(|x| vec![halves(x, &w)], &x, &e)[0]
            })
            .collect();
        assert_close(&gx, &fd, 1e-7);
        let (_, l) = halves_lin(&x, &w);
        let dx = xs(6, 0.7);
        let (_, dy) = halves_jvp(&x, &w, &dx);
        assert!(support::close(l.apply(dx.clone()), dy, 1e-13));
        let dot_g: f64 = gx.iter().zip(&dx).map(|(a, b)| a * b).sum();
        assert!(support::close(dot_g, dy, 1e-12), "{dot_g} against {dy}");
        assert_close(&l.transpose(1.0), &gx, 1e-14);
    }
}

#[test]
fn a_part_of_a_constant_array_as_a_constant() {
    let w = [0.5, -1.5, 2.0];
    let (v, g) = weighed_by_a_part_vjp(0.75, &w, 1.0);
    assert_eq!(v, weighed_by_a_part(0.75, &w));
    assert_eq!(v, -1.5 * 0.75 * 0.75);
    assert_eq!(g, 2.0 * -1.5 * 0.75);
}

#[test]
fn lanes_through_parts() {
    let (x, w) = (xs(6, 0.3), xs(6, -0.8));
    let (v, l) = lanes_by_parts_lin(&x, &w);
    assert_eq!(v, lanes_by_parts(&x, &w));
    let seeds: Vec<Lanes<f64, 6>> = (0..6).map(Lanes::unit).collect();
    let lanes = l.apply_lanes(seeds);
    let (_, g) = lanes_by_parts_vjp(&x, &w, 1.0);
    assert_close(&lanes.0, &g, 1e-12);
}

#[test]
fn methods_passed_parts_of_arrays() {
    let s = Spring { k: 1.5, rest: 0.25 };
    let x = xs(4, 0.4);
    let (v, (gs, gx)) = springs_by_parts_vjp(&s, &x, 1.0);
    assert_eq!(v, springs_by_parts(&s, &x));
    // By hand: f = k Σ_{i≥1} (xᵢ - r)² + ½k Σ_{i<2} (xᵢ - r)².
    let weight = |i: usize| f64::from(u8::from(i >= 1)) + 0.5 * f64::from(u8::from(i < 2));
    let want_x: Vec<f64> = (0..4)
        .map(|i| 2.0 * s.k * (x[i] - s.rest) * weight(i))
        .collect();
    assert_close(&gx, &want_x, 1e-12);
    let sq = |i: usize| (x[i] - s.rest).powi(2);
    let want_k: f64 = (0..4).map(|i| sq(i) * weight(i)).sum();
    let want_r: f64 = (0..4)
        .map(|i| -2.0 * s.k * (x[i] - s.rest) * weight(i))
        .sum();
    assert_close(&[gs.k, gs.rest], &[want_k, want_r], 1e-12);
}

#[test]
fn methods_taking_slices() {
    let s = Spring { k: 1.5, rest: 0.25 };
    let x = xs(3, 0.4);
    let (v, (gs, gx)) = springs_vjp(&s, &x, 1.0);
    assert_eq!(v, springs(&s, &x));
    // By hand: E = ½k Σ(xᵢ - r)², f = E + 2E‖x‖ = E (1 + 2‖x‖).
    let n = norm(&x);
    let e: f64 = x.iter().map(|xi| 0.5 * s.k * (xi - s.rest).powi(2)).sum();
    let want_x: Vec<f64> = x
        .iter()
        .map(|xi| s.k * (xi - s.rest) * (1.0 + 2.0 * n) + e * 2.0 * xi / n)
        .collect();
    assert_close(&gx, &want_x, 1e-12);
    let de_dk = e / s.k;
    let de_dr: f64 = x.iter().map(|xi| -s.k * (xi - s.rest)).sum();
    assert_close(
        &[gs.k, gs.rest],
        &[de_dk * (1.0 + 2.0 * n), de_dr * (1.0 + 2.0 * n)],
        1e-12,
    );
}

#[test]
fn a_callee_with_a_wide_tape_held_detached() {
    let mut xa = xs(4, 0.1);
    xa.push(0.7);
    let n = xa.len() - 1;
    let (_, l) = long_tail_lin(&xa[..n], xa[n]);
    assert!(format!("{l:?}").contains("tape_bytes"));
    check(
        &xa,
        1,
        |v| vec![long_tails(&v[..n], v[n])],
        |v, d| vec![long_tails_jvp(&v[..n], v[n], &d[..n], d[n]).1],
        |v, w| {
            let (_, (mut g, ga)) = long_tails_vjp(&v[..n], v[n], w[0]);
            g.push(ga);
            g
        },
        |v, d, w| {
            let (_, l) = long_tails_lin(&v[..n], v[n]);
            let (mut g, ga) = l.transpose(w[0]);
            g.push(ga);
            (vec![l.apply((d[..n].to_vec(), d[n]))], g)
        },
    );
}

/// A struct with a constant field, which crosses calls as its origin (a
/// borrow of the caller's parameter).
#[derive(linear_ad::Differentiable, Clone, Debug)]
struct Anchor {
    k: f64,
    #[nondiff]
    at: f64,
}

#[differentiable]
impl Anchor {
    #[differentiable]
    fn pull(&self, x: f64) -> f64 {
        let d = x - self.at;
        0.5 * self.k * d * d
    }
}

#[differentiable]
fn sine_scaled(x: f64, c: f64) -> f64 {
    c * x.sin()
}

#[differentiable]
fn anchored(a: &Anchor, x: f64) -> f64 {
    a.k * (x - a.at).cos()
}

/// A loop over a slice calling functions passed values the caller's
/// prelude holds: a literal, and a struct with a constant field (to a
/// function and to a method). The default checkpoint policy recomputes an
/// iteration in the residual from its index where it can; not these
/// calls, whose arguments are not in scope there (their extern is
/// `pinned`): their tapes are recorded.
#[differentiable]
fn looped_calls(a: &Anchor, x: &[f64]) -> f64 {
    let mut e = 0.0;
    for xi in x {
        e += sine_scaled(*xi, 2.0) * xi + anchored(a, *xi) + a.pull(*xi);
    }
    e
}

#[differentiable(checkpoint = "save")]
fn looped_calls_saved(a: &Anchor, x: &[f64]) -> f64 {
    let mut e = 0.0;
    for xi in x {
        e += sine_scaled(*xi, 2.0) * xi + anchored(a, *xi) + a.pull(*xi);
    }
    e
}

#[test]
fn a_loop_over_a_slice_calls_with_prelude_values() {
    let a = Anchor { k: 1.3, at: 0.2 };
    let x = xs(5, 0.3);
    let (v, (ga, gx)) = looped_calls_vjp(&a, &x, 1.0);
    assert_eq!(v, looped_calls(&a, &x));
    let (w, (ha, hx)) = looped_calls_saved_vjp(&a, &x, 1.0);
    assert_eq!(v, w);
    assert_eq!(w, looped_calls_saved(&a, &x));
    assert_close(&gx, &hx, 1e-14);
    assert_close(&[ga.k], &[ha.k], 1e-14);
    let n = x.len();
    check(
        &x,
        1,
        |x| vec![looped_calls(&a, x)],
        |x, d| vec![looped_calls_jvp(&a, x, &AnchorTangent { k: 0.0 }, d).1],
        |x, w| looped_calls_vjp(&a, x, w[0]).1 .1,
        |x, d, w| {
            let (_, map) = looped_calls_lin(&a, x);
            let dy = map.apply((AnchorTangent { k: 0.0 }, d.to_vec()));
            (vec![dy], map.transpose(w[0]).1)
        },
    );
    let fk = {
        let at = |dk: f64| {
            looped_calls(
                &Anchor {
                    k: a.k + dk,
                    ..a.clone()
                },
                &x,
            )
        };
        (at(1e-6) - at(-1e-6)) / 2e-6
    };
    assert!(
        (ga.k - fk).abs() < 1e-6 * (1.0 + fk.abs()),
        "{} against {fk}",
        ga.k
    );
    assert_eq!(gx.len(), n);
}
