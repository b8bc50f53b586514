//! Simplification: removes work that generated code must not do.
//!
//! * Symbolic zeros. A linear variable bound to `zero(τ)` is known to be
//!   zero and is never materialised, scaled or added: `z + a` is `a`,
//!   `-z`, `s * z`, `dup(z)`, a tuple of zeros, unpacking a zero tuple and a
//!   call to a linear function whose linear arguments are all zero
//!   (Corollary 4.2: a linear expression of zeros is zero) are zero, and
//!   `drop(z)` disappears. Where a zero must be passed on as a value
//!   (returned, a call argument, a tuple component, a loop's initial
//!   state) that site gets a `zero(τ)` of its own, so the zero's own
//!   binding is always dead: a zero bound before a case is then never read
//!   by one arm and dropped (now: not read) by another.
//!   Accumulating a zero into an array, `laccum(ā, i, z)`, is `ā`; an
//!   in-place read whose result is only dropped is not done (its index is
//!   dropped instead).
//! * Copies. `let a; b = (x; y)` renames `a` to `x` and `b` to `y`.
//! * Increments. `lset(ȧ, i, lindex(ȧ, i) + e)` is `laccum(ȧ, i, e)`.
//! * Repeated reads. `index(a, i)` of an array and index already read in
//!   scope is that earlier read (arrays are values: no write can come
//!   between), so `x[i] * x[i]` reads, differentiates and saves `x[i]`
//!   once.
//! * Nested blocks. `let v = { s..; e }` becomes `s..; let v = e` (names
//!   are unique per function, so hoisting cannot capture).
//! * Zero state (see [`zeros`]). A linear loop state component that
//!   starts at zero and stays zero leaves the loop, and a linear result
//!   every arm of a case returns as zero leaves the case.
//! * Dead linear loops (see [`dead`]). A loop whose linear results are
//!   all dropped keeps its non-linear half; its initial linear state is
//!   dropped instead.
//! * Dead code. A binding none of whose variables is read, whose
//!   right-hand side reads no linear variable, is removed, and so is an
//!   unpacking none of whose components is read.
//!
//! Removing a read can leave a non-linear parameter or component unread,
//! which Fig. 3 forbids: it is then dropped explicitly (cost: its scalars),
//! never more than the work removed with the read. Where the read was in a
//! case arm or a loop body and the value comes from outside it, the drop
//! goes into that arm or body, so that it runs exactly as often as the
//! removed work did (a loop may run zero times, an arm may not run); a
//! drop of a value its own block still reads is itself removed.
//!
//! Input: a program that type-checks in Linear A (or B). Output: a program
//! with the same signatures that type-checks in the same language, computes
//! the same results, and does no more work.

mod dead;
mod zeros;

use rustc_hash::FxHashMap as HashMap;

use super::transpose::drop_unused_where;
use crate::ir::{Arm, Binder, Expr, Func, Loop, Program, Stmt, Ty, Var};
use crate::visit::{free_vars, stmt_uses, use_counts, Fresh};

/// Simplifies every function of `p`.
pub fn simplify(p: &Program) -> Program {
    let linear: HashMap<Var, bool> = p
        .funcs
        .iter()
        .map(|f| (f.name.clone(), f.nl_rets.is_empty()))
        .chain(
            p.externs
                .iter()
                .map(|e| (e.name.clone(), e.nl_rets.is_empty())),
        )
        .collect();
    Program {
        externs: p.externs.clone(),
        funcs: p.funcs.iter().map(|f| simplify_func(f, &linear)).collect(),
    }
}

/// Simplifies one function; `linear` says which callees have only linear
/// results.
pub fn simplify_func(f: &Func, linear: &HashMap<Var, bool>) -> Func {
    let arrays = arrays_of(f);
    let mut s = Simp {
        linear,
        rename: HashMap::default(),
        zero: empty_params(f),
        reads: HashMap::default(),
        arrays: &arrays,
        fresh: Fresh::for_func(f),
    };
    let body = s.expr(&f.body);
    let mut g = f.with_body(body);
    let mut counts = dead_code(&mut g.body);
    // Linear values that are only dropped, loops whose linear results are
    // (`dead.rs`): drop their inputs instead, then simplify the copies
    // and the dead code this leaves.
    if dead::dead_linear_loops(&mut g.body) | dropped_linear(&mut g.body) {
        let mut s = Simp {
            linear,
            rename: HashMap::default(),
            zero: empty_params(&g),
            reads: HashMap::default(),
            arrays: &arrays,
            fresh: Fresh::for_func(&g),
        };
        g.body = s.expr(&g.body);
        counts = dead_code(&mut g.body);
    }
    // The body's reads, as dead code removal left them: dropping unread
    // non-linear variables adds reads of those only.
    let read = |v: &Var| counts.get(v).is_some_and(|&c| c > 0);
    drop_unused_where(&mut g, &read);
    drop_unread_linear(&mut g, &read);
    g
}

