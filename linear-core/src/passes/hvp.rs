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
//! This is reverse over forward: the second pipeline runs on J's output,
//! which holds no tape (loops, cases on booleans and arrays, as the first
//! did), so it takes every function the first does. Forward over reverse,
//! J of the VJP ([`first_vjp`], for `order = 2`'s derived `f_vjp`), must
//! differentiate U's tape: a loop's records are lists, which J gives no
//! tangent, so [`crate::passes::records`] makes them arrays first (a
//! linear array of tangents each), and a branch's records are sums, whose
//! tangent is the tuple of their alternatives'. Records of a loop inside
//! a loop or a branch (an array of arrays, an array in a sum) are refused.
//!
//! No second rule set: every step is one of the paper's passes, and the
//! result inherits their theorems. Work (Thm 5.1, 6.2, 7.1, Lemma 4.3):
//! L and inlining preserve it, J multiplies it by at most a constant, U
//! preserves it and T adds at most the sizes of inputs and outputs, so
//! an HVP costs a constant multiple of `f`.
//!
//! Calls of other functions (externs) stay calls: J(f) calls their JVPs
//! `g.jvp`, which L makes non-linear externs ([`directional_externs`]),
//! and the second pipeline differentiates those as externs again
//! (`g.jvp.jvp`, unzipped and transposed), which the callee must provide
//! (the macro's `order = 2` does). Their tapes are opaque, so
//! [`first_vjp`] calls them through their own VJPs instead
//! ([`super::through`]: the callee's arguments on the tape, its `g.vjp`
//! in the reverse pass), which the caller names in `through`; a call
//! with no such path leaves the VJP not differentiable (the macro then
//! differentiates the VJP by forward mode, [`super::forward_vjp`], built
//! from [`directional`]). [`hvp`] refuses
//! results other than one real. Output of [`second_adjoint`] and
//! [`hvp`]: a program of one non-linear function that type-checks in
//! Linear A, simplified.

use super::{
    erase::erase,
    inline::inline,
    records::records_as_arrays,
    simplify::simplify,
    through::{through_vjps, Through},
    PassError,
};
use crate::check::check;
use crate::ir::{Binder, Expr, Extern, Func, Program, Stmt, Ty, Var};
use crate::visit::Fresh;

/// Step 1: `f.jvp(x.., v..) -> (y.., ẏ..)`, J's output for `f` with
/// linearity erased, as one function.
/// The calls it makes to other functions' JVPs (`g.jvp`, J's externs)
/// stay calls, to non-linear externs ([`directional_externs`]): the
/// pipeline differentiates them as it does any extern, into calls of
/// `g.jvp.jvp`'s forward pass, residual and transpose, which the callee
/// provides when it is differentiable to second order.
pub fn directional(jvp: &Program, f: &str) -> Result<Func, PassError> {
    let erased = erase(jvp)?;
    inline(&erased, &format!("{f}.jvp"))
}

/// The externs [`directional`]'s function calls: J's externs with
/// linearity erased (`g.jvp(x.., ẋ..) -> (y.., ẏ..)`, all non-linear).
pub fn directional_externs(jvp: &Program) -> Result<Vec<Extern>, PassError> {
    Ok(erase(&Program {
        externs: jvp.externs.clone(),
        funcs: vec![],
    })?
    .externs)
}

/// Step 3: `f.soa(x.., v.., w..) -> (y.., H_w·v.., f'(x)ᵀw..)` from the
/// first-order pipeline's transposed program for `d`, the function
/// [`directional`] made.
pub fn second_adjoint(transposed: &Program, d: &Func, f: &str) -> Result<Program, PassError> {
    let name = Var::new(f);
    let d_name = d.name.as_str();
    let forward = find(transposed, &format!("{d_name}.jvp.nl"))?;
    let reverse = find(transposed, &format!("{d_name}.jvp.lin.t"))?;
    // The cotangent of `y..` is zero: half of the results.
    let zeroed = forward.nl_rets.len().saturating_sub(1) / 2;
    let vjp = composed_vjp(forward, reverse, Some(zeroed), &name)?;
    let (mut soa, externs) = as_one_function(forward, reverse, vjp, &transposed.externs, &name)?;
    soa.name = Var::new(&format!("{f}.soa"));
    Ok(Program {
        externs,
        funcs: vec![soa],
    })
}

