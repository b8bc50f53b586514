//! Records as arrays: a composed VJP's loop records, kept in lists, are
//! rewritten into arrays, so that J differentiates them with its array
//! rules (forward over reverse, `passes::hvp::first_vjp`).
//!
//! U keeps a loop's per-iteration residuals in a list (`collect`), which
//! the transposed loop reads back in reverse (`each .. rev`); a list has
//! no tangent in J, so a VJP whose tape holds lists of reals could not be
//! differentiated. Here every list becomes an array of run-time length,
//! which J gives a linear array of tangents, read in place:
//!
//! * a loop's collected output becomes carried state, an array that
//!   starts empty (`fill(0, zero)`) and is pushed to once per iteration
//!   (`push`, whose tangent is `lpush`);
//! * `each x in l` becomes a range loop over `0..len(l)` (reversed as the
//!   loop is) that reads `x = index(l, k)` (tangent `lindex(l̇, k)`);
//! * a zipped loop keeps its range and counts the list's position beside
//!   it, in carried integer state;
//! * a replay (binomial checkpointing) becomes the loop that computes its
//!   states and a loop over them first (`passes::unreplay`): the states
//!   are then stored, since J must see where each came from.
//!
//! * the records of a loop inside a loop or a branch, which its list
//!   would carry into another record (an array of arrays, or an array in
//!   a sum, neither of which J differentiates), go to one flat array per
//!   record type instead, in the order they are made: the function
//!   starts it empty, every loop that appends to it (itself or through a
//!   loop in its body) carries it, every branch whose arms append to it
//!   returns it from each arm, and the list becomes a segment,
//!   `(start, end)`, the flat array's length before and after the loop.
//!   A loop over a segment reads `index(flat, start + k)`.
//!
//! Types follow: `list(τ)` becomes `array(τ')` wherever it occurs (or
//! `(int, int)`, a segment), `τ'` being `τ` rewritten the same way. The
//! rewriting changes how values are kept, never which values are
//! computed: the function's results are the same, bit for bit, and its
//! work grows by a constant per iteration.
//!
//! Input: a non-linear function that type-checks (L of the composed VJP,
//! inlined), whose binders are unique (statements that append to a flat
//! array are spliced into their block, so that its new value stays in
//! scope). Output: the same function, with no list type, no `collect`
//! and no `each`, `zip` or replay loop, type-checking again.

use rustc_hash::FxHashMap as HashMap;

use super::PassError;
use crate::ir::{Arm, Binder, Expr, Func, Iter, Loop, Prim, Program, Stmt, Ty, Var};
use crate::visit::{any_subexpr, Fresh};

/// `f` with its lists turned into arrays (see the module doc), the
/// records of inner loops kept in flat arrays where `flatten` says so,
/// else as arrays of arrays (which J cannot differentiate).
pub fn records_as_arrays(f: &Func, flatten: bool) -> Result<Func, PassError> {
    let mut fresh = Fresh::for_func(f);
    let mut r = Records {
        fresh: &mut fresh,
        name: f.name.clone(),
        types: crate::visit::binder_types(f),
        flats: Vec::new(),
        keep: false,
    };
    let mut out = f.clone();
    // The records of nested loops: every flat array starts empty, before
    // the body (the types first, as an element type may hold a segment).
    let mut pre = Vec::new();
    let flat = if flatten {
        flattened(&f.body)
    } else {
        Vec::new()
    };
    r.flats = flat.into_iter().map(|t| (t, f.name.clone())).collect();
    r.start_flats(&mut pre)?;
    for b in out.nl_params.iter_mut().chain(out.lin_params.iter_mut()) {
        b.ty = r.ty(&b.ty);
    }
    for t in out.nl_rets.iter_mut().chain(out.lin_rets.iter_mut()) {
        *t = r.ty(t);
    }
    let body = r.expr(forward_tuples(f.body.clone()))?;
    // The flat arrays as the function leaves them, which its reversed
    // loops read: discarded at its end, in case none does.
    let body = match body {
        Expr::Block { mut stmts, tail } => {
            stmts.extend(r.flats.iter().map(|(_, v)| Stmt::drop_nl(v)));
            Expr::Block { stmts, tail }
        }
        tail => {
            let drops = r.flats.iter().map(|(_, v)| Stmt::drop_nl(v)).collect();
            Expr::block(drops, tail)
        }
    };
    out.body = Expr::block(pre, body);
    Ok(out)
}