/// The linear parameters whose type has no scalars (tangents of integers
/// and booleans, `()`): their only value is zero, so they are known zeros
/// from the start, and what reads them reads a zero.
fn empty_params(f: &Func) -> HashMap<Var, Ty> {
    f.lin_params
        .iter()
        .filter(|b| b.ty.is_vector() && b.ty.scalars() == 0)
        .map(|b| (b.var.clone(), b.ty.clone()))
        .collect()
}

/// Drops, where the body starts (after unpacking its tape), every linear
/// parameter of vector type it no longer reads (a known zero whose reads
/// were all simplified away): each linear variable is consumed exactly
/// once.
fn drop_unread_linear(f: &mut Func, read: &impl Fn(&Var) -> bool) {
    // A linear array may go unread (invariant 11 of `check`).
    let unread = |b: &&Binder| b.ty.is_vector() && !read(&b.var);
    let drops = f.lin_params.iter().filter(unread);
    let drops: Vec<Stmt> = drops.map(|b| lin_drop(&b.var)).collect();
    // After the unpacking of a tape parameter, which code generation
    // expects first (it names the tape's fields).
    match &mut f.body {
        Expr::Block { stmts, .. } if !drops.is_empty() => {
            let at = stmts
                .iter()
                .position(|s| !matches!(s, Stmt::Unpack { .. }))
                .unwrap_or(stmts.len());
            stmts.splice(at..at, drops);
        }
        body => super::transpose::prepend(body, drops),
    }
}

/// `let ; a = op(b..) in .. drop(a)` in one block becomes `drop(b..)`:
/// linear operations are pure, so a result that is only dropped need not
/// be computed (its inputs are dropped instead, at no more cost: an
/// addition and its drop cost what two drops cost; a negation and its drop
/// more; a scaling of k scalars and its drop 2k, its inputs' drops k + 1). `let ; a1, a2 = dup(b)` with `a1` dropped becomes
/// the copy `a2 = b`. Returns whether anything changed.
fn dropped_linear(e: &mut Expr) -> bool {
    each_block(e, &mut dropped_in_block)
}

/// [`dropped_linear`] in one block.
fn dropped_in_block(stmts: &mut Vec<Stmt>) -> bool {
    let mut changed = false;
    while let Some((i, j)) = linear_drop_site(stmts) {
        let replacement = match &stmts[j] {
            Stmt::Let { lin, rhs, .. } => match rhs {
                Expr::Dup(b) => {
                    let dropped = stmts_dropped_linear(&stmts[i]);
                    let keep = lin
                        .iter()
                        .find(|x| Some(&x.var) != dropped.as_ref())
                        .cloned();
                    keep.map(|k| {
                        vec![Stmt::Let {
                            nl: vec![],
                            lin: vec![k],
                            rhs: Expr::lin_var(b.clone()),
                        }]
                    })
                }
                // The factor's read stays here, as a drop: removing it
                // could make its value unread, dropped where it is
                // bound, outside a loop that may not run.
                Expr::LinScale(k, b) => Some(vec![
                    Stmt::Let {
                        nl: vec![],
                        lin: vec![],
                        rhs: Expr::Drop(Box::new(Expr::var(k.clone()))),
                    },
                    lin_drop(b),
                ]),
                Expr::LinNeg(b) => Some(vec![lin_drop(b)]),
                Expr::LinAdd(b, c) => Some(vec![lin_drop(b), lin_drop(c)]),
                Expr::LinTup(vs) => Some(vs.iter().map(lin_drop).collect()),
                // The array is read, not consumed: nothing to drop
                // but the index (kept read where it was, as above).
                Expr::LinIndex { idx, .. } => Some(vec![Stmt::Let {
                    nl: vec![],
                    lin: vec![],
                    rhs: Expr::Drop(Box::new(Expr::var(idx.clone()))),
                }]),
                _ => None,
            },
            _ => None,
        };
        let Some(rep) = replacement else { break };
        stmts.remove(i);
        stmts.splice(j..=j, rep);
        changed = true;
    }
    changed
}

/// Applies `f` to every block of `e`, innermost first (the blocks inside
/// a block's statements and tail before the block itself); whether any
/// application changed something.
fn each_block(e: &mut Expr, f: &mut dyn FnMut(&mut Vec<Stmt>) -> bool) -> bool {
    let mut changed = false;
    match e {
        Expr::Block { stmts, tail } => {
            for s in stmts.iter_mut() {
                if let Stmt::Let { rhs, .. } = s {
                    changed |= each_block(rhs, f);
                }
            }
            changed |= each_block(tail, f);
            changed |= f(stmts);
        }
        Expr::Drop(inner) => changed |= each_block(inner, f),
        Expr::Case { arms, .. } => {
            for a in arms.iter_mut() {
                changed |= each_block(&mut a.body, f);
            }
        }
        Expr::Loop(l) => changed |= each_block(&mut l.body, f),
        _ => {}
    }
    changed
}

