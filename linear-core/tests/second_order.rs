//! Second derivatives by composition (`passes::hvp`), checked on random
//! well-typed programs. For each program P (entry point: its last
//! function `fN`), with `d = L(J(P))` inlined, J, U and T of `d` as the
//! macro runs them, and the second-order adjoint
//! `soa(x, v, w) = (y, H_w·v, f'(x)ᵀw)`:
//!
//! * `d`, the pipeline's outputs on it and `soa` type-check;
//! * `soa`'s primal results are P's, bit for bit;
//! * its cotangent of `v` is the transpose of J's derivative:
//!   ⟨v', f'(x)ᵀw⟩ = ⟨w, f'(x)·v'⟩ up to rounding (J's run at `v'`);
//! * its cotangent of `x` is the derivative of the directional derivative:
//!   ⟨u, H_w·v⟩ = d/dt ⟨w, f'(x + t·u)·v⟩, the right side by central
//!   finite differences of a dual-number interpreter (no pass involved),
//!   where two step sizes agree (a branch taken differently at `x ± h·u`
//!   makes the finite difference meaningless: skipped and counted);
//! * its work is at most a constant times P's (reported);
//! * forward over reverse agrees: J of P's composed VJP (`first_vjp`) at
//!   `(x, w)` along `(v, 0)` gives `H_w·v` as the tangent of `x̄`, with
//!   P inlined, and with P's entry calling its callees kept as externs
//!   (`passes::through`: the VJP calls each callee and its VJP, evaluated
//!   with the callee inlined and its own composed VJP).
//!
//! `LINEAR_CORE_CASES=N` checks 0.15·N programs (default 300, as for the
//! theorems' default of 2000);
//! `LINEAR_CORE_SEED=seed,size` replays one.

mod common;

use std::cell::RefCell;

use common::{
    data_consts, dual_run_traced, for_random_programs, gen_program, random_like, random_value,
    Dual, Rng,
};
use linear_core::check::{check, check_linear_b};
use linear_core::eval::{dot, run, Value};
use linear_core::passes::forward_vjp::forward_vjp;
use linear_core::passes::hvp::{directional, first_vjp, second_adjoint};
use linear_core::passes::inline::inline;
use linear_core::passes::jvp::jvp;
use linear_core::passes::simplify::simplify;
use linear_core::passes::transpose::transpose;
use linear_core::passes::unzip::{unzip, Checkpoint};
use linear_core::Program;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

#[derive(Default, Debug)]
struct Stats {
    cases: u64,
    skipped_nonfinite: u64,
    skipped_nonsmooth: u64,
    hvp_checked: u64,
    /// Programs whose VJP J differentiated, and the VJPs refused.
    forward_over_reverse: u64,
    /// Of those, VJPs whose tape held records of loops or branches (made
    /// arrays by `passes::records`).
    with_records: u64,
    /// Of those, VJPs whose tape held records of loops inside loops or
    /// branches (kept in flat arrays by `passes::records`).
    with_nested: u64,
    vjp_refused: u64,
    /// Programs whose VJP went through its callees' VJPs
    /// (`passes::through`) and J differentiated, and the calls it made so.
    through: u64,
    through_calls: u64,
    /// Programs whose VJP by forward mode (`passes::forward_vjp`) was
    /// checked, of them those whose composed VJP `first_vjp` refused, and
    /// those it refused itself (arrays, too many reals).
    forward_mode: u64,
    forward_mode_only: u64,
    forward_mode_refused: u64,
    /// Programs whose VJP by forward mode was checked with the entry's
    /// calls kept as calls.
    forward_mode_calls: u64,
    work_ratio: f64,
}

fn fail(msg: String) -> TestCaseError {
    TestCaseError::fail(msg)
}

/// `x + h·u` on the reals of `x` (integers and booleans kept).
fn shifted(x: &Value, h: f64, u: &Value) -> Value {
    match (x, u) {
        (Value::Real(a), Value::Real(b)) => Value::Real(a + h * b),
        (Value::Tuple(a), Value::Tuple(b)) => {
            Value::Tuple(a.iter().zip(b).map(|(a, b)| shifted(a, h, b)).collect())
        }
        (Value::Array(a), Value::Array(b)) => {
            Value::Array(a.iter().zip(b).map(|(a, b)| shifted(a, h, b)).collect())
        }
        _ => x.clone(),
    }
}

/// The largest difference between the reals of `a` and `b`, which must
/// hold as many.
fn max_diff(a: &[Value], b: &[Value]) -> Result<f64, TestCaseError> {
    let (mut fa, mut fb) = (Vec::new(), Vec::new());
    a.iter().for_each(|v| v.flatten(&mut fa));
    b.iter().for_each(|v| v.flatten(&mut fb));
    prop_assert_eq!(fa.len(), fb.len());
    Ok(fa
        .iter()
        .zip(&fb)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs())))
}

