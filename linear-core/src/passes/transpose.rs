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
//! * TApp: a call to `g` becomes a call to `g.t`. An array `g` borrows
//!   ([`crate::ir::Program::borrowed`]: an extern's borrowed parameter, or
//!   a function's linear array parameter it never consumes) is read in
//!   place: its
//!   current accumulator is passed to `g.t` after the results' cotangents
//!   and replaced by what `g.t` returns in its position, as TIndex does
//!   with `laccum`.
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
//!   the reversed iterations. Where the state is all reals, the reversed
//!   loop is marked `zeroskip` ([`crate::ir::Loop::zero_skip`]): with
//!   every incoming cotangent zero, as the unselected side of a `min` or
//!   an arm not taken leaves it at run time, it would only add zeros, and
//!   generated code does not run it. A `while` loop is never linear (U turns it
//!   into a loop over its tape). A replay (binomial checkpointing) runs
//!   its states in the opposite order: generated code recomputes them from
//!   snapshots, the body is transposed as any other.
//!
//! * Arrays (invariant 11 of [`crate::check`]): a linear array's
//!   cotangent is an accumulator, threaded through the transposed code.
//!   TIndex: an in-place read `lindex(ȧ, i)` whose result has cotangent
//!   `c` becomes `ā' = laccum(ā, i, c)` on the current accumulator `ā`,
//!   which `ā'` replaces; so k reads of one array cost k element additions
//!   into one buffer, `grad[i] += c` in generated Rust, never an array
//!   copy or a one-hot array. TAccum: `laccum(ā, i, v̇)` with cotangent `c`
//!   gives `v̇` the cotangent `lindex(c, i)` and `ā` the cotangent `c`
//!   (so T∘T is the identity on these forms). The accumulator of an array
//!   consumed in the forward code comes from its consumer (transposed
//!   first); that of a borrowed parameter (read, never consumed) is a
//!   parameter of the transpose, after the results' cotangents: the caller
//!   passes a zeroed buffer, and gets it back, accumulated, in the
//!   parameter's position among the results. Arms take the current
//!   accumulators of the arrays they read and return them; reversed loops
//!   carry them as state. TPush: `lpush(ȧ, v̇)` with cotangent `c`
//!   becomes `ā, v̄ = lpop(c)`, and TPop the converse: a loop that pushes
//!   transposes to a reversed loop that pops the cotangents off the
//!   buffer, last pushed first.
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
    // signature), which takes an accumulator for each array `g` borrows
    // after the results' cotangents, and returns it in that array's
    // position.
    for e in &p.externs {
        out.externs.push(e.clone());
        if e.nl_rets.is_empty() {
            let t = derived_name(p, &e.name, "t");
            names.insert(e.name.clone(), t.clone());
            let mut lin_params = e.lin_rets.clone();
            lin_params.extend(e.borrowed.iter().map(|&k| e.lin_params[k].clone()));
            out.externs.push(Extern::plain(
                t,
                (e.nl_params.clone(), lin_params),
                (vec![], e.lin_params.clone()),
            ));
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
        acc: HashMap::default(),
    };
    let mut cts: Vec<Binder> = f
        .lin_rets
        .iter()
        .map(|ty| Binder::new(t.fresh.var("ct"), ty.clone()))
        .collect();
    let results: Vec<Var> = cts.iter().map(|b| b.var.clone()).collect();
    // A borrowed array parameter (read in place, never consumed) gets an
    // accumulator parameter, after the results' cotangents.
    let mut consumed = HashSet::default();
    let borrowed = |g: &Var| p.sig(g.as_str()).map(|s| s.borrowed).unwrap_or_default();
    crate::visit::for_each_consumed_in(&f.body, &borrowed, &mut |v| {
        consumed.insert(v.clone());
    });
    for b in &f.lin_params {
        if b.ty.is_linear_array() && !consumed.contains(&b.var) {
            let a = t.ct_var(&b.var)?;
            t.acc.insert(b.var.clone(), a.var.clone());
            cts.push(a);
        }
    }
    let mut out = Vec::new();
    let mut ct = t.expr(&f.body, results, &mut out)?;
    let ret = f
        .lin_params
        .iter()
        .map(|b| {
            t.take_ct(&mut ct, &b.var)
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
    /// The accumulator of each linear array whose cotangent is known: the
    /// variable holding the cotangent summed so far over its uses already
    /// transposed (those after this point in the forward code). An
    /// in-place read `lindex(ȧ, i)` adds into it at `i` and rebinds it.
    acc: HashMap<Var, Var>,
}

impl Transpose<'_> {
    fn err(&self, msg: &str) -> PassError {
        PassError::new(self.func, msg)
    }

    /// The positions of the linear parameters each callee borrows.
    fn borrowed_of(&self) -> impl Fn(&Var) -> Vec<usize> + '_ {
        |g: &Var| {
            self.p
                .sig(g.as_str())
                .map(|s| s.borrowed)
                .unwrap_or_default()
        }
    }

    fn ty(&self, v: &Var) -> Result<Ty, PassError> {
        super::type_of(&self.types, self.func, v)
    }

    /// The cotangent of `v`: from `ct`, or `v`'s accumulator if it is an
    /// array.
    fn take_ct(&mut self, ct: &mut Cts, v: &Var) -> Option<Var> {
        ct.remove(v).or_else(|| self.acc.remove(v))
    }

    /// Moves the cotangents of linear arrays from `ct` to the
    /// accumulators, where in-place reads earlier in the forward code
    /// (transposed next) add into them.
    fn accumulate(&mut self, ct: &mut Cts) {
        let arrays: Vec<Var> = ct
            .keys()
            .filter(|v| self.types.get(*v).is_some_and(Ty::is_linear_array))
            .cloned()
            .collect();
        for v in arrays {
            if let Some(c) = ct.remove(&v) {
                self.acc.insert(v, c);
            }
        }
    }

    /// The linear arrays `e` reads in place and does not consume, with an
    /// accumulator: the ones a transposed arm or loop body threads.
    fn threaded(&self, e: &Expr) -> Vec<Var> {
        let mut consumed = HashSet::default();
        crate::visit::for_each_consumed_in(e, &self.borrowed_of(), &mut |v| {
            consumed.insert(v.clone());
        });
        free_vars(e)
            .lin
            .into_iter()
            .filter(|v| self.acc.contains_key(v) && !consumed.contains(v))
            .collect()
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
                self.accumulate(&mut ct);
                groups.push(g);
                for s in stmts.iter().rev().filter(|s| is_linear_stmt(s)) {
                    let mut g = Vec::new();
                    match s {
                        Stmt::Let { lin, rhs, .. } => {
                            let rc = lin
                                .iter()
                                .map(|b| {
                                    self.take_ct(&mut ct, &b.var).ok_or_else(|| {
                                        self.err(&format!(
                                            "linear variable `{}` is never consumed",
                                            b.var
                                        ))
                                    })
                                })
                                .collect::<Result<Vec<_>, _>>()?;
                            let inner = self.expr(rhs, rc, &mut g)?;
                            ct.extend(inner);
                            self.accumulate(&mut ct);
                        }
                        Stmt::LinUnpack { vars, tuple } => {
                            let parts = vars
                                .iter()
                                .map(|b| {
                                    self.take_ct(&mut ct, &b.var).ok_or_else(|| {
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
                // TApp; a borrowed array's accumulator goes through the
                // transposed call, which returns it accumulated (as TIndex
                // threads it through `laccum`).
                let mut binders = Vec::new();
                let mut args = cts;
                for (k, (a, ty)) in lin.iter().zip(&callee.lin_params).enumerate() {
                    let c = self.fresh.var(&format!(
                        "ct_{}",
                        a.as_str().split('.').next().unwrap_or("v")
                    ));
                    self.types.insert(c.clone(), ty.clone());
                    if callee.borrowed.contains(&k) {
                        let Some(acc) = self.acc.remove(a) else {
                            return Err(self.err(&format!(
                                "linear array `{a}` is lent to `{func}` but has no accumulator (it is neither a parameter nor consumed later, or it is lent twice)"
                            )));
                        };
                        args.push(acc);
                        self.acc.insert(a.clone(), c.clone());
                    } else {
                        ct.insert(a.clone(), c.clone());
                    }
                    binders.push(Binder::new(c, ty.clone()));
                }
                Self::emit_lin(
                    out,
                    binders,
                    Expr::App {
                        func: tname,
                        nl: nl.clone(),
                        lin: args,
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
                // zero cotangents (arrays it only reads in place get
                // nothing: no read, no accumulation).
                let free = free_vars(inner).lin;
                let mut consumed = Vec::new();
                crate::visit::for_each_consumed_in(inner, &self.borrowed_of(), &mut |v| {
                    if free.contains(v) && !consumed.contains(v) {
                        consumed.push(v.clone())
                    }
                });
                for v in consumed {
                    let b = self.ct_var(&v)?;
                    ct.insert(v, b.var.clone());
                    let ty = b.ty.clone();
                    Self::emit_lin(out, vec![b], Expr::LinZero(ty));
                }
            }
            Expr::Case { scrut, arms } => return self.case(scrut, arms, cts, out),
            Expr::Loop(l) => return self.loop_(l, cts, out),
            Expr::LinIndex { arr, idx } => self.t_index(arr, idx, cts, out)?,
            Expr::LinAccum { arr, idx, val } => {
                ct = self.t_accum(arr, idx, val, cts, out)?;
            }
            Expr::LinSet { arr, idx, val } => {
                ct = self.t_set(arr, idx, val, cts, out)?;
            }
            Expr::LinZeros { len, .. } => {
                // TZeros: the finished accumulator is freed.
                let c = cts
                    .into_iter()
                    .next()
                    .ok_or_else(|| self.err("`lzeros` without a cotangent"))?;
                let rhs = Expr::LinFree {
                    arr: c,
                    len: len.clone(),
                };
                Self::emit_lin(out, vec![], rhs);
            }
            Expr::LinPush { arr, val } => {
                // TPush: the pushed element's cotangent is popped off the
                // buffer, which then is the array's.
                let c = cts
                    .into_iter()
                    .next()
                    .ok_or_else(|| self.err("`lpush` without a cotangent"))?;
                let (ca, cv) = (self.ct_var(arr)?, self.ct_var(val)?);
                ct.insert(arr.clone(), ca.var.clone());
                ct.insert(val.clone(), cv.var.clone());
                Self::emit_lin(out, vec![ca, cv], Expr::LinPop { arr: c });
            }
            Expr::LinPop { arr } => {
                // TPop: the element's cotangent is pushed back.
                let mut it = cts.into_iter();
                let (Some(ca), Some(cx)) = (it.next(), it.next()) else {
                    return Err(self.err("`lpop` without two cotangents"));
                };
                let b = self.ct_var(arr)?;
                ct.insert(arr.clone(), b.var.clone());
                Self::emit_lin(out, vec![b], Expr::LinPush { arr: ca, val: cx });
            }
            Expr::LinFree { arr, len } => {
                // TFree: the accumulator of a freed array starts at zero.
                let b = self.ct_var(arr)?;
                ct.insert(arr.clone(), b.var.clone());
                let rhs = Expr::LinZeros {
                    ty: b.ty.clone(),
                    len: len.clone(),
                };
                Self::emit_lin(out, vec![b], rhs);
            }
            Expr::Lit { .. }
            | Expr::Const { .. }
            | Expr::Tup(_)
            | Expr::Prim { .. }
            | Expr::Int(_)
            | Expr::Bool(_)
            | Expr::Inj { .. }
            | Expr::Index { .. }
            | Expr::Len(_)
            | Expr::Fill { .. }
            | Expr::Set { .. }
            | Expr::Push { .. }
            | Expr::Pop { .. } => {
                return Err(self.err("transposing a non-linear expression in a linear position"));
            }
        }
        Ok(ct)
    }

    /// TIndex: the element's cotangent is accumulated in place into the
    /// array's current accumulator, which the result replaces.
    fn t_index(
        &mut self,
        arr: &Var,
        idx: &Var,
        cts: Vec<Var>,
        out: &mut Vec<Stmt>,
    ) -> Result<(), PassError> {
        let c = cts
            .into_iter()
            .next()
            .ok_or_else(|| self.err("array read without a cotangent"))?;
        let Some(a) = self.acc.remove(arr) else {
            return Err(self.err(&format!(
                "linear array `{arr}` is read in place but has no accumulator (it is neither a parameter nor consumed later)"
            )));
        };
        let b = self.ct_var(arr)?;
        self.acc.insert(arr.clone(), b.var.clone());
        let rhs = Expr::LinAccum {
            arr: a,
            idx: idx.clone(),
            val: c,
        };
        Self::emit_lin(out, vec![b], rhs);
        Ok(())
    }

    /// The cotangent `c` of an array written at `idx` (the first of
    /// `cts`) and the cotangent of the value written, `c[idx]`, read in
    /// place.
    fn read_slot(
        &mut self,
        val: &Var,
        idx: &Var,
        cts: Vec<Var>,
        out: &mut Vec<Stmt>,
    ) -> Result<(Var, Binder), PassError> {
        let c = cts
            .into_iter()
            .next()
            .ok_or_else(|| self.err("array write without a cotangent"))?;
        let cv = self.ct_var(val)?;
        let rhs = Expr::LinIndex {
            arr: c.clone(),
            idx: idx.clone(),
        };
        Self::emit_lin(out, vec![cv.clone()], rhs);
        Ok((c, cv))
    }

    /// TAccum: the value's cotangent is the array's cotangent at the
    /// index, read in place; the array's is the whole.
    fn t_accum(
        &mut self,
        arr: &Var,
        idx: &Var,
        val: &Var,
        cts: Vec<Var>,
        out: &mut Vec<Stmt>,
    ) -> Result<Cts, PassError> {
        let (c, cv) = self.read_slot(val, idx, cts, out)?;
        let mut ct = Cts::default();
        ct.insert(val.clone(), cv.var);
        ct.insert(arr.clone(), c);
        Ok(ct)
    }

    /// TSet: the value's cotangent is the array's cotangent at the index,
    /// taken out of it (`v̄ = ā[i]; ā[i] = 0`): the overwritten element
    /// contributed nothing after the write.
    fn t_set(
        &mut self,
        arr: &Var,
        idx: &Var,
        val: &Var,
        cts: Vec<Var>,
        out: &mut Vec<Stmt>,
    ) -> Result<Cts, PassError> {
        let (c, cv) = self.read_slot(val, idx, cts, out)?;
        let z = self.ct_var(val)?;
        let zt = z.ty.clone();
        Self::emit_lin(out, vec![z.clone()], Expr::LinZero(zt));
        let ca = self.ct_var(arr)?;
        let rhs = Expr::LinSet {
            arr: c,
            idx: idx.clone(),
            val: z.var,
        };
        Self::emit_lin(out, vec![ca.clone()], rhs);
        let mut ct = Cts::default();
        ct.insert(val.clone(), cv.var);
        ct.insert(arr.clone(), ca.var);
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
            .map(|v| match self.take_ct(&mut ct, v) {
                Some(c) => Ok(c),
                None if self.ty(v)?.is_linear_array() => Err(self.err(&format!(
                    "linear array `{v}` is consumed on one path only; it has no zero"
                ))),
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

    /// TCase. Accumulators of arrays the arms read in place are threaded
    /// through: every arm takes the current one and returns it updated.
    fn case(
        &mut self,
        scrut: &Var,
        arms: &[Arm],
        cts: Vec<Var>,
        out: &mut Vec<Stmt>,
    ) -> Result<Cts, PassError> {
        let mut reads: Vec<Var> = Vec::new();
        let mut threads: Vec<Var> = Vec::new();
        for a in arms {
            let free = free_vars(&a.body).lin;
            crate::visit::for_each_consumed_in(&a.body, &self.borrowed_of(), &mut |v| {
                if free.contains(v) && !reads.contains(v) {
                    reads.push(v.clone());
                }
            });
            for v in self.threaded(&a.body) {
                if !threads.contains(&v) {
                    threads.push(v);
                }
            }
        }
        let inputs = self.take_accumulators(&threads);
        let mut new_arms = Vec::new();
        for a in arms {
            let mut body = Vec::new();
            let saved = self.acc.clone();
            self.acc.extend(inputs.iter().cloned());
            let ct = self.expr(&a.body, cts.clone(), &mut body)?;
            let mut rets = self.cotangents_or_zero(&reads, ct, &mut body)?;
            rets.extend(self.final_accumulators(&threads)?);
            self.acc = saved;
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
        binders.extend(self.rebind_accumulators(&threads)?);
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

    /// Removes and returns the accumulators of `arrays`, to be threaded
    /// into an arm or a loop.
    fn take_accumulators(&mut self, arrays: &[Var]) -> Vec<(Var, Var)> {
        arrays
            .iter()
            .filter_map(|v| Some((v.clone(), self.acc.remove(v)?)))
            .collect()
    }

    /// The accumulators of `arrays` at the end of a transposed arm or body.
    fn final_accumulators(&mut self, arrays: &[Var]) -> Result<Vec<Var>, PassError> {
        arrays
            .iter()
            .map(|v| {
                self.acc
                    .remove(v)
                    .ok_or_else(|| self.err(&format!("accumulator of `{v}` consumed inside")))
            })
            .collect()
    }

    /// Fresh accumulators for `arrays`, bound by a transposed case or
    /// loop.
    fn rebind_accumulators(&mut self, arrays: &[Var]) -> Result<Vec<Binder>, PassError> {
        arrays
            .iter()
            .map(|v| {
                let b = self.ct_var(v)?;
                self.acc.insert(v.clone(), b.var.clone());
                Ok(b)
            })
            .collect()
    }

    /// TLoop. Accumulators of outer arrays the body reads in place are
    /// carried as extra state of the reversed loop.
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
        let threads = self.threaded(&l.body);
        let mut inner = Vec::new();
        for (v, a0) in self.take_accumulators(&threads) {
            let c = self.ct_var(&v)?;
            inner.push((v, c.var.clone()));
            carry.push((c, a0));
        }
        let outer_acc = self.acc.clone();
        self.acc.extend(inner);
        let mut body = Vec::new();
        let ct = self.expr(
            &l.body,
            carry[..state.len()]
                .iter()
                .map(|(c, _)| c.var.clone())
                .collect(),
            &mut body,
        )?;
        let mut rets = self.cotangents_or_zero(&state, ct, &mut body)?;
        rets.extend(self.final_accumulators(&threads)?);
        self.acc = outer_acc;
        let mut ct = Cts::default();
        let mut binders = Vec::new();
        for (_, v) in &l.lin {
            let b = self.ct_var(v)?;
            ct.insert(v.clone(), b.var.clone());
            binders.push(b);
        }
        binders.extend(self.rebind_accumulators(&threads)?);
        // Reals' cotangents that are all zero on entry stay zero through a
        // body linear in them, which then adds zeros to the accumulators:
        // the reversed loop is skipped (invariant 12).
        let zero_skip = l.lin.iter().all(|(b, _)| matches!(b.ty, Ty::Real(_)));
        Self::emit_lin(
            out,
            binders,
            Expr::Loop(Box::new(Loop {
                iter,
                nl: vec![],
                lin: carry,
                collect: vec![],
                zero_skip: zero_skip && !l.lin.is_empty(),
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
    drop_unused_where(f, &|v: &Var| used.contains(v));
}

/// [`drop_unused`], told which variables `f`'s body reads (by a caller that
/// has counted them already).
pub fn drop_unused_where(f: &mut Func, used: &impl Fn(&Var) -> bool) {
    let dropper = Stmt::drop_nl;
    // An array may go unread (invariant 11 of `check`): no drop.
    let params: Vec<Stmt> = f
        .nl_params
        .iter()
        .filter(|b| !used(&b.var) && !matches!(b.ty, Ty::Array(..)))
        .map(|b| dropper(&b.var))
        .collect();
    fix_expr(&mut f.body, used, &dropper);
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

fn fix_expr(e: &mut Expr, used: &impl Fn(&Var) -> bool, dropper: &impl Fn(&Var) -> Stmt) {
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
                                .filter(|b| !used(&b.var) && !matches!(b.ty, Ty::Array(..)))
                                .map(|b| b.var.clone()),
                        );
                    }
                    Stmt::Unpack { vars, .. } => {
                        unused.extend(
                            vars.iter()
                                .filter(|b| !used(&b.var) && !matches!(b.ty, Ty::Array(..)))
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
                    .filter(|b| !used(&b.var))
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
                .binders()
                .into_iter()
                .chain(l.nl.iter().map(|(b, _)| b))
                .filter(|b| !used(&b.var))
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
        | Expr::Dup(_)
        | Expr::Index { .. }
        | Expr::Len(_)
        | Expr::LinIndex { .. }
        | Expr::LinAccum { .. }
        | Expr::Fill { .. }
        | Expr::Set { .. }
        | Expr::LinZeros { .. }
        | Expr::LinSet { .. }
        | Expr::LinFree { .. }
        | Expr::Push { .. }
        | Expr::Pop { .. }
        | Expr::LinPush { .. }
        | Expr::LinPop { .. } => {}
    }
}