fn lin_drop(v: &Var) -> Stmt {
    Stmt::Let {
        nl: vec![],
        lin: vec![],
        rhs: Expr::Drop(Box::new(Expr::lin_var(v.clone()))),
    }
}

/// The variable a `let ; = drop(v)` statement drops, and whether it is
/// linear (`drop((; v))`).
fn dropped(s: &Stmt) -> Option<(&Var, bool)> {
    let Stmt::Let {
        nl,
        lin,
        rhs: Expr::Drop(inner),
    } = s
    else {
        return None;
    };
    if !nl.is_empty() || !lin.is_empty() {
        return None;
    }
    match &**inner {
        Expr::Ret { nl, lin } => match (nl.as_slice(), lin.as_slice()) {
            ([v], []) => Some((v, false)),
            ([], [v]) => Some((v, true)),
            _ => None,
        },
        _ => None,
    }
}

/// The linear variable a `let ; = drop((; a))` statement drops.
fn stmts_dropped_linear(s: &Stmt) -> Option<Var> {
    dropped(s)
        .filter(|(_, linear)| *linear)
        .map(|(v, _)| v.clone())
}

/// A drop (at `i`) of a linear value defined by a linear operation at `j`
/// in the same block.
fn linear_drop_site(stmts: &[Stmt]) -> Option<(usize, usize)> {
    let mut defs: HashMap<Var, usize> = HashMap::default();
    for (k, s) in stmts.iter().enumerate() {
        if let Some(a) = stmts_dropped_linear(s) {
            if let Some(&j) = defs.get(&a) {
                let simple = matches!(
                    &stmts[j],
                    Stmt::Let { nl, rhs: Expr::Dup(_) | Expr::LinScale(..) | Expr::LinNeg(_) | Expr::LinAdd(..) | Expr::LinTup(_) | Expr::LinIndex { .. }, .. } if nl.is_empty()
                );
                if simple {
                    return Some((k, j));
                }
            }
        }
        if let Stmt::Let { lin, .. } = s {
            for b in lin {
                defs.insert(b.var.clone(), k);
            }
        }
    }
    None
}

struct Simp<'a> {
    linear: &'a HashMap<Var, bool>,
    rename: HashMap<Var, Var>,
    /// Linear variables known to be zero, with their types.
    zero: HashMap<Var, Ty>,
    /// Array reads in scope: `index(a, i)` by array and index variable,
    /// to the variable holding it.
    reads: HashMap<(Var, Var), Var>,
    /// The function's array variables: they may go unread (invariant 11
    /// of `check`), so a read removed needs no drop.
    arrays: &'a rustc_hash::FxHashSet<Var>,
    fresh: Fresh,
}

/// The variables of `f` that hold arrays.
fn arrays_of(f: &Func) -> rustc_hash::FxHashSet<Var> {
    let mut arrays = rustc_hash::FxHashSet::default();
    let mut add = |b: &Binder| {
        if let Ty::Array(..) = b.ty {
            arrays.insert(b.var.clone());
        }
    };
    f.nl_params.iter().chain(&f.lin_params).for_each(&mut add);
    crate::visit::for_each_binder(&f.body, &mut |b, _| add(b));
    arrays
}

