//! Structs with `Vec` fields (issue 10): a layer with `Vec` weights and
//! biases, a fixed-size array and a constant field, read by index in
//! nested loops by a `&self` method and a free function; a generic tuple
//! struct of `Vec`s of rows and of pairs, iterated (`iter`,
//! `enumerate`, `zip`) at `f64` and `f32`; a struct whose only field is
//! a `Vec`, two of them in one function with a `Vec` result, a field
//! destructured and a copy whose other field is written; a struct
//! nesting two layers generic in their float type and a `Vec` of pairs
//! beside them, read through a destructured field. Each is checked
//! by central differences, the dot-product identity, and agreement of
//! `_jvp`, `_vjp` and `_lin`; the layer's gradient also against a hand
//! derivation, and the tangent lengths `f_jvp` and `apply` check.

#![deny(warnings)]
// The functions index as the formulas they compute do.
#![allow(clippy::needless_range_loop)]

mod support;

use linear_ad::num_traits::Float;
use linear_ad::{differentiable, Differentiable, LinearMap};
use support::check;

#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Layer {
    pub w: Vec<f64>,
    pub b: Vec<f64>,
    pub shift: [f64; 2],
    pub gain: f64,
    #[nondiff]
    pub n_in: usize,
}

#[differentiable]
impl Layer {
    /// `gain · Σ_j tanh(b_j + Σ_i w_ji x_i) + shift_0 · shift_1`.
    #[differentiable]
    pub fn out(&self, x: &[f64]) -> f64 {
        let mut s = self.shift[0] * self.shift[1];
        for j in 0..self.b.len() {
            let mut z = self.b[j];
            for i in 0..self.n_in {
                z += self.w[j * self.n_in + i] * x[i];
            }
            s += self.gain * z.tanh();
        }
        s
    }
}

/// The squared error of the layer's output, reading the fields from a
/// free function.
#[differentiable]
pub fn loss(l: &Layer, x: &[f64], target: f64) -> f64 {
    let mut s = l.shift[0] * l.shift[1];
    for j in 0..l.b.len() {
        let mut z = l.b[j];
        for i in 0..l.n_in {
            z += l.w[j * l.n_in + i] * x[i];
        }
        s += l.gain * z.tanh();
    }
    let e = s - target;
    e * e
}

fn out_by_hand(l: &Layer, x: &[f64]) -> (f64, LayerTangent, Vec<f64>) {
    let mut s = l.shift[0] * l.shift[1];
    let mut g = LayerTangent {
        w: vec![0.0; l.w.len()],
        b: vec![0.0; l.b.len()],
        shift: [l.shift[1], l.shift[0]],
        gain: 0.0,
    };
    let mut gx = vec![0.0; x.len()];
    for j in 0..l.b.len() {
        let mut z = l.b[j];
        for i in 0..l.n_in {
            z += l.w[j * l.n_in + i] * x[i];
        }
        let t = z.tanh();
        s += l.gain * t;
        g.gain += t;
        let dz = l.gain * (1.0 - t * t);
        g.b[j] = dz;
        for i in 0..l.n_in {
            g.w[j * l.n_in + i] = dz * x[i];
            gx[i] += dz * l.w[j * l.n_in + i];
        }
    }
    (s, g, gx)
}

const N_IN: usize = 3;
const N_OUT: usize = 2;
/// `w` (6), `b` (2), `shift` (2), `gain` (1), then `x` (3).
const N: usize = N_IN * N_OUT + N_OUT + 2 + 1;

fn layer(v: &[f64]) -> Layer {
    let (w, rest) = v.split_at(N_IN * N_OUT);
    Layer {
        w: w.to_vec(),
        b: rest[..N_OUT].to_vec(),
        shift: [rest[N_OUT], rest[N_OUT + 1]],
        gain: rest[N_OUT + 2],
        n_in: N_IN,
    }
}

