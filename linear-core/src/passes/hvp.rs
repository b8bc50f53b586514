//! Second derivatives by composition: L on J(f), the first-order
//! pipeline again, and its VJP as one function, the Hessian-vector
//! product (paper, section 4.5: linearity erased, so that the derivative
//! can be differentiated again).
//!
//! For `f(x..) -> y..`:
//!
//! 1. [`directional`]: L (`passes::erase`) of `f.jvp(x..; ẋ..) -> (y..;
//!    ẏ..)`, inlined (`passes::inline`: J's calls of other functions' `.jvp`
//!    and L's componentwise helpers): the non-linear
//!    `f.jvp(x.., v..) -> (y.., ẏ..)`, with `ẏ = f'(x)·v`;
//! 2. the first-order pipeline (J, U, T) on it, run by the caller;
//! 3. [`second_adjoint`]: its forward pass then its transposed residual
//!    at the output cotangent `(0.., w..)`, L again, inlined:
//!    `f.soa(x.., v.., w..) -> (y.., H_w·v.., f'(x)ᵀw..)` with
//!    `H_w = Σ_i w_i ∇²f_i(x)`, since the gradient of `⟨w, f'(x)·v⟩` is
//!    `H_w·v` with respect to `x` and `f'(x)ᵀw` with respect to `v`;
//! 4. [`hvp`], for one real result: that at `w = 1`,
//!    `f.hvp(x.., v..) -> (y, H·v.., ∇f..)`.
//!
//! This is reverse over forward. Forward over reverse (J of the VJP)
//! would differentiate U's tape, whose loop records are lists and whose
//! branch records are sums, and J gives lists and sums no tangent (they
//! are piecewise constant in every program lowering makes); here the
//! second pipeline runs on J's output, which holds no tape: loops, cases
//! on booleans and arrays, as the first did.
//!
//! No second rule set: every step is one of the paper's passes, and the
//! result inherits their theorems. Work (Thm 5.1, 6.2, 7.1, Lemma 4.3):
//! L and inlining preserve it, J multiplies it by at most a constant, U
//! preserves it and T adds at most the sizes of inputs and outputs, so
//! an HVP costs a constant multiple of `f`.
//!
//! Refused, with a message the macro reports: callees outside the program
//! (externs: their own second derivatives do not exist); [`hvp`] also
//! refuses results other than one real. Output of [`second_adjoint`] and
//! [`hvp`]: a program of one non-linear function that type-checks in
//! Linear A, simplified.

use super::{erase::erase, inline::inline, simplify::simplify, PassError};
use crate::check::check;
use crate::ir::{Binder, Expr, Func, Program, Stmt, Ty, Var};
use crate::visit::Fresh;

/// Step 1: `f.jvp(x.., v..) -> (y.., ẏ..)`, J's output for `f` with
/// linearity erased, as one function.
pub fn directional(jvp: &Program, f: &str) -> Result<Func, PassError> {
    let name = Var::new(f);
    if !jvp.externs.is_empty() {
        return Err(PassError::new(&name, "second derivatives (`order = 2`) of functions that call other differentiable functions are not supported yet"));
    }
    let erased = erase(jvp)?;
    inline(&erased, &format!("{f}.jvp"))
}

/// Step 3: `f.soa(x.., v.., w..) -> (y.., H_w·v.., f'(x)ᵀw..)` from the
/// first-order pipeline's transposed program for `d`, the function
/// [`directional`] made.
pub fn second_adjoint(transposed: &Program, d: &Func, f: &str) -> Result<Program, PassError> {
    let name = Var::new(f);
    let err = |msg: &str| PassError::new(&name, msg);
    let d_name = d.name.as_str();
    let forward = find(transposed, &format!("{d_name}.jvp.nl"))?;
    let reverse = find(transposed, &format!("{d_name}.jvp.lin.t"))?;
    let vjp = composed_vjp(forward, reverse, &name)?;
    let vjp_name = vjp.name.clone();
    let program = Program {
        externs: vec![],
        funcs: vec![forward.clone(), reverse.clone(), vjp],
    };
    check(&program).map_err(|e| err(&format!("the composed VJP {e}")))?;
    // Inlined and simplified before L, which would make the zero
    // cotangents of `y..` literals the simplifier no longer propagates.
    let vjp = simplify(&Program {
        externs: vec![],
        funcs: vec![inline(&program, vjp_name.as_str())?],
    });
    check(&vjp).map_err(|e| err(&format!("the inlined VJP {e}")))?;
    let mut out = erase(&vjp)?;
    let soa_name = Var::new(&format!("{f}.soa"));
    let mut soa = inline(&out, vjp_name.as_str())?;
    soa.name = soa_name;
    out = simplify(&Program {
        externs: vec![],
        funcs: vec![soa],
    });
    check(&out).map_err(|e| err(&format!("the second-order adjoint {e}")))?;
    Ok(out)
}