/// The first-order pipeline's forward pass, residual and transposed
/// residual of `f` (`f.jvp.nl`, `f.jvp.lin`, `f.jvp.lin.t` in `p`, T's
/// output) with the records of loops inside loops or branches in flat
/// arrays ([`flattened`], the lists other records hold), as for
/// [`records_as_arrays`], while every other list stays a list. The
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
        match e {
        Expr::Block { stmts, .. } => stmts.iter().any(|s| {
            matches!(s, Stmt::Let { nl, rhs: Expr::App { .. }, .. } if nl.iter().any(|b| holds_list(&b.ty)))
        }),
        _ => false,
    }
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

/// Whether a value of type `t` holds a list.
fn holds_list(t: &Ty) -> bool {
    match t {
        Ty::List(..) => true,
        Ty::Tuple(ts) | Ty::Sum(ts) => ts.iter().any(holds_list),
        Ty::Array(e, _) => holds_list(e),
        Ty::Real(_) | Ty::Int | Ty::Bool | Ty::Tape(_) => false,
    }
}

/// `e` with every tuple holding a list that is built (`tup`) and then
/// unpacked in one block (U's tape, inlined) taken apart: the unpacked
/// names are replaced by the tuple's components, and the tuple is gone
/// if nothing else reads it. J passes an array on only by itself, never
/// inside a tuple.
fn forward_tuples(e: Expr) -> Expr {
    match e {
        Expr::Block { stmts, tail } => {
            let mut tups: HashMap<Var, Vec<Var>> = HashMap::default();
            let mut rest: std::collections::VecDeque<Stmt> = stmts.into();
            let mut tail = *tail;
            let mut kept = Vec::new();
            while let Some(st) = rest.pop_front() {
                match st {
                    Stmt::Unpack { vars, tuple } if tups.contains_key(&tuple) => {
                        let map: HashMap<Var, Var> = vars
                            .into_iter()
                            .map(|b| b.var)
                            .zip(tups[&tuple].iter().cloned())
                            .collect();
                        let mut later = Expr::Block {
                            stmts: rest.drain(..).collect(),
                            tail: Box::new(tail),
                        };
                        crate::visit::rename_all(&mut later, &map);
                        let Expr::Block { stmts, tail: t } = later else {
                            unreachable!("a block renamed is a block")
                        };
                        rest = stmts.into();
                        tail = *t;
                    }
                    st => {
                        if let Stmt::Let {
                            nl,
                            lin,
                            rhs: Expr::Tup(vs),
                        } = &st
                        {
                            if let ([b], []) = (nl.as_slice(), lin.as_slice()) {
                                if holds_list(&b.ty) {
                                    tups.insert(b.var.clone(), vs.clone());
                                }
                            }
                        }
                        kept.push(st);
                    }
                }
            }
            let uses = crate::visit::use_counts(&Expr::Block {
                stmts: kept.clone(),
                tail: Box::new(tail.clone()),
            });
            let kept = kept
                .into_iter()
                .filter(|st| match st {
                    Stmt::Let { nl, .. } => {
                        !(nl.len() == 1
                            && tups.contains_key(&nl[0].var)
                            && !uses.contains_key(&nl[0].var))
                    }
                    Stmt::Unpack { .. } | Stmt::LinUnpack { .. } => true,
                })
                .map(|st| match st {
                    Stmt::Let { nl, lin, rhs } => Stmt::Let {
                        nl,
                        lin,
                        rhs: forward_tuples(rhs),
                    },
                    st => st,
                })
                .collect();
            Expr::Block {
                stmts: kept,
                tail: Box::new(forward_tuples(tail)),
            }
        }
        Expr::Case { scrut, arms } => Expr::Case {
            scrut,
            arms: arms
                .into_iter()
                .map(|a| Arm {
                    bind: a.bind,
                    body: forward_tuples(a.body),
                })
                .collect(),
        },
        Expr::Loop(mut l) => {
            l.body = forward_tuples(l.body);
            Expr::Loop(l)
        }
        Expr::Drop(inner) => Expr::Drop(Box::new(forward_tuples(*inner))),
        e => e,
    }
}

/// The element types of the lists kept as segments of one flat array
/// each: those collected by a loop inside another loop's body or inside
/// a branch, whose lists would be in another record. Not where a loop
/// collecting one is inside a loop collecting the same type, or collects
/// it twice (a segment must be contiguous), nor in a function with a
/// replay, whose rewriting makes loops of its own.
fn flattened(body: &Expr) -> Vec<Ty> {
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
fn segment_ty() -> Ty {
    Ty::Tuple(vec![Ty::Int, Ty::Int])
}

/// A counter carried by a loop: its binder, its initial value, and, if
/// it counts down, the position the iteration reads, one below it, which
/// is its next value.
type Counter = (Var, Var, Option<Var>);

/// What [`Records::body`] adds to a loop: its state and outputs, the
/// extra state (counter, arrays), and whether the arrays have the trip
/// count's size (written at the counter) or grow (pushed to).
#[derive(Clone, Copy)]
struct Extra<'a> {
    nl: &'a [(Binder, Var)],
    collect: &'a [Ty],
    /// Per collected output, the carried flat array it goes to, if any
    /// (else the next array of `extra`).
    own: &'a [Option<usize>],
    lin: &'a [(Binder, Var)],
    extra: &'a [(Binder, Var)],
    /// The carried flat arrays as the old body leaves them.
    ends: &'a [Var],
    counter: Option<&'a Counter>,
    fixed: bool,
}

