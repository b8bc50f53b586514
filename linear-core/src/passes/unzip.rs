//! U: unzipping Linear A into Linear B (paper, section 6, Fig. 7).
//!
//! `unzip(P)` splits every function `f(v..; v̇..) -> (σ..; σ̇..)` into
//!
//! * `f.nl(v..;) -> (σ.., tape;)`, the forward pass: all of `f`'s
//!   non-linear work, returning the results and the tape, and
//! * `f.lin(tape; v̇..) -> (; σ̇..)`, the linear residual, which unpacks the
//!   tape and does only linear work (plus what the checkpoint policy chose
//!   to recompute).
//!
//! Rules, with `E; e'; ė'` the shared non-linear context, the non-linear
//! result and the linear residual of an expression:
//!
//! * URet, ULeaf, ULinLeaf: returns split by linearity; non-linear leaves go
//!   to `e'`, linear leaves to `ė'`.
//! * ULet: `E1, let v.. = e1' in E2; e2'; let v̇.. = ė1' in ė2'`. Because a
//!   block's statements are flattened into `E`, every non-linear binding of
//!   the function, however deeply nested, lands in the one context that
//!   `f.nl` runs and that the tape is taken from.
//! * UUnpack goes to `E`, ULinUnpack to the residual.
//! * UApp: `let u.., w = g.nl(v..;)` in `E`, `u..` as `e'`, and
//!   `g.lin(w; v̇..)` as `ė'`: a callee's tape travels as one variable.
//! * UDrop: `drop(e')` and `drop(ė')`.
//! * UDef: the tape is every non-linear variable bound by the parameters or
//!   `E` and read by `ė'`, in binding order, except literals: those are
//!   bound again in the residual (they cost nothing, so work is still
//!   preserved exactly), in functions, arms and loop bodies alike.
//! * UCase: each arm unzips on its own into `E_k; e_k'; ė_k'`. The forward
//!   case runs `E_k`, returns `e_k'` and the injection of arm k's residuals
//!   (the variables bound in the arm that `ė_k'` reads) as alternative k of
//!   a sum; the residual is a case on that sum whose arm k unpacks them and
//!   runs `ė_k'`. The tape of a conditional therefore records which arm ran
//!   and that arm's residuals only (an `enum` in generated Rust). Values
//!   from before the case that an arm's residual reads are saved once, by
//!   the enclosing rule, like any other. A case none of whose arms has
//!   linear work records nothing ([`Unzip::inactive_case`]).
//! * ULoop: the body unzips into `E_b; e_b'; ė_b'`. The forward loop runs
//!   `E_b` and `e_b'` with the non-linear state and collects, per
//!   iteration, the tuple of the variables bound in the iteration (index,
//!   state, `E_b`) that `ė_b'` reads: the tape of a loop is the list of its
//!   per-iteration residuals. The residual is a loop over that list
//!   carrying the linear state, unpacking each element and running `ė_b'`.
//!   Loop-invariant residuals (bound before the loop) are not per
//!   iteration: they are free in the residual loop, and saved once.
//!   The residual of a range loop whose record would hold the index (or
//!   integers computed from it, `i - 1`) to index arrays zips the range
//!   with the records instead ([`Iter::Zip`]) and computes those integers
//!   again: the record holds reals only ([`index_off_the_record`]).
//!   Under the recomputing policies, a value the record would hold that
//!   is the same in every iteration (`c[j]` read in a loop over `l`) is
//!   carried out of the loop as state instead and saved once, by the
//!   enclosing rule ([`invariant_saved`]); a range loop left with nothing
//!   to record keeps no list at all. A loop with no linear state (an
//!   integer search) has no linear results: it has no residual at all and
//!   records nothing, whatever its header ([`Unzip::inactive_loop`]).
//!   Neither that rule nor its counterpart for cases
//!   ([`Unzip::inactive_case`]) applies under [`Checkpoint::SaveAll`]:
//!   the residual they leave out can still drop zeros J made (free in
//!   generated code, charged by the cost model), and the paper's rule
//!   preserves work exactly.
//!
//! Checkpointing (section 6.1): ULet stays correct if a non-linear binding
//! is recomputed in the residual instead of saved. [`Checkpoint`] chooses,
//! binding by binding, from the last to the first; [`Checkpoint::SaveAll`]
//! is the paper's rule and preserves work exactly (Thm 6.2).
//!
//! Loops extend the choice to whole iterations. `LoopState` saves per
//! iteration the state from which the residual recomputes what it reads.
//! `Binomial` saves no per-iteration record: a loop's state (the carried
//! values its residual needs, closed under the step that computes them)
//! is saved once, at entry, with the trip count, and the residual is a
//! replay (`loop replay s from s0 count n next e`) whose `next` is the
//! slice of the body computing the next state. T reverses a replay like
//! any loop; in generated Rust, the reversed replay is `linear_ad`'s
//! `Replay`, which recomputes states from a bounded number of snapshots by
//! Griewank's binomial schedule. Both keep integers off the tape (their
//! Rust type is the user's code's to infer) and fall back, loop by loop,
//! to the next policy down where a slice would need one, or a Rust
//! constant: `Binomial` to `LoopState` to `SaveAll`.
//!
//! Arrays (invariant 11 of [`crate::check`]): an element read,
//! `index(a, i)` of an array parameter or of data (a `#[nondiff]` slice
//! bound to a Rust constant), costs nothing and is bound again in the
//! residual, like a literal; the residual then reads the array, which the
//! tape holds (by reference in generated code), and the index, never the
//! element. So does a read of a local array that nothing writes after it
//! is built and that a loop reads ([`crate::visit::final_arrays`]): the
//! tape holds that array once (moved, in generated code) instead of an
//! element per iteration (gmm's `exp(q)`, read for every point). A loop
//! over a range whose residual then needs nothing per iteration but its
//! index (a `usize`: it indexes arrays) keeps no per-iteration record: the
//! residual loops over the range again ([`Unzip::reread_loop`]).
//! [`Checkpoint::Adjoint`], the macro's default, also recomputes a loop's
//! residual slice from the index where that is all it would save, except
//! for math-library calls in the slice, whose results are recorded
//! ([`keep_costly`]). No residual recomputes a call of a `pinned` extern
//! ([`Extern::pinned`]): its arguments include Rust values of the
//! caller's prelude, which are not in scope there ([`recomputable`]).
//!
//! Input: a Linear A program that type-checks. Output: a Linear B program
//! that type-checks, two functions per input function, in input order.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::PassError;
use crate::ir::{Arm, Binder, Bit, Expr, Extern, Func, Iter, Loop, Prim, Program, Stmt, Ty, Var};
use crate::visit::{derived_name, free_vars, stmt_free_vars, use_counts};

/// Which non-linear intermediates the forward pass saves on the tape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checkpoint {
    /// Save every intermediate the residual reads (the paper's ULet): the
    /// residual does linear work only, and forward pass plus residual do
    /// exactly the work of the unzipped function.
    SaveAll,
    /// Recompute in the residual every intermediate that is cheap to
    /// compute (literals, tuples and the arithmetic primitives
    /// `+ - * neg abs signum min max le`) when doing so does not make the
    /// tape larger: its operands are already on the tape, or it has none.
    /// Trades a little residual work for tape memory; transcendental
    /// primitives are always saved.
    RecomputeCheap,
    /// As `SaveAll`, except that a loop saves, per iteration, only the
    /// state its residual needs (index, carried values) and the residual
    /// recomputes the body's non-linear intermediates from it, where that
    /// makes the tape smaller: the memory of a hand-written adjoint that
    /// stores the state and recomputes each step, for about the forward
    /// work once more in the reverse sweep.
    LoopState,
    /// As `LoopState`, except that a loop whose step and residual can be
    /// recomputed from its index and carried state saves no per-iteration
    /// record at all: only its initial state and trip count. The residual
    /// replays the states (an [`Iter::Replay`]); reversed, generated code
    /// keeps `snapshots` of them and recomputes the rest by Griewank's
    /// binomial schedule, so memory is bounded whatever the trip count. A
    /// loop whose step reads a Rust constant (inactive code, such as an
    /// element of a `#[nondiff]` slice) is not in scope in the residual and
    /// falls back to `LoopState`.
    Binomial { snapshots: u32 },
    /// As `SaveAll`, except that a loop over a range whose residual can be
    /// recomputed from its index alone, reading input arrays again (a
    /// reduction over arrays, `s += f(x[i], x[i + 1])`), saves nothing per
    /// iteration: its residual runs the range again and recomputes what it
    /// multiplies by, as a hand-written adjoint does. Work is then no
    /// longer preserved exactly (the recomputed slice runs twice), memory
    /// is constant in the trip count, except that the results of
    /// math-library calls (`exp`, `sin`, …) the residual would recompute
    /// are recorded per iteration. Also, in every loop body, what
    /// `RecomputeCheap` recomputes at the top level, and values the same
    /// in every iteration are saved once. The macro's default.
    Adjoint,
}

/// Names and signatures of an unzipped function, for UApp at call sites.
#[derive(Clone, Debug)]
pub struct Halves {
    pub nl: Var,
    pub lin: Var,
    pub nl_rets: Vec<Ty>,
    pub tape: Ty,
    /// The positions of the non-linear arguments the linear half takes
    /// again after the tape: an extern's arrays (see [`unzip`]).
    pub again: Vec<usize>,
}