/// The VJP composed of `forward` and `reverse` (see [`composed_vjp`]) as
/// one non-linear function: inlined, simplified, L, inlined and
/// simplified again; with the externs it calls (`externs`, the
/// pipeline's, with linearity erased).
fn as_one_function(
    forward: &Func,
    reverse: &Func,
    vjp: Func,
    externs: &[Extern],
    name: &Var,
) -> Result<(Func, Vec<Extern>), PassError> {
    let err = |msg: &str| PassError::new(name, msg);
    let vjp_name = vjp.name.clone();
    let program = Program {
        externs: externs.to_vec(),
        funcs: vec![forward.clone(), reverse.clone(), vjp],
    };
    check(&program).map_err(|e| err(&format!("the composed VJP {e}")))?;
    // Inlined and simplified before L, which would make the zero
    // cotangents of `y..` literals the simplifier no longer propagates.
    let vjp = simplify(&Program {
        externs: externs.to_vec(),
        funcs: vec![inline(&program, vjp_name.as_str())?],
    });
    check(&vjp).map_err(|e| err(&format!("the inlined VJP {e}")))?;
    let erased = erase(&vjp)?;
    let out = simplify(&Program {
        externs: erased.externs.clone(),
        funcs: vec![inline(&erased, vjp_name.as_str())?],
    });
    check(&out).map_err(|e| err(&format!("the erased VJP {e}")))?;
    let Program { externs, funcs } = out;
    let f = funcs.into_iter().next().ok_or_else(|| err("no function"))?;
    Ok((f, externs))
}

/// `f.vjp(x.., ȳ..) -> (y.., x̄..)`: the first-order pipeline's forward
/// pass then its transposed residual, as one non-linear function (L of
/// their composition, inlined), so that the pipeline can run on it again:
/// the VJP as a differentiable function. `transposed` is the pipeline's
/// output for `f`, whose results must not be arrays: an array parameter
/// gets a zeroed accumulator, returned as its cotangent.
///
/// Straight-line code's tape is a tuple of reals, which the inliner and
/// simplifier dissolve; a loop's records become arrays
/// ([`records_as_arrays`]: a replayed loop, under binomial checkpointing,
/// stores its states there). Calls of other functions go through their
/// VJPs, the paths `through` names ([`through_vjps`]); returned with the
/// externs the function then calls. `None` when a record's type has no
/// tangent J can carry: a tape of a call with no path through its
/// callee's VJP, or lists left where records cannot be flat (see
/// `has_tangent`). Records of loops inside loops or branches are
/// segments of flat arrays there, which J differentiates.
pub fn first_vjp(
    transposed: &Program,
    f: &str,
    through: &[Through],
) -> Result<Option<(Func, Vec<Extern>)>, PassError> {
    let name = Var::new(f);
    let forward = find(transposed, &format!("{f}.jvp.nl"))?;
    let reverse = find(transposed, &format!("{f}.jvp.lin.t"))?;
    // The cotangent of an array result would be a parameter the
    // transposed residual writes as its buffer, which J refuses.
    let results = forward.nl_rets.split_last().map_or(&[][..], |(_, r)| r);
    if results.iter().any(|t| matches!(t, Ty::Array(..))) {
        return Err(PassError::new(
            &name,
            "the VJP of a function returning an array is not differentiable yet",
        ));
    }
    let vjp = composed_vjp(forward, reverse, None, &name)?;
    let (vjp, erased) = as_one_function(forward, reverse, vjp, &transposed.externs, &name)?;
    // A callee's tape is opaque to J: its calls go through its VJP.
    let (vjp, externs) = match erased.is_empty() {
        true => (vjp, vec![]),
        false => match through_vjps(&vjp, &erased, through)? {
            Some(rewritten) => rewritten,
            None => return Ok(None),
        },
    };
    let as_arrays = |flatten: bool| -> Result<Func, PassError> {
        let f = records_as_arrays(&vjp, flatten)?;
        let program = Program {
            externs: externs.clone(),
            funcs: vec![f],
        };
        check(&program)
            .map_err(|e| PassError::new(&name, &format!("the VJP with records as arrays {e}")))?;
        let Program { funcs, .. } = program;
        funcs
            .into_iter()
            .next()
            .ok_or_else(|| PassError::new(&name, "no function"))
    };
    // Should inner loops' records not go to flat arrays (a shape the
    // rewriting does not expect), they stay arrays of arrays, which
    // `has_tangent` refuses: the caller of `f_vjp` is told, as before
    // flat arrays.
    let vjp = as_arrays(true).or_else(|_| as_arrays(false))?;
    let differentiable = crate::visit::binder_types(&vjp).values().all(has_tangent);
    Ok(differentiable.then_some((vjp, externs)))
}

