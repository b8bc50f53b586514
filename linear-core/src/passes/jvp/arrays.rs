//! J's rules for arrays (invariant 11 of [`crate::check`]).
//!
//! * JIndex: `index(a, i)` has tangent `lindex(ȧ, i)`, read in place.
//! * JFill: `fill(n, c)` of a constant `c` has tangent `lzeros(n)`: a
//!   fresh array's tangent is a fresh buffer. A fill with a value `v` that
//!   may be active writes `v̇` into each slot of that buffer, in a loop
//!   that splits `v̇` once per iteration (`dup`), so T sums the slots.
//! * JSet: `set(a, i, x)` has tangent `lset(ȧ, i, ẋ)`, which consumes `ȧ`
//!   as `set` consumes `a`: one buffer per array, written in place.
//! * JFree: an owned array (bound by a `let`, a loop or a case in the
//!   function, not a parameter) whose tangent nothing consumed by its last
//!   use gets `lfree(ȧ, len(a))` right after that use: a local array that
//!   is read and then dropped. Its transpose creates the accumulator the
//!   reads add into.
//! * JDrop on arrays: `drop(a)` of an array with a tangent (L's form of
//!   `lfree`, met when J differentiates erased code: second order) drops
//!   `a` and frees `ȧ` if `a` is owned, `lfree(ȧ, len(a))`; a parameter's
//!   tangent is its caller's and stays untouched. A linear array is never
//!   dropped.
//! * JCase on arrays: every arm of a case starts from the same owned
//!   arrays. An outer array one arm writes (or returns) is consumed by
//!   every arm: an arm that leaves it alone frees its tangent, so the arms
//!   consume the same linear variables, as Fig. 3's case rule requires.
//!
//! * JApp on arrays: an array passed to a call lends it its tangent, read
//!   in place (the callee borrows it), not consumed; a constant array (an
//!   extern's constant parameter) has none.
//!
//! Owned arrays are kept in [`Jvp::arrays`] like parameters (read in place,
//! never split) and in [`Jvp::owned`] until their tangent is consumed: by
//! `lset`, by a return (a result, a loop's next state) or by `lfree`.

use super::{drop_stmt, Jvp, Sigma};
use crate::ir::{Arm, Binder, Expr, Stmt, Ty, Var};
use crate::passes::PassError;