/// Applies U to every function of `p`; the result holds `f.nl` and `f.lin`
/// for each `f`, in order.
pub fn unzip(p: &Program, policy: Checkpoint) -> Result<Program, PassError> {
    let mut out = Program::default();
    let mut halves = HashMap::default();
    // An extern `g` unzips to externs `g.nl` (its forward pass, returning an
    // opaque tape) and `g.lin` (its residual, reading that tape and, again,
    // the array arguments: a callee's tape does not hold the arrays it
    // reads, which the caller may own, so the caller saves them as
    // residuals of its own and passes them back; see `expand::calls`).
    for e in &p.externs {
        let again: Vec<usize> = (0..e.nl_params.len())
            .filter(|&k| matches!(e.nl_params[k], Ty::Array(..)))
            .collect();
        let mut lin_nl = vec![Ty::Tape(e.name.clone())];
        lin_nl.extend(again.iter().map(|&k| e.nl_params[k].clone()));
        let (nl, lin) = (
            derived_name(p, &e.name, "nl"),
            derived_name(p, &e.name, "lin"),
        );
        let tape = Ty::Tape(e.name.clone());
        let mut nl_rets = e.nl_rets.clone();
        nl_rets.push(tape.clone());
        out.externs.push(Extern {
            pinned: e.pinned,
            ..Extern::plain(nl.clone(), (e.nl_params.clone(), vec![]), (nl_rets, vec![]))
        });
        out.externs.push(Extern {
            borrowed: e.borrowed.clone(),
            pinned: e.pinned,
            ..Extern::plain(
                lin.clone(),
                (lin_nl, e.lin_params.clone()),
                (vec![], e.lin_rets.clone()),
            )
        });
        halves.insert(
            e.name.clone(),
            Halves {
                nl,
                lin,
                nl_rets: e.nl_rets.clone(),
                tape,
                again,
            },
        );
    }
    for f in &p.funcs {
        let (fnl, flin) = unzip_func(f, p, &halves, policy)?;
        halves.insert(
            f.name.clone(),
            Halves {
                nl: fnl.name.clone(),
                lin: flin.name.clone(),
                nl_rets: f.nl_rets.clone(),
                tape: fnl.nl_rets.last().cloned().unwrap_or(Ty::Tuple(vec![])),
                again: Vec::new(),
            },
        );
        out.funcs.push(fnl);
        out.funcs.push(flin);
    }
    Ok(out)
}

/// UDef for one function, given the halves of the functions before it.
pub fn unzip_func(
    f: &Func,
    p: &Program,
    halves: &HashMap<Var, Halves>,
    policy: Checkpoint,
) -> Result<(Func, Func), PassError> {
    let mut u = Unzip {
        halves,
        func: &f.name,
        fresh: crate::visit::Fresh::for_func(f),
        types: crate::visit::binder_types(f),
        policy,
        loop_index: None,
        inputs: f
            .nl_params
            .iter()
            .filter(|b| matches!(b.ty, Ty::Array(..)))
            .map(|b| b.var.clone())
            .chain(crate::visit::data_arrays(&f.body))
            .chain(crate::visit::final_arrays(f))
            .collect(),
        // The forward statements call the externs' forward halves.
        pinned: p
            .externs
            .iter()
            .filter(|e| e.pinned)
            .filter_map(|e| halves.get(&e.name).map(|h| h.nl.clone()))
            .collect(),
    };
    let mut sp = u.expr(&f.body)?;
    rematerialize(&mut sp, &u.inputs);
    let Split { ctx, nl, lin } = sp;
    let mut ctx = ctx;
    let mut lin = lin;
    let mut nl = nl;

    // Types of every non-linear variable the forward pass binds.
    let mut types: HashMap<Var, Ty> = HashMap::default();
    let mut order: Vec<Var> = Vec::new();
    for b in &f.nl_params {
        types.insert(b.var.clone(), b.ty.clone());
        order.push(b.var.clone());
    }
    for s in &ctx {
        record_types(s, &mut types, &mut order);
    }

    if policy == Checkpoint::RecomputeCheap {
        recompute_cheap(&mut ctx, &mut nl, &mut lin, &types, &u.inputs);
    }

    let needed: HashSet<Var> = free_vars(&lin).nl.into_iter().collect();
    let tape: Vec<Binder> = order
        .iter()
        .filter(|v| needed.contains(*v))
        .map(|v| Binder::new(v.clone(), types[v].clone()))
        .collect();
    let tape_ty = Ty::Tuple(tape.iter().map(|b| b.ty.clone()).collect());

    let name_nl = derived_name(p, &f.name, "nl");
    let name_lin = derived_name(p, &f.name, "lin");

    // f.nl: E; let u.. = e' in let t = tup(w..) in (u.., t;)
    let mut fwd = ctx;
    let results: Vec<Binder> = f
        .nl_rets
        .iter()
        .map(|t| Binder::new(u.fresh.var("r"), t.clone()))
        .collect();
    fwd.push(Stmt::Let {
        nl: results.clone(),
        lin: vec![],
        rhs: nl,
    });
    let t = u.fresh.var("tape");
    fwd.push(Stmt::Let {
        nl: vec![Binder::new(t.clone(), tape_ty.clone())],
        lin: vec![],
        rhs: Expr::Tup(tape.iter().map(|b| b.var.clone()).collect()),
    });
    let mut ret: Vec<Var> = results.into_iter().map(|b| b.var).collect();
    ret.push(t.clone());
    let mut nl_rets = f.nl_rets.clone();
    nl_rets.push(tape_ty.clone());
    let fnl = Func {
        name: name_nl,
        nl_params: f.nl_params.clone(),
        lin_params: vec![],
        nl_rets,
        lin_rets: vec![],
        body: Expr::block(
            fwd,
            Expr::Ret {
                nl: ret,
                lin: vec![],
            },
        ),
    };

    // f.lin(t; v̇..): unpack (w..) = t in ė'
    let mut flin = Func {
        name: name_lin,
        nl_params: vec![Binder::new(t.clone(), tape_ty)],
        lin_params: f.lin_params.clone(),
        nl_rets: vec![],
        lin_rets: f.lin_rets.clone(),
        body: Expr::block(
            vec![Stmt::Unpack {
                vars: tape,
                tuple: t,
            }],
            lin,
        ),
    };
    let mut fnl = fnl;
    if matches!(
        policy,
        Checkpoint::LoopState | Checkpoint::Binomial { .. } | Checkpoint::Adjoint
    ) {
        // A recomputed slice may bind values nothing in it reads, and the
        // forward pass no longer saves some it computes.
        crate::passes::transpose::drop_unused(&mut flin);
        crate::passes::transpose::drop_unused(&mut fnl);
    }
    Ok((fnl, flin))
}

fn record_types(s: &Stmt, types: &mut HashMap<Var, Ty>, order: &mut Vec<Var>) {
    // Only the top level: what nested cases and loops bind stays inside
    // them (their arms and iterations save it themselves).
    match s {
        Stmt::Let { nl, .. } | Stmt::Unpack { vars: nl, .. } => {
            for b in nl {
                types.insert(b.var.clone(), b.ty.clone());
                order.push(b.var.clone());
            }
        }
        Stmt::LinUnpack { .. } => {}
    }
}

