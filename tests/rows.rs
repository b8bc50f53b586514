#![deny(warnings)]

//! Arrays of rows: parameters `&[[T; M]]`, `&[[T; M]; N]`, `&Vec<[T; M]>`
//! and `Vec<[T; M]>` (points, matrix rows), read as `a[i][j]` with any
//! integer `j`, as whole rows `a[i]`, and by iteration. The tangent has the
//! parameter's type and the cotangent its owned form (`Vec<[T; M]>`,
//! `[[T; M]; N]`). Results `Vec<[T; M]>` too, collected or written in a
//! local array of rows. Each function is checked against finite differences and
//! every mode against the others, in debug and release builds alike.

use linear_ad::{differentiable, LinearMap};

mod support;
use support::{close, dot, H};

/// The squared lengths of the edges of a closed polygon in 3-D, weighted:
/// rows read element by element, `pts[i][j]` with literal columns.
#[differentiable]
fn perimeter_energy(pts: &[[f64; 3]], k: f64) -> f64 {
    let n = pts.len();
    let mut e = 0.0;
    for i in 0..n {
        let j = (i + 1) % n;
        let dx = pts[j][0] - pts[i][0];
        let dy = pts[j][1] - pts[i][1];
        let dz = pts[j][2] - pts[i][2];
        e += k * (dx * dx + dy * dy + dz * dz);
    }
    e
}

/// A matrix as rows times a vector, reduced: columns indexed by a loop
/// variable, whole rows bound by iteration (`for r in a.iter()`, `r[0]`).
#[differentiable]
#[allow(clippy::needless_range_loop)]
fn rows_times(a: &[[f64; 2]; 3], x: &[f64; 2]) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        let mut y = 0.0;
        for j in 0..2 {
            y += a[i][j] * x[j];
        }
        s += y.sin();
    }
    for r in a.iter() {
        s += r[0] * r[1];
    }
    s
}

/// A `Vec` of rows by value (the linearization keeps it), whole rows
/// copied out (`let p = v[i]`) and read by literal.
#[differentiable]
#[allow(clippy::needless_range_loop)]
fn spread(v: Vec<[f64; 2]>) -> f64 {
    let mut m: (f64, f64) = (0.0, 0.0);
    for i in 0..v.len() {
        let p = v[i];
        m = (m.0 + p[0], m.1 + p[1]);
    }
    let c = (m.0 / v.len() as f64, m.1 / v.len() as f64);
    let mut s = 0.0;
    for p in &v {
        s += (p[0] - c.0).powi(2) + (p[1] - c.1).powi(2);
    }
    s
}

/// Rows borrowed from a `Vec`, a column chosen at run time.
#[differentiable]
#[allow(clippy::needless_range_loop, clippy::ptr_arg)]
fn column(v: &Vec<[f64; 3]>, j: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..v.len() {
        s += v[i][j] * v[i][j];
    }
    s
}

/// A line fitted to `#[nondiff]` points given as rows.
#[differentiable]
fn line_fit(w: &[f64; 2], #[nondiff] pts: &[[f64; 2]]) -> f64 {
    let mut loss = 0.0;
    for p in pts.iter() {
        let r = w[0] * p[0] + w[1] - p[1];
        loss += r * r;
    }
    loss
}

/// Spring forces between neighbours in a local array of rows, then the
/// energy of the forces: rows written in place (`f[i][j] = ..`, `+=`,
/// `-=`), read element by element and whole.
#[allow(clippy::needless_range_loop)]
#[differentiable]
fn spring_forces(pts: &[[f64; 3]], k: f64) -> f64 {
    let n = pts.len();
    let mut f = vec![[0.0; 3]; n];
    for i in 0..n - 1 {
        for j in 0..3 {
            let d = pts[i + 1][j] - pts[i][j];
            f[i][j] += k * d;
            f[i + 1][j] -= k * d;
        }
    }
    let mut corner = [[0.0; 2]; 2];
    corner[1][0] = f[0][2];
    corner[0][1] = 2.0 * f[n - 1][0];
    let mut e = corner[1][0] * corner[0][1];
    for i in 0..f.len() {
        let r = f[i];
        e += r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
    }
    e
}

