//! Second derivatives by composition: L on J(f), the first-order
//! pipeline again, and its VJP as one function, the Hessian-vector
//! product (paper, section 4.5: linearity erased, so that the derivative
//! can be differentiated again).
//!
//! For `f(x..) -> y` (one real result):
//!
//! 1. [`directional`]: L (`passes::erase`) of `f.jvp(x..; ẋ..) -> (y; ẏ)`,
//!    inlined (`passes::inline`, for L's componentwise helpers): the
//!    non-linear `f.jvp(x.., v..) -> (y, ẏ)`, with `ẏ = ∇f(x)·v`;
//! 2. the first-order pipeline (J, U, T) on it, run by the caller;
//! 3. [`hvp`]: its forward pass then its transposed residual at the
//!    output cotangent `(0, 1)`, L again and inlined, the literal 1
//!    substituted: `f.hvp(x.., v..) -> (y, H·v.., ∇f..)`, since the
//!    gradient of `∇f(x)·v` is `H(x)·v` with respect to `x` and `∇f(x)`
//!    with respect to `v`.
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
//! Refused, with a message the macro reports: results other than one real,
//! and callees (externs: their own second derivatives do not exist).
//! Output of [`hvp`]: a program of one non-linear function that
//! type-checks in Linear A, simplified.

use super::{erase::erase, inline::inline, simplify::simplify, PassError};
use crate::check::check;
use crate::ir::{Binder, Expr, Float, Func, Program, Stmt, Ty, Var};
use crate::visit::Fresh;

/// Step 1: `f.jvp(x.., v..) -> (y, ẏ)`, J's output for `f` with
/// linearity erased, as one function.
pub fn directional(jvp: &Program, f: &str) -> Result<Func, PassError> {
    let name = Var::new(f);
    if !jvp.externs.is_empty() {
        return Err(PassError::new(&name, "second derivatives (`order = 2`) of functions that call other differentiable functions are not supported yet"));
    }
    let fj = format!("{f}.jvp");
    let src = jvp
        .func(&fj)
        .ok_or_else(|| PassError::new(&name, "no J output to differentiate again"))?;
    match (src.nl_rets.as_slice(), src.lin_rets.as_slice()) {
        ([Ty::Real(_)], [Ty::Real(_)]) => {}
        _ => {
            return Err(PassError::new(
                &name,
                "second derivatives (`order = 2`) need a function returning one float",
            ))
        }
    }
    let erased = erase(jvp)?;
    inline(&erased, &fj)
}

/// Step 3: `f.hvp(x.., v..) -> (y, H·v.., ∇f..)` from the first-order
/// pipeline's transposed program for `d`, the function [`directional`]
/// made.
pub fn hvp(transposed: &Program, d: &Func, f: &str) -> Result<Program, PassError> {
    let name = Var::new(f);
    let err = |msg: &str| PassError::new(&name, msg);
    let d_name = d.name.as_str();
    let forward = find(transposed, &format!("{d_name}.jvp.nl"))?;
    let reverse = find(transposed, &format!("{d_name}.jvp.lin.t"))?;
    let float = match forward.nl_rets.as_slice() {
        [Ty::Real(a), Ty::Real(_), _tape] => *a,
        _ => return Err(err("the directional derivative's forward pass returns other than (y, ẏ, tape)")),
    };
    let vjp = composed_vjp(forward, reverse, float, &name)?;
    let vjp_name = vjp.name.clone();
    let program = Program {
        externs: vec![],
        funcs: vec![forward.clone(), reverse.clone(), vjp],
    };
    check(&program).map_err(|e| err(&format!("the composed VJP {e}")))?;
    // Inlined and simplified before L, which would make the cotangent 0
    // of `y` a literal the simplifier no longer propagates as a zero.
    let vjp = simplify(&Program {
        externs: vec![],
        funcs: vec![inline(&program, vjp_name.as_str())?],
    });
    check(&vjp).map_err(|e| err(&format!("the inlined VJP {e}")))?;
    let mut erased = erase(&vjp)?;
    // The erased VJP takes the cotangent of ẏ after the primal
    // parameters: 1, for the gradient of ẏ.
    let mut fresh = Fresh::default();
    for f in &erased.funcs {
        fresh.reserve_func(f);
    }
    let one = fresh.var("one");
    let mut args: Vec<Var> = d.nl_params.iter().map(|b| b.var.clone()).collect();
    args.push(one.clone());
    let hvp_name = Var::new(&format!("{f}.hvp"));
    let erased_vjp = erased
        .func(vjp_name.as_str())
        .ok_or_else(|| err("the composed VJP vanished under L"))?;
    erased.funcs.push(Func {
        name: hvp_name.clone(),
        nl_params: d.nl_params.clone(),
        lin_params: vec![],
        nl_rets: erased_vjp.nl_rets.clone(),
        lin_rets: vec![],
        body: Expr::block(
            vec![Stmt::Let {
                nl: vec![Binder::new(one, Ty::Real(float))],
                lin: vec![],
                rhs: Expr::Lit { value: 1.0, float },
            }],
            Expr::App {
                func: vjp_name,
                nl: args,
                lin: vec![],
            },
        ),
    });
    let out = simplify(&Program {
        externs: vec![],
        funcs: vec![inline(&erased, hvp_name.as_str())?],
    });
    check(&out).map_err(|e| err(&format!("the HVP {e}")))?;
    Ok(out)
}