/// Values that cost nothing to compute again (literals, elements of input
/// arrays, and copies of them) that the residual of a scope (a function,
/// an arm, a loop body) reads are bound again at the top of that residual
/// instead of saved: they cost nothing (nor in the cost model: U still
/// preserves work exactly), and a tape of them is memory traffic for
/// nothing; an array element is read again from the array, which the tape
/// holds by reference. The forward binding goes where nothing else reads
/// it.
fn rematerialize(sp: &mut Split, inputs: &HashSet<Var>) {
    // What costs nothing: literals, array reads, and copies of those (a
    // copy of anything else would only move what is saved).
    let mut free: HashSet<Var> = HashSet::default();
    for s in &sp.ctx {
        let source_free = match s {
            Stmt::Let {
                rhs: Expr::Ret { nl, .. },
                ..
            } => nl.iter().all(|v| free.contains(v)),
            Stmt::Let { .. } | Stmt::Unpack { .. } | Stmt::LinUnpack { .. } => true,
        };
        if let Some(v) = literal_binding(s, inputs).filter(|_| source_free) {
            free.insert(v.clone());
        }
    }
    let mut needed: HashSet<Var> = free_vars(&sp.lin).nl.into_iter().collect();
    let mut copy = vec![false; sp.ctx.len()];
    for (k, s) in sp.ctx.iter().enumerate().rev() {
        if literal_binding(s, inputs).is_some_and(|v| needed.contains(v) && free.contains(v)) {
            copy[k] = true;
            needed.extend(stmt_free_vars(s).nl);
        }
    }
    if !copy.contains(&true) {
        return;
    }
    let copies: Vec<Stmt> = sp
        .ctx
        .iter()
        .zip(&copy)
        .filter(|(_, c)| **c)
        .map(|(s, _)| s.clone())
        .collect();
    // The forward pass keeps what it still reads itself, to a fixed point
    // (a removed copy may leave what it copied unread).
    let mut keep = vec![true; sp.ctx.len()];
    loop {
        let mut used: HashMap<Var, usize> = HashMap::default();
        let mut count = |v: &Var, _: bool| *used.entry(v.clone()).or_insert(0) += 1;
        for (s, _) in sp.ctx.iter().zip(&keep).filter(|(_, k)| **k) {
            crate::visit::stmt_uses(s, &mut count);
        }
        crate::visit::for_each_use(&sp.nl, &mut count);
        let mut changed = false;
        for (k, s) in sp.ctx.iter().enumerate() {
            let unread = literal_binding(s, inputs).is_some_and(|v| !used.contains_key(v));
            if keep[k] && copy[k] && unread {
                keep[k] = false;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let mut it = keep.into_iter();
    sp.ctx.retain(|_| it.next().unwrap_or(true));
    let lin = std::mem::replace(&mut sp.lin, nothing());
    sp.lin = Expr::block(copies, lin);
}

/// The variable a statement binds to a value that costs nothing to
/// compute again: a literal (`let k: f64 = 0.5`), an element of an array
/// (`let x: f64 = index(a, i)`: the residual reads the array again, saving
/// the array, by reference, and the index instead of the element), or a
/// copy (`let y = (x;)`, which reads what it copies instead). Only
/// elements of `inputs`, the function's array parameters: an array the
/// function creates is written in place, and its elements are saved.
fn literal_binding<'s>(s: &'s Stmt, inputs: &HashSet<Var>) -> Option<&'s Var> {
    match s {
        Stmt::Let { nl, lin, rhs } if nl.len() == 1 && lin.is_empty() => {
            let copy = matches!(rhs, Expr::Ret { nl, lin } if nl.len() == 1 && lin.is_empty());
            let free = match rhs {
                Expr::Lit { .. } | Expr::Int(_) | Expr::Bool(_) => true,
                Expr::Index { arr, .. } => inputs.contains(arr),
                _ => false,
            };
            (copy || free).then(|| &nl[0].var)
        }
        Stmt::Let { .. } | Stmt::Unpack { .. } | Stmt::LinUnpack { .. } => None,
    }
}

/// `lin` without the bindings [`rematerialize`] and [`recompute_cheap`]
/// put at its top that a recomputed slice placed before it binds already
/// (both copy the forward binding, under the same name).
fn without_recomputed(slice: &[Stmt], lin: Expr, inputs: &HashSet<Var>) -> Expr {
    let mut bound = Vec::new();
    top_binders(slice, &mut bound);
    match lin {
        Expr::Block { mut stmts, tail } => {
            stmts.retain(|s| {
                let copied = match s {
                    Stmt::Let { nl, lin, rhs } if nl.len() == 1 && lin.is_empty() => {
                        literal_binding(s, inputs).is_some() || cheap(rhs)
                    }
                    Stmt::Let { .. } | Stmt::Unpack { .. } | Stmt::LinUnpack { .. } => false,
                };
                let mut again = false;
                crate::visit::stmt_binds(s, &mut |v, _| again |= bound.contains(v));
                !(copied && again)
            });
            Expr::block(stmts, *tail)
        }
        other => other,
    }
}

/// `E; e'; ė'` of one expression.
struct Split {
    ctx: Vec<Stmt>,
    nl: Expr,
    lin: Expr,
}

fn nothing() -> Expr {
    Expr::Ret {
        nl: vec![],
        lin: vec![],
    }
}

fn is_nothing(e: &Expr) -> bool {
    matches!(e, Expr::Ret { nl, lin } if nl.is_empty() && lin.is_empty())
}

/// UCase's split: the forward case on `scrut` with `arms`, bound to
/// `binders` (its `results`, then its tape if it has one), returning the
/// results, and the residual `lin`.
fn case_split(
    scrut: &Var,
    binders: Vec<Binder>,
    results: Vec<Binder>,
    arms: Vec<Arm>,
    lin: Expr,
) -> Split {
    Split {
        ctx: vec![Stmt::Let {
            nl: binders,
            lin: vec![],
            rhs: Expr::Case {
                scrut: scrut.clone(),
                arms,
            },
        }],
        nl: Expr::Ret {
            nl: results.into_iter().map(|b| b.var).collect(),
            lin: vec![],
        },
        lin,
    }
}

/// Whether a residual does nothing: it reads no linear variable and has
/// no linear result, so by linearity it computes the zero of no space.
fn inert(lin: &Expr) -> bool {
    let mut tail = lin;
    while let Expr::Block { tail: t, .. } = tail {
        tail = t;
    }
    matches!(tail, Expr::Ret { lin, .. } if lin.is_empty()) && free_vars(lin).lin.is_empty()
}

struct Unzip<'a> {
    halves: &'a HashMap<Var, Halves>,
    func: &'a Var,
    fresh: crate::visit::Fresh,
    /// Types of every variable of the function, and of those U binds.
    types: HashMap<Var, Ty>,
    policy: Checkpoint,
    /// The index of the range loop being unzipped, if it is one: the one
    /// integer a loop's saved state may hold (when it indexes arrays).
    loop_index: Option<Var>,
    /// The function's array parameters and the data it binds: read-only,
    /// so their elements are read again in the residual (the tape holds
    /// the array by reference).
    inputs: HashSet<Var>,
    /// The externs whose calls pass values of the caller's prelude
    /// ([`Extern::pinned`]): never recomputed in the residual.
    pinned: HashSet<Var>,
}

/// The variables a run of forward-pass statements binds at its top level,
/// in order.
fn top_binders(ctx: &[Stmt], out: &mut Vec<Var>) {
    for s in ctx {
        crate::visit::stmt_binds(s, &mut |v, linear| {
            if !linear {
                out.push(v.clone());
            }
        });
    }
}

impl Unzip<'_> {
    fn expr(&mut self, e: &Expr) -> Result<Split, PassError> {
        let nl_leaf = |e: &Expr| Split {
            ctx: vec![],
            nl: e.clone(),
            lin: nothing(),
        };
        let lin_leaf = |e: &Expr| Split {
            ctx: vec![],
            nl: nothing(),
            lin: e.clone(),
        };
        Ok(match e {
            Expr::Block { stmts, tail } => {
                let mut ctx = Vec::new();
                let mut lin_stmts = Vec::new();
                for s in stmts {
                    match s {
                        Stmt::Let { nl, lin, rhs } => {
                            let sp = self.expr(rhs)?;
                            ctx.extend(sp.ctx);
                            if !nl.is_empty() || !is_nothing(&sp.nl) {
                                ctx.push(Stmt::Let {
                                    nl: nl.clone(),
                                    lin: vec![],
                                    rhs: sp.nl,
                                });
                            }
                            if !lin.is_empty() || !is_nothing(&sp.lin) {
                                lin_stmts.push(Stmt::Let {
                                    nl: vec![],
                                    lin: lin.clone(),
                                    rhs: sp.lin,
                                });
                            }
                        }
                        Stmt::Unpack { .. } => ctx.push(s.clone()),
                        Stmt::LinUnpack { .. } => lin_stmts.push(s.clone()),
                    }
                }
                let sp = self.expr(tail)?;
                ctx.extend(sp.ctx);
                Split {
                    ctx,
                    nl: sp.nl,
                    lin: Expr::block(lin_stmts, sp.lin),
                }
            }
            Expr::Ret { nl, lin } => Split {
                ctx: vec![],
                nl: Expr::Ret {
                    nl: nl.clone(),
                    lin: vec![],
                },
                lin: Expr::Ret {
                    nl: vec![],
                    lin: lin.clone(),
                },
            },
            Expr::App { func, nl, lin } => {
                let Some(h) = self.halves.get(func) else {
                    return Err(PassError::new(
                        self.func,
                        &format!("call to `{func}`, which is not defined before this function"),
                    ));
                };
                let us: Vec<Binder> = h
                    .nl_rets
                    .iter()
                    .map(|t| Binder::new(self.fresh.var("u"), t.clone()))
                    .collect();
                let w = self.fresh.var("w");
                for b in &us {
                    self.types.insert(b.var.clone(), b.ty.clone());
                }
                self.types.insert(w.clone(), h.tape.clone());
                let mut binders = us.clone();
                binders.push(Binder::new(w.clone(), h.tape.clone()));
                Split {
                    ctx: vec![Stmt::Let {
                        nl: binders,
                        lin: vec![],
                        rhs: Expr::App {
                            func: h.nl.clone(),
                            nl: nl.clone(),
                            lin: vec![],
                        },
                    }],
                    nl: Expr::Ret {
                        nl: us.into_iter().map(|b| b.var).collect(),
                        lin: vec![],
                    },
                    lin: Expr::App {
                        func: h.lin.clone(),
                        nl: std::iter::once(w)
                            .chain(h.again.iter().map(|&k| nl[k].clone()))
                            .collect(),
                        lin: lin.clone(),
                    },
                }
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
            | Expr::Pop { .. } => nl_leaf(e),
            Expr::Case { scrut, arms } => self.case(scrut, arms)?,
            Expr::Loop(l) => self.loop_(l)?,
            Expr::LinZero(_)
            | Expr::LinTup(_)
            | Expr::LinAdd(..)
            | Expr::LinNeg(_)
            | Expr::LinScale(..)
            | Expr::Dup(_)
            | Expr::LinIndex { .. }
            | Expr::LinAccum { .. }
            | Expr::LinZeros { .. }
            | Expr::LinSet { .. }
            | Expr::LinFree { .. }
            | Expr::LinPush { .. }
            | Expr::LinPop { .. } => lin_leaf(e),
            Expr::Drop(inner) => {
                let sp = self.expr(inner)?;
                let drop = |e: Expr| {
                    if is_nothing(&e) {
                        e
                    } else {
                        Expr::Drop(Box::new(e))
                    }
                };
                Split {
                    ctx: sp.ctx,
                    nl: drop(sp.nl),
                    lin: drop(sp.lin),
                }
            }
        })
    }
}

