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
use crate::ir::{Arm, Binder, Expr, Func, Iter, Loop, Prim, Stmt, Ty, Var};
use crate::visit::Fresh;

mod flat;

pub use flat::flat_tapes;
use flat::{flattened, segment_ty};

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

/// Whether `t` is a tuple holding an array.
fn holds_array(t: &Ty) -> bool {
    matches!(t, Ty::Tuple(ts) if ts.iter().any(|t| matches!(t, Ty::Array(..))))
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

/// `e` with every tuple holding a list or an array that is built (`tup`)
/// and then unpacked in one block (U's tape, inlined; a function of
/// slices' tape holds them) taken apart: the unpacked names are replaced
/// by the tuple's components, and the tuple is gone if nothing else reads
/// it. J passes an array on only by itself, never inside a tuple.
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
                                if holds_list(&b.ty) || holds_array(&b.ty) {
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

    fn binder(&self, b: &Binder) -> Binder {
        Binder::new(b.var.clone(), self.ty(&b.ty))
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
            zero_skip,
            body,
        } = l;
        let flat::Carried {
            carried,
            outside,
            inside,
            body,
            ends,
        } = self.carried_body(&collect, body)?;
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
                // Extra state (a segment's position) moves on every
                // iteration, zero or not: no skipping then.
                zero_skip: zero_skip && extra.is_empty(),
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
                (Some(c), Some(start)) => ret.push(self.segment_after(start, &flats_fin[*c], pre)),
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
    /// binder, initial value and whether it counts down. A loop over a
    /// segment reads its flat array; in `keep` mode, other list loops
    /// stay as they are.
    fn header(
        &mut self,
        iter: Iter,
        pre: &mut Vec<Stmt>,
        front: &mut Vec<Stmt>,
    ) -> Result<(Iter, Option<Counter>), PassError> {
        let segment = match &iter {
            Iter::Each { list, .. } | Iter::Zip { list, .. } => self.flat_of(list).is_some(),
            Iter::Range { .. } | Iter::While { .. } | Iter::Replay { .. } => false,
        };
        Ok(match iter {
            Iter::Each { elem, list, rev } if self.keep && !segment => {
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
            } if self.keep && !segment => {
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
            Iter::Each { elem, list, rev } => (self.each(elem, list, rev, pre, front), None),
            Iter::Zip { .. } if segment => (self.segment_zip(iter, pre, front)?, None),
            Iter::Zip { .. } => self.zip(iter, pre, front),
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
    /// `each elem in list`: a range loop over its positions, reading the
    /// element (from the flat array, for a segment) at the top of the
    /// body.
    fn each(
        &mut self,
        elem: Binder,
        list: Var,
        rev: bool,
        pre: &mut Vec<Stmt>,
        front: &mut Vec<Stmt>,
    ) -> Iter {
        let lo = self.bind(pre, "zero", Ty::Int, Expr::Int(0));
        // A list of known length: a loop of that trip count, whose own
        // records (differentiated again) are of known length.
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
            // The k-th element of a segment is its flat array's element
            // `start + k`.
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
        Iter::Range {
            index: Binder::new(k, Ty::Int),
            lo,
            hi,
            step: None,
            rev,
            trip,
        }
    }

    /// A zipped loop over a segment: its range, with the element's
    /// position in the flat array computed from the index (no counter,
    /// which a residual's loop, in Linear B, could not carry).
    fn segment_zip(
        &mut self,
        iter: Iter,
        pre: &mut Vec<Stmt>,
        front: &mut Vec<Stmt>,
    ) -> Result<Iter, PassError> {
        let Iter::Zip {
            index,
            lo,
            hi,
            step,
            desc,
            elem,
            list,
            rev,
        } = iter
        else {
            return Err(self.err("a segment's loop that is no zip"));
        };
        let (start, end, flat) = self
            .segment(&list, pre)
            .ok_or_else(|| self.err("a zipped list that is no segment"))?;
        let at = self.position(&index.var, (&lo, step.as_ref()), (start, end, desc), front);
        front.push(self.read(&elem, flat, &at));
        Ok(Iter::Range {
            index,
            lo,
            hi,
            step,
            rev: desc != rev,
            trip: None,
        })
    }

    /// A zipped loop over a list: its range, with the list's position
    /// carried as a counter.
    fn zip(
        &mut self,
        iter: Iter,
        pre: &mut Vec<Stmt>,
        front: &mut Vec<Stmt>,
    ) -> (Iter, Option<Counter>) {
        let Iter::Zip {
            index,
            lo,
            hi,
            step,
            desc,
            elem,
            list,
            rev,
        } = iter
        else {
            return (iter, None);
        };
        let k = self.fresh.var("k");
        // Read backwards, the counter stays one past the element an
        // iteration reads: it starts at the length, and the position read,
        // one below, is its next value. No subtraction goes below zero
        // (counting from `len - 1`, the last iteration's `0 - 1`
        // overflowed, a panic in a debug build, and so did an empty list's
        // `len - 1`).
        let (k0, down) = if rev {
            let n = self.bind(pre, "n", Ty::Int, Expr::Len(list.clone()));
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
            (self.bind(pre, "k", Ty::Int, Expr::Int(0)), None)
        };
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