/// J of a VJP (`name` in `j`, taking `(x, w)`) run at `(x, w)` along
/// `(v, 0)`: its tangents end with that of `x̄`, `H_w·v`.
fn along_v(
    j: &Program,
    name: &str,
    (x, v, w): (&[Value], &[Value], &[Value]),
) -> Result<linear_core::eval::Outcome, TestCaseError> {
    let args: Vec<Value> = x.iter().chain(w).cloned().collect();
    let zero_w: Vec<Value> = w.iter().map(|a| shifted(a, -1.0, a)).collect();
    let dirs: Vec<Value> = v.iter().chain(&zero_w).cloned().collect();
    run(j, name, &args, &dirs, &data_consts()).map_err(|e| fail(e.0))
}

fn finite(vs: &[Value]) -> bool {
    let mut flat = Vec::new();
    vs.iter().for_each(|v| v.flatten(&mut flat));
    flat.iter().all(|x| x.is_finite())
}

fn scale(vs: &[Value]) -> f64 {
    let mut flat = Vec::new();
    vs.iter().for_each(|v| v.flatten(&mut flat));
    flat.iter().fold(1.0f64, |m, x| m.max(x.abs()))
}

/// ⟨w, f'(x)·v⟩ by the dual-number interpreter.
fn directional_dot(p: &Program, f: &str, x: &[Value], v: &[Value], w: &[Value]) -> (f64, Vec<u64>) {
    let duals: Vec<Dual> = x
        .iter()
        .zip(v)
        .map(|(a, b)| Dual::from_values(a, b))
        .collect();
    let (out, trace) = dual_run_traced(p, f, duals);
    let t: Vec<Value> = out.iter().map(Dual::tangent).collect();
    (dot(w, &t), trace)
}

/// J, U and T of `d`, simplified, as the macro runs them.
fn first_order(d: &linear_core::Func) -> Result<Program, TestCaseError> {
    let src = Program {
        externs: vec![],
        funcs: vec![d.clone()],
    };
    check(&src).map_err(|e| fail(format!("L(J(P)) inlined ill-typed: {e}\n{src}")))?;
    let j = simplify(&jvp(&simplify(&src)).map_err(|e| fail(e.to_string()))?);
    check(&j).map_err(|e| fail(format!("J of L(J(P)) ill-typed: {e}\n{j}")))?;
    let u = simplify(&unzip(&j, Checkpoint::Adjoint).map_err(|e| fail(e.to_string()))?);
    check_linear_b(&u).map_err(|e| fail(format!("U of J of L(J(P)): {e}\n{u}")))?;
    let t = simplify(&transpose(&u).map_err(|e| fail(e.to_string()))?);
    check_linear_b(&t).map_err(|e| fail(format!("T of U of J of L(J(P)): {e}\n{t}")))?;
    Ok(t)
}