/// Rows written whole (`f[i] = [..]`) and pushed (`v.push([..])`),
/// computed or constant.
#[differentiable]
fn rows_written_whole(pts: &[[f64; 2]], k: f64) -> f64 {
    let mut f = vec![[0.0; 2]; pts.len()];
    let mut grown: Vec<[f64; 2]> = Vec::with_capacity(pts.len());
    for (i, p) in pts.iter().enumerate() {
        f[i] = [k * p[1], p[0] * p[0]];
        grown.push([p[0] + k, f[i][0] * p[1]]);
    }
    // Constant rows, written and pushed.
    grown.push([0.5, 1.5]);
    f[0] = [2.0, 0.5];
    let mut e = grown[pts.len()][1] * k;
    for i in 0..f.len() {
        e += f[i][0] * grown[i][1] + f[i][1] * grown[i][0];
    }
    e
}

/// Rows as the result: collected from rows, each point scaled and
/// sheared (`Vec<[T; M]>` out, its cotangent `Vec<[T; M]>` in).
#[differentiable]
fn sheared(pts: &[[f64; 3]], k: f64) -> Vec<[f64; 3]> {
    pts.iter()
        .map(|p| [k * p[0], k * p[1] + p[0] * p[2], (k * p[2]).sin()])
        .collect()
}

/// Rows as the result, written in a local array of rows.
#[differentiable]
fn normals(pts: &[[f64; 2]]) -> Vec<[f64; 2]> {
    let n = pts.len();
    let mut out = vec![[0.0; 2]; n];
    for i in 0..n {
        let q = pts[(i + 1) % n];
        let (dx, dy) = (q[0] - pts[i][0], q[1] - pts[i][1]);
        let len = (dx * dx + dy * dy).sqrt();
        out[i][0] = -dy / len;
        out[i][1] = dx / len;
    }
    out
}

/// A fixed number of rows as the result (`[[T; M]; N]`), written in a
/// local `[[0.0; M]; N]`.
#[differentiable]
#[allow(clippy::needless_range_loop)]
fn first_three_turned(p: &[[f64; 2]], a: f64) -> [[f64; 2]; 3] {
    let mut out = [[0.0; 2]; 3];
    for i in 0..3 {
        out[i][0] = a.cos() * p[i][0] - a.sin() * p[i][1];
        out[i][1] = a.sin() * p[i][0] + a.cos() * p[i][1];
    }
    out
}

fn flat<const M: usize>(rows: &[[f64; M]]) -> Vec<f64> {
    rows.iter().flatten().copied().collect()
}

/// The derivative of `f` at `x` along `d`, by central differences.
fn fd_along(f: impl Fn(&[f64]) -> f64, x: &[f64], d: &[f64]) -> f64 {
    let at = |t: f64| -> f64 {
        let p: Vec<f64> = x.iter().zip(d).map(|(x, d)| x + t * d).collect();
        f(&p)
    };
    (at(H) - at(-H)) / (2.0 * H)
}

fn to_rows<const M: usize>(p: &[f64]) -> Vec<[f64; M]> {
    p.chunks_exact(M)
        .map(|c| std::array::from_fn(|j| c[j]))
        .collect()
}

#[test]
fn points_in_3d() {
    let pts = vec![
        [0.0, 1.0, 0.5],
        [1.0, -0.5, 2.0],
        [0.3, 0.3, -1.0],
        [2.0, 0.0, 0.0],
    ];
    let k = 0.7;
    let dp = vec![
        [0.1, -0.2, 0.3],
        [0.0, 0.5, -0.1],
        [0.2, 0.2, 0.2],
        [-0.3, 0.1, 0.0],
    ];
    let dk = -0.4;
    let (y, dy) = perimeter_energy_jvp(&pts, k, &dp, dk);
    assert_eq!(y, perimeter_energy(&pts, k));
    let mut point = flat(&pts);
    point.push(k);
    let mut dir = flat(&dp);
    dir.push(dk);
    let f = |q: &[f64]| perimeter_energy(&to_rows::<3>(&q[..12]), q[12]);
    assert!(close(dy, fd_along(f, &point, &dir), 1e-6), "{dy}");
    let (y2, (g, gk)): (f64, (Vec<[f64; 3]>, f64)) = perimeter_energy_vjp(&pts, k, 1.0);
    assert_eq!(y2, y);
    assert_eq!(g.len(), pts.len());
    assert!(close(dy, dot(&flat(&g), &flat(&dp)) + gk * dk, 1e-12));
    // Translating every point together changes no edge.
    let shift = vec![[1.0, 2.0, 3.0]; 4];
    let (_, moved) = perimeter_energy_jvp(&pts, k, &shift, 0.0);
    assert!(moved.abs() < 1e-12, "{moved}");
    let (_, lin) = perimeter_energy_lin(&pts, k);
    assert_eq!(lin.apply((dp.clone(), dk)), dy);
    assert_eq!(lin.transpose(1.0), (g, gk));
}