/// Whether J gives values of type `t` their exact tangent: reals,
/// integers and booleans; tuples and sums of such types that hold no
/// array of reals (J passes an array on only by itself: a loop's records
/// inside a branch's are refused); arrays of such types (not arrays of
/// arrays of reals, which `records_as_arrays` leaves where it cannot make
/// an inner loop's records a segment of a flat array). Lists and
/// external functions' tapes, whose contents J cannot see, are refused.
fn has_tangent(t: &Ty) -> bool {
    let array_of_reals = |t: &Ty| matches!(t, Ty::Array(..)) && t.has_reals();
    match t {
        Ty::Real(_) | Ty::Int | Ty::Bool => true,
        Ty::Tuple(ts) | Ty::Sum(ts) => ts.iter().all(|t| has_tangent(t) && !array_of_reals(t)),
        Ty::Array(e, _) => has_tangent(e) && (!e.has_reals() || t.has_tangent_array()),
        Ty::List(e, _) => has_tangent(e) && !e.has_reals(),
        Ty::Tape(_) => false,
    }
}

/// `f` with its results grouped: `groups[k]` consecutive results (one
/// result as itself, several as a tuple), the groups as one tuple, so
/// that the function returns one value of the Rust shape its generated
/// counterpart has (`f_jvp`'s `(y, ẏ)`, `f_vjp`'s `(y, (x̄1, x̄2))`).
pub fn tupled(f: &Func, groups: &[usize]) -> Result<Func, PassError> {
    let total: usize = groups.iter().sum();
    if total != f.nl_rets.len() || !f.lin_rets.is_empty() {
        return Err(PassError::new(
            &f.name,
            "results do not match their Rust shape",
        ));
    }
    let mut fresh = Fresh::for_func(f);
    let rets: Vec<Binder> = f
        .nl_rets
        .iter()
        .map(|t| Binder::new(fresh.var("r"), t.clone()))
        .collect();
    let mut stmts = vec![Stmt::Let {
        nl: rets.clone(),
        lin: vec![],
        rhs: f.body.clone(),
    }];
    let mut parts = Vec::new();
    let mut rest = rets.as_slice();
    for &n in groups {
        let (group, tail) = rest.split_at(n);
        rest = tail;
        parts.push(match group {
            [one] => one.clone(),
            many => tuple_of(many, &mut fresh, &mut stmts),
        });
    }
    let whole = tuple_of(&parts, &mut fresh, &mut stmts);
    Ok(Func {
        name: f.name.clone(),
        nl_params: f.nl_params.clone(),
        lin_params: vec![],
        nl_rets: vec![whole.ty.clone()],
        lin_rets: vec![],
        body: Expr::block(
            stmts,
            Expr::Ret {
                nl: vec![whole.var],
                lin: vec![],
            },
        ),
    })
}