fn one_program(seed: u64, size: usize, st: &RefCell<Stats>) -> Result<(), TestCaseError> {
    let consts = data_consts();
    let p = gen_program(seed, size);
    let main = p.funcs.last().expect("a function").name.clone();
    let entry = p.func(main.as_str()).expect("entry").clone();
    let mut rng = Rng(seed ^ 0x50a);
    let x: Vec<Value> = entry
        .nl_params
        .iter()
        .map(|b| random_value(&mut rng, &b.ty))
        .collect();
    let v: Vec<Value> = x.iter().map(|a| random_like(&mut rng, a)).collect();
    let orig = run(&p, main.as_str(), &x, &[], &consts).map_err(|e| fail(e.0))?;
    if !finite(&orig.nl) {
        st.borrow_mut().skipped_nonfinite += 1;
        return Ok(());
    }
    let j = jvp(&p).map_err(|e| fail(e.to_string()))?;
    let d = directional(&j, main.as_str()).map_err(|e| fail(e.to_string()))?;
    let t = first_order(&d)?;
    let soa = second_adjoint(&t, &d, main.as_str()).map_err(|e| fail(e.to_string()))?;
    check(&soa).map_err(|e| fail(format!("second-order adjoint ill-typed: {e}\n{soa}")))?;
    let f = &soa.funcs[0];
    prop_assert!(f.is_nonlinear());
    let k = entry.nl_rets.len();
    let w: Vec<Value> = f.nl_params[2 * x.len()..]
        .iter()
        .map(|b| random_value(&mut rng, &b.ty))
        .collect();
    prop_assert_eq!(w.len(), k);
    let args: Vec<Value> = x.iter().chain(&v).chain(&w).cloned().collect();
    let out = run(&soa, f.name.as_str(), &args, &[], &consts).map_err(|e| fail(e.0))?;
    if !finite(&out.nl) {
        st.borrow_mut().skipped_nonfinite += 1;
        return Ok(());
    }
    prop_assert_eq!(
        &out.nl[..k],
        &orig.nl[..],
        "the primal results differ from P's"
    );
    let (xbar, vbar) = out.nl[k..].split_at(x.len());
    forward_over_reverse(&p, main.as_str(), (&x, &v, &w), xbar, st)?;
    forward_mode_vjp(
        &p,
        &d,
        main.as_str(),
        (&x, &v, &w),
        (&orig.nl, xbar, vbar),
        st,
    )?;
    forward_mode_through_calls(&p, main.as_str(), (&x, &v, &w), (xbar, vbar), st)?;
    through_calls(&p, main.as_str(), (&x, &v, &w), xbar, st)?;

    // The cotangent of v: f'(x)ᵀw, against J's run along a random v'.
    let v2: Vec<Value> = x.iter().map(|a| random_like(&mut rng, a)).collect();
    let jo = run(&j, &format!("{main}.jvp"), &x, &v2, &consts).map_err(|e| fail(e.0))?;
    let (lhs, rhs) = (dot(&v2, vbar), dot(&w, &jo.lin));
    let tol = 1e-9 * (1.0 + scale(&jo.lin) * scale(&w)) * (1.0 + jo.work as f64);
    prop_assert!(
        (lhs - rhs).abs() <= tol,
        "⟨v', f'ᵀw⟩ = {lhs} but ⟨w, f'v'⟩ = {rhs}\n{p}"
    );

    // The cotangent of x: H_w·v, against central differences along u, where
    // both ends of the step lie on x's smooth piece (equal traces).
    let u: Vec<Value> = x.iter().map(|a| random_like(&mut rng, a)).collect();
    let (_, here) = directional_dot(&p, main.as_str(), &x, &v, &w);
    let fd = |h: f64| {
        let plus: Vec<Value> = x.iter().zip(&u).map(|(a, b)| shifted(a, h, b)).collect();
        let minus: Vec<Value> = x.iter().zip(&u).map(|(a, b)| shifted(a, -h, b)).collect();
        let (up, up_trace) = directional_dot(&p, main.as_str(), &plus, &v, &w);
        let (down, down_trace) = directional_dot(&p, main.as_str(), &minus, &v, &w);
        let smooth = up_trace == here && down_trace == here;
        if smooth {
            (up - down) / (2.0 * h)
        } else {
            f64::NAN
        }
    };
    let (coarse, fine) = (fd(1e-4), fd(5e-5));
    let got = dot(&u, xbar);
    let agree = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()));
    let mut s = st.borrow_mut();
    if !(coarse.is_finite() && fine.is_finite() && agree(coarse, fine, 1e-5)) {
        s.skipped_nonsmooth += 1;
    } else {
        prop_assert!(
            agree(got, fine, 1e-4),
            "⟨u, H_w·v⟩ = {got}, finite differences {fine} (coarser: {coarse})\n{p}"
        );
        s.hvp_checked += 1;
    }
    s.cases += 1;
    s.work_ratio = s.work_ratio.max(out.work as f64 / orig.work.max(1) as f64);
    Ok(())
}