impl Unzip<'_> {
    fn err(&self, msg: &str) -> PassError {
        PassError::new(self.func, msg)
    }

    fn ty(&self, v: &Var) -> Result<Ty, PassError> {
        super::type_of(&self.types, self.func, v)
    }

    /// The non-linear results of a forward-pass expression as variables,
    /// binding them first (in `ctx`) unless it is a return.
    fn results(&mut self, ctx: &mut Vec<Stmt>, e: Expr) -> Result<Vec<Var>, PassError> {
        if let Expr::Ret { nl, lin } = &e {
            if lin.is_empty() {
                return Ok(nl.clone());
            }
        }
        let tys = self.leaf_types(&e)?;
        let bs: Vec<Binder> = tys
            .into_iter()
            .map(|t| {
                let v = self.fresh.var("r");
                self.types.insert(v.clone(), t.clone());
                Binder::new(v, t)
            })
            .collect();
        ctx.push(Stmt::Let {
            nl: bs.clone(),
            lin: vec![],
            rhs: e,
        });
        Ok(bs.into_iter().map(|b| b.var).collect())
    }

    /// Result types of a non-linear leaf (what U leaves as `e'`).
    fn leaf_types(&self, e: &Expr) -> Result<Vec<Ty>, PassError> {
        super::leaf_types(&self.types, self.func, e)?
            .ok_or_else(|| self.err("unexpected non-linear result form after U"))
    }

    /// The residuals a linear expression reads among the variables `bound`
    /// (in order), as binders: what one arm or iteration saves.
    fn residuals(&self, lin: &Expr, bound: &[Var]) -> Result<Vec<Binder>, PassError> {
        let needed: HashSet<Var> = free_vars(lin).nl.into_iter().collect();
        bound
            .iter()
            .filter(|v| needed.contains(*v))
            .map(|v| Ok(Binder::new(v.clone(), self.ty(v)?)))
            .collect()
    }

    fn tuple(&mut self, ctx: &mut Vec<Stmt>, parts: &[Binder]) -> (Var, Ty) {
        let t = self.fresh.var("t");
        let ty = Ty::Tuple(parts.iter().map(|b| b.ty.clone()).collect());
        self.types.insert(t.clone(), ty.clone());
        ctx.push(Stmt::Let {
            nl: vec![Binder::new(t.clone(), ty.clone())],
            lin: vec![],
            rhs: Expr::Tup(parts.iter().map(|b| b.var.clone()).collect()),
        });
        (t, ty)
    }

    /// UCase.
    fn case(&mut self, scrut: &Var, arms: &[Arm]) -> Result<Split, PassError> {
        let mut splits = Vec::new();
        for a in arms {
            if let Some(b) = &a.bind {
                self.types.insert(b.var.clone(), b.ty.clone());
            }
            let mut sp = self.expr(&a.body)?;
            rematerialize(&mut sp, &self.inputs);
            let mut bound: Vec<Var> = a.bind.iter().map(|b| b.var.clone()).collect();
            top_binders(&sp.ctx, &mut bound);
            let saved = self.residuals(&sp.lin, &bound)?;
            splits.push((sp, saved));
        }
        if self.policy != Checkpoint::SaveAll && splits.iter().all(|(sp, _)| inert(&sp.lin)) {
            return self.inactive_case(scrut, arms, splits);
        }
        let sum = Ty::Sum(
            splits
                .iter()
                .map(|(_, w)| Ty::Tuple(w.iter().map(|b| b.ty.clone()).collect()))
                .collect(),
        );
        let tape = self.fresh.var("tape");
        self.types.insert(tape.clone(), sum.clone());
        let (mut fwd_arms, mut lin_arms, mut result_tys) = (Vec::new(), Vec::new(), None);
        for (k, ((sp, saved), a)) in splits.into_iter().zip(arms).enumerate() {
            let mut ctx = sp.ctx;
            let rs = self.results(&mut ctx, sp.nl)?;
            if result_tys.is_none() {
                result_tys = Some(
                    rs.iter()
                        .map(|v| self.ty(v))
                        .collect::<Result<Vec<_>, _>>()?,
                );
            }
            let (t, _) = self.tuple(&mut ctx, &saved);
            let inj = self.fresh.var("tape");
            ctx.push(Stmt::Let {
                nl: vec![Binder::new(inj.clone(), sum.clone())],
                lin: vec![],
                rhs: Expr::Inj {
                    sum: sum.clone(),
                    tag: k,
                    val: t,
                },
            });
            let mut ret = rs;
            ret.push(inj);
            fwd_arms.push(Arm {
                bind: a.bind.clone(),
                body: Expr::block(
                    ctx,
                    Expr::Ret {
                        nl: ret,
                        lin: vec![],
                    },
                ),
            });
            let elem = self.fresh.var("t");
            let elem_ty = Ty::Tuple(saved.iter().map(|b| b.ty.clone()).collect());
            lin_arms.push(Arm {
                bind: Some(Binder::new(elem.clone(), elem_ty)),
                body: Expr::block(
                    vec![Stmt::Unpack {
                        vars: saved,
                        tuple: elem,
                    }],
                    sp.lin,
                ),
            });
        }
        let results = self.fresh_binders("r", result_tys.unwrap_or_default());
        let mut binders = results.clone();
        binders.push(Binder::new(tape.clone(), sum));
        let lin = Expr::Case {
            scrut: tape,
            arms: lin_arms,
        };
        Ok(case_split(scrut, binders, results, fwd_arms, lin))
    }

    /// UCase for a case whose arms have no linear work: no linear result
    /// and no linear variable read (an integer `if`, a branch on constants
    /// whose tangents simplify left as zeros). Its residual would compute
    /// nothing, so it gets none and the forward case injects no tag; what
    /// each arm's residual read is dropped in that arm instead, as in
    /// [`Self::inactive_loop`].
    fn inactive_case(
        &mut self,
        scrut: &Var,
        arms: &[Arm],
        splits: Vec<(Split, Vec<Binder>)>,
    ) -> Result<Split, PassError> {
        let (mut fwd_arms, mut result_tys) = (Vec::new(), None);
        for ((sp, _), a) in splits.into_iter().zip(arms) {
            let mut ctx = sp.ctx;
            ctx.extend(free_vars(&sp.lin).nl.iter().map(Stmt::drop_nl));
            let rs = self.results(&mut ctx, sp.nl)?;
            if result_tys.is_none() {
                let tys = rs.iter().map(|v| self.ty(v));
                result_tys = Some(tys.collect::<Result<Vec<_>, _>>()?);
            }
            fwd_arms.push(Arm {
                bind: a.bind.clone(),
                body: Expr::block(
                    ctx,
                    Expr::Ret {
                        nl: rs,
                        lin: vec![],
                    },
                ),
            });
        }
        let results = self.fresh_binders("r", result_tys.unwrap_or_default());
        Ok(case_split(
            scrut,
            results.clone(),
            results,
            fwd_arms,
            nothing(),
        ))
    }

    /// ULoop. A replay (only in U's own output, met when differentiating
    /// again) is first rewritten into loops this rule covers
    /// ([`super::unreplay`]).
    fn loop_(&mut self, l: &Loop) -> Result<Split, PassError> {
        if let Some(e) = super::unreplay(l, &mut self.fresh, &mut self.types) {
            return self.expr(&e);
        }
        let mut bound: Vec<Var> = l
            .iter
            .binders()
            .into_iter()
            .map(|b| b.var.clone())
            .collect();
        bound.extend(l.nl.iter().map(|(b, _)| b.var.clone()));
        let mut sp = self.expr(&l.body)?;
        if self.policy != Checkpoint::SaveAll && l.lin.is_empty() {
            return self.inactive_loop(l, sp);
        }
        rematerialize(&mut sp, &self.inputs);
        if self.policy == Checkpoint::Adjoint {
            // A record entry that costs one operation to compute again
            // from what the record holds anyway (`1 - c` beside `c`).
            recompute_cheap(
                &mut sp.ctx,
                &mut sp.nl,
                &mut sp.lin,
                &self.types,
                &self.inputs,
            );
        }
        top_binders(&sp.ctx, &mut bound);
        let mut saved = self.residuals(&sp.lin, &bound)?;
        if let Checkpoint::Binomial { snapshots } = self.policy {
            if !saved.is_empty() {
                if let Some(split) = self.binomial(l, &sp, &bound, snapshots)? {
                    return Ok(split);
                }
            }
        }
        let mut recompute = Vec::new();
        self.loop_index = match &l.iter {
            Iter::Range { index, .. } | Iter::Zip { index, .. } => Some(index.var.clone()),
            Iter::Each { .. } | Iter::While { .. } | Iter::Replay { .. } => None,
        };
        let choice = match self.policy {
            Checkpoint::LoopState | Checkpoint::Binomial { .. } | Checkpoint::Adjoint => {
                self.loop_state(&sp.ctx, &sp.lin, &bound, &saved)?
            }
            Checkpoint::SaveAll | Checkpoint::RecomputeCheap => None,
        };
        if let Some((state, slice)) = choice {
            // `Adjoint` recomputes only where nothing per iteration is left
            // to save but the index (see `reread_loop`).
            let index_only = counted_by_index(l, &state, &sp.lin, &slice);
            if self.policy != Checkpoint::Adjoint || index_only {
                saved = state;
                recompute = slice;
                if self.policy == Checkpoint::Adjoint {
                    keep_costly(
                        &mut saved,
                        &mut recompute,
                        &sp.lin,
                        (&self.inputs, &self.pinned),
                    );
                }
            }
        }
        if counted_by_index(l, &saved, &sp.lin, &recompute) {
            return self.reread_loop(l, sp, recompute);
        }
        let zipped = index_off_the_record(l, &sp.ctx, &sp.lin, &mut saved, &mut recompute);
        // The paper's rule (work preserved exactly) saves per iteration.
        let invariant = match self.policy {
            Checkpoint::SaveAll | Checkpoint::RecomputeCheap => vec![],
            Checkpoint::LoopState | Checkpoint::Binomial { .. } | Checkpoint::Adjoint => {
                invariant_saved(l, &sp.ctx, &mut saved)
            }
        };
        self.recording_loop(l, sp, (saved, recompute, invariant), zipped)
    }

    /// ULoop for a loop that carries no linear state (an integer search,
    /// a loop over inactive values only): it has no linear results, so its
    /// residual would compute nothing anyone reads. It gets none, and its
    /// forward loop records nothing; before, a `while` loop's record
    /// counted its iterations for a residual loop that did nothing (`det`'s
    /// column search). What the dropped residual read is dropped in the
    /// forward body instead (non-linear variables are used, Fig. 3).
    fn inactive_loop(&mut self, l: &Loop, sp: Split) -> Result<Split, PassError> {
        let mut ctx = sp.ctx;
        let read = free_vars(&sp.lin).nl;
        ctx.extend(read.iter().map(Stmt::drop_nl));
        let (ctx, nl) = self.unrecorded_forward(l, ctx, sp.nl)?;
        Ok(Split {
            ctx,
            nl,
            lin: nothing(),
        })
    }

    /// The forward loop of `l`, running `ctx` and returning `nl` per
    /// iteration and recording nothing, bound in a context of its own:
    /// that context and the loop's results.
    fn unrecorded_forward(
        &mut self,
        l: &Loop,
        mut ctx: Vec<Stmt>,
        nl: Expr,
    ) -> Result<(Vec<Stmt>, Expr), PassError> {
        let ret = self.results(&mut ctx, nl)?;
        let fwd = forward_loop(l, l.nl.clone(), l.collect.clone(), ctx, ret);
        let res = self.fresh_binders("s", fwd.result_types().0);
        let results = res.iter().map(|b| b.var.clone()).collect();
        Ok((
            vec![Stmt::Let {
                nl: res,
                lin: vec![],
                rhs: Expr::Loop(Box::new(fwd)),
            }],
            Expr::Ret {
                nl: results,
                lin: vec![],
            },
        ))
    }

    /// ULoop's forward loop, collecting `saved` per iteration and carrying
    /// the `invariant` values out, and its residual: a loop over the
    /// records (zipped with the range if `zipped`), or over the range
    /// alone where nothing is left to record. Each invariant value is
    /// carried as non-linear state from a placeholder, which only a loop
    /// running no iteration returns (and its residual, running none
    /// either, never reads).
    fn recording_loop(
        &mut self,
        l: &Loop,
        sp: Split,
        (saved, recompute, invariant): (Vec<Binder>, Vec<Stmt>, Vec<Binder>),
        zipped: bool,
    ) -> Result<Split, PassError> {
        let record = match &l.iter {
            Iter::Range { index, .. } => {
                !saved.is_empty() || !indexes(&index.var, &sp.lin, &recompute)
            }
            Iter::Each { .. } | Iter::Zip { .. } | Iter::While { .. } | Iter::Replay { .. } => true,
        };
        let mut ctx = sp.ctx;
        let mut ret = self.results(&mut ctx, sp.nl)?;
        let (k, h) = (l.nl.len(), invariant.len());
        let mut pre = Vec::new();
        let mut state = l.nl.clone();
        for (n, b) in invariant.iter().enumerate() {
            let placeholder = match &b.ty {
                Ty::Real(float) => Expr::Lit {
                    value: 0.0,
                    float: *float,
                },
                _ => Expr::Bool(false),
            };
            let init = self.bind(&mut pre, "h", b.ty.clone(), placeholder);
            let carried = Binder::new(self.fresh.var("h"), b.ty.clone());
            ctx.insert(0, Stmt::drop_nl(&carried.var));
            state.push((carried, init));
            ret.insert(k + n, b.var.clone());
        }
        let mut collect = l.collect.clone();
        let elem_ty = if record {
            let (t, elem_ty) = self.tuple(&mut ctx, &saved);
            ret.push(t);
            collect.push(elem_ty.clone());
            Some(elem_ty)
        } else {
            None
        };
        let fwd = forward_loop(l, state, collect, ctx, ret);
        let res = self.fresh_binders("s", fwd.result_types().0);
        let mut head = Vec::new();
        let iter = match elem_ty {
            Some(elem_ty) => {
                let elem = Binder::new(self.fresh.var("t"), elem_ty);
                head.push(Stmt::Unpack {
                    vars: saved,
                    tuple: elem.var.clone(),
                });
                record_iter(&l.iter, zipped, elem, res[res.len() - 1].var.clone())
            }
            None => l.iter.clone(),
        };
        for (b, last) in invariant.into_iter().zip(&res[k..k + h]) {
            head.push(Stmt::Let {
                nl: vec![b],
                lin: vec![],
                rhs: Expr::Ret {
                    nl: vec![last.var.clone()],
                    lin: vec![],
                },
            });
        }
        let lin = without_recomputed(&recompute, sp.lin, &self.inputs);
        head.extend(recompute);
        let residual = Loop {
            iter,
            nl: vec![],
            lin: l.lin.clone(),
            collect: vec![],
            zero_skip: false,
            body: Expr::block(head, lin),
        };
        pre.push(Stmt::Let {
            nl: res.clone(),
            lin: vec![],
            rhs: Expr::Loop(Box::new(fwd)),
        });
        let results = res[..k]
            .iter()
            .chain(&res[k + h..res.len() - usize::from(record)]);
        Ok(Split {
            ctx: pre,
            nl: Expr::Ret {
                nl: results.map(|b| b.var.clone()).collect(),
                lin: vec![],
            },
            lin: Expr::Loop(Box::new(residual)),
        })
    }
}