/// A replay (`Iter::Replay`, U's binomial checkpointing) as the loop that
/// computes its states into an array and a loop over them: how J
/// differentiates one (through the states, not as constants). `fresh`
/// is the function's supply of names; `types` takes the new binders.
pub(crate) fn unreplayed(
    l: &Loop,
    func: &Var,
    fresh: &mut Fresh,
    types: &mut HashMap<Var, Ty>,
) -> Result<Option<Expr>, PassError> {
    let Some(e) = super::unreplay(l, fresh, types) else {
        return Ok(None);
    };
    let mut r = Records {
        fresh,
        name: func.clone(),
        types: HashMap::default(),
        flats: Vec::new(),
        keep: false,
    };
    let e = r.expr(e)?;
    crate::visit::for_each_binder(&e, &mut |b, _| {
        types.insert(b.var.clone(), b.ty.clone());
    });
    Ok(Some(e))
}

struct Records<'a> {
    fresh: &'a mut Fresh,
    name: Var,
    /// The input's types, for the lengths of lists known at compile time.
    types: HashMap<Var, Ty>,
    /// The element types whose lists are segments of a flat array
    /// ([`flattened`]), each with the variable that holds its flat array
    /// where the rewriting is.
    flats: Vec<(Ty, Var)>,
    /// Whether lists other than segments stay lists ([`flat_tapes`]).
    keep: bool,
}

fn let_(v: &Var, ty: Ty, rhs: Expr) -> Stmt {
    Stmt::Let {
        nl: vec![Binder::new(v.clone(), ty)],
        lin: vec![],
        rhs,
    }
}