/// Forward over reverse: J of `P.vjp = L(T(U(J(P))))` composed
/// (`first_vjp`), run at `(x, w)` along `(v, 0)`, gives `H_w·v` as the
/// tangent of `x̄`, equal to `soa`'s (`xbar`) up to rounding. Programs
/// whose VJP keeps records of loops or branches are refused by
/// `first_vjp` and counted.
fn forward_over_reverse(
    p: &Program,
    main: &str,
    (x, v, w): (&[Value], &[Value], &[Value]),
    xbar: &[Value],
    st: &RefCell<Stats>,
) -> Result<(), TestCaseError> {
    let one = inline(p, main).map_err(|e| fail(e.to_string()))?;
    let arrays = one
        .nl_params
        .iter()
        .any(|b| matches!(b.ty, linear_core::Ty::Array(..)));
    if arrays || !linear_core::visit::data_arrays(&one.body).is_empty() {
        // `first_vjp` takes no arrays read by index, and the macro makes
        // no derived callees of functions of arrays or of `#[nondiff]`
        // data arrays (whose copies the inliner makes J does not read as
        // data).
        st.borrow_mut().vjp_refused += 1;
        return Ok(());
    }
    let t = first_order(&one)?;
    let vjp = match first_vjp(&t, main, &[]).map_err(|e| fail(e.to_string()))? {
        Some((f, _)) => f,
        None => {
            st.borrow_mut().vjp_refused += 1;
            return Ok(());
        }
    };
    // No parameter is an array and no data array is read: every array
    // and sum is a record.
    let records = linear_core::visit::binder_types(&vjp)
        .values()
        .any(|t| matches!(t, linear_core::Ty::Array(..) | linear_core::Ty::Sum(_)));
    // The records of a loop inside a loop or a branch, in the first-order
    // tape: a list whose elements hold lists of reals, or a sum that does.
    let nested = t.funcs.iter().any(|f| {
        linear_core::visit::binder_types(f)
            .values()
            .any(|t| match t {
                linear_core::Ty::List(e, _) => holds_list_of_reals(e),
                linear_core::Ty::Sum(_) => holds_list_of_reals(t),
                _ => false,
            })
    });
    let prog = Program {
        externs: vec![],
        funcs: vec![vjp],
    };
    check(&prog).map_err(|e| fail(format!("P.vjp ill-typed: {e}\n{prog}")))?;
    let j = simplify(&jvp(&prog).map_err(|e| fail(e.to_string()))?);
    check(&j).map_err(|e| fail(format!("J of P.vjp ill-typed: {e}\n{j}")))?;
    let name = format!("{}.jvp", prog.funcs[0].name);
    let out = along_v(&j, &name, (x, v, w))?;
    // Results `(y.., x̄..)`, tangents likewise: the tangent of `x̄`.
    let k = out.lin.len() - x.len();
    let hv = &out.lin[k..];
    let tol = 1e-8 * (1.0 + scale(hv).max(scale(xbar))) * (1.0 + out.work as f64);
    let diff = max_diff(hv, xbar)?;
    if diff.is_finite() {
        prop_assert!(
            diff <= tol,
            "forward over reverse differs from reverse over forward by {diff}\n{p}"
        );
        let mut st = st.borrow_mut();
        st.forward_over_reverse += 1;
        if records {
            st.with_records += 1;
        }
        if nested {
            st.with_nested += 1;
        }
    }
    Ok(())
}

/// The VJP by forward mode (`forward_vjp`, `order = 2`'s `f_vjp` where
/// the composed VJP cannot be differentiated), from `d = L(J(P))`, run at
/// `(x, w)`: its results are P's bit for bit and its cotangent `soa`'s
/// `f'(x)ᵀw` (`vbar`) up to rounding; J of it along `(v, 0)` gives `H_w·v`
/// (`xbar`) as the tangent of `x̄`. Where `first_vjp` gives the composed
/// VJP, the two have one signature.
fn forward_mode_vjp(
    p: &Program,
    d: &linear_core::Func,
    main: &str,
    (x, v, w): (&[Value], &[Value], &[Value]),
    (y, xbar, vbar): (&[Value], &[Value], &[Value]),
    st: &RefCell<Stats>,
) -> Result<(), TestCaseError> {
    let consts = data_consts();
    let one = inline(p, main).map_err(|e| fail(e.to_string()))?;
    // As for `first_vjp`: the macro makes no derived callees of functions
    // of arrays or of `#[nondiff]` data arrays.
    if reads_arrays(&one) {
        st.borrow_mut().forward_mode_refused += 1;
        return Ok(());
    }
    let Some(fb) = forward_vjp(d, &[], main).map_err(|e| fail(e.to_string()))? else {
        st.borrow_mut().forward_mode_refused += 1;
        return Ok(());
    };
    let composed = first_vjp(&first_order(&one)?, main, &[]).map_err(|e| fail(e.to_string()))?;
    if let Some((c, _)) = &composed {
        let types =
            |bs: &[linear_core::Binder]| bs.iter().map(|b| b.ty.clone()).collect::<Vec<_>>();
        prop_assert_eq!(types(&fb.nl_params), types(&c.nl_params));
        prop_assert_eq!(&fb.nl_rets, &c.nl_rets);
    }
    let prog = Program {
        externs: vec![],
        funcs: vec![fb],
    };
    check(&prog).map_err(|e| fail(format!("forward-mode VJP ill-typed: {e}\n{prog}")))?;
    let name = prog.funcs[0].name.to_string();
    let args: Vec<Value> = x.iter().chain(w).cloned().collect();
    let out = run(&prog, &name, &args, &[], &consts).map_err(|e| fail(e.0))?;
    let k = y.len();
    prop_assert_eq!(
        &out.nl[..k],
        y,
        "the forward-mode VJP's primal results differ from P's"
    );
    let grad = &out.nl[k..];
    let diff = max_diff(grad, vbar)?;
    // Forward mode against reverse mode: sums in different orders, as
    // forward over reverse is against reverse over forward (1e-8 there).
    let tol = 1e-8 * (1.0 + scale(grad).max(scale(vbar))) * (1.0 + out.work as f64);
    if !diff.is_finite() {
        return Ok(());
    }
    prop_assert!(
        diff <= tol,
        "forward-mode VJP differs from f'(x)ᵀw by {diff}\n{p}"
    );
    let j = simplify(&jvp(&prog).map_err(|e| fail(e.to_string()))?);
    check(&j).map_err(|e| fail(format!("J of the forward-mode VJP ill-typed: {e}\n{j}")))?;
    let jo = along_v(&j, &format!("{name}.jvp"), (x, v, w))?;
    let hv = &jo.lin[jo.lin.len() - x.len()..];
    let diff = max_diff(hv, xbar)?;
    let tol = 1e-8 * (1.0 + scale(hv).max(scale(xbar))) * (1.0 + jo.work as f64);
    if diff.is_finite() {
        prop_assert!(
            diff <= tol,
            "J of the forward-mode VJP differs from H_w·v by {diff}\n{p}"
        );
        let mut st = st.borrow_mut();
        st.forward_mode += 1;
        if composed.is_none() {
            st.forward_mode_only += 1;
        }
    }
    Ok(())
}

