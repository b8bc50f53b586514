//! T: transposition of Linear B (paper, section 7, Fig. 10).
//!
//! `transpose(P)` adds, for every linear function
//! `f(v..; v̇..: τ̇..) -> (; σ̇..)` (no non-linear results), its transpose
//! `f.t(v..; v̈..: σ̇..) -> (; τ̇..)`, which satisfies
//! ⟨ẋ, f.t(x; ÿ)⟩ = ⟨f(x; ẋ), ÿ⟩ (Thm 7.1). All functions of `P` are kept:
//! non-linear code inside linear functions may call them.
//!
//! Rules, reading an expression backwards with one cotangent variable per
//! linear result:
//!
//! * TLetNonLin, TUnpack, TNonLin: non-linear statements are kept as they
//!   are, in order, ahead of the transposed linear ones (Linear B makes them
//!   independent of linear values, so hoisting them is sound).
//! * TLetLin: statements are transposed from last to first; a binding's
//!   results have their cotangents once all their (single) uses are
//!   transposed.
//! * TLinUnpack: the cotangents of the components are packed into the
//!   cotangent of the tuple.
//! * TRet / TLinVar: the cotangent of a returned variable is the
//!   corresponding input cotangent.
//! * TLinZero: drops its cotangent. TLinTup: unpacks it. TLinAdd: `dup`.
//!   TLinMul: `v * v̈`. Negation is its own transpose. TDup: `+`.
//! * TDropLin: zero cotangents for the dropped expression's linear free
//!   variables; the dropped code is not run.
//! * TApp: a call to `g` becomes a call to `g.t`.
//! * TDef: parameters `v̈..` for the results, returns the cotangents of
//!   the linear parameters in order.
//! * TCase: a linear case (non-linear scrutinee, linear results) becomes a
//!   case on the same scrutinee whose arm k is T of arm k, returning the
//!   cotangents of every linear variable any arm reads: a symbolic zero
//!   where arm k does not read it. The results' cotangents are read by
//!   every arm (arms are exclusive, so each reads them once).
//! * TLoop: a linear loop (linear state only; its body reads no outer
//!   linear variable) becomes the same loop run backwards (a list loop over
//!   the reversed list, a range loop over the reversed range) carrying the
//!   cotangent of the state, starting from the cotangent of the final
//!   state; its body is T of the body, from the cotangents of the next
//!   state to those of the current one. Outer values a forward body reads
//!   arrive as carried state (see J), so their cotangents accumulate across
//!   the reversed iterations. A `while` loop is never linear (U turns it
//!   into a loop over its tape). A replay (binomial checkpointing) runs
//!   its states in the opposite order: generated code recomputes them from
//!   snapshots, the body is transposed as any other.
//!
//! TDropLin can leave a non-linear variable that only the dropped code read
//! unused, which Fig. 3 forbids; such variables are dropped explicitly right
//! after their binding ([`drop_unused`]).
//!
//! Input: a Linear B program that type-checks. Output: a Linear B program
//! that type-checks.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::PassError;
use crate::ir::{Arm, Binder, Expr, Extern, Func, Loop, Program, Stmt, Ty, Var};
use crate::visit::{derived_name, for_each_use, free_vars, stmt_free_vars, Fresh};

/// Whether T applies to `f`: it has no non-linear results.
pub fn is_linear(f: &Func) -> bool {
    f.nl_rets.is_empty()
}

/// Applies T: `p`'s functions followed, each, by its transpose if linear.
pub fn transpose(p: &Program) -> Result<Program, PassError> {
    let mut names = HashMap::default();
    for f in p.funcs.iter().filter(|f| is_linear(f)) {
        names.insert(f.name.clone(), derived_name(p, &f.name, "t"));
    }
    let mut out = Program::default();
    // A linear extern `g` gets an extern transpose `g.t` (TDef on the
    // signature).
    for e in &p.externs {
        out.externs.push(e.clone());
        if e.nl_rets.is_empty() {
            let t = derived_name(p, &e.name, "t");
            names.insert(e.name.clone(), t.clone());
            out.externs.push(Extern {
                name: t,
                nl_params: e.nl_params.clone(),
                lin_params: e.lin_rets.clone(),
                nl_rets: vec![],
                lin_rets: e.lin_params.clone(),
            });
        }
    }
    for f in &p.funcs {
        out.funcs.push(f.clone());
        if is_linear(f) {
            out.funcs.push(transpose_func(f, p, &names)?);
        }
    }
    Ok(out)
}

