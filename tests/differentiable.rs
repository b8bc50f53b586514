//! `#[differentiable]` on the straight-line subset: derivatives against
//! central finite differences, and the three modes against each other
//! (`apply` = `f_jvp`, `transpose` = `f_vjp`, ⟨ȳ, J ẋ⟩ = ⟨Jᵀ ȳ, ẋ⟩).
//! The generated code must compile warning-free.
#![deny(warnings)]

use linear_ad::{differentiable, LinearMap};

/// Central finite difference of `f` at `x` along `dx`.
fn fd(f: impl Fn(&[f64]) -> f64, x: &[f64], dx: &[f64]) -> f64 {
    let h = 1e-6;
    let at = |s: f64| {
        let p: Vec<f64> = x.iter().zip(dx).map(|(a, d)| a + s * h * d).collect();
        f(&p)
    };
    (at(1.0) - at(-1.0)) / (2.0 * h)
}

fn assert_close(a: f64, b: f64, tol: f64, what: &str) {
    assert!(
        (a - b).abs() <= tol * (1.0 + a.abs() + b.abs()),
        "{what}: {a} vs {b}"
    );
}

#[differentiable]
fn every_method(x: f64, y: f64) -> f64 {
    let a = x.sin() * y.cos() + x.tan() - (x * 0.5).asin() + (y * 0.3).acos() + x.atan();
    let b = y.atan2(x) + x.sinh() - y.cosh() + x.tanh() + x.exp() - y.exp2();
    let p = x * x + 1.0;
    let c = p.ln() + p.log2() - p.log10() + p.sqrt() + p.cbrt() + x.powi(3) - p.powi(-2);
    let d = p.powf(y) + x.recip() + (x - y).abs() + x.hypot(y) + x.min(y) * y.max(x);
    let e = f64::sin(x) * f64::max(x, y) + x.mul_add(y, 2.0) + x.signum();
    a + b + c + d + e
}

#[test]
fn every_float_method_matches_finite_differences() {
    let f = |v: &[f64]| every_method(v[0], v[1]);
    for (x, y) in [(0.7, 1.3), (-0.4, 0.9), (1.1, -0.6)] {
        for (dx, dy) in [(1.0, 0.0), (0.0, 1.0), (0.3, -0.8)] {
            let (v, t) = every_method_jvp(x, y, dx, dy);
            assert_eq!(v, every_method(x, y));
            assert_close(
                t,
                fd(f, &[x, y], &[dx, dy]),
                1e-6,
                "jvp vs finite difference",
            );
        }
        let (v, (gx, gy)) = every_method_vjp(x, y, 1.0);
        assert_eq!(v, every_method(x, y));
        assert_close(gx, every_method_jvp(x, y, 1.0, 0.0).1, 1e-12, "vjp x");
        assert_close(gy, every_method_jvp(x, y, 0.0, 1.0).1, 1e-12, "vjp y");
    }
}

#[differentiable]
pub fn rosenbrock(x: f64, y: f64) -> f64 {
    let a = 1.0 - x;
    let b = y - x * x;
    a * a + 100.0 * b * b
}

#[test]
fn rosenbrock_gradient_is_exact() {
    let (x, y) = (-1.2, 1.0);
    let (v, (gx, gy)) = rosenbrock_vjp(x, y, 1.0);
    assert_eq!(v, rosenbrock(x, y));
    // ∂/∂x = -2(1 - x) - 400 x (y - x²); ∂/∂y = 200 (y - x²).
    assert_close(
        gx,
        -2.0 * (1.0 - x) - 400.0 * x * (y - x * x),
        1e-14,
        "d/dx",
    );
    assert_close(gy, 200.0 * (y - x * x), 1e-14, "d/dy");
}

/// Tuples and arrays in and out, a destructured tuple parameter, fields and
/// constant indices, a nondiff integer, `let mut` with compound assignment,
/// shadowing, an inactive call, a `const`.
const SCALE: f64 = 1.5;

fn weight(n: usize) -> f64 {
    1.0 / (n as f64 + 1.0)
}

#[differentiable]
pub fn shapes(p: [f64; 3], (u, v): (f64, f64), n: usize) -> (f64, [f64; 2]) {
    let w = weight(n) * SCALE;
    let mut acc = p[0] * u;
    acc += p[1] * v;
    acc *= w;
    acc -= p[2].sin();
    let pair = (acc, u * v);
    let acc = pair.0 + pair.1;
    let [a, b, _c] = p;
    (acc, [a * b, acc / (1.0 + b * b)])
}

fn shapes_flat(x: &[f64], n: usize) -> [f64; 3] {
    let (s, [q, r]) = shapes([x[0], x[1], x[2]], (x[3], x[4]), n);
    [s, q, r]
}