/// J, U and T of `src` (a program of one function and externs),
/// simplified, as the macro runs them.
fn pipeline(src: &Program) -> Result<Program, TestCaseError> {
    let j = simplify(&jvp(&simplify(src)).map_err(|e| fail(e.to_string()))?);
    let u = simplify(&unzip(&j, Checkpoint::Adjoint).map_err(|e| fail(e.to_string()))?);
    Ok(simplify(&transpose(&u).map_err(|e| fail(e.to_string()))?))
}

/// Forward over reverse through calls (`passes::through`): P's entry with
/// the functions it calls as externs, whose composed VJP calls each `g`
/// and its VJP `g.vjp`, differentiated by J together with IR functions
/// for them (`g` inlined, and an adapter around `g`'s own composed VJP
/// that returns what `g_vjp`'s call returns), at `(x, w)` along `(v, 0)`:
/// the tangent of `x̄` is `H_w·v`, equal to `soa`'s (`xbar`).
fn through_calls(
    p: &Program,
    main: &str,
    (x, v, w): (&[Value], &[Value], &[Value]),
    xbar: &[Value],
    st: &RefCell<Stats>,
) -> Result<(), TestCaseError> {
    use linear_core::passes::through::through_all;
    let Some((entry, _, externs)) = entry_calls(p, main)? else {
        return Ok(());
    };
    let src = Program {
        externs: externs.clone(),
        funcs: vec![entry.clone()],
    };
    check(&src).map_err(|e| fail(format!("P's entry with externs ill-typed: {e}\n{src}")))?;
    let t = pipeline(&src)?;
    let through = through_all(&externs);
    let Some((vjp, used)) = first_vjp(&t, main, &through).map_err(|e| fail(e.to_string()))? else {
        return Ok(());
    };
    // Each callee called through its VJP, inlined, its composed VJP and
    // the adapter `g.vjp`.
    let through: Vec<_> = through
        .into_iter()
        .filter(|th| used.iter().any(|e| e.name == th.vjp))
        .collect();
    let Some(mut funcs) = callee_functions(p, &through)? else {
        return Ok(());
    };
    funcs.push(vjp);
    let prog = Program {
        externs: vec![],
        funcs,
    };
    check(&prog).map_err(|e| fail(format!("P.vjp through calls ill-typed: {e}\n{prog}")))?;
    // Simplified first, as the macro runs J (on inlined callees too).
    let j = simplify(&jvp(&simplify(&prog)).map_err(|e| fail(e.to_string()))?);
    check(&j).map_err(|e| fail(format!("J of P.vjp through calls ill-typed: {e}\n{j}")))?;
    let name = format!("{}.jvp", prog.funcs.last().map_or("", |f| f.name.as_str()));
    let out = along_v(&j, &name, (x, v, w))?;
    let hv = &out.lin[out.lin.len() - x.len()..];
    let diff = max_diff(hv, xbar)?;
    let tol = 1e-8 * (1.0 + scale(hv).max(scale(xbar))) * (1.0 + out.work as f64);
    if diff.is_finite() {
        prop_assert!(
            diff <= tol,
            "forward over reverse through calls differs from reverse over forward by {diff}\n{p}"
        );
        let mut st = st.borrow_mut();
        st.through += 1;
        st.through_calls += through.len() as u64;
    }
    Ok(())
}

/// Whether `f` takes arrays or reads data arrays (which the macro makes
/// no derived callees of).
fn reads_arrays(f: &linear_core::Func) -> bool {
    f.nl_params
        .iter()
        .any(|b| matches!(b.ty, linear_core::Ty::Array(..)))
        || !linear_core::visit::data_arrays(&f.body).is_empty()
}

