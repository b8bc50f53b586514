//! Flat arrays for the records of loops inside loops or branches, whose
//! lists would otherwise be held by another record: one flat array per
//! record type, each such list a segment `(start, end)` of it (see the
//! parent module's doc). [`super::records_as_arrays`] uses them so that J
//! can differentiate a VJP's records (`order = 2`); [`flat_tapes`] so
//! that generated code keeps one recycled buffer per record type instead
//! of a `Vec` per outer iteration.
//!
//! The rules, shared by both: a loop that appends to a flat array,
//! itself or through a loop in its body, carries it ([`super::Records`]'s
//! `loop_`); a branch whose arms append to it returns it from every arm
//! ([`Records::case`]); a statement that appends is spliced into its
//! block, so that the array's new value stays in scope; a loop over a
//! segment reads `index(flat, start + k)` ([`Records::segment`],
//! [`Records::position`]).

use super::{holds_list, Records};
use crate::ir::{Arm, Binder, Expr, Func, Iter, Prim, Program, Stmt, Ty, Var};
use crate::passes::PassError;
use crate::visit::{any_subexpr, Fresh};

/// The first-order pipeline's forward pass, residual and transposed
/// residual of `f` (`f.jvp.nl`, `f.jvp.lin`, `f.jvp.lin.t` in `p`, T's
/// output) with the records of loops inside loops or branches in flat
/// arrays (the lists other records hold: `flattened`), as for
/// [`super::records_as_arrays`], while every other list stays a list. The
/// forward pass appends to them and adds them to its tape; the residuals
/// unpack them from it and read segments of them. In generated Rust, one
/// growing buffer per record type replaces one `Vec` per outer iteration
/// (gmm made six per point). Lists of a known small length, kept inline
/// in their records, are not flattened. `None` where there is nothing to
/// flatten, or the functions are not shaped as U and T make them.
pub fn flat_tapes(p: &Program, f: &str) -> Result<Option<[Func; 3]>, PassError> {
    let find = |suffix: &str| p.func(&format!("{f}.jvp.{suffix}"));
    let (Some(nl), Some(lin), Some(lin_t)) = (find("nl"), find("lin"), find("lin.t")) else {
        return Ok(None);
    };
    // A call of a function of this program returns its tape as a value
    // whose type this rewriting would change under it (the macro's
    // callees are external: their tapes are opaque).
    let calls_in_program = any_subexpr(&nl.body, &mut |e| {
        let Expr::Block { stmts, .. } = e else {
            return false;
        };
        stmts.iter().any(|s| match s {
            Stmt::Let {
                nl,
                rhs: Expr::App { .. },
                ..
            } => nl.iter().any(|b| holds_list(&b.ty)),
            Stmt::Let { .. } | Stmt::Unpack { .. } | Stmt::LinUnpack { .. } => false,
        })
    });
    if calls_in_program {
        return Ok(None);
    }
    let mut flat: Vec<Ty> = flattened(&nl.body)
        .into_iter()
        .filter(|t| !inline_somewhere(&nl.body, t))
        .collect();
    // A flat array starts empty, from a value of its element type: not
    // one holding a list that stays a list, or a callee's tape.
    loop {
        let shapes = Shapes(&flat);
        let keep: Vec<Ty> = flat
            .iter()
            .filter(|t| !shapes.holds_list_or_tape(t))
            .cloned()
            .collect();
        if keep.len() == flat.len() {
            break;
        }
        flat = keep;
    }
    if flat.is_empty() {
        return Ok(None);
    }
    let Some(nl) = flat_forward(nl, &flat)? else {
        return Ok(None);
    };
    let tape = match nl.nl_rets.last() {
        Some(t) => t.clone(),
        None => return Ok(None),
    };
    let (Some(lin), Some(lin_t)) = (
        flat_residual(lin, &flat, &tape)?,
        flat_residual(lin_t, &flat, &tape)?,
    ) else {
        return Ok(None);
    };
    Ok(Some([nl, lin, lin_t]))
}

/// The element types kept in flat arrays, for what their records hold.
struct Shapes<'a>(&'a [Ty]);