/// A zeroed accumulator per array parameter (`accs`, the transposed
/// residual's, for `arrays`, in order), as long as its array, bound in
/// `stmts`.
fn zeroed_accumulators(
    accs: &[Binder],
    arrays: &[&Binder],
    fresh: &mut Fresh,
    stmts: &mut Vec<Stmt>,
) -> Vec<Var> {
    let mut out = Vec::new();
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
        out.push(a);
    }
    out
}

/// A fresh variable bound (in `stmts`) to the tuple of `parts`.
fn tuple_of(parts: &[Binder], fresh: &mut Fresh, stmts: &mut Vec<Stmt>) -> Binder {
    let b = Binder::new(
        fresh.var("t"),
        Ty::Tuple(parts.iter().map(|b| b.ty.clone()).collect()),
    );
    stmts.push(Stmt::Let {
        nl: vec![b.clone()],
        lin: vec![],
        rhs: Expr::Tup(parts.iter().map(|b| b.var.clone()).collect()),
    });
    b
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
        externs: soa.externs.clone(),
        funcs: vec![hvp],
    });
    check(&out).map_err(|e| err(&format!("the HVP {e}")))?;
    Ok(out)
}

/// `g.vjp(x..; w..) -> (..; x̄..)`: the forward pass of `g`, then the
/// transposed residual, with zeroed accumulators for the arrays it reads
/// by index (one per array parameter, in order). With `zeroed = Some(k)`
/// the cotangent of the first `k` results is zero, they are returned and
/// the rest dropped, and `w..` is the cotangent of the rest: for the
/// directional derivative `d`, `k` is half its results, `d.vjp(x..,
/// v..; w..) -> (y..; x̄.., v̄..)`. With `None`, `w..` is the cotangent of
/// every result, all returned: `f.vjp(x..; ȳ..) -> (y..; x̄..)`.
fn composed_vjp(
    forward: &Func,
    reverse: &Func,
    zeroed: Option<usize>,
    name: &Var,
) -> Result<Func, PassError> {
    let mut fresh = Fresh::for_func(forward);
    fresh.reserve_func(reverse);
    let Some((tape_ty, results)) = forward.nl_rets.split_last() else {
        return Err(PassError::new(
            name,
            "the directional derivative's forward pass returns no tape",
        ));
    };
    let k = zeroed.map_or(results.len(), |k| k.min(results.len()));
    let (ys, dys) = results.split_at(k);
    let (zeroed_tys, ct_tys) = match zeroed {
        Some(_) => (ys, dys),
        None => (&[][..], results),
    };
    let arrays: Vec<&Binder> = forward
        .nl_params
        .iter()
        .filter(|b| matches!(b.ty, Ty::Array(..)))
        .collect();
    let accs = &reverse.lin_params[results.len().min(reverse.lin_params.len())..];
    if reverse.nl_params.len() != 1 || accs.len() != arrays.len() {
        return Err(PassError::new(name, "the transposed residual takes other than the tape, a cotangent per result and one accumulator per array parameter"));
    }
    let binders = |fresh: &mut Fresh, hint: &str, tys: &[Ty]| -> Vec<Binder> {
        tys.iter()
            .map(|t| Binder::new(fresh.var(hint), t.clone()))
            .collect()
    };
    let (y, dy) = (binders(&mut fresh, "y", ys), binders(&mut fresh, "dy", dys));
    let (zeros, ws) = (
        binders(&mut fresh, "ct", zeroed_tys),
        binders(&mut fresh, "ct", ct_tys),
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
    lin_args.extend(zeroed_accumulators(accs, &arrays, &mut fresh, &mut stmts));
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