/// Step 4: `f.hvp(x.., v..) -> (y, H·v.., ∇f..)` for `f` of one real
/// result: [`second_adjoint`] at `w = 1`.
pub fn hvp(transposed: &Program, d: &Func, f: &str) -> Result<Program, PassError> {
    let name = Var::new(f);
    let err = |msg: &str| PassError::new(&name, msg);
    let soa = second_adjoint(transposed, d, f)?;
    let inner = &soa.funcs[0];
    // One real result: `soa` takes one cotangent `w` after `x..` and `v..`.
    let (w, xs, float) = match inner.nl_params.split_last() {
        Some((
            w @ Binder {
                ty: Ty::Real(f), ..
            },
            xs,
        )) if xs.len() == d.nl_params.len() => (w, xs, *f),
        _ => {
            return Err(err(
                "second derivatives (`order = 2`) need a function returning one float",
            ))
        }
    };
    let hvp = Func {
        name: Var::new(&format!("{f}.hvp")),
        nl_params: xs.to_vec(),
        lin_params: vec![],
        nl_rets: inner.nl_rets.clone(),
        lin_rets: vec![],
        body: Expr::block(
            vec![Stmt::Let {
                nl: vec![w.clone()],
                lin: vec![],
                rhs: Expr::Lit { value: 1.0, float },
            }],
            inner.body.clone(),
        ),
    };
    let out = simplify(&Program {
        externs: vec![],
        funcs: vec![hvp],
    });
    check(&out).map_err(|e| err(&format!("the HVP {e}")))?;
    Ok(out)
}

/// `d.vjp(x.., v..; w..) -> (y..; x̄.., v̄..)`: the forward pass, then
/// the transposed residual at cotangents `(0.., w..)` (zero for `y..`),
/// with zeroed accumulators for the arrays it reads by index (one per
/// array parameter, in order).
fn composed_vjp(forward: &Func, reverse: &Func, name: &Var) -> Result<Func, PassError> {
    let mut fresh = Fresh::for_func(forward);
    fresh.reserve_func(reverse);
    let Some((tape_ty, results)) = forward.nl_rets.split_last() else {
        return Err(PassError::new(
            name,
            "the directional derivative's forward pass returns no tape",
        ));
    };
    let k = results.len() / 2;
    let (ys, dys) = results.split_at(k);
    let arrays: Vec<&Binder> = forward
        .nl_params
        .iter()
        .filter(|b| matches!(b.ty, Ty::Array(..)))
        .collect();
    let accs = &reverse.lin_params[results.len().min(reverse.lin_params.len())..];
    if results.len() % 2 != 0 || reverse.nl_params.len() != 1 || accs.len() != arrays.len() {
        return Err(PassError::new(name, "the transposed residual takes other than the tape, a cotangent per result and one accumulator per array parameter"));
    }
    let binders = |fresh: &mut Fresh, hint: &str, tys: &[Ty]| -> Vec<Binder> {
        tys.iter()
            .map(|t| Binder::new(fresh.var(hint), t.clone()))
            .collect()
    };
    let (y, dy) = (binders(&mut fresh, "y", ys), binders(&mut fresh, "dy", dys));
    let (zeros, ws) = (
        binders(&mut fresh, "ct", ys),
        binders(&mut fresh, "ct", dys),
    );
    let tape = fresh.var("tape");
    let vars = |bs: &[Binder]| -> Vec<Var> { bs.iter().map(|b| b.var.clone()).collect() };
    let mut nl = y.clone();
    nl.extend(dy.iter().cloned());
    nl.push(Binder::new(tape.clone(), tape_ty.clone()));
    let mut stmts = vec![Stmt::Let {
        nl,
        lin: vec![],
        rhs: Expr::App {
            func: forward.name.clone(),
            nl: vars(&forward.nl_params),
            lin: vec![],
        },
    }];
    stmts.extend(dy.iter().map(|b| Stmt::drop_nl(&b.var)));
    for z in &zeros {
        stmts.push(Stmt::Let {
            nl: vec![],
            lin: vec![z.clone()],
            rhs: Expr::LinZero(z.ty.clone()),
        });
    }
    let mut lin_args = vars(&zeros);
    lin_args.extend(vars(&ws));
    for (acc, array) in accs.iter().zip(arrays) {
        let (n, a) = (fresh.var("n"), fresh.var("acc"));
        stmts.push(Stmt::Let {
            nl: vec![Binder::new(n.clone(), Ty::Int)],
            lin: vec![],
            rhs: Expr::Len(array.var.clone()),
        });
        stmts.push(Stmt::Let {
            nl: vec![],
            lin: vec![Binder::new(a.clone(), acc.ty.clone())],
            rhs: Expr::LinZeros {
                ty: acc.ty.clone(),
                len: n,
            },
        });
        lin_args.push(a);
    }
    let bars = binders(&mut fresh, "ct_x", &reverse.lin_rets);
    stmts.push(Stmt::Let {
        nl: vec![],
        lin: bars.clone(),
        rhs: Expr::App {
            func: reverse.name.clone(),
            nl: vec![tape],
            lin: lin_args,
        },
    });
    Ok(Func {
        name: Var::new(&format!("{}.vjp", forward.name)),
        nl_params: forward.nl_params.clone(),
        lin_params: ws,
        nl_rets: ys.to_vec(),
        lin_rets: reverse.lin_rets.clone(),
        body: Expr::block(
            stmts,
            Expr::Ret {
                nl: vars(&y),
                lin: vars(&bars),
            },
        ),
    })
}

fn find<'a>(p: &'a Program, name: &str) -> Result<&'a Func, PassError> {
    p.func(name)
        .ok_or_else(|| PassError::new(&Var::new(name), "not in the pipeline's output"))
}