fn layer_tangent(v: &[f64]) -> LayerTangent {
    let l = layer(v);
    LayerTangent {
        w: l.w,
        b: l.b,
        shift: l.shift,
        gain: l.gain,
    }
}

fn flat(t: &LayerTangent) -> Vec<f64> {
    [&t.w[..], &t.b[..], &t.shift[..], &[t.gain][..]].concat()
}

const X: [f64; N + N_IN] = [
    0.3, -0.8, 0.5, 1.1, -0.2, 0.7, 0.1, -0.4, 0.9, 1.3, 1.5, 0.6, -1.2, 0.8,
];

#[test]
fn a_method_reads_vec_fields_by_index() {
    let l = layer(&X[..N]);
    let x = &X[N..];
    let (y, (g, gx)) = l.out_vjp(x, 1.0);
    let (want, want_g, want_gx) = out_by_hand(&l, x);
    assert!((y - want).abs() < 1e-12);
    support::assert_close(&flat(&g), &flat(&want_g), 1e-12);
    support::assert_close(&gx, &want_gx, 1e-12);
    check(
        &X,
        1,
        |v| vec![layer(&v[..N]).out(&v[N..])],
        |v, d| {
            let t = layer_tangent(&d[..N]);
            vec![layer(&v[..N]).out_jvp(&v[N..], &t, &d[N..]).1]
        },
        |v, w| {
            let (_, (g, gx)) = layer(&v[..N]).out_vjp(&v[N..], w[0]);
            [flat(&g), gx].concat()
        },
        |v, d, w| {
            let l = layer(&v[..N]);
            let (_, lin) = l.out_lin(&v[N..]);
            let (g, gx) = lin.transpose(w[0]);
            let t = lin.apply((layer_tangent(&d[..N]), d[N..].to_vec()));
            (vec![t], [flat(&g), gx].concat())
        },
    );
}

#[test]
fn a_free_function_reads_vec_fields_by_index() {
    let target = 0.25;
    let (y, (g, gx, gt)) = loss_vjp(&layer(&X[..N]), &X[N..], target, 1.0);
    let (s, want_g, want_gx) = out_by_hand(&layer(&X[..N]), &X[N..]);
    let e = s - target;
    assert!((y - e * e).abs() < 1e-12);
    let scaled: Vec<f64> = flat(&want_g).iter().map(|a| 2.0 * e * a).collect();
    support::assert_close(&flat(&g), &scaled, 1e-12);
    let scaled_x: Vec<f64> = want_gx.iter().map(|a| 2.0 * e * a).collect();
    support::assert_close(&gx, &scaled_x, 1e-12);
    assert!((gt + 2.0 * e).abs() < 1e-12);
    check(
        &X,
        1,
        |v| vec![loss(&layer(&v[..N]), &v[N..], target)],
        |v, d| {
            let t = layer_tangent(&d[..N]);
            vec![loss_jvp(&layer(&v[..N]), &v[N..], target, &t, &d[N..], 0.0).1]
        },
        |v, w| {
            let (_, (g, gx, _)) = loss_vjp(&layer(&v[..N]), &v[N..], target, w[0]);
            [flat(&g), gx].concat()
        },
        |v, d, w| {
            let l = layer(&v[..N]);
            let (_, lin) = loss_lin(&l, &v[N..], target);
            let (g, gx, _) = lin.transpose(w[0]);
            let t = lin.apply((layer_tangent(&d[..N]), d[N..].to_vec(), 0.0));
            (vec![t], [flat(&g), gx].concat())
        },
    );
}

#[test]
#[allow(clippy::redundant_clone)]
fn tangent_vec_fields_of_the_wrong_length_are_refused() {
    let l = layer(&X[..N]);
    let mut short = layer_tangent(&X[..N]);
    short.b.pop();
    let jvp = std::panic::catch_unwind(|| l.out_jvp(&X[N..], &short, &X[N..]));
    let msg = jvp.expect_err("a short tangent must be refused");
    let text = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        text.contains("`self_tangent.b` must have the length of `self.b`"),
        "{text}"
    );
    let (_, lin) = l.out_lin(&X[N..]);
    let short = short.clone();
    let apply = std::panic::catch_unwind(|| lin.apply((short, X[N..].to_vec())));
    let msg = apply.expect_err("a short tangent must be refused by `apply`");
    let text = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(text.contains("field `b` of parameter 1"), "{text}");
}