/// The header of a residual loop over per-iteration records `list`: zipped
/// with the forward loop's range if `zipped`.
fn record_iter(forward: &Iter, zipped: bool, elem: Binder, list: Var) -> Iter {
    match (zipped, forward) {
        (
            true,
            Iter::Range {
                index,
                lo,
                hi,
                step,
                rev,
                ..
            },
        ) => Iter::Zip {
            index: index.clone(),
            lo: lo.clone(),
            hi: hi.clone(),
            step: step.clone(),
            desc: *rev,
            elem,
            list,
            rev: false,
        },
        _ => Iter::Each {
            elem,
            list,
            rev: false,
        },
    }
}

/// The values a loop's record would hold that are the same in every
/// iteration: reals and booleans computed (purely) from values bound
/// outside the loop alone, such as `centred[j]` read in a loop over `l`.
/// They leave the record (`saved`); the forward loop carries each out as
/// state, so that the enclosing rule saves it once, and the residual reads
/// that. An element of an array the function overwrites later cannot be
/// read again in the residual; saved per iteration, it would cost a record
/// entry per iteration where one per loop will do.
fn invariant_saved(l: &Loop, ctx: &[Stmt], saved: &mut Vec<Binder>) -> Vec<Binder> {
    let inner = iteration_vars(l, ctx);
    let mut invariant: HashSet<Var> = HashSet::default();
    for st in ctx {
        let Stmt::Let { nl, lin, rhs } = st else {
            continue;
        };
        let pure = matches!(
            rhs,
            Expr::Prim { .. }
                | Expr::Index { .. }
                | Expr::Lit { .. }
                | Expr::Int(_)
                | Expr::Bool(_)
        );
        let reads = free_vars(rhs).nl;
        let outer = reads
            .iter()
            .all(|v| !inner.contains(v) || invariant.contains(v));
        if let ([b], true, true, true) = (nl.as_slice(), lin.is_empty(), pure, outer) {
            invariant.insert(b.var.clone());
        }
    }
    let (out, keep): (Vec<Binder>, Vec<Binder>) = std::mem::take(saved)
        .into_iter()
        .partition(|b| invariant.contains(&b.var) && matches!(b.ty, Ty::Real(_) | Ty::Bool));
    *saved = keep;
    out
}