#[test]
fn a_fixed_size_array_of_rows() {
    let a = [[0.5, -1.0], [2.0, 0.25], [1.5, -0.75]];
    let x = [0.3, -0.8];
    let (da, dx) = ([[0.1, 0.2], [-0.3, 0.4], [-0.5, 0.6]], [0.7, -0.2]);
    let (y, dy) = rows_times_jvp(&a, &x, &da, &dx);
    assert_eq!(y, rows_times(&a, &x));
    let f = |q: &[f64]| {
        let rows: [[f64; 2]; 3] = std::array::from_fn(|i| [q[2 * i], q[2 * i + 1]]);
        rows_times(&rows, &[q[6], q[7]])
    };
    let mut point = flat(&a);
    point.extend(x);
    let mut dir = flat(&da);
    dir.extend(dx);
    assert!(close(dy, fd_along(f, &point, &dir), 1e-6), "{dy}");
    let (_, (ga, gx)): (f64, ([[f64; 2]; 3], [f64; 2])) = rows_times_vjp(&a, &x, 1.0);
    assert!(close(
        dy,
        dot(&flat(&ga), &flat(&da)) + dot(&gx, &dx),
        1e-12
    ));
    let (_, lin) = rows_times_lin(&a, &x);
    assert_eq!(lin.apply((da, dx)), dy);
    assert_eq!(lin.transpose(1.0), (ga, gx));
}

#[test]
fn a_vec_of_rows_by_value() {
    let v = vec![[1.0, 2.0], [-0.5, 0.5], [3.0, -1.0]];
    let dv = vec![[0.2, -0.1], [0.0, 0.3], [-0.4, 0.1]];
    let (y, dy) = spread_jvp(v.clone(), dv.clone());
    assert_eq!(y, spread(v.clone()));
    let f = |q: &[f64]| spread(to_rows::<2>(q));
    assert!(close(dy, fd_along(f, &flat(&v), &flat(&dv)), 1e-6), "{dy}");
    let (_, g) = spread_vjp(v.clone(), 1.0);
    assert!(close(dy, dot(&flat(&g), &flat(&dv)), 1e-12));
    let (_, lin) = spread_lin(v);
    assert_eq!(lin.apply(dv), dy);
    assert_eq!(lin.transpose(1.0), g);
}

#[test]
fn a_column_chosen_at_run_time() {
    let v = vec![[1.0, 2.0, 3.0], [-0.5, 0.5, 4.0]];
    let dv = vec![[0.2, -0.1, 0.7], [0.0, 0.3, -0.6]];
    for j in 0..3 {
        let (y, dy) = column_jvp(&v, j, &dv);
        assert_eq!(y, column(&v, j));
        let want: f64 = v.iter().zip(&dv).map(|(r, d)| 2.0 * r[j] * d[j]).sum();
        assert!(close(dy, want, 1e-12), "{dy} vs {want}");
        let (_, g) = column_vjp(&v, j, 1.0);
        for (i, row) in g.iter().enumerate() {
            for (c, gc) in row.iter().enumerate() {
                let want = if c == j { 2.0 * v[i][j] } else { 0.0 };
                assert_eq!(*gc, want);
            }
        }
    }
}

/// A column past the row panics in every mode, as the original does, and
/// does not read the next row's element.
#[test]
fn a_column_past_the_row_panics() {
    let v = vec![[1.0, 2.0, 3.0], [-0.5, 0.5, 4.0]];
    let dv = v.clone();
    assert!(std::panic::catch_unwind(|| column(&v, 3)).is_err());
    assert!(std::panic::catch_unwind(|| column_jvp(&v, 3, &dv)).is_err());
    assert!(std::panic::catch_unwind(|| column_vjp(&v, 3, 1.0)).is_err());
    assert!(std::panic::catch_unwind(|| column_lin(&v, 3).0).is_err());
}