/// Rows and pairs, generic in the float type.
#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Pts<T: Float>(pub Vec<[T; 2]>, pub Vec<(T, T)>);

#[differentiable]
pub fn spread<T: Float>(p: &Pts<T>, k: T) -> T {
    let mut s = T::zero();
    for q in p.0.iter() {
        s = s + q[0] * q[1] * k;
    }
    for (i, r) in p.1.iter().enumerate() {
        s = s + r.0.sin() * r.1 + p.0[i][0];
    }
    for (q, r) in p.0.iter().zip(p.1.iter()) {
        s = s + q[1] * r.0 * k;
    }
    s
}

fn pts<T: Float>(v: &[f64]) -> Pts<T> {
    let c = |k: usize| T::from(v[k]).unwrap();
    Pts(
        vec![[c(0), c(1)], [c(2), c(3)]],
        vec![(c(4), c(5)), (c(6), c(7))],
    )
}

fn pts_tangent(v: &[f64]) -> PtsTangent<f64> {
    let p = pts::<f64>(v);
    PtsTangent(p.0, p.1)
}

fn pts_flat(p: &PtsTangent<f64>) -> Vec<f64> {
    let mut out: Vec<f64> = p.0.iter().flatten().copied().collect();
    out.extend(p.1.iter().flat_map(|(a, b)| [*a, *b]));
    out
}

#[test]
fn a_generic_tuple_struct_of_rows_and_pairs_at_f64_and_f32() {
    let v = [0.4, -1.0, 1.3, 0.2, 0.7, -0.6, 1.1, 0.9, 1.4];
    check(
        &v,
        1,
        |v| vec![spread(&pts::<f64>(v), v[8])],
        |v, d| vec![spread_jvp(&pts::<f64>(v), v[8], &pts_tangent(d), d[8]).1],
        |v, w| {
            let (_, (g, gk)) = spread_vjp(&pts::<f64>(v), v[8], w[0]);
            [pts_flat(&g), vec![gk]].concat()
        },
        |v, d, w| {
            // The linearization borrows the struct's `Vec`s.
            let p = pts::<f64>(v);
            let (_, lin) = spread_lin(&p, v[8]);
            let (g, gk) = lin.transpose(w[0]);
            let t = lin.apply((pts_tangent(d), d[8]));
            (vec![t], [pts_flat(&g), vec![gk]].concat())
        },
    );
    // The same body at f32 agrees with f64 to f32's precision.
    let (y, (g, gk)) = spread_vjp(&pts::<f64>(&v), v[8], 1.0);
    let (y32, (g32, gk32)) = spread_vjp(&pts::<f32>(&v), v[8] as f32, 1.0);
    assert!(((y32 as f64) - y).abs() < 1e-5 * (1.0 + y.abs()));
    let g32 = PtsTangent(
        g32.0.iter().map(|r| r.map(f64::from)).collect(),
        g32.1
            .iter()
            .map(|(a, b)| (f64::from(*a), f64::from(*b)))
            .collect(),
    );
    support::assert_close(&pts_flat(&g32), &pts_flat(&g), 1e-5);
    assert!((f64::from(gk32) - gk).abs() < 1e-5 * (1.0 + gk.abs()));
}

/// A struct whose one field is a `Vec`.
#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Cloud {
    pub xs: Vec<f64>,
}

#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Scaled {
    pub xs: Vec<f64>,
    pub scale: f64,
}