impl Unzip<'_> {
    /// ULoop for a loop over a range whose residual needs nothing per
    /// iteration but the index (it reads input arrays again, and
    /// recomputes the rest): no per-iteration record at all. The residual
    /// loops over the same range, whose bounds the enclosing rule saves,
    /// as a hand-written adjoint runs its index backwards.
    fn reread_loop(
        &mut self,
        l: &Loop,
        sp: Split,
        recompute: Vec<Stmt>,
    ) -> Result<Split, PassError> {
        let (ctx, nl) = self.unrecorded_forward(l, sp.ctx, sp.nl)?;
        let residual = Loop {
            iter: l.iter.clone(),
            nl: vec![],
            lin: l.lin.clone(),
            collect: vec![],
            zero_skip: false,
            body: Expr::block(
                recompute.clone(),
                without_recomputed(&recompute, sp.lin, &self.inputs),
            ),
        };
        Ok(Split {
            ctx,
            nl,
            lin: Expr::Loop(Box::new(residual)),
        })
    }

    /// LoopState's choice for one loop body: the values to save per
    /// iteration instead of `saved` (what the slice of the body the
    /// residual needs reads, among the variables `bound` in the iteration)
    /// and that slice, to recompute in the residual; `None` where that
    /// would not save memory or would save an integer. The slice's inner binders get fresh names:
    /// the forward code it copies may appear in the residual too (as the
    /// forward part of an enclosing loop's recomputed slice).
    #[allow(clippy::type_complexity)]
    fn loop_state(
        &mut self,
        ctx: &[Stmt],
        lin: &Expr,
        bound: &[Var],
        saved: &[Binder],
    ) -> Result<Option<(Vec<Binder>, Vec<Stmt>)>, PassError> {
        let (slice, reads) = backward_slice(ctx, lin, (&self.inputs, &self.pinned));
        // The slice's inputs may be bound anywhere in the body (results of
        // statements it cannot recompute, such as array reads): their
        // types, for the saved record.
        for s in ctx {
            crate::visit::stmt_binds_typed(s, &mut |b| {
                self.types.insert(b.var.clone(), b.ty.clone());
            });
        }
        // What the slice and the residual read that the slice does not
        // compute: header values, and results of statements that read Rust
        // constants (not in scope where the residual runs).
        let mut computed = Vec::new();
        top_binders(&slice, &mut computed);
        let inputs: Vec<Var> = bound
            .iter()
            .filter(|v| !computed.contains(v))
            .cloned()
            .collect();
        let state = self.residuals(&Expr::block(slice.clone(), lin.clone()), &inputs)?;
        let size = |bs: &[Binder]| bs.iter().map(|b| b.ty.scalars()).sum::<u64>();
        let lists = |bs: &[Binder]| {
            bs.iter()
                .any(|b| matches!(b.ty, Ty::List(..) | Ty::Sum(_) | Ty::Tape(_)))
        };
        // Integers stay on the forward side (see `saveable`), except an
        // index the residual reads arrays at: a `usize`.
        let index = |b: &Binder| index_of(&self.loop_index, b) && indexes(&b.var, lin, &slice);
        if slice.is_empty()
            || reads.is_empty()
            || state.iter().any(|b| !saveable(&b.ty) && !index(b))
            || !(size(&state) < size(saved) || lists(saved))
        {
            return Ok(None);
        }
        let slice = slice
            .into_iter()
            .map(|mut st| {
                if let Stmt::Let { rhs, .. } = &mut st {
                    crate::visit::freshen_bound(rhs, &mut self.fresh);
                }
                st
            })
            .collect();
        Ok(Some((state, slice)))
    }
}

impl Unzip<'_> {
    /// One fresh variable per type, with its type recorded.
    fn fresh_binders(&mut self, hint: &str, tys: Vec<Ty>) -> Vec<Binder> {
        tys.into_iter()
            .map(|t| {
                let v = self.fresh.var(hint);
                self.types.insert(v.clone(), t.clone());
                Binder::new(v, t)
            })
            .collect()
    }

    /// `let v: ty = rhs` appended to `out`, with `v` fresh.
    fn bind(&mut self, out: &mut Vec<Stmt>, hint: &str, ty: Ty, rhs: Expr) -> Var {
        let v = self.fresh.var(hint);
        self.types.insert(v.clone(), ty.clone());
        out.push(Stmt::Let {
            nl: vec![Binder::new(v.clone(), ty)],
            lin: vec![],
            rhs,
        });
        v
    }

    /// ULoop under [`Checkpoint::Binomial`]: the state of an iteration is
    /// the carried non-linear values the residual needs, directly or to
    /// compute the next state's. The forward loop runs as before and also
    /// counts its iterations; the tape keeps the initial state and the
    /// count, nothing per iteration. The residual replays the states with
    /// the slice of the body that computes the next state, and in each
    /// iteration recomputes from the state the slice its linear part reads.
    ///
    /// `None` (the caller falls back to `LoopState`) for list loops, where
    /// a slice needs a value of the iteration that is not recomputable
    /// from the state (the result of a Rust constant), and where the state
    /// would hold an integer (the loop index included): generated code
    /// keeps each integer in the type the user's code gives it, which a
    /// tape field cannot name.
    fn binomial(
        &mut self,
        l: &Loop,
        sp: &Split,
        bound: &[Var],
        snapshots: u32,
    ) -> Result<Option<Split>, PassError> {
        if matches!(
            l.iter,
            Iter::Each { .. } | Iter::Zip { .. } | Iter::Replay { .. }
        ) {
            return Ok(None);
        }
        let mut ctx = sp.ctx.clone();
        let rs = self.results(&mut ctx, sp.nl.clone())?;
        let next_x = &rs[..l.nl.len()];
        let Some(state) = replay_state(
            l,
            &ctx,
            next_x,
            &sp.lin,
            bound,
            (&self.inputs, &self.pinned),
        ) else {
            return Ok(None);
        };
        let header: Vec<Binder> = state.iter().map(|&p| l.nl[p].0.clone()).collect();
        let state_ty = Ty::Tuple(header.iter().map(|b| b.ty.clone()).collect());
        let next_vals: Vec<Var> = state.iter().map(|&p| next_x[p].clone()).collect();
        let next_ret = Expr::Ret {
            nl: next_vals.clone(),
            lin: vec![],
        };
        let (step_slice, _) = backward_slice(&ctx, &next_ret, (&self.inputs, &self.pinned));
        let (lin_slice, _) = backward_slice(&ctx, &sp.lin, (&self.inputs, &self.pinned));

        let mut pre = Vec::new();
        let init = state.iter().map(|&p| l.nl[p].1.clone()).collect();
        let s0 = self.bind(&mut pre, "s", state_ty.clone(), Expr::Tup(init));
        let (res, count) = self.counting_loop(l, ctx, &rs, &mut pre);

        // Residual: replay the states, recompute what the linear part reads.
        let st = self.fresh.var("st");
        self.types.insert(st.clone(), state_ty.clone());
        let unpack = Stmt::Unpack {
            vars: header,
            tuple: st.clone(),
        };
        let mut next_stmts = vec![unpack.clone()];
        next_stmts.extend(step_slice);
        let mut next = Expr::block(next_stmts, Expr::Tup(next_vals));
        crate::visit::freshen_bound(&mut next, &mut self.fresh);
        let mut body = vec![unpack];
        body.extend(lin_slice.into_iter().map(|mut st| {
            if let Stmt::Let { rhs, .. } = &mut st {
                crate::visit::freshen_bound(rhs, &mut self.fresh);
            }
            st
        }));
        for e in [&next, &Expr::block(body.clone(), nothing())] {
            crate::visit::for_each_binder(e, &mut |b, _| {
                self.types.insert(b.var.clone(), b.ty.clone());
            });
        }
        let residual = Loop {
            iter: Iter::Replay {
                state: Binder::new(st, state_ty),
                init: s0,
                count,
                next: Box::new(next),
                snapshots,
                rev: false,
            },
            nl: vec![],
            lin: l.lin.clone(),
            collect: vec![],
            zero_skip: false,
            body: Expr::block(
                body.clone(),
                without_recomputed(&body, sp.lin.clone(), &self.inputs),
            ),
        };
        Ok(Some(Split {
            ctx: pre,
            nl: Expr::Ret {
                nl: res,
                lin: vec![],
            },
            lin: Expr::Loop(Box::new(residual)),
        }))
    }

    /// The forward loop of [`Unzip::binomial`], appended to `pre`: `l`
    /// with body `ctx` returning `rs` (next state, then collected values)
    /// and also counting its iterations. Returns the loop's results as
    /// `l` has them, and the count.
    fn counting_loop(
        &mut self,
        l: &Loop,
        mut ctx: Vec<Stmt>,
        rs: &[Var],
        pre: &mut Vec<Stmt>,
    ) -> (Vec<Var>, Var) {
        let zero = self.bind(pre, "zero", Ty::Int, Expr::Int(0));
        let cnt = self.fresh.var("count");
        self.types.insert(cnt.clone(), Ty::Int);
        let one = self.bind(&mut ctx, "one", Ty::Int, Expr::Int(1));
        let add = Expr::Prim {
            prim: Prim::IAdd,
            args: vec![cnt.clone(), one],
        };
        let cnt_next = self.bind(&mut ctx, "i", Ty::Int, add);
        let mut carry = l.nl.clone();
        carry.push((Binder::new(cnt, Ty::Int), zero));
        let (next_x, collected) = rs.split_at(l.nl.len());
        let ret: Vec<Var> = next_x
            .iter()
            .cloned()
            .chain([cnt_next])
            .chain(collected.iter().cloned())
            .collect();
        let fwd = forward_loop(l, carry, l.collect.clone(), ctx, ret);
        let res = self.fresh_binders("s", fwd.result_types().0);
        pre.push(Stmt::Let {
            nl: res.clone(),
            lin: vec![],
            rhs: Expr::Loop(Box::new(fwd)),
        });
        let mut vars: Vec<Var> = res.into_iter().map(|b| b.var).collect();
        let count = vars.remove(l.nl.len());
        (vars, count)
    }
}