impl Simp<'_> {
    fn r(&self, v: &Var) -> Var {
        let mut v = v;
        while let Some(w) = self.rename.get(v) {
            v = w;
        }
        v.clone()
    }
    fn rs(&self, vs: &[Var]) -> Vec<Var> {
        vs.iter().map(|v| self.r(v)).collect()
    }
    fn is_zero(&self, v: &Var) -> bool {
        self.zero.contains_key(v)
    }

    /// Renamed linear operands passed on as values, each known zero
    /// replaced by a `zero(τ)` bound in `pre`.
    fn values(&mut self, vs: &[Var], pre: &mut Vec<Stmt>) -> Vec<Var> {
        vs.iter()
            .map(|v| {
                let v = self.r(v);
                match self.zero.get(&v).cloned() {
                    Some(t) => {
                        let z = self.fresh.var(v.as_str());
                        self.zero.insert(z.clone(), t.clone());
                        pre.push(Stmt::Let {
                            nl: vec![],
                            lin: vec![Binder::new(z.clone(), t.clone())],
                            rhs: Expr::LinZero(t),
                        });
                        z
                    }
                    None => v,
                }
            })
            .collect()
    }

    /// Renames and simplifies inside `e`, without the statement-level rules.
    fn expr(&mut self, e: &Expr) -> Expr {
        match e {
            Expr::Block { stmts, tail } => {
                let mut out = Vec::new();
                for s in stmts {
                    self.stmt(s, &mut out);
                }
                let tail = self.expr(tail);
                match tail {
                    Expr::Block { stmts, tail } => {
                        out.extend(stmts);
                        Expr::block(out, *tail)
                    }
                    t => Expr::block(out, t),
                }
            }
            Expr::Ret { nl, lin } => {
                let mut pre = Vec::new();
                let lin = self.values(lin, &mut pre);
                Expr::block(
                    pre,
                    Expr::Ret {
                        nl: self.rs(nl),
                        lin,
                    },
                )
            }
            Expr::App { func, nl, lin } => {
                // A linear call of zeros is zero (handled by `stmt`).
                if self.linear.get(func).copied().unwrap_or(false)
                    && !lin.is_empty()
                    && lin.iter().all(|v| self.is_zero(&self.r(v)))
                {
                    return Expr::App {
                        func: func.clone(),
                        nl: self.rs(nl),
                        lin: self.rs(lin),
                    };
                }
                let mut pre = Vec::new();
                let lin = self.values(lin, &mut pre);
                Expr::block(
                    pre,
                    Expr::App {
                        func: func.clone(),
                        nl: self.rs(nl),
                        lin,
                    },
                )
            }
            Expr::Lit { .. } | Expr::LinZero(_) => e.clone(),
            Expr::Const { name, args, ty } => Expr::Const {
                name: name.clone(),
                args: self.rs(args),
                ty: ty.clone(),
            },
            Expr::Tup(vs) => Expr::Tup(self.rs(vs)),
            Expr::Prim { prim, args } => Expr::Prim {
                prim: *prim,
                args: self.rs(args),
            },
            Expr::LinTup(vs) if vs.iter().all(|v| self.is_zero(&self.r(v))) => {
                Expr::LinTup(self.rs(vs))
            }
            Expr::LinTup(vs) => {
                let mut pre = Vec::new();
                let vs = self.values(vs, &mut pre);
                Expr::block(pre, Expr::LinTup(vs))
            }
            Expr::LinAdd(a, b) => Expr::LinAdd(self.r(a), self.r(b)),
            Expr::LinNeg(a) => Expr::LinNeg(self.r(a)),
            Expr::LinScale(s, a) => Expr::LinScale(self.r(s), self.r(a)),
            Expr::Dup(a) => Expr::Dup(self.r(a)),
            // A dropped return is renamed only: its zeros vanish in `stmt`.
            Expr::Drop(inner) => match &**inner {
                Expr::Ret { nl, lin } => Expr::Drop(Box::new(Expr::Ret {
                    nl: self.rs(nl),
                    lin: self.rs(lin),
                })),
                other => Expr::Drop(Box::new(self.expr(other))),
            },
            Expr::Int(_) | Expr::Bool(_) => e.clone(),
            Expr::Index { arr, idx } => Expr::Index {
                arr: self.r(arr),
                idx: self.r(idx),
            },
            Expr::Len(arr) => Expr::Len(self.r(arr)),
            Expr::LinIndex { arr, idx } => Expr::LinIndex {
                arr: self.r(arr),
                idx: self.r(idx),
            },
            Expr::LinAccum { arr, idx, val } => Expr::LinAccum {
                arr: self.r(arr),
                idx: self.r(idx),
                val: self.r(val),
            },
            Expr::Set { arr, idx, val } => Expr::Set {
                arr: self.r(arr),
                idx: self.r(idx),
                val: self.r(val),
            },
            Expr::LinSet { arr, idx, val } => {
                let mut pre = Vec::new();
                let val = self.values(std::slice::from_ref(val), &mut pre).remove(0);
                Expr::block(
                    pre,
                    Expr::LinSet {
                        arr: self.r(arr),
                        idx: self.r(idx),
                        val,
                    },
                )
            }
            Expr::Fill { len, val, size } => Expr::Fill {
                len: self.r(len),
                val: self.r(val),
                size: *size,
            },
            Expr::LinZeros { ty, len } => Expr::LinZeros {
                ty: ty.clone(),
                len: self.r(len),
            },
            Expr::LinFree { arr, len } => Expr::LinFree {
                arr: self.r(arr),
                len: self.r(len),
            },
            Expr::Push { arr, val } => Expr::Push {
                arr: self.r(arr),
                val: self.r(val),
            },
            Expr::Pop { arr } => Expr::Pop { arr: self.r(arr) },
            Expr::LinPush { arr, val } => {
                let mut pre = Vec::new();
                let val = self.values(std::slice::from_ref(val), &mut pre).remove(0);
                Expr::block(
                    pre,
                    Expr::LinPush {
                        arr: self.r(arr),
                        val,
                    },
                )
            }
            Expr::LinPop { arr } => Expr::LinPop { arr: self.r(arr) },
            Expr::Inj { sum, tag, val } => Expr::Inj {
                sum: sum.clone(),
                tag: *tag,
                val: self.r(val),
            },
            Expr::Case { scrut, arms } => Expr::Case {
                scrut: self.r(scrut),
                arms: arms
                    .iter()
                    .map(|a| {
                        let bound: Vec<&Var> = a.bind.iter().map(|b| &b.var).collect();
                        Arm {
                            bind: a.bind.clone(),
                            body: self.scoped(&a.body, &bound),
                        }
                    })
                    .collect(),
            },
            Expr::Loop(l) => {
                let mut iter = l.iter.rename_vars(|v| self.r(v));
                if let Some(e) = iter.header_expr_mut() {
                    *e = self.expr(e);
                }
                let nl = l.nl.iter().map(|(b, v)| (b.clone(), self.r(v))).collect();
                let mut pre = Vec::new();
                let inits: Vec<Var> = l.lin.iter().map(|(_, v)| v.clone()).collect();
                let inits = self.values(&inits, &mut pre);
                let z = self.zero_state(l, &inits);
                let lin = l.lin.iter().map(|(b, _)| b.clone()).zip(inits).collect();
                let mut bound: Vec<&Var> = l.nl.iter().map(|(b, _)| &b.var).collect();
                bound.extend(l.iter.binders().into_iter().map(|b| &b.var));
                let body = self.scoped(&l.body, &bound);
                let l = Loop {
                    iter,
                    nl,
                    lin,
                    collect: l.collect.clone(),
                    zero_skip: l.zero_skip,
                    body,
                };
                Expr::block(pre, self.trim_state(l, &z))
            }
        }
    }

    /// Simplifies a case arm or loop body (binding `bound`), removing its
    /// dead code, and drops inside it every outer non-linear value it read
    /// and no longer reads.
    fn scoped(&mut self, e: &Expr, bound: &[&Var]) -> Expr {
        let outer = |e: &Expr, s: &Self| -> Vec<Var> {
            free_vars(e)
                .nl
                .into_iter()
                .map(|v| s.r(&v))
                .filter(|v| !bound.contains(&v))
                .collect()
        };
        let before = outer(e, self);
        // What the arm or body reads stays inside it.
        let reads = self.reads.clone();
        let mut body = self.expr(e);
        self.reads = reads;
        dead_code(&mut body);
        let after = outer(&body, self);
        let lost: Vec<Stmt> = before
            .into_iter()
            .filter(|v| !after.contains(v) && !self.arrays.contains(v))
            .map(|v| Stmt::Let {
                nl: vec![],
                lin: vec![],
                rhs: Expr::Drop(Box::new(Expr::var(v))),
            })
            .collect();
        super::transpose::prepend(&mut body, lost);
        body
    }

    /// ZLoop's second half: `l`, its body simplified with the components
    /// `z` marks bound to zero, without those of them whose binder the
    /// body no longer reads; the loop's results for those are zeros. A
    /// next value of a removed component that is not a symbolic zero is
    /// zero all the same ([`zeros::zero_state`]), and is dropped.
    fn trim_state(&mut self, mut l: Loop, z: &[bool]) -> Expr {
        let read = free_vars(&l.body).lin;
        let trim: Vec<bool> = l
            .lin
            .iter()
            .zip(z)
            .map(|((b, _), z)| *z && !read.contains(&b.var))
            .collect();
        if !trim.contains(&true) {
            return Expr::Loop(Box::new(l));
        }
        let Some((stmts, rets)) = zeros::tail_ret(&mut l.body) else {
            // The body's results are not a tuple to take components from:
            // the unread zero binders are dropped where the body starts.
            let drops = l.lin.iter().zip(&trim).filter(|(_, t)| **t);
            let drops = drops.map(|((b, _), _)| lin_drop(&b.var)).collect();
            super::transpose::prepend(&mut l.body, drops);
            return Expr::Loop(Box::new(l));
        };
        let mut k = 0;
        rets.retain(|v| {
            k += 1;
            if trim[k - 1] && !self.zero.contains_key(v) {
                stmts.push(lin_drop(v));
            }
            !trim[k - 1]
        });
        dead_code(&mut l.body);
        let (nl_tys, lin_tys) = l.result_types();
        let mut k = 0;
        l.lin.retain(|_| {
            k += 1;
            !trim[k - 1]
        });
        let nl: Vec<Binder> = nl_tys
            .into_iter()
            .map(|t| Binder::new(self.fresh.var("s"), t))
            .collect();
        let (mut kept, mut stmts, mut lin) = (Vec::new(), Vec::new(), Vec::new());
        for (t, trimmed) in lin_tys.into_iter().zip(trim) {
            let b = Binder::new(self.fresh.var("s"), t);
            lin.push(b.var.clone());
            if trimmed {
                self.zeros(&mut stmts, std::slice::from_ref(&b));
            } else {
                kept.push(b);
            }
        }
        let ret = Expr::Ret {
            nl: nl.iter().map(|b| b.var.clone()).collect(),
            lin,
        };
        // The components trimmed stay zero: skipping still needs only the
        // remaining reals zero, if any remain (invariant 12).
        l.zero_skip &= l.skippable_state();
        let run = Stmt::Let {
            nl,
            lin: kept,
            rhs: Expr::Loop(Box::new(l)),
        };
        stmts.insert(0, run);
        Expr::block(stmts, ret)
    }

    /// ZLoop's first half: which linear state components of `l` (starting
    /// from `inits`) stay zero; their binders are known zeros from here.
    fn zero_state(&mut self, l: &Loop, inits: &[Var]) -> Vec<bool> {
        let init_zero = inits.iter().map(|v| self.is_zero(v)).collect();
        let outer = |v: &Var| self.is_zero(&self.r(v));
        let z = zeros::zero_state(l, init_zero, &Default::default(), &outer);
        for ((b, _), z) in l.lin.iter().zip(&z) {
            if *z {
                self.zero.insert(b.var.clone(), b.ty.clone());
            }
        }
        z
    }

    /// ZCase on a binding `nl; lin = rhs` (rhs simplified): binds the
    /// case's other results to it in `out`, then the zeros; returns
    /// whether it applied (else `rhs` is unchanged).
    fn zero_case(
        &mut self,
        nl: &[Binder],
        lin: &[Binder],
        rhs: &mut Expr,
        out: &mut Vec<Stmt>,
    ) -> bool {
        let z = self.trim_case(lin, rhs);
        if !z.contains(&true) {
            return false;
        }
        let (kept, zero): (Vec<_>, Vec<_>) = lin.iter().zip(z).partition(|(_, z)| !z);
        let rhs = std::mem::replace(
            rhs,
            Expr::Ret {
                nl: vec![],
                lin: vec![],
            },
        );
        out.push(Stmt::Let {
            nl: nl.to_vec(),
            lin: kept.into_iter().map(|(b, _)| b.clone()).collect(),
            rhs,
        });
        let zero: Vec<Binder> = zero.into_iter().map(|(b, _)| b.clone()).collect();
        self.zeros(out, &zero);
        true
    }

    /// ZCase: removes from the arms of `rhs`, a case bound to `lin`, the
    /// linear results every arm returns as a known zero, and returns which
    /// they were (none if `rhs` is not a case or an arm does not end in a
    /// tuple).
    fn trim_case(&self, lin: &[Binder], rhs: &mut Expr) -> Vec<bool> {
        let Expr::Case { arms, .. } = rhs else {
            return vec![];
        };
        let mut z = vec![!lin.is_empty(); lin.len()];
        for a in arms.iter_mut() {
            match zeros::tail_ret(&mut a.body) {
                Some((_, rets)) if rets.len() == z.len() => {
                    for (z, v) in z.iter_mut().zip(rets.iter()) {
                        *z &= self.is_zero(v);
                    }
                }
                _ => return vec![],
            }
        }
        if z.contains(&true) {
            for a in arms.iter_mut() {
                if let Some((_, rets)) = zeros::tail_ret(&mut a.body) {
                    let mut k = 0;
                    rets.retain(|_| {
                        k += 1;
                        !z[k - 1]
                    });
                }
                dead_code(&mut a.body);
            }
        }
        z
    }

    fn zeros(&mut self, out: &mut Vec<Stmt>, bs: &[Binder]) {
        for b in bs {
            self.zero.insert(b.var.clone(), b.ty.clone());
            out.push(Stmt::Let {
                nl: vec![],
                lin: vec![b.clone()],
                rhs: Expr::LinZero(b.ty.clone()),
            });
        }
    }

    /// The array rules on a binding `nl; lin = rhs` (rhs simplified):
    /// a repeated read is the earlier one; accumulating a zero is a copy
    /// of the array, its index still read (dropped), as for a scaling; an
    /// increment of a slot is an accumulation (see [`take_increment`]).
    /// Returns whether the binding is gone.
    fn array_stmt(
        &mut self,
        nl: &[Binder],
        lin: &[Binder],
        rhs: &Expr,
        out: &mut Vec<Stmt>,
    ) -> bool {
        match rhs {
            Expr::Index { arr, idx } if nl.len() == 1 => {
                let key = (arr.clone(), idx.clone());
                if let Some(v) = self.reads.get(&key) {
                    self.rename.insert(nl[0].var.clone(), v.clone());
                    return true;
                }
                self.reads.insert(key, nl[0].var.clone());
                false
            }
            Expr::LinSet { arr, idx, val } if lin.len() == 1 => {
                let Some(added) = take_increment(out, arr, idx, val) else {
                    return false;
                };
                out.push(Stmt::Let {
                    nl: vec![],
                    lin: lin.to_vec(),
                    rhs: Expr::LinAccum {
                        arr: arr.clone(),
                        idx: idx.clone(),
                        val: added,
                    },
                });
                true
            }
            Expr::LinAccum { arr, idx, val } if self.is_zero(val) && lin.len() == 1 => {
                self.rename.insert(lin[0].var.clone(), arr.clone());
                out.push(Stmt::Let {
                    nl: vec![],
                    lin: vec![],
                    rhs: Expr::Drop(Box::new(Expr::var(idx.clone()))),
                });
                true
            }
            _ => false,
        }
    }

    fn stmt(&mut self, s: &Stmt, out: &mut Vec<Stmt>) {
        match s {
            Stmt::Unpack { vars, tuple } => out.push(Stmt::Unpack {
                vars: vars.clone(),
                tuple: self.r(tuple),
            }),
            Stmt::LinUnpack { vars, tuple } => {
                let tuple = self.r(tuple);
                if self.is_zero(&tuple) {
                    self.zeros(out, vars);
                } else {
                    out.push(Stmt::LinUnpack {
                        vars: vars.clone(),
                        tuple,
                    });
                }
            }
            Stmt::Let { nl, lin, rhs } => {
                let mut rhs = self.expr(rhs);
                if let Expr::Block { stmts, tail } = rhs {
                    out.extend(stmts);
                    rhs = *tail;
                }
                if self.array_stmt(nl, lin, &rhs, out) {
                    return;
                }
                if self.zero_case(nl, lin, &mut rhs, out) {
                    return;
                }
                match &rhs {
                    Expr::Ret { nl: xs, lin: ys }
                        if xs.len() == nl.len() && ys.len() == lin.len() =>
                    {
                        for (b, x) in nl.iter().zip(xs).chain(lin.iter().zip(ys)) {
                            self.rename.insert(b.var.clone(), x.clone());
                        }
                        return;
                    }
                    Expr::LinZero(t) if lin.len() == 1 => {
                        self.zero.insert(lin[0].var.clone(), t.clone());
                    }
                    Expr::LinAdd(a, b) if lin.len() == 1 => {
                        match (self.is_zero(a), self.is_zero(b)) {
                            (true, true) => return self.zeros(out, lin),
                            (true, false) => {
                                self.rename.insert(lin[0].var.clone(), b.clone());
                                return;
                            }
                            (false, true) => {
                                self.rename.insert(lin[0].var.clone(), a.clone());
                                return;
                            }
                            (false, false) => {}
                        }
                    }
                    Expr::LinNeg(a) | Expr::Dup(a) if self.is_zero(a) => {
                        return self.zeros(out, lin);
                    }
                    // The index stays read (dropped), as for a scaling.
                    // Scaling an empty tuple costs nothing, and the factor
                    // would then need an explicit drop: leave it.
                    Expr::LinScale(_, a)
                        if self.is_zero(a) && lin.iter().all(|b| b.ty.scalars() > 0) =>
                    {
                        return self.zeros(out, lin);
                    }
                    Expr::LinTup(vs) if vs.iter().all(|v| self.is_zero(v)) => {
                        return self.zeros(out, lin);
                    }
                    Expr::App {
                        func, lin: args, ..
                    } if nl.is_empty()
                        && self.linear.get(func).copied().unwrap_or(false)
                        && args.iter().all(|v| self.is_zero(v)) =>
                    {
                        return self.zeros(out, lin);
                    }
                    Expr::Drop(inner) if nl.is_empty() && lin.is_empty() => {
                        if let Expr::Ret { nl: xs, lin: ys } = &**inner {
                            let ys: Vec<Var> =
                                ys.iter().filter(|v| !self.is_zero(v)).cloned().collect();
                            if xs.is_empty() && ys.is_empty() {
                                return;
                            }
                            let rhs = Expr::Drop(Box::new(Expr::Ret {
                                nl: xs.clone(),
                                lin: ys,
                            }));
                            out.push(Stmt::Let {
                                nl: vec![],
                                lin: vec![],
                                rhs,
                            });
                            return;
                        }
                    }
                    _ => {}
                }
                out.push(Stmt::Let {
                    nl: nl.clone(),
                    lin: lin.clone(),
                    rhs,
                });
            }
        }
    }
}

