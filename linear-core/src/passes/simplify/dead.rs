//! Dead linear loops: a loop of J's output whose linear results are all
//! dropped keeps its non-linear part only.
//!
//! J computes a loop's values and their tangents in one loop. Where the
//! tangents are then only dropped (the loop computes a value used as a
//! constant: `stop_gradient(max)`, a bound compared against), the linear
//! half is dead, but it is not free: U would record, per iteration, the
//! residuals it reads (which element won a `max`), and T would run it
//! backwards with a zero cotangent. Here such a loop loses its linear
//! state and every linear statement of its body, and its initial linear
//! state is dropped before it instead (linear operations are pure, and a
//! loop body reads no linear variable from outside but through `lindex`,
//! which consumes nothing). The non-linear statements that only fed the
//! removed ones are then dead code, which the simplifier removes.
//!
//! Applied only where the body's statements are each purely non-linear or
//! purely linear (J's output, simplified, has its pairs split; a linear
//! statement may read non-linear values, and a nested block, case or
//! loop binding linear values only goes whole) and every linear state is
//! a vector (an array is never dropped, invariant 11 of `check`);
//! anything else is left as it is.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::ir::{Binder, Expr, Loop, Stmt, Var};
use crate::visit::stmt_uses;

use super::{dropped, lin_drop};

/// Rewrites every dead linear loop in `e` (see the module doc); whether
/// anything changed.
pub(super) fn dead_linear_loops(e: &mut Expr) -> bool {
    super::each_block(e, &mut |stmts| {
        let mut changed = false;
        // One count of the block's uses per rewrite, and none for a block
        // without a candidate (a straight-line function's).
        while stmts.iter().any(candidate) {
            let only = dropped_only(stmts);
            let Some(j) = (0..stmts.len()).find(|&j| dead_at(&stmts[j], &only)) else {
                break;
            };
            rewrite(stmts, j);
            changed = true;
        }
        changed
    })
}

/// Whether `s` is a loop with linear results and linear state, all of
/// vector types.
fn candidate(s: &Stmt) -> bool {
    matches!(s, Stmt::Let { lin, rhs: Expr::Loop(l), .. }
        if !lin.is_empty() && !l.lin.is_empty() && l.lin.iter().all(|(b, _)| b.ty.is_vector()))
}

/// The linear variables whose one use in `stmts` is a drop.
fn dropped_only(stmts: &[Stmt]) -> HashSet<Var> {
    let mut uses: HashMap<Var, usize> = HashMap::default();
    for s in stmts {
        stmt_uses(s, &mut |u: &Var, _| {
            *uses.entry(u.clone()).or_default() += 1
        });
    }
    stmts
        .iter()
        .filter_map(|s| match dropped(s) {
            Some((v, true)) if uses.get(v) == Some(&1) => Some(v.clone()),
            _ => None,
        })
        .collect()
}

/// Whether `s` is a loop whose linear results are each dropped and read
/// nowhere else (`only`), and whose body can lose its linear half.
fn dead_at(s: &Stmt, only: &HashSet<Var>) -> bool {
    let Stmt::Let {
        lin,
        rhs: Expr::Loop(l),
        ..
    } = s
    else {
        return false;
    };
    candidate(s) && lin.iter().all(|b| only.contains(&b.var)) && strippable(&l.body)
}

/// Whether a loop body is a block of statements each purely non-linear
/// or purely linear, ending in its results.
fn strippable(body: &Expr) -> bool {
    let Expr::Block { stmts, tail } = body else {
        return false;
    };
    matches!(**tail, Expr::Ret { .. }) && stmts.iter().all(|s| kind(s).is_some())
}

/// Whether a statement is purely linear (`Some(true)`: it binds, reads or
/// drops only linear variables) or purely non-linear (`Some(false)`).
fn kind(s: &Stmt) -> Option<bool> {
    let mut reads = (false, false);
    stmt_uses(s, &mut |_, linear| {
        if linear {
            reads.1 = true;
        } else {
            reads.0 = true;
        }
    });
    match s {
        Stmt::Let { nl, lin, .. } => match (nl.is_empty(), lin.is_empty(), reads) {
            (true, false, (_, _)) => Some(true),
            (true, true, (false, true)) => Some(true),
            (_, true, (_, false)) => Some(false),
            _ => None,
        },
        Stmt::Unpack { .. } => Some(false),
        Stmt::LinUnpack { .. } => Some(true),
    }
}

/// Statement `j`'s loop without its linear half, its initial linear
/// state dropped before it, and the drops of its linear results gone.
fn rewrite(stmts: &mut Vec<Stmt>, j: usize) {
    let Stmt::Let { nl, lin, rhs } = stmts.remove(j) else {
        return;
    };
    let Expr::Loop(l) = rhs else { return };
    let dead: Vec<Var> = lin.iter().map(|b| b.var.clone()).collect();
    let Loop {
        iter,
        nl: state,
        lin: lin_state,
        collect,
        zero_skip,
        body,
    } = *l;
    let body = match body {
        Expr::Block { stmts: inner, tail } => {
            let kept: Vec<Stmt> = inner
                .into_iter()
                .filter(|s| kind(s) == Some(false))
                .collect();
            let tail = match *tail {
                Expr::Ret { nl, .. } => Expr::Ret { nl, lin: vec![] },
                other => other,
            };
            Expr::block(kept, tail)
        }
        other => other,
    };
    let mut out: Vec<Stmt> = lin_state.iter().map(|(_, init)| lin_drop(init)).collect();
    out.push(Stmt::Let {
        nl,
        lin: Vec::<Binder>::new(),
        rhs: Expr::Loop(Box::new({
            let mut l = Loop {
                iter,
                nl: state,
                lin: vec![],
                collect,
                zero_skip,
                body,
            };
            // Its non-linear half alone is the identity when its reals
            // are zero, if it still carries any.
            l.zero_skip &= l.skippable_state();
            l
        })),
    });
    stmts.splice(j..j, out);
    stmts.retain(|s| !matches!(dropped(s), Some((v, true)) if dead.contains(v)));
}