/// The positions, among `l`'s carried non-linear values, of the state
/// [`Unzip::binomial`] replays: those the residual `lin` reads (through
/// the slice of the body `ctx` that computes them), closed under the
/// slices computing their next values `next_x`. `None` where a slice needs
/// a value of the iteration that is neither carried nor recomputable, the
/// loop index, or a value that cannot be saved ([`saveable`]).
fn replay_state(
    l: &Loop,
    ctx: &[Stmt],
    next_x: &[Var],
    lin: &Expr,
    bound: &[Var],
    reach: Reach,
) -> Option<Vec<usize>> {
    let mut header: Vec<&Var> = l.iter.binders().into_iter().map(|b| &b.var).collect();
    header.extend(l.nl.iter().map(|(b, _)| &b.var));
    let mut inner: Vec<Var> = bound.to_vec();
    top_binders(ctx, &mut inner);
    // The header values a computation reads, or `None` if it reads a value
    // of the iteration that is neither header nor recomputable.
    let reads = |e: Expr| -> Option<Vec<Var>> {
        let mut out = Vec::new();
        for v in free_vars(&e).nl {
            if header.contains(&&v) {
                out.push(v);
            } else if inner.contains(&v) {
                return None;
            }
        }
        Some(out)
    };
    let (slice, _) = backward_slice(ctx, lin, reach);
    let mut needed = reads(Expr::block(slice, lin.clone()))?;
    let mut k = 0;
    while k < needed.len() {
        if let Some(pos) = l.nl.iter().position(|(b, _)| b.var == needed[k]) {
            let ret = Expr::var(next_x[pos].clone());
            let (slice, _) = backward_slice(ctx, &ret, reach);
            for v in reads(Expr::block(slice, ret))? {
                if !needed.contains(&v) {
                    needed.push(v);
                }
            }
        }
        k += 1;
    }
    if l.iter.binders().iter().any(|b| needed.contains(&b.var)) {
        return None;
    }
    let state: Vec<usize> = (0..l.nl.len())
        .filter(|&p| needed.contains(&l.nl[p].0.var))
        .collect();
    state
        .iter()
        .all(|&p| saveable(&l.nl[p].0.ty))
        .then_some(state)
}

/// The forward half of a loop: `l`'s header with the carried state `nl`,
/// collecting `collect`, running `ctx` and returning `ret`.
fn forward_loop(
    l: &Loop,
    nl: Vec<(Binder, Var)>,
    collect: Vec<Ty>,
    ctx: Vec<Stmt>,
    ret: Vec<Var>,
) -> Loop {
    Loop {
        iter: l.iter.clone(),
        nl,
        lin: vec![],
        collect,
        zero_skip: false,
        body: Expr::block(
            ctx,
            Expr::Ret {
                nl: ret,
                lin: vec![],
            },
        ),
    }
}

/// The variables an iteration of `l` binds: its header's, its carried
/// state's, and those its forward body `ctx` binds at its top.
fn iteration_vars(l: &Loop, ctx: &[Stmt]) -> HashSet<Var> {
    let mut inner: Vec<Var> = l.iter.binders().iter().map(|b| b.var.clone()).collect();
    inner.extend(l.nl.iter().map(|(b, _)| b.var.clone()));
    top_binders(ctx, &mut inner);
    inner.into_iter().collect()
}

/// Integer arithmetic whose operands have its result's Rust type (an
/// index computed by it is computed from indices).
fn index_arithmetic(p: &Prim) -> bool {
    matches!(
        p,
        Prim::IAdd | Prim::ISub | Prim::IMul | Prim::IDiv | Prim::IRem
    )
}

/// A range loop's record without its index, nor the integers computed
/// from it (`i - 1`), where the residual indexes arrays with them (so
/// they are `usize`s, and the range's bounds a tape can hold): the
/// residual then zips the range with the records ([`Iter::Zip`]) and
/// computes those integers again, before `recompute`. Integer arithmetic
/// costs next to nothing; a saved index is 8 bytes written and read per
/// iteration, often most of the record (`(i, i - 1, y[i - 1])`). Returns
/// whether it applies, having updated `saved` and `recompute`.
fn index_off_the_record(
    l: &Loop,
    ctx: &[Stmt],
    lin: &Expr,
    saved: &mut Vec<Binder>,
    recompute: &mut Vec<Stmt>,
) -> bool {
    let Iter::Range { index, .. } = &l.iter else {
        return false;
    };
    // The integers of the iteration computed from the index, literals and
    // values from outside the body alone, and the statements computing
    // them, in order.
    let inner = iteration_vars(l, ctx);
    let mut derived: HashSet<Var> = [index.var.clone()].into_iter().collect();
    let mut slice: Vec<Stmt> = Vec::new();
    for st in ctx {
        let Stmt::Let { nl, lin: l2, rhs } = st else {
            continue;
        };
        let [b] = nl.as_slice() else { continue };
        let operand = |v: &Var| derived.contains(v) || !inner.contains(v);
        let computed = match rhs {
            Expr::Int(_) => true,
            Expr::Prim { prim, args } => index_arithmetic(prim) && args.iter().all(operand),
            _ => false,
        };
        if computed && l2.is_empty() && b.ty == Ty::Int {
            derived.insert(b.var.clone());
            slice.push(st.clone());
        }
    }
    let off: Vec<Var> = saved
        .iter()
        .filter(|b| derived.contains(&b.var))
        .map(|b| b.var.clone())
        .collect();
    let all: Vec<Stmt> = slice.iter().chain(recompute.iter()).cloned().collect();
    if off.is_empty() || !indexes(&index.var, lin, &all) {
        return false;
    }
    // Only the statements those integers need, and none that `recompute`
    // has already (it copies the same forward statements, same names).
    let (needed, _) = backward_slice(
        &slice,
        &Expr::Ret {
            nl: off.clone(),
            lin: vec![],
        },
        (&HashSet::default(), &HashSet::default()),
    );
    let mut bound = Vec::new();
    top_binders(&needed, &mut bound);
    recompute.retain(|st| {
        let mut again = false;
        crate::visit::stmt_binds(st, &mut |v, _| again |= bound.contains(v));
        !again
    });
    saved.retain(|b| !off.contains(&b.var));
    let rest = std::mem::take(recompute);
    *recompute = needed.into_iter().chain(rest).collect();
    true
}

/// Whether `b` is the index of the loop being unzipped.
fn index_of(index: &Option<Var>, b: &Binder) -> bool {
    index.as_ref() == Some(&b.var)
}

/// Whether a loop's per-iteration record would be its index alone, an
/// index the residual uses to index an array (so a `usize`, whose range's
/// bounds a tape can hold): [`Unzip::reread_loop`] applies.
fn counted_by_index(l: &Loop, saved: &[Binder], lin: &Expr, recompute: &[Stmt]) -> bool {
    let Iter::Range { index, .. } = &l.iter else {
        return false;
    };
    let [only] = saved else { return false };
    only.var == index.var && indexes(&index.var, lin, recompute)
}

/// Whether a residual `lin`, or the slice recomputed before it, indexes
/// an array with `v` (which is then a `usize`): directly, or through
/// integer arithmetic in the slice or anywhere in `lin` (`a[2 * i + 1]`,
/// `x[i * d + j]` in an inner loop), whose operands have its result's
/// type in Rust.
fn indexes(v: &Var, lin: &Expr, slice: &[Stmt]) -> bool {
    let mut index: HashSet<Var> = HashSet::default();
    // Integer arithmetic: (result, operands).
    let mut arithmetic: Vec<(Var, Vec<Var>)> = Vec::new();
    let mut stmt = |s: &Stmt, index: &mut HashSet<Var>| {
        let Stmt::Let { nl, rhs, .. } = s else { return };
        match rhs {
            Expr::Prim { prim, args } => {
                let integer = index_arithmetic(prim)
                    || matches!(prim, Prim::IBit(Bit::And | Bit::Or | Bit::Xor));
                if let ([b], true) = (nl.as_slice(), integer) {
                    arithmetic.push((b.var.clone(), args.clone()));
                }
            }
            Expr::Index { idx, .. } | Expr::LinIndex { idx, .. } | Expr::LinAccum { idx, .. } => {
                index.insert(idx.clone());
            }
            _ => {}
        }
    };
    let mut scan = |e: &Expr, index: &mut HashSet<Var>| {
        crate::visit::any_subexpr(e, &mut |x| {
            match x {
                Expr::Block { stmts, .. } => stmts.iter().for_each(|s| stmt(s, index)),
                Expr::Index { idx, .. }
                | Expr::LinIndex { idx, .. }
                | Expr::LinAccum { idx, .. } => {
                    index.insert(idx.clone());
                }
                _ => {}
            }
            false
        });
    };
    scan(lin, &mut index);
    scan(&Expr::block(slice.to_vec(), nothing()), &mut index);
    // Operands of arithmetic whose result indexes, to a fixed point.
    loop {
        let before = index.len();
        for (r, args) in &arithmetic {
            if index.contains(r) {
                index.extend(args.iter().cloned());
            }
        }
        if index.len() == before {
            return index.contains(v);
        }
    }
}

/// Whether values of this type can be saved in a recomputed loop's state:
/// not integers, whose Rust type generated code leaves to inference (a
/// loop index is a `usize` or an `i32` as the user's code has it, and a
/// tape field cannot name it; the paper's rule never saves one, since
/// linear code reads no integer), nor lists and callees' tapes, which are
/// not `Copy`.
fn saveable(t: &Ty) -> bool {
    match t {
        Ty::Real(_) | Ty::Bool => true,
        Ty::Tuple(ts) | Ty::Sum(ts) => ts.iter().all(saveable),
        Ty::Int | Ty::List(..) | Ty::Array(..) | Ty::Tape(_) => false,
    }
}

/// The statements of a forward context that the residual `lin` needs,
/// directly or through each other, in order, and whether it needs any.
fn backward_slice(ctx: &[Stmt], lin: &Expr, (inputs, pinned): Reach) -> (Vec<Stmt>, Vec<Var>) {
    let mut needed: HashSet<Var> = free_vars(lin).nl.into_iter().collect();
    let reads: Vec<Var> = needed.iter().cloned().collect();
    let mut keep = vec![false; ctx.len()];
    for (i, s) in ctx.iter().enumerate().rev() {
        let mut binds = false;
        crate::visit::stmt_binds(s, &mut |v, _| binds |= needed.contains(v));
        if binds && recomputable(s, (inputs, pinned)) {
            keep[i] = true;
            needed.extend(stmt_free_vars(s).nl);
        }
    }
    let slice = ctx
        .iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(s, _)| s.clone())
        .collect();
    (slice, reads)
}