/// Two struct parameters with `Vec` fields and a `Vec` result; a field
/// destructured, and a copy whose other field is written, read after.
#[differentiable]
pub fn blend(a: &Cloud, s: &Scaled, k: f64) -> Vec<f64> {
    let Cloud { xs } = a;
    let mut t = s.clone();
    t.scale *= k;
    let mut out = Vec::with_capacity(xs.len());
    for i in 0..xs.len() {
        out.push(xs[i] * t.scale + t.xs[i] * t.xs[i]);
    }
    out
}

#[test]
fn struct_vec_fields_destructured_and_read_after_a_write_of_another_field() {
    let v = [0.5, -1.5, 2.0, 0.3, 0.8, -0.4, 1.7, 0.6];
    let at = |v: &[f64]| {
        (
            Cloud {
                xs: v[..3].to_vec(),
            },
            Scaled {
                xs: v[3..6].to_vec(),
                scale: v[6],
            },
            v[7],
        )
    };
    let (a, s, k) = at(&v);
    let want: Vec<f64> = (0..3)
        .map(|i| a.xs[i] * s.scale * k + s.xs[i] * s.xs[i])
        .collect();
    support::assert_close(&blend(&a, &s, k), &want, 1e-12);
    let parts = |g: &CloudTangent, h: &ScaledTangent, gk: f64| {
        [g.xs.clone(), h.xs.clone(), vec![h.scale, gk]].concat()
    };
    check(
        &v,
        3,
        |v| {
            let (a, s, k) = at(v);
            blend(&a, &s, k)
        },
        |v, d| {
            let (a, s, k) = at(v);
            let (da, ds, dk) = at(d);
            let da = CloudTangent { xs: da.xs };
            let ds = ScaledTangent {
                xs: ds.xs,
                scale: ds.scale,
            };
            blend_jvp(&a, &s, k, &da, &ds, dk).1
        },
        |v, w| {
            let (a, s, k) = at(v);
            let (_, (g, h, gk)) = blend_vjp(&a, &s, k, w.to_vec());
            parts(&g, &h, gk)
        },
        |v, d, w| {
            let (a, s, k) = at(v);
            let (_, lin) = blend_lin(&a, &s, k);
            let (da, ds, dk) = at(d);
            let t = lin.apply((
                CloudTangent { xs: da.xs },
                ScaledTangent {
                    xs: ds.xs,
                    scale: ds.scale,
                },
                dk,
            ));
            let (g, h, gk) = lin.transpose(w.to_vec());
            (t, parts(&g, &h, gk))
        },
    );
}

/// A layer generic in its float type, nested twice beside a `Vec` of
/// pairs and a constant field.
#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Dense<T: Float> {
    pub w: Vec<T>,
    pub b: T,
}

#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Mlp {
    pub hidden: Dense<f64>,
    pub out: Dense<f64>,
    pub extra: Vec<(f64, f64)>,
    #[nondiff]
    pub n: usize,
    pub scale: f64,
}

#[differentiable]
impl Mlp {
    /// Reads the nested layers' `Vec`s through a destructured field and
    /// through `self.out`.
    #[differentiable]
    pub fn predict(&self, x: f64) -> f64 {
        let Mlp { hidden, .. } = self;
        let mut y = self.out.b;
        for j in 0..self.n {
            let z = (hidden.w[j] * x + hidden.b).tanh();
            y += self.out.w[j] * z + self.extra[j].0 * self.extra[j].1;
        }
        y * self.scale
    }
}

fn mlp(v: &[f64]) -> Mlp {
    Mlp {
        hidden: Dense {
            w: v[0..2].to_vec(),
            b: v[2],
        },
        out: Dense {
            w: v[3..5].to_vec(),
            b: v[5],
        },
        extra: vec![(v[6], v[7]), (v[8], v[9])],
        n: 2,
        scale: v[10],
    }
}