impl Shapes<'_> {
    /// Whether a record of type `t` holds a list other than a segment, or
    /// a callee's tape.
    fn holds_list_or_tape(&self, t: &Ty) -> bool {
        match t {
            // A segment, whose elements are checked as a flat array's.
            Ty::List(e, _) => !self.0.contains(e),
            Ty::Tape(_) => true,
            Ty::Tuple(ts) | Ty::Sum(ts) => ts.iter().any(|t| self.holds_list_or_tape(t)),
            Ty::Array(e, _) => self.holds_list_or_tape(e),
            Ty::Real(_) | Ty::Int | Ty::Bool => false,
        }
    }
}

/// Whether a loop in `e` collects `elem`s into a list generated Rust
/// keeps inline (a known, small length: `codegen::inline_len`), which
/// needs no flat array.
fn inline_somewhere(e: &Expr, elem: &Ty) -> bool {
    any_subexpr(e, &mut |e| {
        let Expr::Loop(l) = e else { return false };
        let trip = match &l.iter {
            Iter::Range { trip, .. } => *trip,
            Iter::Each { .. } | Iter::Zip { .. } | Iter::While { .. } | Iter::Replay { .. } => None,
        };
        l.collect.contains(elem)
            && crate::codegen::inline_len(&Ty::List(Box::new(elem.clone()), trip)).is_some()
    })
}

/// The forward pass with flat arrays for the records of `flat`'s types,
/// added to its tape: the tuple it returns last, built by a `let` of its
/// body's top level after every loop. `None` if there is no such tuple.
fn flat_forward(f: &Func, flat: &[Ty]) -> Result<Option<Func>, PassError> {
    let mut fresh = Fresh::for_func(f);
    let mut r = Records {
        fresh: &mut fresh,
        name: f.name.clone(),
        types: crate::visit::binder_types(f),
        flats: flat.iter().map(|t| (t.clone(), f.name.clone())).collect(),
        keep: true,
    };
    let mut pre = Vec::new();
    r.start_flats(&mut pre)?;
    let Expr::Block { stmts, tail } = r.expr(f.body.clone())? else {
        return Ok(None);
    };
    let Expr::Ret { nl: rets, .. } = tail.as_ref() else {
        return Ok(None);
    };
    let Some(tape) = rets.last() else {
        return Ok(None);
    };
    let mut stmts = stmts;
    let Some(at) = stmts.iter().position(|s| {
        matches!(s, Stmt::Let { nl, lin, rhs: Expr::Tup(_) } if lin.is_empty() && nl.len() == 1 && &nl[0].var == tape)
    }) else {
        return Ok(None);
    };
    // The flat arrays as the body leaves them must be bound before the
    // tape is made.
    let late = stmts[at..].iter().any(|s| {
        let mut bound = false;
        crate::visit::stmt_binds(s, &mut |v, _| bound |= r.flats.iter().any(|(_, c)| c == v));
        bound
    });
    if late {
        return Ok(None);
    }
    let currents: Vec<Var> = r.flats.iter().map(|(_, v)| v.clone()).collect();
    let flat_tys: Vec<Ty> = r
        .flats
        .iter()
        .map(|(t, _)| Ty::Array(Box::new(r.ty(t)), None))
        .collect();
    let Stmt::Let {
        nl,
        rhs: Expr::Tup(vs),
        ..
    } = &mut stmts[at]
    else {
        return Ok(None);
    };
    vs.extend(currents);
    let Ty::Tuple(ts) = &mut nl[0].ty else {
        return Ok(None);
    };
    ts.extend(flat_tys);
    let tape_ty = nl[0].ty.clone();
    let mut out = f.clone();
    for b in out.nl_params.iter_mut().chain(out.lin_params.iter_mut()) {
        b.ty = r.ty(&b.ty);
    }
    for t in out.nl_rets.iter_mut().chain(out.lin_rets.iter_mut()) {
        *t = r.ty(t);
    }
    if let Some(t) = out.nl_rets.last_mut() {
        *t = tape_ty;
    }
    pre.extend(stmts);
    out.body = Expr::block(pre, *tail);
    Ok(Some(out))
}

