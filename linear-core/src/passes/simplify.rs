//! Simplification: removes work that generated code must not do.
//!
//! * Symbolic zeros. A linear variable bound to `zero(τ)` is known to be
//!   zero and is never materialised, scaled or added: `z + a` is `a`,
//!   `-z`, `s * z`, `dup(z)`, a tuple of zeros, unpacking a zero tuple and a
//!   call to a linear function whose linear arguments are all zero
//!   (Corollary 4.2: a linear expression of zeros is zero) are zero, and
//!   `drop(z)` disappears. The zero's own binding is then dead.
//! * Copies. `let a; b = (x; y)` renames `a` to `x` and `b` to `y`.
//! * Nested blocks. `let v = { s..; e }` becomes `s..; let v = e` (names
//!   are unique per function, so hoisting cannot capture).
//! * Dead code. A binding none of whose variables is read, whose
//!   right-hand side reads no linear variable, is removed, and so is an
//!   unpacking none of whose components is read.
//!
//! Removing a read can leave a non-linear parameter or component unread,
//! which Fig. 3 forbids: it is then dropped explicitly (cost: its scalars),
//! never more than the work removed with the read.
//!
//! Input: a program that type-checks in Linear A (or B). Output: a program
//! with the same signatures that type-checks in the same language, computes
//! the same results, and does no more work.

use rustc_hash::FxHashMap as HashMap;

use super::transpose::drop_unused;
use crate::ir::{Binder, Expr, Func, Program, Stmt, Ty, Var};
use crate::visit::{free_vars, stmt_uses, use_counts};

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
    let mut s = Simp {
        linear,
        rename: HashMap::default(),
        zero: HashMap::default(),
    };
    let body = s.expr(&f.body);
    let mut g = Func { body, ..f.clone() };
    dead_code(&mut g.body);
    drop_unused(&mut g);
    g
}

struct Simp<'a> {
    linear: &'a HashMap<Var, bool>,
    rename: HashMap<Var, Var>,
    /// Linear variables known to be zero, with their types.
    zero: HashMap<Var, Ty>,
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
            Expr::Ret { nl, lin } => Expr::Ret {
                nl: self.rs(nl),
                lin: self.rs(lin),
            },
            Expr::App { func, nl, lin } => Expr::App {
                func: func.clone(),
                nl: self.rs(nl),
                lin: self.rs(lin),
            },
            Expr::Lit { .. } | Expr::Const { .. } | Expr::LinZero(_) => e.clone(),
            Expr::Tup(vs) => Expr::Tup(self.rs(vs)),
            Expr::Prim { prim, args } => Expr::Prim {
                prim: *prim,
                args: self.rs(args),
            },
            Expr::LinTup(vs) => Expr::LinTup(self.rs(vs)),
            Expr::LinAdd(a, b) => Expr::LinAdd(self.r(a), self.r(b)),
            Expr::LinNeg(a) => Expr::LinNeg(self.r(a)),
            Expr::LinScale(s, a) => Expr::LinScale(self.r(s), self.r(a)),
            Expr::Dup(a) => Expr::Dup(self.r(a)),
            Expr::Drop(inner) => Expr::Drop(Box::new(self.expr(inner))),
        }
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
                            if xs.is_empty() && ys.iter().all(|v| self.is_zero(v)) {
                                return;
                            }
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

/// Removes dead bindings and unpackings until none is left.
fn dead_code(body: &mut Expr) {
    loop {
        let mut counts = use_counts(body);
        if !sweep(body, &mut counts) {
            break;
        }
    }
}

fn unread(bs: &[Binder], counts: &HashMap<Var, usize>) -> bool {
    bs.iter()
        .all(|b| counts.get(&b.var).copied().unwrap_or(0) == 0)
}

/// One backward sweep; returns whether anything was removed.
fn sweep(e: &mut Expr, counts: &mut HashMap<Var, usize>) -> bool {
    let Expr::Block { stmts, tail } = e else {
        if let Expr::Drop(inner) = e {
            return sweep(inner, counts);
        }
        return false;
    };
    let mut changed = sweep(tail, counts);
    let mut keep = vec![true; stmts.len()];
    for (i, s) in stmts.iter_mut().enumerate().rev() {
        let dead = match s {
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