fn mlp_tangent(v: &[f64]) -> MlpTangent {
    let m = mlp(v);
    MlpTangent {
        hidden: DenseTangent {
            w: m.hidden.w,
            b: m.hidden.b,
        },
        out: DenseTangent {
            w: m.out.w,
            b: m.out.b,
        },
        extra: m.extra,
        scale: m.scale,
    }
}

fn mlp_flat(t: &MlpTangent) -> Vec<f64> {
    let extra: Vec<f64> = t.extra.iter().flat_map(|(a, b)| [*a, *b]).collect();
    [
        &t.hidden.w[..],
        &[t.hidden.b],
        &t.out.w[..],
        &[t.out.b],
        &extra[..],
        &[t.scale],
    ]
    .concat()
}

#[test]
fn vec_fields_of_nested_structs() {
    let v = [
        0.5, -0.3, 0.1, 1.5, 2.0, -0.2, 1.0, 2.0, -0.5, 0.25, 0.7, 0.4,
    ];
    check(
        &v,
        1,
        |v| vec![mlp(&v[..11]).predict(v[11])],
        |v, d| {
            vec![
                mlp(&v[..11])
                    .predict_jvp(v[11], &mlp_tangent(&d[..11]), d[11])
                    .1,
            ]
        },
        |v, w| {
            let (_, (g, gx)) = mlp(&v[..11]).predict_vjp(v[11], w[0]);
            [mlp_flat(&g), vec![gx]].concat()
        },
        |v, d, w| {
            let m = mlp(&v[..11]);
            let (_, lin) = m.predict_lin(v[11]);
            let (g, gx) = lin.transpose(w[0]);
            let t = lin.apply((mlp_tangent(&d[..11]), d[11]));
            (vec![t], [mlp_flat(&g), vec![gx]].concat())
        },
    );
    // By hand: the hidden layer's weight gradient.
    let m = mlp(&v[..11]);
    let x = v[11];
    let (_, (g, _)) = m.predict_vjp(x, 1.0);
    for j in 0..2 {
        let t = (m.hidden.w[j] * x + m.hidden.b).tanh();
        let want = m.scale * m.out.w[j] * (1.0 - t * t) * x;
        assert!((g.hidden.w[j] - want).abs() < 1e-12);
        assert!((g.out.w[j] - m.scale * t).abs() < 1e-12);
    }
}

/// A matrix whose column count is a constant field.
#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Grid {
    pub a: Vec<f64>,
    #[nondiff]
    pub cols: usize,
}

/// `xᵀ` times each row, summed: the loop bounds and the index read the
/// constant field `g.cols` inside the loops.
#[differentiable]
pub fn grid_dot(g: &Grid, x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..g.a.len() / g.cols {
        for j in 0..g.cols {
            s += g.a[i * g.cols + j] * x[j];
        }
    }
    s
}

#[test]
fn a_constant_field_read_in_a_loop_is_saved_once() {
    use linear_ad::TapeSize;
    let x = [0.5, -1.0, 2.0];
    let bytes = |rows: usize| {
        let g = Grid {
            a: (0..rows * 3).map(|k| k as f64 * 0.1).collect(),
            cols: 3,
        };
        let (_, (gg, gx)) = grid_dot_vjp(&g, &x, 1.0);
        // d/da = x per row, d/dx = the column sums.
        for i in 0..rows {
            assert_eq!(&gg.a[i * 3..i * 3 + 3], &x[..]);
        }
        for j in 0..3 {
            let col: f64 = (0..rows).map(|i| g.a[i * 3 + j]).sum();
            assert!((gx[j] - col).abs() < 1e-12);
        }
        grid_dot_lin(&g, &x).1.tape_bytes()
    };
    // The tape borrows the arrays and keeps the loop-invariant column
    // count once, so no index of the inner loop: it grows by at most the
    // outer loop's index per row (U keeps the index of a loop with a
    // run-time trip count), not by one index per element.
    let per_row = (bytes(200) - bytes(2)) / 198;
    assert!(
        per_row <= std::mem::size_of::<usize>(),
        "{per_row} bytes per row"
    );
}