/// P's entry `main`, the functions it calls, and an extern for each (as
/// the macro sees callees compiled separately); `None` if it calls none
/// or reads arrays.
#[allow(clippy::type_complexity)]
fn entry_calls<'p>(
    p: &'p Program,
    main: &str,
) -> Result<
    Option<(
        &'p linear_core::Func,
        Vec<linear_core::Var>,
        Vec<linear_core::ir::Extern>,
    )>,
    TestCaseError,
> {
    let entry = p.func(main).ok_or_else(|| fail("no entry".into()))?;
    let mut called: Vec<linear_core::Var> = Vec::new();
    linear_core::visit::any_subexpr(&entry.body, &mut |e| {
        if let linear_core::Expr::App { func, .. } = e {
            if !called.contains(func) {
                called.push(func.clone());
            }
        }
        false
    });
    if called.is_empty() || reads_arrays(entry) {
        return Ok(None);
    }
    let mut externs = Vec::new();
    for g in &called {
        let f = p
            .func(g.as_str())
            .ok_or_else(|| fail(format!("no `{g}`")))?;
        let params = f.nl_params.iter().map(|b| b.ty.clone()).collect();
        externs.push(linear_core::ir::Extern::plain(
            g.clone(),
            (params, vec![]),
            (f.nl_rets.clone(), vec![]),
        ));
    }
    Ok(Some((entry, called, externs)))
}

/// The VJP by forward mode with P's entry calling its callees kept as
/// externs, as the macro builds it: from `d = L(J(entry))`, which calls
/// each callee's `g.jvp`, evaluated as `L(J(g))`. Its cotangent is
/// `f'(x)ᵀw` (`vbar`) and J of it along `(v, 0)` gives `H_w·v` (`xbar`), up
/// to rounding.
fn forward_mode_through_calls(
    p: &Program,
    main: &str,
    (x, v, w): (&[Value], &[Value], &[Value]),
    (xbar, vbar): (&[Value], &[Value]),
    st: &RefCell<Stats>,
) -> Result<(), TestCaseError> {
    use linear_core::passes::hvp::directional_externs;
    let consts = data_consts();
    let Some((entry, called, externs)) = entry_calls(p, main)? else {
        return Ok(());
    };
    let pj = jvp(p).map_err(|e| fail(e.to_string()))?;
    let mut funcs = Vec::new();
    for g in &called {
        let inlined = inline(p, g.as_str()).map_err(|e| fail(e.to_string()))?;
        if reads_arrays(&inlined) {
            return Ok(());
        }
        // J of the whole program, as `one_program` runs it (J of a callee
        // inlined alone may meet binders it does not expect).
        funcs.push(directional(&pj, g.as_str()).map_err(|e| fail(e.to_string()))?);
    }
    let j = jvp(&Program {
        externs,
        funcs: vec![entry.clone()],
    })
    .map_err(|e| fail(e.to_string()))?;
    let d = directional(&j, main).map_err(|e| fail(e.to_string()))?;
    let d_externs = directional_externs(&j).map_err(|e| fail(e.to_string()))?;
    let Some(fb) = forward_vjp(&d, &d_externs, main).map_err(|e| fail(e.to_string()))? else {
        return Ok(());
    };
    funcs.push(fb);
    let prog = Program {
        externs: vec![],
        funcs,
    };
    check(&prog).map_err(|e| {
        fail(format!(
            "forward-mode VJP with calls ill-typed: {e}\n{prog}"
        ))
    })?;
    let name = prog
        .funcs
        .last()
        .map_or("", |f| f.name.as_str())
        .to_string();
    let args: Vec<Value> = x.iter().chain(w).cloned().collect();
    let out = run(&prog, &name, &args, &[], &consts).map_err(|e| fail(e.0))?;
    let grad = &out.nl[out.nl.len() - x.len()..];
    let j = simplify(&jvp(&simplify(&prog)).map_err(|e| fail(e.to_string()))?);
    check(&j).map_err(|e| {
        fail(format!(
            "J of the forward-mode VJP with calls ill-typed: {e}\n{j}"
        ))
    })?;
    let jo = along_v(&j, &format!("{name}.jvp"), (x, v, w))?;
    let hv = &jo.lin[jo.lin.len() - x.len()..];
    for (got, want, work, what) in [
        (grad, vbar, out.work, "f'(x)ᵀw"),
        (hv, xbar, jo.work, "H_w·v"),
    ] {
        let diff = max_diff(got, want)?;
        let tol = 1e-8 * (1.0 + scale(got).max(scale(want))) * (1.0 + work as f64);
        if !diff.is_finite() {
            return Ok(());
        }
        prop_assert!(
            diff <= tol,
            "the forward-mode VJP with calls kept differs from {what} by {diff}\n{p}"
        );
    }
    st.borrow_mut().forward_mode_calls += 1;
    Ok(())
}