#[test]
fn tangents_of_the_wrong_number_of_rows_are_named() {
    let v = vec![[1.0, 2.0, 3.0], [-0.5, 0.5, 4.0]];
    let err = std::panic::catch_unwind(|| column_jvp(&v, 0, &vec![[0.0; 3]])).expect_err("a panic");
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.contains("`v_tangent` must have the length of `v`"),
        "{msg}"
    );
    let (_, lin) = column_lin(&v, 0);
    let err = std::panic::catch_unwind(|| lin.apply(vec![[0.0; 3]; 3])).expect_err("a panic");
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("has the wrong length"), "{msg}");
}

#[test]
fn rows_of_constant_data() {
    let pts = [[0.0, 1.0], [1.0, 2.9], [2.0, 5.2]];
    let w = [1.5, 0.5];
    let (_, g) = line_fit_vjp(&w, &pts, 1.0);
    let want0: f64 = pts
        .iter()
        .map(|p| 2.0 * (w[0] * p[0] + w[1] - p[1]) * p[0])
        .sum();
    let want1: f64 = pts.iter().map(|p| 2.0 * (w[0] * p[0] + w[1] - p[1])).sum();
    assert!(
        close(g[0], want0, 1e-12) && close(g[1], want1, 1e-12),
        "{g:?}"
    );
    let (y, dy) = line_fit_jvp(&w, &pts, &[1.0, 0.0]);
    assert_eq!(y, line_fit(&w, &pts));
    assert!(close(dy, want0, 1e-12), "{dy}");
}

type RowFn<const M: usize> = fn(&[[f64; M]], f64) -> f64;
type RowJvp<const M: usize> = fn(&[[f64; M]], f64, &[[f64; M]], f64) -> (f64, f64);
type RowVjp<const M: usize> = fn(&[[f64; M]], f64, f64) -> (f64, (Vec<[f64; M]>, f64));

/// Points and a scale, their tangents: `jvp` against `f` by central
/// differences, and `vjp` against `jvp` (the dot-product identity).
fn check_rows_and_scale<const M: usize>(
    (f, jvp, vjp): (RowFn<M>, RowJvp<M>, RowVjp<M>),
    (pts, k): (&[[f64; M]], f64),
    (dp, dk): (&[[f64; M]], f64),
) {
    let (y, dy) = jvp(pts, k, dp, dk);
    assert_eq!(y, f(pts, k));
    let mut point = flat(pts);
    point.push(k);
    let mut dir = flat(dp);
    dir.push(dk);
    let n = pts.len() * M;
    let g = |q: &[f64]| f(&to_rows::<M>(&q[..n]), q[n]);
    assert!(close(dy, fd_along(g, &point, &dir), 1e-6), "{dy}");
    let (_, (gp, gk)) = vjp(pts, k, 1.0);
    assert!(close(dy, dot(&flat(&gp), &flat(dp)) + gk * dk, 1e-12));
}

#[test]
fn a_local_array_of_rows() {
    let pts = [[0.0, 1.0, 0.5], [1.0, -0.5, 2.0], [0.3, 0.3, -1.0]];
    let dp = [[0.1, -0.2, 0.3], [0.0, 0.5, -0.1], [0.2, 0.2, 0.2]];
    check_rows_and_scale(
        (spring_forces, spring_forces_jvp, spring_forces_vjp),
        (&pts, 0.7),
        (&dp, -0.4),
    );
}

#[test]
fn rows_written_whole_and_pushed() {
    let pts = [[0.5, 1.0], [1.5, -0.5], [-0.3, 0.8]];
    let dp = [[0.1, -0.2], [0.3, 0.0], [0.2, 0.5]];
    check_rows_and_scale(
        (
            rows_written_whole,
            rows_written_whole_jvp,
            rows_written_whole_vjp,
        ),
        (&pts, 1.3),
        (&dp, 0.6),
    );
}

