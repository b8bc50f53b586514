//! Zero state: linear loop state and case results that are zero on every
//! path, found before and after simplifying the body that carries them.
//!
//! J gives every real a tangent, so a loop that carries a real no input
//! reaches (`llsq`'s running power of a constant, a counter converted to a
//! float) carries a tangent that starts at zero and stays zero, and a case
//! whose arms compute integers returns `zero(())` from every arm. Carried
//! as state, such a tangent costs a register and its arithmetic in every
//! iteration; worse, U saves the factors that scale it, and a case with a
//! linear result records a tag per run for a residual that adds zeros.
//!
//! * ZLoop. A linear state component whose initial value is zero, and
//!   whose next value is zero whenever every such component is zero on
//!   entry, is zero in every iteration: by induction on iterations, the
//!   step being Corollary 4.2 (a linear expression of zero linear inputs
//!   is zero). The largest such set is found by starting from every
//!   component whose initial value is a known zero and removing, until
//!   none is removed, those whose next value may not be zero
//!   ([`zero_state`]). The analysis is by dependence only: a linear value
//!   is known zero if every linear variable it reads is, whatever the
//!   operation (every operation of Linear A is linear in its linear
//!   operands). The body is then simplified with those binders known
//!   zero, and a component whose binder it no longer reads leaves the
//!   loop ([`super::Simp::trim_state`]); the loop's result for it is a
//!   zero. A next value the simplifier could not reduce to a symbolic
//!   zero is still zero by the analysis: it is dropped.
//! * ZCase. A linear result that every arm returns as a known zero is
//!   zero after the case: it leaves the case's results, and the binding
//!   after the case is a `zero(τ)` ([`super::Simp::trim_case`]). A case
//!   left with no linear result and no linear work then gets no tag from
//!   U (UCase on inactive arms).
//!
//! Input and output as for the rest of `simplify`: Linear A (or B) that
//! type-checks, same signatures, same results, no more work (a component
//! removed takes its operations with it; one `drop` per unreduced next
//! value is free in generated code).

use rustc_hash::FxHashSet as HashSet;

use crate::ir::{Expr, Loop, Stmt, Var};
use crate::visit::free_vars;

/// For each linear state component of `l` (`init_zero[k]`: its initial
/// value is a known zero), whether it is zero in every iteration. `known`
/// holds the variables in scope known to be zero beyond those `outer`
/// says are.
pub(super) fn zero_state(
    l: &Loop,
    init_zero: Vec<bool>,
    known: &HashSet<Var>,
    outer: &dyn Fn(&Var) -> bool,
) -> Vec<bool> {
    let mut z = init_zero;
    while z.contains(&true) {
        let mut inside = known.clone();
        for ((b, _), zero) in l.lin.iter().zip(&z) {
            if *zero {
                inside.insert(b.var.clone());
            }
        }
        let next: Vec<bool> = zero_results(&l.body, z.len(), &mut inside, outer)
            .into_iter()
            .zip(&z)
            .map(|(r, z)| r && *z)
            .collect();
        if next == z {
            break;
        }
        z = next;
    }
    z
}

/// For each of the `n` linear results of `e`, whether it is zero given
/// the zeros in `known` and those `outer` says are; adds the variables
/// `e` binds that are known zero to `known`.
fn zero_results(
    e: &Expr,
    n: usize,
    known: &mut HashSet<Var>,
    outer: &dyn Fn(&Var) -> bool,
) -> Vec<bool> {
    match e {
        Expr::Block { stmts, tail } => {
            for s in stmts {
                zero_binds(s, known, outer);
            }
            zero_results(tail, n, known, outer)
        }
        Expr::Ret { lin, .. } if lin.len() == n => {
            lin.iter().map(|v| is_zero(v, known, outer)).collect()
        }
        Expr::Case { arms, .. } => {
            let mut z = vec![true; n];
            for a in arms {
                for (z, r) in z.iter_mut().zip(zero_results(&a.body, n, known, outer)) {
                    *z &= r;
                }
            }
            z
        }
        Expr::Loop(l) if l.lin.len() == n => {
            let init = l
                .lin
                .iter()
                .map(|(_, v)| is_zero(v, known, outer))
                .collect();
            zero_state(l, init, known, outer)
        }
        other => {
            let all = free_vars(other)
                .lin
                .iter()
                .all(|v| is_zero(v, known, outer));
            vec![all; n]
        }
    }
}

fn zero_binds(s: &Stmt, known: &mut HashSet<Var>, outer: &dyn Fn(&Var) -> bool) {
    match s {
        Stmt::Let { lin, rhs, .. } => {
            let z = zero_results(rhs, lin.len(), known, outer);
            for (b, z) in lin.iter().zip(z) {
                if z {
                    known.insert(b.var.clone());
                }
            }
        }
        Stmt::LinUnpack { vars, tuple } => {
            if is_zero(tuple, known, outer) {
                known.extend(vars.iter().map(|b| b.var.clone()));
            }
        }
        Stmt::Unpack { .. } => {}
    }
}

fn is_zero(v: &Var, known: &HashSet<Var>, outer: &dyn Fn(&Var) -> bool) -> bool {
    known.contains(v) || outer(v)
}

/// The statements and the linear results of a body ending in a `Ret`
/// (made a block if it is a bare `Ret`).
pub(super) fn tail_ret(body: &mut Expr) -> Option<(&mut Vec<Stmt>, &mut Vec<Var>)> {
    if matches!(body, Expr::Ret { .. }) {
        let ret = std::mem::replace(
            body,
            Expr::Ret {
                nl: vec![],
                lin: vec![],
            },
        );
        *body = Expr::Block {
            stmts: vec![],
            tail: Box::new(ret),
        };
    }
    match body {
        Expr::Block { stmts, tail } => match &mut **tail {
            Expr::Ret { lin, .. } => Some((stmts, lin)),
            _ => None,
        },
        _ => None,
    }
}