/// A residual (or its transpose) of the tape `tape` (the forward pass's,
/// with the flat arrays last), reading the flat arrays of `flat`'s types
/// from it: they are unpacked with the rest of the tape, by a statement
/// of its body's top level. `None` if there is no such statement.
fn flat_residual(f: &Func, flat: &[Ty], tape: &Ty) -> Result<Option<Func>, PassError> {
    let [param] = f.nl_params.as_slice() else {
        return Ok(None);
    };
    let mut fresh = Fresh::for_func(f);
    let mut r = Records {
        fresh: &mut fresh,
        name: f.name.clone(),
        types: crate::visit::binder_types(f),
        flats: flat.iter().map(|t| (t.clone(), f.name.clone())).collect(),
        keep: true,
    };
    let Expr::Block { stmts, tail } = f.body.clone() else {
        return Ok(None);
    };
    let Some(at) = stmts
        .iter()
        .position(|s| matches!(s, Stmt::Unpack { tuple, .. } if tuple == &param.var))
    else {
        return Ok(None);
    };
    let mut out_stmts = Vec::new();
    for (k, s) in stmts.into_iter().enumerate() {
        if k == at {
            let Stmt::Unpack { vars, tuple } = s else {
                return Err(r.err("a tape unpacked by no unpack"));
            };
            let mut vars: Vec<Binder> = vars.iter().map(|b| r.binder(b)).collect();
            for j in 0..r.flats.len() {
                let t = Ty::Array(Box::new(r.ty(&r.flats[j].0)), None);
                let v = r.fresh.var("flat");
                vars.push(Binder::new(v.clone(), t));
                r.flats[j].1 = v;
            }
            out_stmts.push(Stmt::Unpack { vars, tuple });
            // Read by the loops over segments, or by none.
            out_stmts.extend(r.flats.iter().map(|(_, v)| Stmt::drop_nl(v)));
        } else {
            r.stmt(s, &mut out_stmts)?;
        }
    }
    let tail = r.expr(*tail)?;
    let mut out = f.clone();
    out.nl_params[0].ty = tape.clone();
    for b in out.lin_params.iter_mut() {
        b.ty = r.ty(&b.ty);
    }
    for t in out.nl_rets.iter_mut().chain(out.lin_rets.iter_mut()) {
        *t = r.ty(t);
    }
    out.body = Expr::block(out_stmts, tail);
    Ok(Some(out))
}