/// What the residual can read again: the input arrays (`inputs`), and
/// the externs it must not call again (`pinned`).
type Reach<'a> = (&'a HashSet<Var>, &'a HashSet<Var>);

/// Whether a forward statement can run again in the residual: it reads
/// no Rust constant (prelude values, parameters and inactive code are not
/// in scope in `apply` and `transpose`, nor are they where a call passes
/// them: a pinned extern) and no array (an input array is never copied
/// onto the tape: its elements are saved as read).
fn recomputable(s: &Stmt, reach: Reach) -> bool {
    fn pure_expr(e: &Expr, reach: Reach) -> bool {
        let (inputs, pinned) = reach;
        let recomputable = |s: &Stmt| recomputable(s, reach);
        let pure = |e: &Expr| pure_expr(e, reach);
        match e {
            // A local array is written in place: never run again.
            Expr::Const { .. }
            | Expr::Fill { .. }
            | Expr::Set { .. }
            | Expr::Push { .. }
            | Expr::Pop { .. } => false,
            // An input array is on the tape (see `literal_binding`); a
            // local one is not.
            // An input array's length is fixed (a local one may grow).
            Expr::Index { arr, .. } | Expr::Len(arr) => inputs.contains(arr),
            Expr::LinIndex { .. }
            | Expr::LinAccum { .. }
            | Expr::LinZeros { .. }
            | Expr::LinSet { .. }
            | Expr::LinFree { .. }
            | Expr::LinPush { .. }
            | Expr::LinPop { .. } => true,
            Expr::Block { stmts, tail } => stmts.iter().all(recomputable) && pure(tail),
            Expr::Drop(inner) => pure(inner),
            Expr::Case { arms, .. } => arms.iter().all(|a| pure(&a.body)),
            Expr::Loop(l) => {
                let cond = l.iter.header_expr().is_none_or(pure);
                cond && pure(&l.body)
            }
            Expr::App { func, .. } => !pinned.contains(func),
            Expr::Ret { .. }
            | Expr::Lit { .. }
            | Expr::Tup(_)
            | Expr::Prim { .. }
            | Expr::LinZero(_)
            | Expr::LinTup(_)
            | Expr::LinAdd(..)
            | Expr::LinNeg(_)
            | Expr::LinScale(..)
            | Expr::Dup(_)
            | Expr::Int(_)
            | Expr::Bool(_)
            | Expr::Inj { .. } => true,
        }
    }
    match s {
        Stmt::Let { rhs, .. } => pure_expr(rhs, reach),
        Stmt::Unpack { .. } | Stmt::LinUnpack { .. } => true,
    }
}

/// `Adjoint`'s exception to reading arrays again: a value the recomputed
/// `slice` gets from a library call (`exp`, `ln`, `sin`, `powf`: see
/// [`costly`]) is recorded per iteration instead, and only what the
/// residual still needs of the slice is recomputed. The call would
/// otherwise run twice, and it costs tens of cycles where a record entry
/// costs one store and one load: logsumexp's gradient went from 2.0 to 1.4
/// times its primal. A reduction of arithmetic only (`s += x[i] * y[i]`)
/// still records nothing.
fn keep_costly(saved: &mut Vec<Binder>, slice: &mut Vec<Stmt>, lin: &Expr, reach: Reach) {
    let before = saved.len();
    slice.retain(|s| match s {
        Stmt::Let { nl, lin: l, rhs }
            if l.is_empty() && costly(rhs) && nl.iter().all(|b| matches!(b.ty, Ty::Real(_))) =>
        {
            saved.extend(nl.iter().cloned());
            false
        }
        _ => true,
    });
    if saved.len() > before {
        // What the residual still reads of the rest (every statement of
        // the slice is recomputable: it is one).
        *slice = backward_slice(slice, lin, reach).0;
    }
}

/// Whether evaluating `e` calls the math library (tens of cycles), as
/// opposed to an arithmetic instruction: what [`keep_costly`] records
/// rather than computes twice.
fn costly(e: &Expr) -> bool {
    let Expr::Prim { prim, .. } = e else {
        return false;
    };
    match prim {
        Prim::Sin
        | Prim::Cos
        | Prim::Tan
        | Prim::Asin
        | Prim::Acos
        | Prim::Atan
        | Prim::Atan2
        | Prim::Sinh
        | Prim::Cosh
        | Prim::Tanh
        | Prim::Exp
        | Prim::Exp2
        | Prim::Ln
        | Prim::Log2
        | Prim::Log10
        | Prim::Cbrt
        | Prim::Powf
        | Prim::Hypot
        | Prim::Ln1p
        | Prim::ExpM1
        | Prim::Asinh
        | Prim::Acosh
        | Prim::Atanh => true,
        Prim::Add
        | Prim::Sub
        | Prim::Mul
        | Prim::Div
        | Prim::Neg
        | Prim::Sqrt
        | Prim::Powi(_)
        | Prim::Recip
        | Prim::Abs
        | Prim::Min
        | Prim::Max
        | Prim::Floor
        | Prim::Ceil
        | Prim::Round
        | Prim::Trunc
        | Prim::Copysign
        | Prim::Rem
        | Prim::RemEuclid
        | Prim::Signum
        | Prim::Le
        | Prim::IAdd
        | Prim::ISub
        | Prim::IMul
        | Prim::IDiv
        | Prim::IRem
        | Prim::INeg
        | Prim::IBit(_)
        | Prim::INot
        | Prim::Cmp(_)
        | Prim::And
        | Prim::Or
        | Prim::Not
        | Prim::ToReal(_)
        | Prim::ToInt
        | Prim::PowiN => false,
    }
}

fn cheap(e: &Expr) -> bool {
    match e {
        // A constant names a value of the enclosing function (a prelude
        // variable in generated Rust) that the residual cannot see.
        Expr::Lit { .. } | Expr::Tup(_) => true,
        Expr::Const { .. } => false,
        Expr::Prim { prim, .. } => matches!(
            prim,
            Prim::Add
                | Prim::Sub
                | Prim::Mul
                | Prim::Neg
                | Prim::Abs
                | Prim::Signum
                | Prim::Floor
                | Prim::Ceil
                | Prim::Round
                | Prim::Trunc
                | Prim::Copysign
                | Prim::Min
                | Prim::Max
                | Prim::Le
        ),
        _ => false,
    }
}

/// Moves cheap bindings the residual reads from the tape into the residual,
/// from the last binding to the first, whenever the operands they need are
/// no more scalars than the value they would save; then deletes from the
/// forward pass whatever only those bindings used.
fn recompute_cheap(
    ctx: &mut Vec<Stmt>,
    nl: &mut Expr,
    lin: &mut Expr,
    types: &HashMap<Var, Ty>,
    inputs: &HashSet<Var>,
) {
    let mut needed: HashSet<Var> = free_vars(lin).nl.into_iter().collect();
    // What the residual binds itself (the literals `rematerialize` bound
    // again at its top) is neither needed nor moved a second time.
    let mut available = Vec::new();
    if let Expr::Block { stmts, .. } = &*lin {
        top_binders(stmts, &mut available);
    }
    let mut moved: Vec<Stmt> = Vec::new();
    for s in ctx.iter().rev() {
        let Stmt::Let {
            nl: bs,
            lin: lb,
            rhs,
        } = s
        else {
            continue;
        };
        if bs.len() != 1 || !lb.is_empty() || !needed.contains(&bs[0].var) || !cheap(rhs) {
            continue;
        }
        let mut operands = stmt_free_vars(s).nl;
        operands.retain(|v| !available.contains(v));
        let extra: u64 = operands
            .iter()
            .filter(|v| !needed.contains(*v))
            .map(|v| types.get(v).map_or(1, Ty::scalars))
            .sum();
        if extra <= bs[0].ty.scalars() {
            needed.remove(&bs[0].var);
            needed.extend(operands);
            moved.push(s.clone());
        }
    }
    if moved.is_empty() {
        return;
    }
    moved.reverse();
    let body = std::mem::replace(lin, nothing());
    *lin = match body {
        Expr::Block { stmts, tail } => {
            // After what `rematerialize` bound again at the top, which
            // the moved statements may read.
            let prefix = stmts
                .iter()
                .take_while(|s| literal_binding(s, inputs).is_some())
                .count();
            let mut stmts = stmts;
            let rest = stmts.split_off(prefix);
            stmts.extend(moved);
            stmts.extend(rest);
            Expr::block(stmts, *tail)
        }
        other => Expr::block(moved, other),
    };

    // Dead code in the forward pass: pure single bindings nobody reads any
    // more (the forward pass reads its context, its result and the tape).
    let mut counts = use_counts(&Expr::block(ctx.clone(), nl.clone()));
    for v in &needed {
        *counts.entry(v.clone()).or_insert(0) += 1;
    }
    let mut keep = vec![true; ctx.len()];
    for (i, s) in ctx.iter().enumerate().rev() {
        if let Stmt::Let {
            nl: bs,
            lin: lb,
            rhs,
        } = s
        {
            if bs.len() == 1
                && lb.is_empty()
                && cheap(rhs)
                && counts.get(&bs[0].var).copied().unwrap_or(0) == 0
            {
                keep[i] = false;
                crate::visit::stmt_uses(s, &mut |v: &Var, _| {
                    if let Some(c) = counts.get_mut(v) {
                        *c = c.saturating_sub(1);
                    }
                });
            }
        }
    }
    let mut it = keep.into_iter();
    ctx.retain(|_| it.next().unwrap_or(true));
}