#[test]
fn tuples_arrays_and_constants() {
    let p = [0.3, -1.2, 0.8];
    let uv = (0.5, 2.0);
    let n = 3;
    let x = [p[0], p[1], p[2], uv.0, uv.1];
    let dp = [0.2, 0.7, -0.4];
    let duv = (1.0, -0.5);
    let dx = [dp[0], dp[1], dp[2], duv.0, duv.1];
    let (val, tan) = shapes_jvp(p, uv, n, dp, duv);
    assert_eq!(val, shapes(p, uv, n));
    let outs = [tan.0, tan.1[0], tan.1[1]];
    for (k, t) in outs.iter().enumerate() {
        let fk = |v: &[f64]| shapes_flat(v, n)[k];
        assert_close(*t, fd(fk, &x, &dx), 1e-7, "jvp component");
    }

    // Linearize once; apply equals the JVP, transpose equals the VJP, and
    // the two are adjoint.
    let (val2, lin) = shapes_lin(p, uv, n);
    assert_eq!(val2, val);
    assert_eq!(lin.apply((dp, duv)), tan);
    let ybar = (0.9, [-0.3, 1.7]);
    let (val3, (gp, guv)) = shapes_vjp(p, uv, n, ybar);
    assert_eq!(val3, val);
    assert_eq!(lin.transpose(ybar), (gp, guv));
    let lhs = ybar.0 * tan.0 + ybar.1[0] * tan.1[0] + ybar.1[1] * tan.1[1];
    let rhs = gp[0] * dp[0] + gp[1] * dp[1] + gp[2] * dp[2] + guv.0 * duv.0 + guv.1 * duv.1;
    assert_close(lhs, rhs, 1e-13, "<ybar, J xdot> = <J^T ybar, xdot>");
}

/// `#[nondiff]` floats are constants; unused parameters get zero
/// cotangents; `return` ends the function.
#[differentiable]
#[allow(clippy::needless_return)] // the test is that a final `return` is accepted
fn with_nondiff(x: f64, #[nondiff] k: f64, unused: f64) -> f64 {
    let _ = unused;
    return k * x.exp();
}

#[test]
fn nondiff_and_unused_parameters() {
    let (v, (gx, gu)) = with_nondiff_vjp(0.4, 3.0, 9.0, 1.0);
    assert_eq!(v, with_nondiff(0.4, 3.0, 9.0));
    assert_close(gx, 3.0 * 0.4f64.exp(), 1e-15, "d/dx");
    assert_eq!(gu, 0.0);
    let (_, t) = with_nondiff_jvp(0.4, 3.0, 9.0, 0.0, 1.0);
    assert_eq!(t, 0.0);
}

/// f32 in, f32 out, with shadowing and a block expression.
#[differentiable]
fn single(x: f32, y: f32) -> f32 {
    let x = x * 2.0;
    let z = {
        let t = x * y;
        t.exp() - 1.0
    };
    z / (1.0 + x * x)
}

#[test]
fn f32_functions() {
    let (x, y) = (0.3f32, -0.7f32);
    let (v, (gx, gy)) = single_vjp(x, y, 1.0);
    assert_eq!(v, single(x, y));
    let f = |v: &[f64]| single(v[0] as f32, v[1] as f32) as f64;
    let h = 1e-3f64;
    let num_x = (f(&[x as f64 + h, y as f64]) - f(&[x as f64 - h, y as f64])) / (2.0 * h);
    let num_y = (f(&[x as f64, y as f64 + h]) - f(&[x as f64, y as f64 - h])) / (2.0 * h);
    assert_close(gx as f64, num_x, 1e-3, "f32 d/dx");
    assert_close(gy as f64, num_y, 1e-3, "f32 d/dy");
    let (_, lin) = single_lin(x, y);
    assert_eq!(lin.transpose(1.0), (gx, gy));
}

/// A long expression (the 50-operation workload of the benchmarks) stays
/// exact between modes.
#[differentiable]
fn long_expression(a: f64, b: f64, c: f64, d: f64) -> f64 {
    let s1 = a * b + c.sin() - d.cos() * a;
    let s2 = (s1 * s1 + 1.0).sqrt() / (b * b + 2.0);
    let s3 = s2.exp() * c - (a - d).tanh() + s1 * d;
    let s4 = (s3 * s3 + s2 * s2 + 1.0).ln() + a.atan2(b + 3.0);
    let s5 = s4 * s1 - s3 / (1.0 + s2 * s2) + (c * d).sin() * (a * b).cos();
    s5 * s5 + s4 - s3 * s2 + s1
}

#[test]
fn many_inputs_one_reverse_pass() {
    let x = [0.4, -0.3, 1.2, 0.8];
    let (_, (ga, gb, gc, gd)) = long_expression_vjp(x[0], x[1], x[2], x[3], 1.0);
    let g = [ga, gb, gc, gd];
    let f = |v: &[f64]| long_expression(v[0], v[1], v[2], v[3]);
    for (k, gk) in g.iter().enumerate() {
        let mut e = [0.0; 4];
        e[k] = 1.0;
        assert_close(
            *gk,
            fd(f, &x, &e),
            1e-6,
            "gradient component vs finite difference",
        );
        let (_, t) = long_expression_jvp(x[0], x[1], x[2], x[3], e[0], e[1], e[2], e[3]);
        assert_close(*gk, t, 1e-12, "gradient component vs jvp");
    }
}