/// For each call through its callee's VJP, the callee inlined, its own
/// composed VJP and the adapter named as the VJP extern; `None` if
/// there is none, or a callee reads arrays or its VJP is refused.
fn callee_functions(
    p: &Program,
    through: &[linear_core::passes::through::Through],
) -> Result<Option<Vec<linear_core::Func>>, TestCaseError> {
    if through.is_empty() {
        return Ok(None);
    }
    let mut funcs = Vec::new();
    for th in through {
        let g = th.call.name.as_str();
        let inlined = inline(p, g).map_err(|e| fail(e.to_string()))?;
        let arrays = inlined
            .nl_params
            .iter()
            .any(|b| matches!(b.ty, linear_core::Ty::Array(..)))
            || !linear_core::visit::data_arrays(&inlined.body).is_empty();
        if arrays {
            return Ok(None);
        }
        let gt = pipeline(&Program {
            externs: vec![],
            funcs: vec![inlined.clone()],
        })?;
        let Some((mut gv, _)) = first_vjp(&gt, g, &[]).map_err(|e| fail(e.to_string()))? else {
            return Ok(None);
        };
        gv.name = linear_core::Var::new(&format!("{g}.vjp_inner"));
        let adapter = vjp_adapter(th, &gv);
        funcs.extend([inlined, gv, adapter]);
    }
    Ok(Some(funcs))
}

/// `g.vjp(x.., ȳ)`, as the extern `th.vjp` has it (the result and the
/// cotangents of the parameters holding reals, laid out as `th.rets`),
/// from `gv`, `g`'s composed VJP (`(x.., ȳ) -> (y, x̄..)`).
fn vjp_adapter(
    th: &linear_core::passes::through::Through,
    gv: &linear_core::Func,
) -> linear_core::Func {
    use linear_core::{Binder, Expr, Func, Stmt, Ty, Var};
    let var = |s: String| Var::new(&s);
    let params: Vec<Binder> = gv
        .nl_params
        .iter()
        .enumerate()
        .map(|(k, b)| Binder::new(var(format!("p.{k}")), b.ty.clone()))
        .collect();
    let outs: Vec<Binder> = gv
        .nl_rets
        .iter()
        .enumerate()
        .map(|(k, t)| Binder::new(var(format!("o.{k}")), t.clone()))
        .collect();
    let mut stmts = vec![Stmt::Let {
        nl: outs.clone(),
        lin: vec![],
        rhs: Expr::App {
            func: gv.name.clone(),
            nl: params.iter().map(|b| b.var.clone()).collect(),
            lin: vec![],
        },
    }];
    let (y, bars) = outs.split_at(1);
    // The cotangents, in order; the others (integers') dropped.
    let cts: Vec<&Binder> = th
        .cotangents
        .iter()
        .filter_map(|c| c.param.map(|k| &bars[k]))
        .collect();
    for (k, b) in bars.iter().enumerate() {
        if !th.cotangents.iter().any(|c| c.param == Some(k)) {
            stmts.push(Stmt::drop_nl(&b.var));
        }
    }
    let tail = if th.rets.len() == 1 {
        let c = match cts.as_slice() {
            [one] => one.var.clone(),
            many => {
                let c = var("c.0".into());
                let ty = Ty::Tuple(many.iter().map(|b| b.ty.clone()).collect());
                stmts.push(Stmt::Let {
                    nl: vec![Binder::new(c.clone(), ty)],
                    lin: vec![],
                    rhs: Expr::Tup(many.iter().map(|b| b.var.clone()).collect()),
                });
                c
            }
        };
        let r = var("r.0".into());
        stmts.push(Stmt::Let {
            nl: vec![Binder::new(r.clone(), th.rets[0].clone())],
            lin: vec![],
            rhs: Expr::Tup(vec![y[0].var.clone(), c]),
        });
        vec![r]
    } else {
        std::iter::once(y[0].var.clone())
            .chain(cts.iter().map(|b| b.var.clone()))
            .collect()
    };
    Func {
        name: th.vjp.clone(),
        nl_params: params,
        lin_params: vec![],
        nl_rets: th.rets.clone(),
        lin_rets: vec![],
        body: Expr::block(
            stmts,
            Expr::Ret {
                nl: tail,
                lin: vec![],
            },
        ),
    }
}

/// Whether a value of type `t` holds a list of reals.
fn holds_list_of_reals(t: &linear_core::Ty) -> bool {
    use linear_core::Ty;
    match t {
        Ty::List(e, _) => e.has_reals(),
        Ty::Tuple(ts) | Ty::Sum(ts) => ts.iter().any(holds_list_of_reals),
        Ty::Array(e, _) => holds_list_of_reals(e),
        Ty::Real(_) | Ty::Int | Ty::Bool | Ty::Tape(_) => false,
    }
}