#[test]
fn rows_as_a_collected_result() {
    let pts = [[0.5, 1.0, -0.3], [1.5, -0.5, 0.2], [-0.3, 0.8, 1.1]];
    let dp = [[0.1, -0.2, 0.3], [0.3, 0.0, -0.1], [0.2, 0.5, 0.4]];
    let (k, dk) = (1.3, -0.6);
    let ct = vec![[1.0, -0.5, 2.0], [0.0, 1.5, -1.0], [0.25, 0.5, 0.75]];
    let (y, dy) = sheared_jvp(&pts, k, &dp, dk);
    assert_eq!(y, sheared(&pts, k));
    let mut point = flat(&pts);
    point.push(k);
    let mut dir = flat(&dp);
    dir.push(dk);
    for (e, want) in flat(&dy).iter().enumerate() {
        let g = |q: &[f64]| flat(&sheared(&to_rows::<3>(&q[..9]), q[9]))[e];
        assert!(close(*want, fd_along(g, &point, &dir), 1e-6), "{dy:?}");
    }
    let (_, (gp, gk)) = sheared_vjp(&pts, k, ct.clone());
    let lhs = dot(&flat(&ct), &flat(&dy));
    assert!(close(lhs, dot(&flat(&gp), &flat(&dp)) + gk * dk, 1e-12));
    let (_, lin) = sheared_lin(&pts, k);
    assert_eq!(lin.apply((dp.to_vec(), dk)), dy);
    assert_eq!(lin.transpose(ct), (gp, gk));
}

#[test]
fn rows_as_a_result_written_in_place() {
    let pts = [[0.0, 0.0], [2.0, 0.5], [1.0, 2.0], [-0.5, 1.0]];
    let dp = [[0.1, -0.2], [0.3, 0.0], [0.2, 0.5], [-0.4, 0.1]];
    let ct = vec![[1.0, -0.5], [0.0, 1.5], [0.25, 0.5], [2.0, -1.0]];
    let (y, dy) = normals_jvp(&pts, &dp);
    assert_eq!(y, normals(&pts));
    for r in &y {
        assert!(close(r[0] * r[0] + r[1] * r[1], 1.0, 1e-12), "{y:?}");
    }
    let (point, dir) = (flat(&pts), flat(&dp));
    for (e, want) in flat(&dy).iter().enumerate() {
        let g = |q: &[f64]| flat(&normals(&to_rows::<2>(q)))[e];
        assert!(close(*want, fd_along(g, &point, &dir), 1e-6), "{dy:?}");
    }
    let (_, gp) = normals_vjp(&pts, ct.clone());
    assert!(close(
        dot(&flat(&ct), &flat(&dy)),
        dot(&flat(&gp), &flat(&dp)),
        1e-12
    ));
    let (_, lin) = normals_lin(&pts);
    assert_eq!(lin.apply(dp.to_vec()), dy);
    assert_eq!(lin.transpose(ct), gp);
    // A cotangent with a row too few is refused, naming the result.
    let err =
        std::panic::catch_unwind(|| normals_vjp(&pts, vec![[0.0; 2]; 3])).expect_err("a panic");
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.contains("the cotangent must have the length of `normals`'s result"),
        "{msg}"
    );
}

#[test]
fn a_fixed_number_of_rows_as_the_result() {
    let pts = [[1.0, 0.5], [-0.5, 2.0], [0.3, -1.2], [9.0, 9.0]];
    let dp = [[0.1, -0.2], [0.3, 0.0], [0.2, 0.5], [7.0, 7.0]];
    let (a, da) = (0.4, 0.3);
    let ct = [[1.0, -0.5], [0.0, 1.5], [0.25, 0.5]];
    let (y, dy) = first_three_turned_jvp(&pts, a, &dp, da);
    assert_eq!(y, first_three_turned(&pts, a));
    let mut point = flat(&pts);
    point.push(a);
    let mut dir = flat(&dp);
    dir.push(da);
    for (e, want) in flat(&dy).iter().enumerate() {
        let g = |q: &[f64]| flat(&first_three_turned(&to_rows::<2>(&q[..8]), q[8]))[e];
        assert!(close(*want, fd_along(g, &point, &dir), 1e-6), "{dy:?}");
    }
    let (_, (gp, ga)) = first_three_turned_vjp(&pts, a, ct);
    let lhs = dot(&flat(&ct), &flat(&dy));
    assert!(close(lhs, dot(&flat(&gp), &flat(&dp)) + ga * da, 1e-12));
    // A rotation: the cotangent of the points is the inverse rotation of
    // the cotangent; the fourth point is never read.
    assert!(close(
        gp[0][0],
        a.cos() * ct[0][0] + a.sin() * ct[0][1],
        1e-12
    ));
    assert_eq!(gp[3], [0.0, 0.0]);
    let (_, lin) = first_three_turned_lin(&pts, a);
    assert_eq!(lin.apply((dp.to_vec(), da)), dy);
    assert_eq!(lin.transpose(ct), (gp, ga));
}