/// For `lset(ȧ, i, s)` with `t = lindex(ȧ, i); s = t + e` (or `e + t`)
/// bound earlier in `out`, the block it ends: removes both bindings and
/// returns `e`, so that the write becomes `laccum(ȧ, i, e)`. That is the
/// tangent of `y[i] += e`, which J writes as a read, an addition and a
/// write; as an accumulation it is one step, and its transpose reads the
/// slot's cotangent where the write's would read it, zero it and add it
/// back. Sound because `ȧ` is consumed only by the write: nothing between
/// the read and the write changes the slot.
fn take_increment(out: &mut Vec<Stmt>, arr: &Var, idx: &Var, val: &Var) -> Option<Var> {
    fn single(s: &Stmt) -> Option<(&Var, &Expr)> {
        match s {
            Stmt::Let { nl, lin, rhs } if nl.is_empty() && lin.len() == 1 => {
                Some((&lin[0].var, rhs))
            }
            _ => None,
        }
    }
    let sum = out
        .iter()
        .rposition(|s| single(s).is_some_and(|(v, _)| v == val))?;
    let Some((_, Expr::LinAdd(a, b))) = single(&out[sum]) else {
        return None;
    };
    let read = |t: &Var| {
        out[..sum].iter().rposition(|s| {
            matches!(single(s), Some((v, Expr::LinIndex { arr: x, idx: j }))
                if v == t && x == arr && j == idx)
        })
    };
    let (at, added) = match (read(a), read(b)) {
        (Some(k), _) => (k, b.clone()),
        (None, Some(k)) => (k, a.clone()),
        (None, None) => return None,
    };
    out.remove(sum);
    out.remove(at);
    Some(added)
}