impl Records<'_> {
    /// `t` with every `list(τ)` in it an `array(τ')` of run-time length,
    /// or a segment of `τ`'s flat array.
    fn ty(&self, t: &Ty) -> Ty {
        match t {
            Ty::List(e, _) if self.flat(e).is_some() => segment_ty(),
            Ty::List(e, n) if self.keep => Ty::List(Box::new(self.ty(e)), *n),
            Ty::List(e, n) | Ty::Array(e, n) => Ty::Array(Box::new(self.ty(e)), *n),
            Ty::Tuple(ts) => Ty::Tuple(ts.iter().map(|t| self.ty(t)).collect()),
            Ty::Sum(ts) => Ty::Sum(ts.iter().map(|t| self.ty(t)).collect()),
            Ty::Real(_) | Ty::Int | Ty::Bool | Ty::Tape(_) => t.clone(),
        }
    }

    /// Every flat array, empty, bound in `pre` (the element types first
    /// known, as one may hold a segment).
    fn start_flats(&mut self, pre: &mut Vec<Stmt>) -> Result<(), PassError> {
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
    fn flat(&self, elem: &Ty) -> Option<usize> {
        self.flats.iter().position(|(t, _)| t == elem)
    }

    /// The flat array `list`'s elements are kept in, if they are.
    fn flat_of(&self, list: &Var) -> Option<usize> {
        match self.types.get(list) {
            Some(Ty::List(e, _)) => self.flat(e),
            _ => None,
        }
    }

    fn binder(&self, b: &Binder) -> Binder {
        Binder::new(b.var.clone(), self.ty(&b.ty))
    }

    /// Where the list `list` is in its flat array, if it is a segment of
    /// one: its start and end, unpacked in `pre`, and the flat array.
    fn segment(&mut self, list: &Var, pre: &mut Vec<Stmt>) -> Option<(Var, Var, Var)> {
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
    fn position(
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

    /// `let elem = index(list, k)`: a list's element, read from its array.
    fn read(&self, elem: &Binder, list: Var, k: &Var) -> Stmt {
        let_(
            &elem.var,
            self.ty(&elem.ty),
            Expr::Index {
                arr: list,
                idx: k.clone(),
            },
        )
    }
}

impl Records<'_> {
    fn err(&self, msg: &str) -> PassError {
        PassError::new(&self.name, msg)
    }

    fn expr(&mut self, e: Expr) -> Result<Expr, PassError> {
        Ok(match e {
            Expr::Block { stmts, tail } => {
                let mut out = Vec::new();
                for s in stmts {
                    self.stmt(s, &mut out)?;
                }
                Expr::Block {
                    stmts: out,
                    tail: Box::new(self.expr(*tail)?),
                }
            }
            Expr::Case { scrut, arms } => Expr::Case {
                scrut,
                arms: arms
                    .into_iter()
                    .map(|a| {
                        Ok(Arm {
                            bind: a.bind.as_ref().map(|b| self.binder(b)),
                            body: self.expr(a.body)?,
                        })
                    })
                    .collect::<Result<_, PassError>>()?,
            },
            Expr::Drop(inner) => Expr::Drop(Box::new(self.expr(*inner)?)),
            Expr::Loop(l) => {
                let mut pre = Vec::new();
                let ret = self.loop_(*l, &mut pre)?;
                Expr::block(pre, ret)
            }
            Expr::Inj { sum, tag, val } => Expr::Inj {
                sum: self.ty(&sum),
                tag,
                val,
            },
            Expr::Const { name, args, ty } => Expr::Const {
                name,
                args,
                ty: self.ty(&ty),
            },
            Expr::LinZero(t) => Expr::LinZero(self.ty(&t)),
            // A segment's length.
            Expr::Len(list) if self.flat_of(&list).is_some() => {
                let mut pre = Vec::new();
                match self.segment(&list, &mut pre) {
                    Some((start, end, _)) => Expr::block(
                        pre,
                        Expr::Prim {
                            prim: Prim::ISub,
                            args: vec![end, start],
                        },
                    ),
                    None => Expr::Len(list),
                }
            }
            Expr::LinZeros { ty, len } => Expr::LinZeros {
                ty: self.ty(&ty),
                len,
            },
            e @ (Expr::Ret { .. }
            | Expr::App { .. }
            | Expr::Lit { .. }
            | Expr::Tup(_)
            | Expr::Prim { .. }
            | Expr::LinTup(_)
            | Expr::LinAdd(..)
            | Expr::LinNeg(_)
            | Expr::LinScale(..)
            | Expr::Dup(_)
            | Expr::Int(_)
            | Expr::Bool(_)
            | Expr::Index { .. }
            | Expr::Len(_)
            | Expr::LinIndex { .. }
            | Expr::LinAccum { .. }
            | Expr::Fill { .. }
            | Expr::Set { .. }
            | Expr::LinSet { .. }
            | Expr::LinFree { .. }
            | Expr::Push { .. }
            | Expr::Pop { .. }
            | Expr::LinPush { .. }
            | Expr::LinPop { .. }) => e,
        })
    }

    /// `s` rewritten, into `out`. A statement whose right-hand side
    /// appends to a flat array is spliced into the block: a loop's
    /// statements, or a block's, then a `let` of its result. The flat
    /// array's new value is then in scope for the rest of the block,
    /// which reads or carries it on. (Binders are unique in a function,
    /// so splicing shadows nothing.)
    fn stmt(&mut self, s: Stmt, out: &mut Vec<Stmt>) -> Result<(), PassError> {
        let s = match s {
            Stmt::Let { nl, lin, rhs } if self.appends_any(&rhs) => match rhs {
                Expr::Block { stmts, tail } => {
                    for s in stmts {
                        self.stmt(s, out)?;
                    }
                    return self.stmt(
                        Stmt::Let {
                            nl,
                            lin,
                            rhs: *tail,
                        },
                        out,
                    );
                }
                Expr::Loop(l) => {
                    let ret = self.loop_(*l, out)?;
                    Stmt::Let {
                        nl: nl.iter().map(|b| self.binder(b)).collect(),
                        lin: lin.iter().map(|b| self.binder(b)).collect(),
                        rhs: ret,
                    }
                }
                Expr::Case { scrut, arms } => {
                    let nl: Vec<Binder> = nl.iter().map(|b| self.binder(b)).collect();
                    let lin: Vec<Binder> = lin.iter().map(|b| self.binder(b)).collect();
                    self.case(&nl, &lin, scrut, arms)?
                }
                rhs => Stmt::Let {
                    nl: nl.iter().map(|b| self.binder(b)).collect(),
                    lin: lin.iter().map(|b| self.binder(b)).collect(),
                    rhs: self.expr(rhs)?,
                },
            },
            Stmt::Let { nl, lin, rhs } => Stmt::Let {
                nl: nl.iter().map(|b| self.binder(b)).collect(),
                lin: lin.iter().map(|b| self.binder(b)).collect(),
                rhs: self.expr(rhs)?,
            },
            Stmt::Unpack { vars, tuple } => Stmt::Unpack {
                vars: vars.iter().map(|b| self.binder(b)).collect(),
                tuple,
            },
            Stmt::LinUnpack { vars, tuple } => Stmt::LinUnpack {
                vars: vars.iter().map(|b| self.binder(b)).collect(),
                tuple,
            },
        };
        out.push(s);
        Ok(())
    }

    /// `let nl; lin = case scrut { arms }` where an arm appends to flat
    /// arrays: every arm returns their values after its results (as it
    /// leaves them, or as they came), and the statement binds them.
    fn case(
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
    fn appends_any(&self, e: &Expr) -> bool {
        any_subexpr(
            e,
            &mut |e| matches!(e, Expr::Loop(l) if l.collect.iter().any(|t| self.flat(t).is_some())),
        )
    }

    /// A fresh non-linear variable bound to `rhs` by a statement in `out`.
    fn bind(&mut self, out: &mut Vec<Stmt>, hint: &str, ty: Ty, rhs: Expr) -> Var {
        let v = self.fresh.var(hint);
        out.push(let_(&v, ty, rhs));
        v
    }

    /// A value of type `t` (its zeros), to fill an empty array with.
    fn zero_value(&mut self, t: &Ty, out: &mut Vec<Stmt>) -> Result<Var, PassError> {
        let rhs = match t {
            Ty::Real(f) => Expr::Lit {
                value: 0.0,
                float: *f,
            },
            Ty::Int => Expr::Int(0),
            Ty::Bool => Expr::Bool(false),
            Ty::Tuple(ts) => Expr::Tup(
                ts.iter()
                    .map(|t| self.zero_value(t, out))
                    .collect::<Result<_, _>>()?,
            ),
            Ty::Sum(ts) => {
                let first = ts.first().ok_or_else(|| self.err("an empty sum"))?;
                Expr::Inj {
                    sum: t.clone(),
                    tag: 0,
                    val: self.zero_value(first, out)?,
                }
            }
            Ty::Array(e, n) => {
                let len = self.bind(out, "n", Ty::Int, Expr::Int(n.unwrap_or(0) as i64));
                Expr::Fill {
                    len,
                    val: self.zero_value(e, out)?,
                    size: *n,
                }
            }
            Ty::List(..) | Ty::Tape(_) => {
                return Err(self.err(&format!(
                    "a loop record of type {t}, which has no value to start an array with"
                )))
            }
        };
        Ok(self.bind(out, "z", t.clone(), rhs))
    }

    /// A loop with its list header and collected lists as arrays (or
    /// segments of flat arrays, which it carries): its statements, into
    /// `pre`, and the expression returning what the loop returned.
    fn loop_(&mut self, l: Loop, pre: &mut Vec<Stmt>) -> Result<Expr, PassError> {
        if matches!(l.iter, Iter::Replay { .. }) {
            let mut types = HashMap::default();
            let e = super::unreplay(&l, self.fresh, &mut types)
                .ok_or_else(|| self.err("a replay that is not one"))?;
            return self.expr(e);
        }
        let Loop {
            iter,
            nl,
            lin,
            collect,
            body,
        } = l;
        // The flat arrays this loop appends to, its own records or those
        // of loops in its body, are carried state: bound to `inside` in
        // the body, which ends with them at `ends`.
        let carried: Vec<usize> = (0..self.flats.len())
            .filter(|&k| appends(&self.flats[k].0, &collect, &body))
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
        // Per collected output, the carried flat array it goes to, if any.
        let own: Vec<Option<usize>> = collect
            .iter()
            .map(|t| {
                self.flat(t)
                    .and_then(|k| carried.iter().position(|&c| c == k))
            })
            .collect();
        let nl: Vec<(Binder, Var)> = nl
            .iter()
            .map(|(b, v)| (self.binder(b), v.clone()))
            .collect();
        let lin: Vec<(Binder, Var)> = lin
            .iter()
            .map(|(b, v)| (self.binder(b), v.clone()))
            .collect();
        let collect: Vec<Ty> = collect.iter().map(|t| self.ty(t)).collect();
        // The other collected outputs: arrays, or lists that stay lists.
        let others: Vec<Ty> = collect
            .iter()
            .zip(&own)
            .filter(|(_, o)| o.is_none())
            .map(|(t, _)| t.clone())
            .collect();
        let (arrays, kept) = if self.keep {
            (Vec::new(), others)
        } else {
            (others, Vec::new())
        };
        let mut front = Vec::new();
        let (iter, mut counter) = self.header(iter, pre, &mut front)?;
        // A range loop with a constant trip count (a list of known length,
        // too) collects into arrays of that size, written at the
        // iteration's number (no heap, as U's lists of known length have
        // none); others push. A zipped loop's range has no known count.
        let trip = match (&iter, arrays.is_empty(), &counter) {
            (Iter::Range { trip: Some(n), .. }, false, None) => Some(*n),
            _ => None,
        };
        if trip.is_some() {
            let k0 = self.bind(pre, "k", Ty::Int, Expr::Int(0));
            counter = Some((self.fresh.var("k"), k0, None));
        }
        let mut extra = self.extra_state(counter.as_ref(), &arrays, trip, pre)?;
        extra.extend(inside.into_iter().zip(outside.iter().cloned()));
        // Where each flat segment of this loop's records starts.
        let starts: Vec<Option<Var>> = own
            .iter()
            .map(|o| o.map(|c| self.bind(pre, "start", Ty::Int, Expr::Len(outside[c].clone()))))
            .collect();
        let shape = Extra {
            nl: &nl,
            collect: &collect,
            own: &own,
            lin: &lin,
            extra: &extra,
            ends: &ends,
            counter: counter.as_ref(),
            fixed: trip.is_some(),
        };
        let body = self.body(body, &shape, front)?;
        let list_trip = match &iter {
            Iter::Range { trip, .. } => *trip,
            Iter::Each { .. } | Iter::Zip { .. } | Iter::While { .. } | Iter::Replay { .. } => None,
        };
        let fin: Vec<Binder> = nl
            .iter()
            .map(|(b, _)| b.ty.clone())
            .chain(extra.iter().map(|(b, _)| b.ty.clone()))
            .chain(
                kept.iter()
                    .map(|t| Ty::List(Box::new(t.clone()), list_trip)),
            )
            .map(|t| Binder::new(self.fresh.var("s"), t))
            .collect();
        let dfin: Vec<Binder> = lin
            .iter()
            .map(|(b, _)| Binder::new(self.fresh.var("ds"), b.ty.clone()))
            .collect();
        let mut all_nl = nl.clone();
        all_nl.extend(extra.iter().cloned());
        pre.push(Stmt::Let {
            nl: fin.clone(),
            lin: dfin.clone(),
            rhs: Expr::Loop(Box::new(Loop {
                iter,
                nl: all_nl,
                lin,
                collect: kept.clone(),
                body,
            })),
        });
        let mut ret: Vec<Var> = fin[..nl.len()].iter().map(|b| b.var.clone()).collect();
        let mut rest = fin[nl.len()..].iter();
        if counter.is_some() {
            if let Some(k) = rest.next() {
                pre.push(Stmt::drop_nl(&k.var));
            }
        }
        let arrays_fin: Vec<Var> = rest
            .by_ref()
            .take(arrays.len())
            .map(|b| b.var.clone())
            .collect();
        let flats_fin: Vec<Var> = rest
            .by_ref()
            .take(carried.len())
            .map(|b| b.var.clone())
            .collect();
        let mut others_fin = arrays_fin.into_iter().chain(rest.map(|b| b.var.clone()));
        for (o, start) in own.iter().zip(starts) {
            match (o, start) {
                (Some(c), Some(start)) => {
                    let end = self.bind(pre, "end", Ty::Int, Expr::Len(flats_fin[*c].clone()));
                    ret.push(self.bind(pre, "seg", segment_ty(), Expr::Tup(vec![start, end])));
                }
                _ => ret.extend(others_fin.next()),
            }
        }
        for (&k, v) in carried.iter().zip(flats_fin) {
            self.flats[k].1 = v;
        }
        Ok(Expr::Ret {
            nl: ret,
            lin: dfin.into_iter().map(|b| b.var).collect(),
        })
    }

    /// A loop's extra state: the counter, then one array per collected
    /// output, of `trip` elements (or empty, to push to), its initial
    /// value made in `pre`.
    fn extra_state(
        &mut self,
        counter: Option<&Counter>,
        collect: &[Ty],
        trip: Option<u64>,
        pre: &mut Vec<Stmt>,
    ) -> Result<Vec<(Binder, Var)>, PassError> {
        let mut extra: Vec<(Binder, Var)> = Vec::new();
        if let Some((k, k0, _)) = counter {
            extra.push((Binder::new(k.clone(), Ty::Int), k0.clone()));
        }
        for t in collect {
            let zero = self.zero_value(t, pre)?;
            let n =
                i64::try_from(trip.unwrap_or(0)).map_err(|_| self.err("a trip count too large"))?;
            let len = self.bind(pre, "n", Ty::Int, Expr::Int(n));
            let arr_ty = Ty::Array(Box::new(t.clone()), trip);
            let empty = self.bind(
                pre,
                "acc",
                arr_ty.clone(),
                Expr::Fill {
                    len,
                    val: zero,
                    size: trip,
                },
            );
            extra.push((Binder::new(self.fresh.var("acc"), arr_ty), empty));
        }
        Ok(extra)
    }

    /// The loop's header over a range: an `each` over `0..len(l)`, a
    /// zipped loop over its own range, with the element read at the top of
    /// the body (`front`). A zipped loop's list position is carried: its
    /// binder, initial value and whether it counts down.
    fn header(
        &mut self,
        iter: Iter,
        pre: &mut Vec<Stmt>,
        front: &mut Vec<Stmt>,
    ) -> Result<(Iter, Option<Counter>), PassError> {
        Ok(match iter {
            Iter::Each { elem, list, rev } if self.keep && self.flat_of(&list).is_none() => {
                let elem = self.binder(&elem);
                (Iter::Each { elem, list, rev }, None)
            }
            Iter::Zip {
                index,
                lo,
                hi,
                step,
                desc,
                elem,
                list,
                rev,
            } if self.keep && self.flat_of(&list).is_none() => {
                let elem = self.binder(&elem);
                let iter = Iter::Zip {
                    index,
                    lo,
                    hi,
                    step,
                    desc,
                    elem,
                    list,
                    rev,
                };
                (iter, None)
            }
            Iter::Zip {
                index,
                lo,
                hi,
                step,
                desc,
                elem,
                list,
                rev,
            } if self.keep => {
                // A segment: its position is computed from the index, as
                // a residual's loop carries no integer (Linear B).
                let (start, end, flat) = self
                    .segment(&list, pre)
                    .ok_or_else(|| self.err("a zipped list that is no segment"))?;
                let at = self.position(&index.var, (&lo, step.as_ref()), (start, end, desc), front);
                front.push(self.read(&elem, flat, &at));
                let iter = Iter::Range {
                    index,
                    lo,
                    hi,
                    step,
                    rev: desc != rev,
                    trip: None,
                };
                (iter, None)
            }
            Iter::Each { elem, list, rev } => {
                let lo = self.bind(pre, "zero", Ty::Int, Expr::Int(0));
                // A list of known length: a loop of that trip count, whose
                // own records (differentiated again) are of known length.
                let trip = match self.types.get(&list) {
                    Some(Ty::List(_, Some(n))) => Some(*n),
                    _ => None,
                };
                let seg = self.segment(&list, pre);
                let hi = match (trip.map(i64::try_from), &seg) {
                    (Some(Ok(n)), _) => self.bind(pre, "n", Ty::Int, Expr::Int(n)),
                    (_, Some((start, end, _))) => self.bind(
                        pre,
                        "n",
                        Ty::Int,
                        Expr::Prim {
                            prim: Prim::ISub,
                            args: vec![end.clone(), start.clone()],
                        },
                    ),
                    _ => self.bind(pre, "n", Ty::Int, Expr::Len(list.clone())),
                };
                let k = self.fresh.var("k");
                match seg {
                    // The k-th element of a segment is its flat array's
                    // element `start + k`.
                    Some((start, end, flat)) => {
                        if trip.is_some() {
                            pre.push(Stmt::drop_nl(&end));
                        }
                        let at = self.bind(
                            front,
                            "k",
                            Ty::Int,
                            Expr::Prim {
                                prim: Prim::IAdd,
                                args: vec![start, k.clone()],
                            },
                        );
                        front.push(self.read(&elem, flat, &at));
                    }
                    None => front.push(self.read(&elem, list, &k)),
                }
                let iter = Iter::Range {
                    index: Binder::new(k, Ty::Int),
                    lo,
                    hi,
                    step: None,
                    rev,
                    trip,
                };
                (iter, None)
            }
            Iter::Zip {
                index,
                lo,
                hi,
                step,
                desc,
                elem,
                list,
                rev,
            } => {
                let k = self.fresh.var("k");
                // A segment's positions are its flat array's, from its
                // start to its end.
                let seg = self.segment(&list, pre);
                // Read backwards, the counter stays one past the element
                // an iteration reads: it starts at the length, and the
                // position read, one below, is its next value. No
                // subtraction goes below zero (counting from `len - 1`,
                // the last iteration's `0 - 1` overflowed, a panic in a
                // debug build, and so did an empty list's `len - 1`).
                let (k0, down) = if rev {
                    let n = match &seg {
                        Some((start, end, _)) => {
                            pre.push(Stmt::drop_nl(start));
                            end.clone()
                        }
                        None => self.bind(pre, "n", Ty::Int, Expr::Len(list.clone())),
                    };
                    let one = self.bind(front, "one", Ty::Int, Expr::Int(1));
                    let at = self.bind(
                        front,
                        "k",
                        Ty::Int,
                        Expr::Prim {
                            prim: Prim::ISub,
                            args: vec![k.clone(), one],
                        },
                    );
                    (n, Some(at))
                } else {
                    match &seg {
                        Some((start, end, _)) => {
                            pre.push(Stmt::drop_nl(end));
                            (start.clone(), None)
                        }
                        None => (self.bind(pre, "k", Ty::Int, Expr::Int(0)), None),
                    }
                };
                let list = seg.map_or(list, |(_, _, flat)| flat);
                front.push(self.read(&elem, list, down.as_ref().unwrap_or(&k)));
                let iter = Iter::Range {
                    index,
                    lo,
                    hi,
                    step,
                    rev: desc != rev,
                    trip: None,
                };
                (iter, Some((k, k0, down)))
            }
            Iter::While { cond } => (
                Iter::While {
                    cond: Box::new(self.expr(*cond)?),
                },
                None,
            ),
            Iter::Range { .. } => (iter, None),
            Iter::Replay { .. } => return Err(self.err("a replay left in a loop header")),
        })
    }

    /// The loop body: `front`, the old body's results bound, the counter
    /// moved on and each collected value pushed (or written at the
    /// counter) to its array or its flat array; returns the state, then
    /// the extra state (counter, arrays, flat arrays), then the linear
    /// state.
    fn body(&mut self, body: Expr, x: &Extra, mut stmts: Vec<Stmt>) -> Result<Expr, PassError> {
        let Extra {
            nl,
            collect,
            own,
            lin,
            extra,
            ends,
            counter,
            fixed,
        } = *x;
        if counter.is_none() && collect.is_empty() && ends.is_empty() {
            return Ok(Expr::block(stmts, body));
        }
        let r: Vec<Binder> = nl
            .iter()
            .map(|(b, _)| b.ty.clone())
            .chain(collect.iter().cloned())
            .map(|t| Binder::new(self.fresh.var("r"), t))
            .collect();
        let dr: Vec<Binder> = lin
            .iter()
            .map(|(b, _)| Binder::new(self.fresh.var("dr"), b.ty.clone()))
            .collect();
        // Spliced, so that the flat arrays the body leaves are in scope.
        let body = match body {
            Expr::Block { stmts: inner, tail } if !ends.is_empty() => {
                stmts.extend(inner);
                *tail
            }
            body => body,
        };
        stmts.push(Stmt::Let {
            nl: r.clone(),
            lin: dr.clone(),
            rhs: body,
        });
        let mut ret: Vec<Var> = r[..nl.len()].iter().map(|b| b.var.clone()).collect();
        let mut extra = extra.iter();
        if let Some((k, _, down)) = counter {
            extra.next();
            let next = match down {
                Some(at) => at.clone(),
                None => {
                    let one = self.bind(&mut stmts, "one", Ty::Int, Expr::Int(1));
                    self.bind(
                        &mut stmts,
                        "k",
                        Ty::Int,
                        Expr::Prim {
                            prim: Prim::IAdd,
                            args: vec![k.clone(), one],
                        },
                    )
                }
            };
            ret.push(next);
        }
        // The flat arrays are the last of the extra state.
        let flat_tys = &x.extra[x.extra.len() - ends.len()..];
        let mut flats: Vec<Var> = ends.to_vec();
        let mut kept = Vec::new();
        for (val, o) in r[nl.len()..].iter().zip(own) {
            let val = val.var.clone();
            if let Some(c) = o {
                let ty = flat_tys[*c].0.ty.clone();
                let arr = flats[*c].clone();
                flats[*c] = self.bind(&mut stmts, "flat", ty, Expr::Push { arr, val });
                continue;
            }
            if self.keep {
                kept.push(val);
                continue;
            }
            let Some((acc, _)) = extra.next() else {
                return Err(self.err("a collected output with no array"));
            };
            let arr = acc.var.clone();
            let rhs = match counter {
                Some((k, ..)) if fixed => Expr::Set {
                    arr,
                    idx: k.clone(),
                    val,
                },
                _ => Expr::Push { arr, val },
            };
            let written = self.bind(&mut stmts, "acc", acc.ty.clone(), rhs);
            ret.push(written);
        }
        ret.extend(flats);
        ret.extend(kept);
        Ok(Expr::block(
            stmts,
            Expr::Ret {
                nl: ret,
                lin: dr.into_iter().map(|b| b.var).collect(),
            },
        ))
    }
}