/// TDef for one linear function. `names` maps every linear function of `p`
/// to its transpose's name.
pub fn transpose_func(f: &Func, p: &Program, names: &HashMap<Var, Var>) -> Result<Func, PassError> {
    let mut t = Transpose {
        p,
        names,
        func: &f.name,
        fresh: Fresh::for_func(f),
        types: crate::visit::binder_types(f),
    };
    let cts: Vec<Binder> = f
        .lin_rets
        .iter()
        .map(|ty| Binder::new(t.fresh.var("ct"), ty.clone()))
        .collect();
    let mut out = Vec::new();
    let mut ct = t.expr(
        &f.body,
        cts.iter().map(|b| b.var.clone()).collect(),
        &mut out,
    )?;
    let ret = f
        .lin_params
        .iter()
        .map(|b| {
            ct.remove(&b.var)
                .ok_or_else(|| t.err(&format!("no cotangent for linear parameter `{}`", b.var)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut g = Func {
        name: names
            .get(&f.name)
            .cloned()
            .ok_or_else(|| t.err("not a linear function"))?,
        nl_params: f.nl_params.clone(),
        lin_params: cts,
        nl_rets: vec![],
        lin_rets: f.lin_params.iter().map(|b| b.ty.clone()).collect(),
        body: Expr::block(
            out,
            Expr::Ret {
                nl: vec![],
                lin: ret,
            },
        ),
    };
    drop_unused(&mut g);
    Ok(g)
}

/// A statement is linear, and transposed, iff it binds or reads a linear
/// variable; otherwise it is kept as it is.
fn is_linear_stmt(s: &Stmt) -> bool {
    match s {
        Stmt::Let { nl, lin, .. } => {
            if !lin.is_empty() {
                return true;
            }
            nl.is_empty() && !stmt_free_vars(s).lin.is_empty()
        }
        Stmt::Unpack { .. } => false,
        Stmt::LinUnpack { .. } => true,
    }
}

/// Cotangent variables of the free linear variables of what was transposed.
type Cts = HashMap<Var, Var>;

struct Transpose<'a> {
    p: &'a Program,
    names: &'a HashMap<Var, Var>,
    func: &'a Var,
    fresh: Fresh,
    types: HashMap<Var, Ty>,
}

impl Transpose<'_> {
    fn err(&self, msg: &str) -> PassError {
        PassError::new(self.func, msg)
    }

    fn ty(&self, v: &Var) -> Result<Ty, PassError> {
        super::type_of(&self.types, self.func, v)
    }

    /// A fresh cotangent variable for linear variable `v`.
    fn ct_var(&mut self, v: &Var) -> Result<Binder, PassError> {
        let ty = self.ty(v)?;
        let base = v.as_str().split('.').next().unwrap_or("v");
        let c = self.fresh.var(&format!("ct_{base}"));
        self.types.insert(c.clone(), ty.clone());
        Ok(Binder::new(c, ty))
    }

    fn emit_lin(out: &mut Vec<Stmt>, lin: Vec<Binder>, rhs: Expr) {
        out.push(Stmt::Let {
            nl: vec![],
            lin,
            rhs,
        });
    }

    /// Transposes linear expression `e`, whose results' cotangents are
    /// `cts`, appending the transposed statements to `out` and returning
    /// the cotangents of `e`'s free linear variables. The statements are
    /// flat: names are unique, so nested blocks need no scope of their own.
    fn expr(&mut self, e: &Expr, cts: Vec<Var>, out: &mut Vec<Stmt>) -> Result<Cts, PassError> {
        let mut ct = Cts::default();
        match e {
            Expr::Block { stmts, tail } => {
                // TLetNonLin / TUnpack: non-linear statements first, as is.
                out.extend(stmts.iter().filter(|s| !is_linear_stmt(s)).cloned());
                let mut groups: Vec<Vec<Stmt>> = Vec::new();
                let mut g = Vec::new();
                ct = self.expr(tail, cts, &mut g)?;
                groups.push(g);
                for s in stmts.iter().rev().filter(|s| is_linear_stmt(s)) {
                    let mut g = Vec::new();
                    match s {
                        Stmt::Let { lin, rhs, .. } => {
                            let rc = lin
                                .iter()
                                .map(|b| {
                                    ct.remove(&b.var).ok_or_else(|| {
                                        self.err(&format!(
                                            "linear variable `{}` is never consumed",
                                            b.var
                                        ))
                                    })
                                })
                                .collect::<Result<Vec<_>, _>>()?;
                            let inner = self.expr(rhs, rc, &mut g)?;
                            ct.extend(inner);
                        }
                        Stmt::LinUnpack { vars, tuple } => {
                            let parts = vars
                                .iter()
                                .map(|b| {
                                    ct.remove(&b.var).ok_or_else(|| {
                                        self.err(&format!(
                                            "linear variable `{}` is never consumed",
                                            b.var
                                        ))
                                    })
                                })
                                .collect::<Result<Vec<_>, _>>()?;
                            let c = self.ct_var(tuple)?;
                            ct.insert(tuple.clone(), c.var.clone());
                            Self::emit_lin(&mut g, vec![c], Expr::LinTup(parts));
                        }
                        Stmt::Unpack { .. } => {}
                    }
                    groups.push(g);
                }
                out.extend(groups.into_iter().flatten());
            }
            Expr::Ret { nl, lin } => {
                if !nl.is_empty() {
                    return Err(self
                        .err("transposing an expression with non-linear results (not Linear B)"));
                }
                ct.extend(lin.iter().cloned().zip(cts));
            }
            Expr::App { func, nl, lin } => {
                let Some(callee) = self.p.sig(func.as_str()) else {
                    return Err(self.err(&format!("call to unknown function `{func}`")));
                };
                let Some(tname) = self.names.get(func).cloned() else {
                    return Err(self.err(&format!(
                        "`{func}` has non-linear results and cannot be transposed"
                    )));
                };
                let mut binders = Vec::new();
                for (a, ty) in lin.iter().zip(&callee.lin_params) {
                    let c = self.fresh.var(&format!(
                        "ct_{}",
                        a.as_str().split('.').next().unwrap_or("v")
                    ));
                    self.types.insert(c.clone(), ty.clone());
                    ct.insert(a.clone(), c.clone());
                    binders.push(Binder::new(c, ty.clone()));
                }
                Self::emit_lin(
                    out,
                    binders,
                    Expr::App {
                        func: tname,
                        nl: nl.clone(),
                        lin: cts,
                    },
                );
            }
            Expr::LinZero(_) => {
                let c = cts
                    .into_iter()
                    .next()
                    .ok_or_else(|| self.err("zero without a cotangent"))?;
                Self::emit_lin(out, vec![], Expr::Drop(Box::new(Expr::lin_var(c))));
            }
            Expr::LinTup(vs) => {
                let c = cts
                    .into_iter()
                    .next()
                    .ok_or_else(|| self.err("tuple without a cotangent"))?;
                let mut parts = Vec::new();
                for v in vs {
                    let b = self.ct_var(v)?;
                    ct.insert(v.clone(), b.var.clone());
                    parts.push(b);
                }
                out.push(Stmt::LinUnpack {
                    vars: parts,
                    tuple: c,
                });
            }
            Expr::LinAdd(a, b) => {
                let c = cts
                    .into_iter()
                    .next()
                    .ok_or_else(|| self.err("sum without a cotangent"))?;
                let (ca, cb) = (self.ct_var(a)?, self.ct_var(b)?);
                ct.insert(a.clone(), ca.var.clone());
                ct.insert(b.clone(), cb.var.clone());
                Self::emit_lin(out, vec![ca, cb], Expr::Dup(c));
            }
            Expr::LinNeg(a) => {
                let c = cts
                    .into_iter()
                    .next()
                    .ok_or_else(|| self.err("negation without a cotangent"))?;
                let ca = self.ct_var(a)?;
                ct.insert(a.clone(), ca.var.clone());
                Self::emit_lin(out, vec![ca], Expr::LinNeg(c));
            }
            Expr::LinScale(s, a) => {
                let c = cts
                    .into_iter()
                    .next()
                    .ok_or_else(|| self.err("product without a cotangent"))?;
                let ca = self.ct_var(a)?;
                ct.insert(a.clone(), ca.var.clone());
                Self::emit_lin(out, vec![ca], Expr::LinScale(s.clone(), c));
            }
            Expr::Dup(a) => {
                let mut it = cts.into_iter();
                let (Some(c1), Some(c2)) = (it.next(), it.next()) else {
                    return Err(self.err("dup without two cotangents"));
                };
                let ca = self.ct_var(a)?;
                ct.insert(a.clone(), ca.var.clone());
                Self::emit_lin(out, vec![ca], Expr::LinAdd(c1, c2));
            }
            Expr::Drop(inner) => {
                // TDropLin: the dropped code is dead; its linear inputs get
                // zero cotangents.
                for v in free_vars(inner).lin {
                    let b = self.ct_var(&v)?;
                    ct.insert(v, b.var.clone());
                    let ty = b.ty.clone();
                    Self::emit_lin(out, vec![b], Expr::LinZero(ty));
                }
            }
            Expr::Case { scrut, arms } => return self.case(scrut, arms, cts, out),
            Expr::Loop(l) => return self.loop_(l, cts, out),
            Expr::Lit { .. }
            | Expr::Const { .. }
            | Expr::Tup(_)
            | Expr::Prim { .. }
            | Expr::Int(_)
            | Expr::Bool(_)
            | Expr::Inj { .. } => {
                return Err(self.err("transposing a non-linear expression in a linear position"));
            }
        }
        Ok(ct)
    }

    /// The cotangents of `vars` from `ct`, zero where missing (the
    /// transposed code did not read the variable).
    fn cotangents_or_zero(
        &mut self,
        vars: &[Var],
        mut ct: Cts,
        out: &mut Vec<Stmt>,
    ) -> Result<Vec<Var>, PassError> {
        vars.iter()
            .map(|v| match ct.remove(v) {
                Some(c) => Ok(c),
                None => {
                    let b = self.ct_var(v)?;
                    let t = b.ty.clone();
                    let c = b.var.clone();
                    Self::emit_lin(out, vec![b], Expr::LinZero(t));
                    Ok(c)
                }
            })
            .collect()
    }

    /// TCase.
    fn case(
        &mut self,
        scrut: &Var,
        arms: &[Arm],
        cts: Vec<Var>,
        out: &mut Vec<Stmt>,
    ) -> Result<Cts, PassError> {
        let mut reads: Vec<Var> = Vec::new();
        for a in arms {
            for v in free_vars(&a.body).lin {
                if !reads.contains(&v) {
                    reads.push(v);
                }
            }
        }
        let mut new_arms = Vec::new();
        for a in arms {
            let mut body = Vec::new();
            let ct = self.expr(&a.body, cts.clone(), &mut body)?;
            let rets = self.cotangents_or_zero(&reads, ct, &mut body)?;
            new_arms.push(Arm {
                bind: a.bind.clone(),
                body: Expr::block(
                    body,
                    Expr::Ret {
                        nl: vec![],
                        lin: rets,
                    },
                ),
            });
        }
        let mut ct = Cts::default();
        let mut binders = Vec::new();
        for v in &reads {
            let b = self.ct_var(v)?;
            ct.insert(v.clone(), b.var.clone());
            binders.push(b);
        }
        Self::emit_lin(
            out,
            binders,
            Expr::Case {
                scrut: scrut.clone(),
                arms: new_arms,
            },
        );
        Ok(ct)
    }

    /// TLoop.
    fn loop_(&mut self, l: &Loop, cts: Vec<Var>, out: &mut Vec<Stmt>) -> Result<Cts, PassError> {
        if !l.nl.is_empty() || !l.collect.is_empty() {
            return Err(self.err("transposing a loop with non-linear state (not Linear B)"));
        }
        let Some(iter) = l.iter.reversed() else {
            return Err(self.err("a `while` loop cannot be transposed; U makes it a list loop"));
        };
        let state: Vec<Var> = l.lin.iter().map(|(b, _)| b.var.clone()).collect();
        // The cotangent of the next state, bound per reversed iteration.
        let mut carry = Vec::new();
        for ((b, _), c0) in l.lin.iter().zip(cts) {
            let c = self.ct_var(&b.var)?;
            carry.push((c, c0));
        }
        let mut body = Vec::new();
        let ct = self.expr(
            &l.body,
            carry.iter().map(|(c, _)| c.var.clone()).collect(),
            &mut body,
        )?;
        let rets = self.cotangents_or_zero(&state, ct, &mut body)?;
        let mut ct = Cts::default();
        let mut binders = Vec::new();
        for (_, v) in &l.lin {
            let b = self.ct_var(v)?;
            ct.insert(v.clone(), b.var.clone());
            binders.push(b);
        }
        Self::emit_lin(
            out,
            binders,
            Expr::Loop(Box::new(Loop {
                iter,
                nl: vec![],
                lin: carry,
                collect: vec![],
                body: Expr::block(
                    body,
                    Expr::Ret {
                        nl: vec![],
                        lin: rets,
                    },
                ),
            })),
        );
        Ok(ct)
    }
}

/// Inserts `drop(v)` right after the binding of every non-linear variable
/// of `f` that nothing reads, so that `f` satisfies Fig. 3's "used at least
/// once" again after code was removed around it.
pub fn drop_unused(f: &mut Func) {
    let mut used = HashSet::default();
    for_each_use(&f.body, &mut |v, _| {
        used.insert(v.clone());
    });
    let dropper = |v: &Var| Stmt::Let {
        nl: vec![],
        lin: vec![],
        rhs: Expr::Drop(Box::new(Expr::var(v.clone()))),
    };
    let params: Vec<Stmt> = f
        .nl_params
        .iter()
        .filter(|b| !used.contains(&b.var))
        .map(|b| dropper(&b.var))
        .collect();
    fix_expr(&mut f.body, &used, &dropper);
    prepend(&mut f.body, params);
}

/// Puts `stmts` in front of `e`.
pub fn prepend(e: &mut Expr, mut stmts: Vec<Stmt>) {
    if stmts.is_empty() {
        return;
    }
    let body = std::mem::replace(
        e,
        Expr::Ret {
            nl: vec![],
            lin: vec![],
        },
    );
    *e = match body {
        Expr::Block { stmts: inner, tail } => {
            stmts.extend(inner);
            Expr::block(stmts, *tail)
        }
        other => Expr::block(stmts, other),
    };
}

fn fix_expr(e: &mut Expr, used: &HashSet<Var>, dropper: &impl Fn(&Var) -> Stmt) {
    match e {
        Expr::Block { stmts, tail } => {
            let old = std::mem::take(stmts);
            for mut s in old {
                let mut unused = Vec::new();
                match &mut s {
                    Stmt::Let { nl, rhs, .. } => {
                        fix_expr(rhs, used, dropper);
                        unused.extend(
                            nl.iter()
                                .filter(|b| !used.contains(&b.var))
                                .map(|b| b.var.clone()),
                        );
                    }
                    Stmt::Unpack { vars, .. } => {
                        unused.extend(
                            vars.iter()
                                .filter(|b| !used.contains(&b.var))
                                .map(|b| b.var.clone()),
                        );
                    }
                    Stmt::LinUnpack { .. } => {}
                }
                stmts.push(s);
                stmts.extend(unused.iter().map(dropper));
            }
            fix_expr(tail, used, dropper);
        }
        Expr::Drop(inner) => fix_expr(inner, used, dropper),
        Expr::Case { arms, .. } => {
            for a in arms {
                fix_expr(&mut a.body, used, dropper);
                let unused: Vec<Var> = a
                    .bind
                    .iter()
                    .filter(|b| !used.contains(&b.var))
                    .map(|b| b.var.clone())
                    .collect();
                prepend(&mut a.body, unused.iter().map(dropper).collect());
            }
        }
        Expr::Loop(l) => {
            if let Some(e) = l.iter.header_expr_mut() {
                fix_expr(e, used, dropper);
            }
            fix_expr(&mut l.body, used, dropper);
            let unused: Vec<Var> = l
                .iter
                .binder()
                .into_iter()
                .chain(l.nl.iter().map(|(b, _)| b))
                .filter(|b| !used.contains(&b.var))
                .map(|b| b.var.clone())
                .collect();
            prepend(&mut l.body, unused.iter().map(dropper).collect());
        }
        Expr::Int(_) | Expr::Bool(_) | Expr::Inj { .. } => {}
        Expr::Ret { .. }
        | Expr::App { .. }
        | Expr::Lit { .. }
        | Expr::Const { .. }
        | Expr::Tup(_)
        | Expr::Prim { .. }
        | Expr::LinZero(_)
        | Expr::LinTup(_)
        | Expr::LinAdd(..)
        | Expr::LinNeg(_)
        | Expr::LinScale(..)
        | Expr::Dup(_) => {}
    }
}