/// Removes dead bindings and unpackings until none is left, and returns
/// how often the body then reads each variable. The counts are taken once:
/// a sweep subtracts the reads of what it removes, so they stay exact (a
/// miscount would remove a binding still read, or leave a variable unread
/// without its drop, and `check` refuses both, after every pass in tests).
fn dead_code(body: &mut Expr) -> HashMap<Var, usize> {
    let mut counts = use_counts(body);
    while sweep(body, &mut counts) {}
    counts
}

/// The non-linear variable a `let ; = drop(v)` statement drops.
fn dropped_var(s: &Stmt) -> Option<&Var> {
    dropped(s).filter(|(_, linear)| !*linear).map(|(v, _)| v)
}

fn unread(bs: &[Binder], counts: &HashMap<Var, usize>) -> bool {
    bs.iter()
        .all(|b| counts.get(&b.var).copied().unwrap_or(0) == 0)
}

/// One backward sweep; returns whether anything was removed.
fn sweep(e: &mut Expr, counts: &mut HashMap<Var, usize>) -> bool {
    let Expr::Block { stmts, tail } = e else {
        return match e {
            Expr::Drop(inner) => sweep(inner, counts),
            Expr::Case { arms, .. } => {
                // Every arm is swept (no short circuit).
                let mut changed = false;
                for a in arms.iter_mut() {
                    changed |= sweep(&mut a.body, counts);
                }
                changed
            }
            Expr::Loop(l) => {
                let c = match l.iter.header_expr_mut() {
                    Some(e) => sweep(e, counts),
                    None => false,
                };
                sweep(&mut l.body, counts) || c
            }
            _ => false,
        };
    };
    let mut changed = sweep(tail, counts);
    let mut keep = vec![true; stmts.len()];
    // Reads of each variable within this block, drops excluded (needed
    // only where the block drops a non-linear value).
    let mut local: HashMap<Var, usize> = HashMap::default();
    if stmts.iter().any(|s| dropped_var(s).is_some()) {
        for s in stmts.iter().filter(|s| dropped_var(s).is_none()) {
            stmt_uses(s, &mut |v: &Var, _| {
                *local.entry(v.clone()).or_insert(0) += 1
            });
        }
        crate::visit::for_each_use(tail, &mut |v: &Var, _| {
            *local.entry(v.clone()).or_insert(0) += 1
        });
    }
    for (i, s) in stmts.iter_mut().enumerate().rev() {
        // A drop of a non-linear value this block reads anyway.
        let redundant = dropped_var(s).is_some_and(|v| local.get(v).copied().unwrap_or(0) > 0);
        let dead = redundant
            || match s {
                Stmt::Let { nl, lin, rhs } => {
                    (!nl.is_empty() || !lin.is_empty())
                        && unread(nl, counts)
                        && unread(lin, counts)
                        && free_vars(rhs).lin.is_empty()
                }
                Stmt::Unpack { vars, .. } => unread(vars, counts),
                Stmt::LinUnpack { .. } => false,
            };
        if dead {
            keep[i] = false;
            changed = true;
            stmt_uses(s, &mut |v: &Var, _| {
                if let Some(c) = counts.get_mut(v) {
                    *c = c.saturating_sub(1);
                }
            });
        } else if let Stmt::Let { rhs, .. } = s {
            changed |= sweep(rhs, counts);
        }
    }
    if changed {
        let mut it = keep.into_iter();
        stmts.retain(|_| it.next().unwrap_or(true));
        if stmts.is_empty() {
            let t = std::mem::replace(
                &mut **tail,
                Expr::Ret {
                    nl: vec![],
                    lin: vec![],
                },
            );
            *e = t;
        }
    }
    changed
}