#[test]
fn second_order_adjoints_hold_on_random_programs() {
    let cases: u32 = std::env::var("LINEAR_CORE_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(300, |n: u32| (n * 3).div_ceil(20));
    let stats = RefCell::new(Stats::default());
    let whole_sample = for_random_programs(cases, |seed, size| one_program(seed, size, &stats));
    let s = stats.into_inner();
    println!(
        "second order: {} programs, H·v checked against finite differences on {} ({} skipped where a step crosses a discontinuity or the differences disagree across step sizes, {} for non-finite values); forward over reverse (J of P.vjp) equal to it on {} ({} of them with records of loops or branches, {} with records of loops inside loops or branches; {} refused: VJPs that take arrays or read data arrays), and on {} with the calls kept, through the callees' VJPs ({} calls); the VJP by forward mode on {} ({} of them refused by the composed VJP; {} refused: arrays or too many reals), and on {} with the calls kept; W[soa] <= {:.1} W[P]",
        s.cases, s.hvp_checked, s.skipped_nonsmooth, s.skipped_nonfinite, s.forward_over_reverse, s.with_records, s.with_nested, s.vjp_refused, s.through, s.through_calls, s.forward_mode, s.forward_mode_only, s.forward_mode_refused, s.forward_mode_calls, s.work_ratio
    );
    if !whole_sample {
        return;
    }
    assert!(
        s.forward_over_reverse > 0,
        "no program's VJP was differentiated"
    );
    assert!(
        s.with_records * 20 > s.cases,
        "too few VJPs with records of loops or branches were differentiated"
    );
    assert!(
        s.hvp_checked * 2 > s.cases,
        "finite differences checked too few programs"
    );
    assert!(
        s.forward_mode * 4 > s.cases,
        "too few VJPs by forward mode were checked"
    );
}

/// Forward over reverse through the records of loops inside loops, which
/// random programs hold rarely (a few in a hundred): the first programs
/// of a fixed sequence of seeds whose tape holds them, checked as above.
#[test]
fn forward_over_reverse_holds_through_nested_loop_records() {
    let wanted = 12;
    let s = first_programs(
        |p| {
            p.funcs.iter().any(|f| {
                linear_core::visit::any_subexpr(&f.body, &mut |e| match e {
                    linear_core::Expr::Loop(l) => {
                        linear_core::visit::any_subexpr(&l.body, &mut |e| {
                            matches!(e, linear_core::Expr::Loop(_))
                        })
                    }
                    _ => false,
                })
            })
        },
        |s| s.with_nested >= wanted,
    );
    println!(
        "nested loops: {} programs, forward over reverse on {}, {} of them with records of loops inside loops",
        s.cases, s.forward_over_reverse, s.with_nested
    );
    assert!(
        s.with_nested >= wanted,
        "only {} VJPs with records of loops inside loops were differentiated",
        s.with_nested
    );
}

/// Checks, as [`one_program`] does, the programs of a fixed sequence of
/// seeds that `select` picks, until `enough` says so; their statistics.
fn first_programs(select: impl Fn(&Program) -> bool, enough: impl Fn(&Stats) -> bool) -> Stats {
    let stats = RefCell::new(Stats::default());
    for seed in 0..20_000u64 {
        if enough(&stats.borrow()) {
            break;
        }
        let size = 4 + (seed % 10) as usize;
        let p = gen_program(seed, size);
        if select(&p) {
            if let Err(e) = one_program(seed, size, &stats) {
                panic!("seed {seed}, size {size}: {e}\n{p}");
            }
        }
    }
    stats.into_inner()
}

/// Forward over reverse through calls kept as calls (`passes::through`),
/// which random programs make from their entry in about one case in
/// three: the first programs of a fixed sequence of seeds whose entry
/// calls other functions, checked as above until enough went through.
#[test]
fn forward_over_reverse_holds_through_calls() {
    let wanted = 30;
    let s = first_programs(
        |p| {
            p.funcs.last().is_some_and(|f| {
                linear_core::visit::any_subexpr(&f.body, &mut |e| {
                    matches!(e, linear_core::Expr::App { .. })
                })
            })
        },
        |s| s.through >= wanted,
    );
    println!(
        "calls: {} programs, forward over reverse through the callees' VJPs on {} ({} calls); the VJP by forward mode with the calls kept on {}",
        s.cases, s.through, s.through_calls, s.forward_mode_calls
    );
    assert!(
        s.through >= wanted,
        "only {} VJPs went through their callees' VJPs",
        s.through
    );
    assert!(
        s.forward_mode_calls >= wanted,
        "only {} VJPs by forward mode were checked with their calls kept",
        s.forward_mode_calls
    );
}