impl Jvp<'_> {
    /// JApp's tangents of the arguments `nl` of a call of `func`: none for
    /// an extern's constant parameter; an array's tangent lent in place,
    /// not consumed (the callee borrows it: J's output never consumes a
    /// parameter's tangent array, and see [`crate::ir::Extern`]), once per
    /// call (invariant 11 of [`crate::check`]); one tangent per
    /// occurrence of every other argument (`dup`s where one occurs more
    /// than once).
    pub(super) fn app_tangents(
        &mut self,
        out: &mut Vec<Stmt>,
        func: &Var,
        nl: &[Var],
        sigma: &mut Sigma,
    ) -> Result<Vec<Var>, PassError> {
        let constant = self.constants.get(func).cloned().unwrap_or_default();
        let lent = |j: &Self, k: usize| !constant.contains(&k) && j.arrays.contains_key(&nl[k]);
        let rest: Vec<Var> = (0..nl.len())
            .filter(|&k| !constant.contains(&k) && !lent(self, k))
            .map(|k| nl[k].clone())
            .collect();
        let mut ds = self.occurrences(out, &rest, sigma)?.into_iter();
        let mut all = Vec::with_capacity(nl.len());
        for (k, v) in nl.iter().enumerate() {
            if constant.contains(&k) {
                continue;
            }
            if lent(self, k) {
                if nl[..k]
                    .iter()
                    .enumerate()
                    .any(|(j, w)| w == v && lent(self, j))
                {
                    return Err(self.err(&format!(
                        "array `{v}` is passed twice to `{func}`, which borrows each array's tangent once (lowering passes it once)"
                    )));
                }
                all.push(self.arrays[v].clone());
            } else {
                all.push(
                    ds.next()
                        .ok_or_else(|| self.err("a call's argument has no tangent"))?,
                );
            }
        }
        Ok(all)
    }

    /// JDrop: `drop(e)`, with the tangents of the arrays `e` names freed
    /// or left alone (see the module doc) rather than dropped.
    pub(super) fn drop(&mut self, inner: &Expr, sigma: Sigma) -> Result<Expr, PassError> {
        let Expr::Ret { nl, lin } = inner else {
            return Ok(Expr::Drop(Box::new(self.expr(inner, sigma)?)));
        };
        if !lin.is_empty() || !nl.iter().any(|v| self.arrays.contains_key(v)) {
            return Ok(Expr::Drop(Box::new(self.expr(inner, sigma)?)));
        }
        let (arrays, rest): (Vec<Var>, Vec<Var>) = nl
            .iter()
            .cloned()
            .partition(|v| self.arrays.contains_key(v));
        let mut out = Vec::new();
        for a in arrays {
            out.push(Stmt::drop_nl(&a));
            if !self.owned.remove(&a) {
                continue;
            }
            if let Some(da) = self.arrays.remove(&a) {
                self.lfree(a, da, &mut out);
            }
        }
        if !rest.is_empty() {
            let dropped = Expr::Drop(Box::new(Expr::Ret {
                nl: rest,
                lin: vec![],
            }));
            out.push(Stmt::Let {
                nl: vec![],
                lin: vec![],
                rhs: self.expr(&dropped, sigma)?,
            });
        }
        Ok(Expr::block(
            out,
            Expr::Ret {
                nl: vec![],
                lin: vec![],
            },
        ))
    }

    /// JIndex: `index(a, i)` with tangent `lindex(ȧ, i)`, read in place;
    /// the index's tangent is dropped. An array without a linear tangent
    /// (of integers) gives a zero tangent.
    pub(super) fn index(
        &mut self,
        e: &Expr,
        arr: &Var,
        idx: &Var,
        mut sigma: Sigma,
    ) -> Result<Expr, PassError> {
        let Ty::Array(elem, _) = self.ty(arr)? else {
            return Err(self.err(&format!("`index` of `{arr}`, which is not an array")));
        };
        let mut out = Vec::new();
        let mut read = vec![idx.clone()];
        let da = self.arrays.get(arr).cloned();
        if da.is_none() && !self.data.contains(arr) {
            read.push(arr.clone());
        }
        let ds = self.occurrences(&mut out, &read, &mut sigma)?;
        out.extend(ds.into_iter().map(drop_stmt));
        let Some(da) = da else {
            return Ok(Expr::block(out, self.with_zero_tangent(e.clone(), *elem)));
        };
        let (y, dy) = (self.fresh.var("x"), self.fresh.var("dx"));
        out.push(Stmt::Let {
            nl: vec![Binder::new(y.clone(), (*elem).clone())],
            lin: vec![],
            rhs: e.clone(),
        });
        out.push(Stmt::Let {
            nl: vec![],
            lin: vec![Binder::new(dy.clone(), elem.tangent())],
            rhs: Expr::LinIndex {
                arr: da,
                idx: idx.clone(),
            },
        });
        Ok(Expr::block(
            out,
            Expr::Ret {
                nl: vec![y],
                lin: vec![dy],
            },
        ))
    }

    /// JFill: a fresh array of a constant has a fresh buffer of zeros as
    /// its tangent.
    pub(super) fn fill(
        &mut self,
        e: &Expr,
        len: &Var,
        val: &Var,
        size: Option<u64>,
        mut sigma: Sigma,
    ) -> Result<Expr, PassError> {
        let elem = self.ty(val)?;
        let ty = Ty::Array(Box::new(elem.clone()), size);
        let mut out = Vec::new();
        let mut ds = self
            .occurrences(&mut out, &[len.clone(), val.clone()], &mut sigma)?
            .into_iter();
        out.extend(ds.next().map(drop_stmt));
        let dv = ds
            .next()
            .ok_or_else(|| self.err("`fill` without a value tangent"))?;
        if !ty.has_tangent_array() {
            out.push(drop_stmt(dv));
            return Ok(Expr::block(out, self.with_zero_tangent(e.clone(), ty)));
        }
        let (y, dy) = (self.fresh.var("a"), self.fresh.var("da"));
        out.push(Stmt::Let {
            nl: vec![Binder::new(y.clone(), ty.clone())],
            lin: vec![],
            rhs: e.clone(),
        });
        let dty = ty.tangent();
        let zeros = Expr::LinZeros {
            ty: dty.clone(),
            len: len.clone(),
        };
        let rhs = if self.constant.contains(val) {
            out.push(drop_stmt(dv));
            zeros
        } else {
            self.fill_tangent(zeros, len, dv, &dty, &mut out)
        };
        out.push(Stmt::Let {
            nl: vec![],
            lin: vec![Binder::new(dy.clone(), dty)],
            rhs,
        });
        Ok(Expr::block(
            out,
            Expr::Ret {
                nl: vec![y],
                lin: vec![dy],
            },
        ))
    }

    /// `ȧ = zeros; for k in 0..n { ȧ = lset(ȧ, k, v̇) }`, `v̇` split per
    /// iteration and its last copy dropped: the tangent of `fill(n, v)`.
    fn fill_tangent(
        &mut self,
        zeros: Expr,
        len: &Var,
        dv: Var,
        dty: &Ty,
        out: &mut Vec<Stmt>,
    ) -> Expr {
        let Ty::Array(et, _) = dty else { return zeros };
        let et = (**et).clone();
        let (z, dz, zero) = (
            self.fresh.var("da"),
            self.fresh.var("k"),
            self.fresh.var("z"),
        );
        out.push(Stmt::Let {
            nl: vec![],
            lin: vec![Binder::new(z.clone(), dty.clone())],
            rhs: zeros,
        });
        out.push(Stmt::Let {
            nl: vec![Binder::new(zero.clone(), Ty::Int)],
            lin: vec![],
            rhs: Expr::Int(0),
        });
        let (acc, d, d1, d2, acc2) = (
            self.fresh.var("da"),
            self.fresh.var("dv"),
            self.fresh.var("dv"),
            self.fresh.var("dv"),
            self.fresh.var("da"),
        );
        let body = Expr::block(
            vec![
                Stmt::Let {
                    nl: vec![],
                    lin: vec![
                        Binder::new(d1.clone(), et.clone()),
                        Binder::new(d2.clone(), et.clone()),
                    ],
                    rhs: Expr::Dup(d.clone()),
                },
                Stmt::Let {
                    nl: vec![],
                    lin: vec![Binder::new(acc2.clone(), dty.clone())],
                    rhs: Expr::LinSet {
                        arr: acc.clone(),
                        idx: dz.clone(),
                        val: d1,
                    },
                },
            ],
            Expr::Ret {
                nl: vec![],
                lin: vec![acc2, d2],
            },
        );
        let (filled, rest) = (self.fresh.var("da"), self.fresh.var("dv"));
        out.push(Stmt::Let {
            nl: vec![],
            lin: vec![
                Binder::new(filled.clone(), dty.clone()),
                Binder::new(rest.clone(), et.clone()),
            ],
            rhs: Expr::Loop(Box::new(crate::ir::Loop {
                iter: crate::ir::Iter::Range {
                    index: Binder::new(dz, Ty::Int),
                    lo: zero,
                    hi: len.clone(),
                    step: None,
                    rev: false,
                    trip: None,
                },
                nl: vec![],
                lin: vec![(Binder::new(acc, dty.clone()), z), (Binder::new(d, et), dv)],
                collect: vec![],
                zero_skip: false,
                body,
            })),
        });
        out.push(drop_stmt(rest));
        Expr::lin_var(filled)
    }

    /// JSet and JPush: the write's tangent writes the value's tangent
    /// into the array's (`lset` at `idx`, or `lpush` without one),
    /// consuming it.
    pub(super) fn set(
        &mut self,
        e: &Expr,
        arr: &Var,
        idx: Option<&Var>,
        val: &Var,
        mut sigma: Sigma,
    ) -> Result<Expr, PassError> {
        let ty = self.ty(arr)?;
        let mut out = Vec::new();
        let read: Vec<Var> = idx.into_iter().chain([val]).cloned().collect();
        if !ty.has_tangent_array() {
            let mut all = read;
            all.push(arr.clone());
            let ds = self.occurrences(&mut out, &all, &mut sigma)?;
            out.extend(ds.into_iter().map(drop_stmt));
            return Ok(Expr::block(out, self.with_zero_tangent(e.clone(), ty)));
        }
        let da = self.take_owned(arr)?;
        let mut ds = self.occurrences(&mut out, &read, &mut sigma)?.into_iter();
        if idx.is_some() {
            out.extend(ds.next().map(drop_stmt));
        }
        let dx = ds
            .next()
            .ok_or_else(|| self.err("a write without a value tangent"))?;
        let (y, dy) = (self.fresh.var("a"), self.fresh.var("da"));
        out.push(Stmt::Let {
            nl: vec![Binder::new(y.clone(), ty.clone())],
            lin: vec![],
            rhs: e.clone(),
        });
        out.push(Stmt::Let {
            nl: vec![],
            lin: vec![Binder::new(dy.clone(), ty.tangent())],
            rhs: match idx {
                Some(idx) => Expr::LinSet {
                    arr: da,
                    idx: idx.clone(),
                    val: dx,
                },
                None => Expr::LinPush { arr: da, val: dx },
            },
        });
        Ok(Expr::block(
            out,
            Expr::Ret {
                nl: vec![y],
                lin: vec![dy],
            },
        ))
    }

    /// JPop: `pop(a)` has tangents `lpop(ȧ)`, the tangent array without
    /// its last element and that element, consuming `ȧ`; an array without
    /// a linear tangent (of integers) gives zero tangents.
    pub(super) fn pop(&mut self, e: &Expr, arr: &Var, mut sigma: Sigma) -> Result<Expr, PassError> {
        let ty = self.ty(arr)?;
        let Ty::Array(elem, _) = &ty else {
            return Err(self.err(&format!("`pop` of `{arr}`, which is not an array")));
        };
        let elem = (**elem).clone();
        let mut out = Vec::new();
        let da = if ty.has_tangent_array() {
            Some(self.take_owned(arr)?)
        } else {
            let ds = self.occurrences(&mut out, std::slice::from_ref(arr), &mut sigma)?;
            out.extend(ds.into_iter().map(drop_stmt));
            None
        };
        let (y, x) = (self.fresh.var("a"), self.fresh.var("x"));
        let (dy, dx) = (self.fresh.var("da"), self.fresh.var("dx"));
        out.push(Stmt::Let {
            nl: vec![
                Binder::new(y.clone(), ty.clone()),
                Binder::new(x.clone(), elem.clone()),
            ],
            lin: vec![],
            rhs: e.clone(),
        });
        let tangents = [(dy.clone(), ty.tangent()), (dx.clone(), elem.tangent())];
        match da {
            Some(da) => out.push(Stmt::Let {
                nl: vec![],
                lin: tangents
                    .into_iter()
                    .map(|(d, t)| Binder::new(d, t))
                    .collect(),
                rhs: Expr::LinPop { arr: da },
            }),
            None => out.extend(tangents.into_iter().map(|(d, t)| Stmt::Let {
                nl: vec![],
                lin: vec![Binder::new(d, t.clone())],
                rhs: Expr::LinZero(t),
            })),
        }
        Ok(Expr::block(
            out,
            Expr::Ret {
                nl: vec![y, x],
                lin: vec![dy, dx],
            },
        ))
    }

    /// The owned arrays and their tangents, before a case: every arm
    /// starts from them ([`Jvp::own_again`]).
    pub(super) fn owned_arrays(&self) -> Vec<(Var, Var)> {
        self.owned
            .iter()
            .filter_map(|a| Some((a.clone(), self.arrays.get(a)?.clone())))
            .collect()
    }

    /// Makes the arrays of `outer` that `which` selects owned again, with
    /// their tangents.
    pub(super) fn own_again(&mut self, outer: &[(Var, Var)], which: impl Fn(&Var) -> bool) {
        for (y, dy) in outer.iter().filter(|(y, _)| which(y)) {
            self.owned.insert(y.clone());
            self.arrays.insert(y.clone(), dy.clone());
        }
    }

    /// JFree for the arms of a case (`new_arms`, J'd from `arms`), given
    /// the outer owned arrays each arm consumed: an arm that leaves unread
    /// an array another arm writes or returns frees it, so every arm
    /// consumes the same linear variables. After the case, the outer
    /// arrays no arm consumed stay owned and the others are gone (the
    /// case's results are owned in their place).
    pub(super) fn settle_case_arrays(
        &mut self,
        new_arms: &mut [Arm],
        arms: &[Arm],
        consumed: &[Vec<Var>],
        outer: &[(Var, Var)],
    ) -> Result<(), PassError> {
        let any: Vec<Var> = outer
            .iter()
            .filter(|(y, _)| consumed.iter().any(|c| c.contains(y)))
            .map(|(y, _)| y.clone())
            .collect();
        for ((arm, src), taken) in new_arms.iter_mut().zip(arms).zip(consumed) {
            let left: Vec<Var> = any.iter().filter(|y| !taken.contains(y)).cloned().collect();
            self.own_again(outer, |y| left.contains(y));
            let body = std::mem::replace(
                &mut arm.body,
                Expr::Ret {
                    nl: vec![],
                    lin: vec![],
                },
            );
            arm.body = self.free_after_tail(&src.body, body, left)?;
        }
        for (y, _) in outer {
            self.owned.remove(y);
            self.arrays.remove(y);
        }
        self.own_again(outer, |y| !any.contains(y));
        Ok(())
    }

    /// The tangent of owned array `a`, consumed here.
    pub(super) fn take_owned(&mut self, a: &Var) -> Result<Var, PassError> {
        if !self.owned.remove(a) {
            return Err(self.err(&format!(
                "array `{a}` is consumed, but it is an input or was consumed already; J writes and returns only arrays the function creates"
            )));
        }
        self.arrays
            .remove(a)
            .ok_or_else(|| self.err(&format!("no tangent for array `{a}`")))
    }

    /// Registers `b`, bound to a value whose tangent is `d`: an owned
    /// array if it is one (read in place, consumed once), else in Σ.
    pub(super) fn bind_tangent(&mut self, sigma: &mut Sigma, b: &Binder, d: Var) {
        self.types.insert(b.var.clone(), b.ty.clone());
        if b.ty.has_tangent_array() {
            self.arrays.insert(b.var.clone(), d);
            self.owned.insert(b.var.clone());
        } else {
            sigma.insert(b.var.clone(), d);
        }
    }

    /// JFree for the owned arrays of `scope` that are still unconsumed and
    /// that nothing after this point reads (`done`): `lfree(ȧ, len(a))`.
    pub(super) fn free_done(
        &mut self,
        scope: &mut Vec<Var>,
        done: impl Fn(&Var) -> bool,
        out: &mut Vec<Stmt>,
    ) {
        let mut keep = Vec::new();
        for a in std::mem::take(scope) {
            if !self.owned.contains(&a) {
                continue;
            }
            if !done(&a) {
                keep.push(a);
                continue;
            }
            self.owned.remove(&a);
            if let Some(da) = self.arrays.remove(&a) {
                self.lfree(a, da, out);
            }
        }
        *scope = keep;
    }

    /// `lfree(ȧ, len(a))`: the end of owned array `a`'s tangent `ȧ`.
    fn lfree(&mut self, a: Var, da: Var, out: &mut Vec<Stmt>) {
        let n = self.fresh.var("n");
        out.push(Stmt::Let {
            nl: vec![Binder::new(n.clone(), Ty::Int)],
            lin: vec![],
            rhs: Expr::Len(a),
        });
        out.push(Stmt::Let {
            nl: vec![],
            lin: vec![],
            rhs: Expr::LinFree { arr: da, len: n },
        });
    }

    /// The J'd tail `tail` of a block followed by the frees of the owned
    /// arrays of `scope` it read without consuming: its results are bound,
    /// the arrays freed, the results returned.
    pub(super) fn free_after_tail(
        &mut self,
        src: &Expr,
        tail: Expr,
        mut scope: Vec<Var>,
    ) -> Result<Expr, PassError> {
        let mut frees = Vec::new();
        self.free_done(&mut scope, |_| true, &mut frees);
        if frees.is_empty() {
            return Ok(tail);
        }
        let tys = self.result_types(src)?;
        let r: Vec<Binder> = tys
            .iter()
            .map(|t| Binder::new(self.fresh.var("r"), t.clone()))
            .collect();
        let dr: Vec<Binder> = tys
            .iter()
            .map(|t| Binder::new(self.fresh.var("dr"), t.tangent()))
            .collect();
        let ret = Expr::Ret {
            nl: r.iter().map(|b| b.var.clone()).collect(),
            lin: dr.iter().map(|b| b.var.clone()).collect(),
        };
        let mut stmts = vec![Stmt::Let {
            nl: r,
            lin: dr,
            rhs: tail,
        }];
        stmts.extend(frees);
        Ok(Expr::block(stmts, ret))
    }

    /// The result types of source expression `e`, once J has seen the
    /// variables it binds.
    fn result_types(&self, e: &Expr) -> Result<Vec<Ty>, PassError> {
        if let Some(ts) = crate::passes::leaf_types(&self.types, self.func, e)? {
            return Ok(ts);
        }
        match e {
            Expr::Block { tail, .. } => self.result_types(tail),
            Expr::App { func, .. } => self
                .rets
                .get(func)
                .cloned()
                .ok_or_else(|| self.err(&format!("call to unknown function `{func}`"))),
            Expr::Case { arms, .. } => match arms.first() {
                Some(a) => self.result_types(&a.body),
                None => Ok(vec![]),
            },
            Expr::Loop(l) => Ok(l.result_types().0),
            Expr::Drop(_) => Ok(vec![]),
            // Leaves (handled above) and linear forms.
            Expr::Ret { .. }
            | Expr::Lit { .. }
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
            | Expr::Pop { .. }
            | Expr::LinPush { .. }
            | Expr::LinPop { .. }
            | Expr::LinZero(_)
            | Expr::LinTup(_)
            | Expr::LinAdd(..)
            | Expr::LinNeg(_)
            | Expr::LinScale(..)
            | Expr::Dup(_)
            | Expr::LinIndex { .. }
            | Expr::LinAccum { .. }
            | Expr::LinZeros { .. }
            | Expr::LinSet { .. }
            | Expr::LinFree { .. } => Err(self.err("J applies to non-linear expressions only")),
        }
    }
}