/// `d.vjp(x.., v..; c) -> (y; x̄.., v̄..)`: the forward pass, then the
/// transposed residual at cotangents `(0, c)`, with zeroed accumulators
/// for the arrays it reads by index (one per array parameter, in order).
fn composed_vjp(forward: &Func, reverse: &Func, float: Float, name: &Var) -> Result<Func, PassError> {
    let mut fresh = Fresh::for_func(forward);
    fresh.reserve_func(reverse);
    let real = Ty::Real(float);
    let (y, dy, tape) = (fresh.var("y"), fresh.var("dy"), fresh.var("tape"));
    let (zero, c) = (fresh.var("ct"), fresh.var("ct"));
    let tape_ty = forward.nl_rets[2].clone();
    let arrays: Vec<&Binder> = forward
        .nl_params
        .iter()
        .filter(|b| matches!(b.ty, Ty::Array(..)))
        .collect();
    let accs = &reverse.lin_params[2.min(reverse.lin_params.len())..];
    if reverse.nl_params.len() != 1 || reverse.lin_params.len() < 2 || accs.len() != arrays.len() {
        return Err(PassError::new(name, "the transposed residual takes other than the tape, two cotangents and one accumulator per array parameter"));
    }
    let mut stmts = vec![
        Stmt::Let {
            nl: vec![
                Binder::new(y.clone(), real.clone()),
                Binder::new(dy.clone(), real.clone()),
                Binder::new(tape.clone(), tape_ty),
            ],
            lin: vec![],
            rhs: Expr::App {
                func: forward.name.clone(),
                nl: forward.nl_params.iter().map(|b| b.var.clone()).collect(),
                lin: vec![],
            },
        },
        Stmt::drop_nl(&dy),
        Stmt::Let {
            nl: vec![],
            lin: vec![Binder::new(zero.clone(), real.clone())],
            rhs: Expr::LinZero(real.clone()),
        },
    ];
    let mut lin_args = vec![zero, c.clone()];
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
    let bars: Vec<Binder> = reverse
        .lin_rets
        .iter()
        .map(|t| Binder::new(fresh.var("ct_x"), t.clone()))
        .collect();
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
        lin_params: vec![Binder::new(c, real.clone())],
        nl_rets: vec![real],
        lin_rets: reverse.lin_rets.clone(),
        body: Expr::block(
            stmts,
            Expr::Ret {
                nl: vec![y],
                lin: bars.into_iter().map(|b| b.var).collect(),
            },
        ),
    })
}

fn find<'a>(p: &'a Program, name: &str) -> Result<&'a Func, PassError> {
    p.func(name)
        .ok_or_else(|| PassError::new(&Var::new(name), "not in the pipeline's output"))
}