#[differentiable]
fn cube_folded(s: f64) -> f64 {
    s * s * s
}

#[differentiable(fold = false)]
fn cube_unfolded(s: f64) -> f64 {
    s * s * s
}

/// J differentiates `s * s * s` one product at a time: `s·((s + s)·ṡ) +
/// (s·s)·ṡ`. By default the scalings are folded into one coefficient,
/// `(s·(s + s) + s·s)·ṡ`, computed in the forward pass; `fold = false`
/// keeps J's order of operations, and so its rounding, exactly.
#[test]
fn fold_false_keeps_the_chain_rules_rounding() {
    let mut differ = 0;
    for s in [0.1, 1.7, -3.3, 7.9, 1e3, 0.3] {
        for ds in [0.37, -1.1, 3.0e-5, 0.7] {
            let chain = s * ((s + s) * ds) + (s * s) * ds;
            let folded = (s * (s + s) + s * s) * ds;
            assert_eq!(cube_unfolded_jvp(s, ds).1, chain);
            assert_eq!(cube_folded_jvp(s, ds).1, folded);
            assert_eq!(cube_unfolded_vjp(s, ds).1, chain);
            assert_eq!(cube_folded_vjp(s, ds).1, folded);
            differ += usize::from(chain != folded);
            assert_eq!(cube_folded(s), cube_unfolded(s));
        }
    }
    // The two roundings are told apart.
    assert!(differ > 0);
}

/// Parameters bound by patterns (tuples, arrays, `_`), which `f_lin` and
/// `f_vjp` take whole and pass on to the forward pass they share, where
/// the patterns bind.
#[differentiable]
fn patterned(
    x: f64,
    #[nondiff] (lo, hi): (usize, usize),
    _: f64,
    #[nondiff] [a, b]: [f64; 2],
) -> f64 {
    let w = (hi + lo + 3) as f64;
    x * x * w + a * x.sin() + b
}

#[test]
fn constant_parameters_bound_by_patterns() {
    let (x, r, ab): (f64, _, _) = (0.7, (2, 5), [1.5, -0.25]);
    let expected = patterned(x, r, 9.0, ab);
    assert_eq!(expected, x * x * 10.0 + 1.5 * x.sin() - 0.25);
    let derivative = 2.0 * x * 10.0 + 1.5 * x.cos();
    let (y, (g, g_blank)) = patterned_vjp(x, r, 9.0, ab, 1.0);
    assert_eq!(y, expected);
    assert_close(g, derivative, 1e-14, "vjp");
    assert_eq!(g_blank, 0.0);
    let (y2, lin) = patterned_lin(x, r, 9.0, ab);
    assert_eq!(y2, expected);
    assert_eq!(lin.transpose(1.0), (g, g_blank));
    assert_eq!(
        patterned_jvp(x, r, 9.0, ab, 1.0, 0.0).1,
        lin.apply((1.0, 0.0))
    );
}

/// Constant data that borrows, for the lifetime parameters below.
pub struct Weights<'w> {
    pub w: &'w [f64],
}

/// Lifetime parameters: the generated functions take the same parameters
/// with the lifetimes elided (they return values, never references).
#[differentiable]
pub fn weighted_prefix<'a, 'b: 'a>(x: &'a [f64], #[nondiff] d: &'b Weights<'b>, n: usize) -> f64 {
    let mut s = 0.0;
    'terms: for (k, xk) in x.iter().enumerate() {
        if k == n {
            break 'terms;
        }
        s += xk * d.w[k];
    }
    s * s
}

/// A function with a lifetime parameter that others call.
#[differentiable]
pub fn first_weight<'a>(y: f64, #[nondiff] d: &'a Weights<'a>) -> f64 {
    y * d.w[0]
}

/// Its caller.
#[differentiable]
pub fn prefix_caller(y: f64, #[nondiff] d: &Weights) -> f64 {
    let z = first_weight(y, d);
    z * z
}

#[test]
fn functions_with_lifetime_parameters() {
    let w = [2.0, 3.0, 4.0];
    let d = Weights { w: &w };
    let x = [1.0, -1.0, 0.5];
    // s = 2 - 3 = -1 after two terms; the gradient of s² is 2s·w.
    let (v, g) = weighted_prefix_vjp(&x, &d, 2, 1.0);
    assert_eq!(v, 1.0);
    assert_eq!(g, vec![-4.0, -6.0, 0.0]);
    let (_, t) = weighted_prefix_jvp(&x, &d, 2, &[1.0, 0.0, 0.0]);
    assert_eq!(t, -4.0);
    // (2y)², derivative 8y.
    assert_eq!(prefix_caller_vjp(0.5, &d, 1.0), (1.0, 4.0));
}