/// The element types of the lists kept as segments of one flat array
/// each: those collected by a loop inside another loop's body or inside
/// a branch, whose lists would be in another record. Not where a loop
/// collecting one is inside a loop collecting the same type, or collects
/// it twice (a segment must be contiguous), nor in a function with a
/// replay, whose rewriting makes loops of its own.
pub(super) fn flattened(body: &Expr) -> Vec<Ty> {
    let mut nested: Vec<Ty> = Vec::new();
    let mut blocked: Vec<Ty> = Vec::new();
    let mut replay = false;
    let collected = |e: &Expr, out: &mut Vec<Ty>| {
        any_subexpr(e, &mut |e| {
            if let Expr::Loop(l) = e {
                out.extend(l.collect.iter().cloned());
            }
            false
        });
    };
    any_subexpr(body, &mut |e| {
        if let Expr::Loop(l) = e {
            replay |= matches!(l.iter, Iter::Replay { .. });
            let mut inner = Vec::new();
            collected(&l.body, &mut inner);
            // Segments must be contiguous.
            for (k, t) in l.collect.iter().enumerate() {
                if inner.contains(t) || l.collect[..k].contains(t) {
                    blocked.push(t.clone());
                }
            }
            nested.extend(inner);
        } else if let Expr::Case { arms, .. } = e {
            for a in arms {
                collected(&a.body, &mut nested);
            }
        }
        false
    });
    if replay {
        return Vec::new();
    }
    let mut out: Vec<Ty> = Vec::new();
    for t in nested {
        if !blocked.contains(&t) && !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// Whether a loop collecting `collect` with body `body` appends to the
/// flat array of `elem`s: it collects them, or a loop in its body does.
fn appends(elem: &Ty, collect: &[Ty], body: &Expr) -> bool {
    collect.contains(elem)
        || any_subexpr(
            body,
            &mut |e| matches!(e, Expr::Loop(l) if l.collect.contains(elem)),
        )
}

/// The type of a segment of a flat array: where it starts and ends.
pub(super) fn segment_ty() -> Ty {
    Ty::Tuple(vec![Ty::Int, Ty::Int])
}

/// The flat arrays a loop appends to, its own records or those of loops
/// in its body, which it carries ([`Records::carried_body`]).
pub(super) struct Carried {
    /// Their positions in [`Records::flats`].
    pub(super) carried: Vec<usize>,
    /// Their values before the loop.
    pub(super) outside: Vec<Var>,
    /// Their binders in the body.
    pub(super) inside: Vec<Binder>,
    /// The body, rewritten with them in scope.
    pub(super) body: Expr,
    /// Their values as the body leaves them.
    pub(super) ends: Vec<Var>,
}

impl Records<'_> {
    /// The loop body `body` of a loop collecting `collect`, rewritten
    /// with the flat arrays it appends to bound to fresh binders, and
    /// those arrays ([`Carried`]).
    pub(super) fn carried_body(
        &mut self,
        collect: &[Ty],
        body: Expr,
    ) -> Result<Carried, PassError> {
        let carried: Vec<usize> = (0..self.flats.len())
            .filter(|&k| appends(&self.flats[k].0, collect, &body))
            .collect();
        let outside: Vec<Var> = carried.iter().map(|&k| self.flats[k].1.clone()).collect();
        let inside: Vec<Binder> = carried
            .iter()
            .map(|&k| {
                let t = Ty::Array(Box::new(self.ty(&self.flats[k].0)), None);
                Binder::new(self.fresh.var("flat"), t)
            })
            .collect();
        for (&k, b) in carried.iter().zip(&inside) {
            self.flats[k].1 = b.var.clone();
        }
        let body = self.expr(body)?;
        let ends: Vec<Var> = carried.iter().map(|&k| self.flats[k].1.clone()).collect();
        for (&k, v) in carried.iter().zip(&outside) {
            self.flats[k].1 = v.clone();
        }
        Ok(Carried {
            carried,
            outside,
            inside,
            body,
            ends,
        })
    }

    /// The segment `(start, len(flat))` of the records a loop appended
    /// to `flat` (its value after the loop), bound in `pre`.
    pub(super) fn segment_after(&mut self, start: Var, flat: &Var, pre: &mut Vec<Stmt>) -> Var {
        let end = self.bind(pre, "end", Ty::Int, Expr::Len(flat.clone()));
        self.bind(pre, "seg", segment_ty(), Expr::Tup(vec![start, end]))
    }

    /// Every flat array, empty, bound in `pre` (the element types first
    /// known, as one may hold a segment).
    pub(super) fn start_flats(&mut self, pre: &mut Vec<Stmt>) -> Result<(), PassError> {
        for k in 0..self.flats.len() {
            let t = self.ty(&self.flats[k].0);
            let zero = self.zero_value(&t, pre)?;
            let len = self.bind(pre, "n", Ty::Int, Expr::Int(0));
            self.flats[k].1 = self.bind(
                pre,
                "flat",
                Ty::Array(Box::new(t), None),
                Expr::Fill {
                    len,
                    val: zero,
                    size: None,
                },
            );
        }
        Ok(())
    }

    /// Where [`Records::flats`] has the flat array of `elem`s.
    pub(super) fn flat(&self, elem: &Ty) -> Option<usize> {
        self.flats.iter().position(|(t, _)| t == elem)
    }

    /// The flat array `list`'s elements are kept in, if they are.
    pub(super) fn flat_of(&self, list: &Var) -> Option<usize> {
        match self.types.get(list) {
            Some(Ty::List(e, _)) => self.flat(e),
            _ => None,
        }
    }

    /// Where the list `list` is in its flat array, if it is a segment of
    /// one: its start and end, unpacked in `pre`, and the flat array.
    pub(super) fn segment(&mut self, list: &Var, pre: &mut Vec<Stmt>) -> Option<(Var, Var, Var)> {
        let k = self.flat_of(list)?;
        let (start, end) = (self.fresh.var("start"), self.fresh.var("end"));
        pre.push(Stmt::Unpack {
            vars: vec![
                Binder::new(start.clone(), Ty::Int),
                Binder::new(end.clone(), Ty::Int),
            ],
            tuple: list.clone(),
        });
        Some((start, end, self.flats[k].1.clone()))
    }

    /// Where the element of a segment `(start, end)` that goes with
    /// `index` of the range `lo..` (by `step`, descending if `desc`) is in
    /// its flat array, bound in `front`: the range's k-th index, `k =
    /// (index - lo) / step`, goes with the segment's k-th element,
    /// `start + k`, or, descending, `end - 1 - k`.
    pub(super) fn position(
        &mut self,
        index: &Var,
        (lo, step): (&Var, Option<&Var>),
        (start, end, desc): (Var, Var, bool),
        front: &mut Vec<Stmt>,
    ) -> Var {
        let prim = |prim: Prim, a: &Var, b: &Var| Expr::Prim {
            prim,
            args: vec![a.clone(), b.clone()],
        };
        let mut k = self.bind(front, "k", Ty::Int, prim(Prim::ISub, index, lo));
        if let Some(s) = step {
            k = self.bind(front, "k", Ty::Int, prim(Prim::IDiv, &k, s));
        }
        if desc {
            front.push(Stmt::drop_nl(&start));
            let one = self.bind(front, "one", Ty::Int, Expr::Int(1));
            let last = self.bind(front, "k", Ty::Int, prim(Prim::ISub, &end, &one));
            self.bind(front, "k", Ty::Int, prim(Prim::ISub, &last, &k))
        } else {
            front.push(Stmt::drop_nl(&end));
            self.bind(front, "k", Ty::Int, prim(Prim::IAdd, &start, &k))
        }
    }

    /// `let nl; lin = case scrut { arms }` where an arm appends to flat
    /// arrays: every arm returns their values after its results (as it
    /// leaves them, or as they came), and the statement binds them.
    pub(super) fn case(
        &mut self,
        nl: &[Binder],
        lin: &[Binder],
        scrut: Var,
        arms: Vec<Arm>,
    ) -> Result<Stmt, PassError> {
        let touched: Vec<usize> = (0..self.flats.len())
            .filter(|&k| {
                let elem = &self.flats[k].0;
                arms.iter().any(|a| {
                    any_subexpr(
                        &a.body,
                        &mut |e| matches!(e, Expr::Loop(l) if l.collect.contains(elem)),
                    )
                })
            })
            .collect();
        let outside: Vec<Var> = touched.iter().map(|&k| self.flats[k].1.clone()).collect();
        let mut out_arms = Vec::new();
        for a in arms {
            for (&k, v) in touched.iter().zip(&outside) {
                self.flats[k].1 = v.clone();
            }
            let body = self.expr(a.body)?;
            let flats: Vec<Var> = touched.iter().map(|&k| self.flats[k].1.clone()).collect();
            out_arms.push(Arm {
                bind: a.bind.as_ref().map(|b| self.binder(b)),
                body: self.returning(body, (nl, lin), flats)?,
            });
        }
        let mut nl = nl.to_vec();
        for &k in &touched {
            let t = Ty::Array(Box::new(self.ty(&self.flats[k].0)), None);
            let v = self.fresh.var("flat");
            nl.push(Binder::new(v.clone(), t));
            self.flats[k].1 = v;
        }
        Ok(Stmt::Let {
            nl,
            lin: lin.to_vec(),
            rhs: Expr::Case {
                scrut,
                arms: out_arms,
            },
        })
    }

    /// `body`, which returns values of the types of `nl` and `lin`,
    /// returning `extra` after its non-linear results.
    fn returning(
        &mut self,
        body: Expr,
        (nl, lin): (&[Binder], &[Binder]),
        extra: Vec<Var>,
    ) -> Result<Expr, PassError> {
        Ok(match body {
            Expr::Ret {
                nl: mut vs,
                lin: ls,
            } => {
                vs.extend(extra);
                Expr::Ret { nl: vs, lin: ls }
            }
            Expr::Block { stmts, tail } => {
                let tail = self.returning(*tail, (nl, lin), extra)?;
                Expr::block(stmts, tail)
            }
            body => {
                let r: Vec<Binder> = nl
                    .iter()
                    .map(|b| Binder::new(self.fresh.var("r"), b.ty.clone()))
                    .collect();
                let dr: Vec<Binder> = lin
                    .iter()
                    .map(|b| Binder::new(self.fresh.var("dr"), b.ty.clone()))
                    .collect();
                let mut vs: Vec<Var> = r.iter().map(|b| b.var.clone()).collect();
                vs.extend(extra);
                Expr::block(
                    vec![Stmt::Let {
                        nl: r,
                        lin: dr.clone(),
                        rhs: body,
                    }],
                    Expr::Ret {
                        nl: vs,
                        lin: dr.into_iter().map(|b| b.var).collect(),
                    },
                )
            }
        })
    }

    /// Whether `e` appends to a flat array: a loop in it collects
    /// records kept in one.
    pub(super) fn appends_any(&self, e: &Expr) -> bool {
        any_subexpr(
            e,
            &mut |e| matches!(e, Expr::Loop(l) if l.collect.iter().any(|t| self.flat(t).is_some())),
        )
    }
}
