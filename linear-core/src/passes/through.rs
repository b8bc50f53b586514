//! Calls through their VJPs: a composed VJP that calls other functions,
//! rewritten so that J can differentiate it (forward over reverse for
//! `order = 2`'s derived `f_vjp`, [`super::hvp::first_vjp`]).
//!
//! In the composed VJP of `f` (U's forward pass, then T's transposed
//! residual, L, inlined), a call of `g` is two calls of externs: `(y,
//! t) = g.jvp.nl(x..)`, whose tape `t` is opaque, and later `x̄.. =
//! g.jvp.lin.t(t, a.., ȳ, ā..)`, passed the array arguments `a..` again
//! and their accumulators `ā..`. J cannot differentiate through an
//! opaque tape. Here each pair becomes
//!
//! * `y = g(x..)` and `t = (x..)`, the arguments other than arrays: the
//!   tape keeps values J gives tangents (arrays are passed again);
//! * `c.. = g.vjp(x.., ȳ)`, the arguments from `t` and `a..`; each `x̄`
//!   read from the cotangents `c..` of `g`'s differentiable parameters
//!   (the empty tuple for integers and booleans, which have none); an
//!   array's cotangents, a vector each (two for an array passed twice),
//!   added into its accumulator by a loop, from the part's lower bound
//!   for a part of an array (`&a[lo..hi]`, whose bounds are constant
//!   integers of the extern).
//!
//! `g.vjp` is `g`'s own `g_vjp` (`order = 2` makes it differentiable when
//! `g`'s composed VJP is, recursively), which J, U and T treat as any
//! extern. So a second derivative through a call goes through the
//! callee's derivatives, never an inlined copy of its body, as for
//! `f_jvp` (`passes::hvp`'s module doc).
//!
//! Cost: the reverse sweep runs `g`'s forward pass again, inside `g_vjp`,
//! where the composed VJP read `g`'s tape: `g`'s primal work once more
//! per call, `g`'s tape built and dropped within the reverse sweep, and
//! a loop per array cotangent (the accumulator `g.jvp.lin.t` added into
//! in place). The tape holds `g`'s arguments instead of its residuals.
//! Results are those of the composed VJP up to the order of additions
//! into an array's accumulator.
//!
//! A constant data array (a `#[nondiff]` slice) is passed again as the
//! arrays are, and gets no cotangent.
//!
//! Calls are rewritten where the callee has one result, not an array,
//! its constant parameters are integers or data arrays of reals and
//! every parameter's cotangent is accounted for ([`Through::new`]);
//! otherwise, as for any call whose callee's VJP is not differentiable,
//! [`through_vjps`] gives `None`.
//!
//! Input: a non-linear function that type-checks with the transposed
//! program's externs (erased), binders unique. Output: the same
//! function calling the externs returned (the calls and their VJPs), with
//! no callee tape type left, type-checking again.

use rustc_hash::FxHashMap as HashMap;

use super::PassError;
use crate::ir::{Arm, Binder, Expr, Extern, Func, Iter, Loop, Prim, Stmt, Ty, Var};
use crate::visit::Fresh;

/// A call the composed VJP may make through its callee's VJP.
#[derive(Clone, Debug)]
pub struct Through {
    /// The call's extern in the function's own (lowered) program,
    /// `call.N`: the callee, non-linear.
    pub call: Extern,
    /// The name of the extern that calls the callee's VJP: the call's
    /// arguments, then the cotangent of its result.
    pub vjp: Var,
    /// That extern's results, as code generation returns the Rust value
    /// `(result, cotangents)` (the one cotangent itself, several as a
    /// tuple): one tuple, or, where a cotangent is an array (of a slice
    /// parameter), the result then each cotangent, each a result of its
    /// own (`lower/results.rs`).
    pub rets: Vec<Ty>,
    /// The cotangents the callee's VJP returns, in order.
    pub cotangents: Vec<Cotangent>,
}

/// A cotangent as [`Through::new`] takes it: its type, its parameter
/// ([`Cotangent::param`]) and its offset ([`Cotangent::offset`]).
pub type CotangentOf = (Ty, Option<usize>, Option<usize>);

/// One cotangent a callee's VJP returns.
#[derive(Clone, Debug)]
pub struct Cotangent {
    pub ty: Ty,
    /// Where it is: the index of a result of the VJP extern, then of a
    /// field of that result at each level.
    pub place: Vec<usize>,
    /// The call's non-linear parameter it is the cotangent of; `None` for
    /// an argument the IR does not pass, a constant, whose cotangent is
    /// dropped. Parameters with no cotangent, integers and booleans, get
    /// the empty tuple; an array parameter may have several (the array
    /// passed twice), all added into its accumulator.
    pub param: Option<usize>,
    /// For the cotangent of a part of an array (`&a[lo..hi]`), the
    /// call's non-linear parameter holding `lo`, a constant integer: the
    /// cotangent is added into the array's accumulator from there.
    pub offset: Option<usize>,
}

impl Through {
    /// The call `call`'s path through its callee's VJP `vjp`, which
    /// returns the cotangents `cts` (type, and parameter as
    /// [`Cotangent::param`]) laid out as code generation returns them.
    pub fn new(call: Extern, vjp: Var, cts: Vec<CotangentOf>) -> Through {
        let grouped = cts.iter().any(|(t, _, _)| matches!(t, Ty::Array(..)));
        let n = call.nl_rets.len();
        let (rets, cotangents) = if grouped {
            let mut rets = call.nl_rets.clone();
            rets.extend(cts.iter().map(|(t, _, _)| t.clone()));
            let cotangents = cts
                .into_iter()
                .enumerate()
                .map(|(j, (ty, param, offset))| Cotangent {
                    ty,
                    place: vec![n + j],
                    param,
                    offset,
                })
                .collect();
            (rets, cotangents)
        } else {
            let result = match call.nl_rets.as_slice() {
                [one] => one.clone(),
                many => Ty::Tuple(many.to_vec()),
            };
            let one = cts.len() == 1;
            let cts_ty = match cts.as_slice() {
                [(t, _, _)] => t.clone(),
                many => Ty::Tuple(many.iter().map(|(t, _, _)| t.clone()).collect()),
            };
            let cotangents = cts
                .into_iter()
                .enumerate()
                .map(|(j, (ty, param, offset))| Cotangent {
                    ty,
                    place: if one { vec![0, 1] } else { vec![0, 1, j] },
                    param,
                    offset,
                })
                .collect();
            (vec![Ty::Tuple(vec![result, cts_ty])], cotangents)
        };
        Through {
            call,
            vjp,
            rets,
            cotangents,
        }
    }

    /// The extern calling the callee's VJP (see [`Through::vjp`]).
    pub fn vjp_extern(&self) -> Extern {
        let mut params = self.call.nl_params.clone();
        params.extend(self.call.nl_rets.iter().cloned());
        Extern {
            constant: self.call.constant.clone(),
            pinned: self.call.pinned,
            ..Extern::plain(
                self.vjp.clone(),
                (params, vec![]),
                (self.rets.clone(), vec![]),
            )
        }
    }

    /// The tuple type a tape of this call becomes: its arguments other
    /// than arrays (which the transposed call is passed again).
    fn tape_ty(&self) -> Ty {
        Ty::Tuple(
            self.call
                .nl_params
                .iter()
                .filter(|t| !matches!(t, Ty::Array(..)))
                .cloned()
                .collect(),
        )
    }

    /// The cotangents of non-linear parameter `k`, by their positions.
    fn cotangents_of(&self, k: usize) -> Vec<usize> {
        (0..self.cotangents.len())
            .filter(|&c| self.cotangents[c].param == Some(k))
            .collect()
    }

    /// The call's parameters that have tangents (not its constants), in
    /// order: one result of the transposed call each.
    fn with_tangents(&self) -> Vec<usize> {
        (0..self.call.nl_params.len())
            .filter(|k| !self.call.constant.contains(k))
            .collect()
    }

    /// Whether the rewriting applies: one result, not an array; constant
    /// parameters only integers (the bounds of parts of arrays) and data
    /// arrays of reals (passed again in the reverse sweep); every
    /// other parameter's cotangent accounted for: one of its type for a
    /// value other than an array, at least one for an array of reals
    /// (added into its accumulator, from an offset for a part), none for
    /// an integer or boolean (the empty tuple).
    fn applies(&self) -> bool {
        let params = &self.call.nl_params;
        let constants_int = self.call.constant.iter().all(|&k| match params.get(k) {
            Some(Ty::Int) => true,
            Some(Ty::Array(e, _)) => matches!(**e, Ty::Real(_)),
            _ => false,
        });
        let accounted = self.with_tangents().into_iter().all(|k| {
            let cts = self.cotangents_of(k);
            let elements = |t: &Ty| match t {
                Ty::Array(e, _) => Some((**e).clone()),
                _ => None,
            };
            let typed = cts.iter().all(|&c| {
                let ct = &self.cotangents[c];
                match ct.offset {
                    None => ct.ty == params[k],
                    Some(_) => {
                        elements(&ct.ty).is_some() && elements(&ct.ty) == elements(&params[k])
                    }
                }
            });
            match &params[k] {
                Ty::Int | Ty::Bool => cts.is_empty(),
                Ty::Array(e, _) => typed && !cts.is_empty() && matches!(**e, Ty::Real(_)),
                t => typed && cts.len() == 1 && !holds_array(t),
            }
        });
        let offsets = self.cotangents.iter().all(|c| match c.offset {
            Some(lo) => self.call.constant.contains(&lo),
            None => true,
        });
        let place_typed = self.cotangents.iter().all(|c| {
            let mut t = c.place.first().and_then(|&i| self.rets.get(i));
            for &j in c.place.iter().skip(1) {
                t = match t {
                    Some(Ty::Tuple(ts)) => ts.get(j),
                    _ => None,
                };
            }
            t == Some(&c.ty)
        });
        matches!(self.call.nl_rets.as_slice(), [r] if !holds_array(r))
            && constants_int
            && !self.cotangents.is_empty()
            && accounted
            && offsets
            && place_typed
    }
}

/// Every extern `g` of `externs` called through an extern `g.vjp` that
/// returns a cotangent for each parameter holding reals: how IR file
/// tests and tools, which have no callee signatures, name the VJPs.
pub fn through_all(externs: &[Extern]) -> Vec<Through> {
    externs
        .iter()
        .map(|e| {
            let cts = e
                .nl_params
                .iter()
                .enumerate()
                .filter(|(_, t)| t.has_reals())
                .map(|(k, t)| (t.clone(), Some(k), None))
                .collect();
            Through::new(e.clone(), Var::new(&format!("{}.vjp", e.name)), cts)
        })
        .collect()
}

/// One call's externs in the composed VJP: the forward pass's, the
/// transposed residual's, and the tape type they share.
struct Pair<'a> {
    through: &'a Through,
    nl: Var,
    lin_t: Var,
}

/// `f`, a composed VJP calling `externs` (the transposed program's,
/// linearity erased), with every call of a callee's forward pass and
/// transposed residual made through the callee itself and its VJP (see
/// the module doc); with the externs it then calls. `None` if some
/// call's callee is not in `through`, or cannot go through its VJP.
pub fn through_vjps(
    f: &Func,
    externs: &[Extern],
    through: &[Through],
) -> Result<Option<(Func, Vec<Extern>)>, PassError> {
    let mut pairs: HashMap<Var, Pair> = HashMap::default();
    for t in through.iter().filter(|t| t.applies()) {
        let tape = Ty::Tape(Var::new(&format!("{}.jvp", t.call.name)));
        let nl = externs
            .iter()
            .find(|e| e.nl_rets.last() == Some(&tape) && !e.nl_params.contains(&tape));
        let lin_t = externs
            .iter()
            .find(|e| e.nl_params.first() == Some(&tape) && e.name.as_str().ends_with(".t"));
        if let (Some(nl), Some(lin_t)) = (nl, lin_t) {
            let Ty::Tape(name) = tape else { continue };
            pairs.insert(
                name,
                Pair {
                    through: t,
                    nl: nl.name.clone(),
                    lin_t: lin_t.name.clone(),
                },
            );
        }
    }
    // Every callee tape must be one of a call rewritten here.
    let mut tapes_known = true;
    for t in crate::visit::binder_types(f).values() {
        for_each_tape(t, &mut |name| tapes_known &= pairs.contains_key(name));
    }
    if !tapes_known {
        return Ok(None);
    }
    let by_nl: HashMap<Var, &Pair> = pairs.values().map(|p| (p.nl.clone(), p)).collect();
    let by_lin_t: HashMap<Var, &Pair> = pairs.values().map(|p| (p.lin_t.clone(), p)).collect();
    let mut r = Rewrite {
        fresh: Fresh::for_func(f),
        by_nl,
        by_lin_t,
        used: Vec::new(),
        func: f.name.clone(),
    };
    let mut out = f.clone();
    out.body = r.expr(&f.body)?;
    let tapes: HashMap<Var, Ty> = pairs
        .iter()
        .map(|(name, p)| (name.clone(), p.through.tape_ty()))
        .collect();
    crate::visit::retype(&mut out, &|t| with_tapes(t, &tapes));
    let mut used: Vec<&Through> = Vec::new();
    for t in r.used {
        if !used.iter().any(|u| u.call.name == t.call.name) {
            used.push(t);
        }
    }
    let externs = used
        .iter()
        .flat_map(|t| [t.call.clone(), t.vjp_extern()])
        .collect();
    Ok(Some((out, externs)))
}

struct Rewrite<'a> {
    fresh: Fresh,
    by_nl: HashMap<Var, &'a Pair<'a>>,
    by_lin_t: HashMap<Var, &'a Pair<'a>>,
    /// The calls rewritten, in the order met.
    used: Vec<&'a Through>,
    func: Var,
}

impl<'a> Rewrite<'a> {
    fn expr(&mut self, e: &Expr) -> Result<Expr, PassError> {
        Ok(match e {
            Expr::Block { stmts, tail } => {
                let mut out = Vec::with_capacity(stmts.len());
                for s in stmts {
                    self.stmt(s, &mut out)?;
                }
                Expr::Block {
                    stmts: out,
                    tail: Box::new(self.expr(tail)?),
                }
            }
            Expr::Case { scrut, arms } => Expr::Case {
                scrut: scrut.clone(),
                arms: arms
                    .iter()
                    .map(|a| {
                        Ok(Arm {
                            bind: a.bind.clone(),
                            body: self.expr(&a.body)?,
                        })
                    })
                    .collect::<Result<_, PassError>>()?,
            },
            Expr::Loop(l) => {
                let mut l = (**l).clone();
                l.body = self.expr(&l.body)?;
                Expr::Loop(Box::new(l))
            }
            Expr::Drop(inner) => Expr::Drop(Box::new(self.expr(inner)?)),
            Expr::App { func, .. }
                if self.by_nl.contains_key(func) || self.by_lin_t.contains_key(func) =>
            {
                return Err(PassError::new(
                    &self.func,
                    &format!("a call of `{func}` outside a `let`"),
                ))
            }
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
            | Expr::Int(_)
            | Expr::Bool(_)
            | Expr::Inj { .. }
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
            | Expr::LinPop { .. } => e.clone(),
        })
    }

    fn stmt(&mut self, s: &Stmt, out: &mut Vec<Stmt>) -> Result<(), PassError> {
        let Stmt::Let { nl, lin, rhs } = s else {
            out.push(s.clone());
            return Ok(());
        };
        let err = |what: &str| PassError::new(&self.func, what);
        match rhs {
            Expr::App { func, nl: args, .. } if self.by_nl.contains_key(func) => {
                let p = self.by_nl[func];
                let (tape, ys) = nl
                    .split_last()
                    .ok_or_else(|| err("a call without its tape"))?;
                self.used.push(p.through);
                out.push(Stmt::Let {
                    nl: ys.to_vec(),
                    lin: vec![],
                    rhs: Expr::App {
                        func: p.through.call.name.clone(),
                        nl: args.clone(),
                        lin: vec![],
                    },
                });
                let kept = args
                    .iter()
                    .zip(&p.through.call.nl_params)
                    .filter(|(_, t)| !matches!(t, Ty::Array(..)))
                    .map(|(a, _)| a.clone())
                    .collect();
                out.push(Stmt::Let {
                    nl: vec![Binder::new(tape.var.clone(), p.through.tape_ty())],
                    lin: vec![],
                    rhs: Expr::Tup(kept),
                });
            }
            Expr::App { func, nl: args, .. } if self.by_lin_t.contains_key(func) => {
                let p = self.by_lin_t[func];
                self.transposed(p.through, (nl, args), out)?;
            }
            _ => out.push(Stmt::Let {
                nl: nl.clone(),
                lin: lin.clone(),
                rhs: self.expr(rhs)?,
            }),
        }
        Ok(())
    }

    /// `x̄.. = g.jvp.lin.t(t, a.., ȳ.., ā..)` (`a..` the array arguments,
    /// `ā..` their accumulators) as `c.. = g.vjp(x.., ȳ..)`, the
    /// arguments `x..` from `t` and `a..`; `x̄..` read from `c..`, an
    /// array's added into its accumulator.
    fn transposed(
        &mut self,
        t: &Through,
        (bars, args): (&[Binder], &[Var]),
        out: &mut Vec<Stmt>,
    ) -> Result<(), PassError> {
        let params = &t.call.nl_params;
        let arrays = params.iter().filter(|p| matches!(p, Ty::Array(..))).count();
        let results = t.call.nl_rets.len();
        let tangents = t.with_tangents();
        let accumulated = tangents
            .iter()
            .filter(|&&k| matches!(params[k], Ty::Array(..)))
            .count();
        if bars.len() != tangents.len() || args.len() != 1 + arrays + results + accumulated {
            return Err(PassError::new(
                &self.func,
                &format!("a transposed call of `{}` of another shape", t.call.name),
            ));
        }
        let (tape, rest) = args.split_at(1);
        let (again, rest) = rest.split_at(arrays);
        let (cts, accs) = rest.split_at(results);
        let mut call_args = self.arguments(t, (&tape[0], again), out)?;
        let offset_of = |c: &Cotangent| c.offset.and_then(|lo| call_args.get(lo).cloned());
        let offsets: Vec<Option<Var>> = t.cotangents.iter().map(offset_of).collect();
        call_args.extend(cts.iter().cloned());
        let rets: Vec<Binder> = t
            .rets
            .iter()
            .map(|ty| Binder::new(self.fresh.var("r"), ty.clone()))
            .collect();
        out.push(Stmt::Let {
            nl: rets.clone(),
            lin: vec![],
            rhs: Expr::App {
                func: t.vjp.clone(),
                nl: call_args,
                lin: vec![],
            },
        });
        // Each cotangent's variable, the rest of the results dropped.
        let mut found: Vec<Option<Var>> = vec![None; t.cotangents.len()];
        for (i, r) in rets.iter().enumerate() {
            let wanted: Vec<(usize, &[usize])> = t
                .cotangents
                .iter()
                .enumerate()
                .filter(|(_, c)| c.place.first() == Some(&i))
                .map(|(k, c)| (k, &c.place[1..]))
                .collect();
            self.take(r, &wanted, &mut found, out);
        }
        let found: Vec<Var> = found
            .into_iter()
            .collect::<Option<_>>()
            .ok_or_else(|| PassError::new(&self.func, "a cotangent not found"))?;
        let mut accs = accs.iter();
        for (&k, b) in tangents.iter().zip(bars) {
            let mine: Vec<(&Var, Option<&Var>)> = t
                .cotangents_of(k)
                .into_iter()
                .map(|c| (&found[c], offsets[c].as_ref()))
                .collect();
            match &params[k] {
                Ty::Array(..) => {
                    let acc = accs
                        .next()
                        .ok_or_else(|| PassError::new(&self.func, "an accumulator missing"))?;
                    self.added(acc, &mine, b, out);
                }
                _ => {
                    let rhs = match mine.as_slice() {
                        [(c, _)] => Expr::Ret {
                            nl: vec![(*c).clone()],
                            lin: vec![],
                        },
                        _ => Expr::Tup(vec![]),
                    };
                    out.push(Stmt::Let {
                        nl: vec![b.clone()],
                        lin: vec![],
                        rhs,
                    });
                }
            }
        }
        // The cotangents of constants, which the IR does not pass.
        for (c, v) in t.cotangents.iter().zip(&found) {
            if c.param.is_none() {
                out.push(Stmt::drop_nl(v));
            }
        }
        Ok(())
    }

    /// The call's arguments, as the transposed call has them: those the
    /// tape `tape` keeps (unpacked here), and the arrays passed `again`.
    fn arguments(
        &mut self,
        t: &Through,
        (tape, again): (&Var, &[Var]),
        out: &mut Vec<Stmt>,
    ) -> Result<Vec<Var>, PassError> {
        let params = &t.call.nl_params;
        let kept: Vec<Binder> = params
            .iter()
            .filter(|p| !matches!(p, Ty::Array(..)))
            .map(|ty| Binder::new(self.fresh.var("x"), ty.clone()))
            .collect();
        out.push(Stmt::Unpack {
            vars: kept.clone(),
            tuple: tape.clone(),
        });
        let (mut kept, mut again) = (kept.into_iter(), again.iter());
        let mut args = Vec::with_capacity(params.len() + t.call.nl_rets.len());
        for p in params {
            let a = match p {
                Ty::Array(..) => again.next().cloned(),
                _ => kept.next().map(|b| b.var),
            };
            args.push(a.ok_or_else(|| PassError::new(&self.func, "an argument missing"))?);
        }
        Ok(args)
    }

    /// Binds `found[k]` for each cotangent `(k, place)` of `wanted` below
    /// `v`, unpacking tuples on the way; drops what none of them is in.
    fn take(
        &mut self,
        v: &Binder,
        wanted: &[(usize, &[usize])],
        found: &mut [Option<Var>],
        out: &mut Vec<Stmt>,
    ) {
        if let Some((k, _)) = wanted.iter().find(|(_, p)| p.is_empty()) {
            found[*k] = Some(v.var.clone());
            return;
        }
        let Ty::Tuple(fields) = &v.ty else {
            out.push(Stmt::drop_nl(&v.var));
            return;
        };
        if wanted.is_empty() {
            out.push(Stmt::drop_nl(&v.var));
            return;
        }
        let vars: Vec<Binder> = fields
            .iter()
            .map(|ty| Binder::new(self.fresh.var("c"), ty.clone()))
            .collect();
        out.push(Stmt::Unpack {
            vars: vars.clone(),
            tuple: v.var.clone(),
        });
        for (j, field) in vars.iter().enumerate() {
            let below: Vec<(usize, &[usize])> = wanted
                .iter()
                .filter(|(_, p)| p.first() == Some(&j))
                .map(|(k, p)| (*k, &p[1..]))
                .collect();
            self.take(field, &below, found, out);
        }
    }

    /// `b = acc + c..`, elementwise: each array `c` added into the
    /// accumulator `acc` (arrays of reals) by a loop over `c`, from its
    /// offset in `acc` (a part's lower bound) or from the start.
    fn added(&mut self, acc: &Var, cs: &[(&Var, Option<&Var>)], b: &Binder, out: &mut Vec<Stmt>) {
        let mut cur = acc.clone();
        for (n, (c, offset)) in cs.iter().enumerate() {
            let next = match n + 1 == cs.len() {
                true => b.var.clone(),
                false => self.fresh.var("acc"),
            };
            let (zero, len) = (self.fresh.var("zero"), self.fresh.var("n"));
            out.push(let_(&zero, Ty::Int, Expr::Int(0)));
            out.push(let_(&len, Ty::Int, Expr::Len((*c).clone())));
            let l = self.add_loop((&cur, c, *offset), (&zero, &len), &b.ty);
            out.push(let_(&next, b.ty.clone(), Expr::Loop(Box::new(l))));
            cur = next;
        }
    }

    /// The loop `for i in lo..hi { acc[at + i] += c[i] }` (`at` the
    /// offset, if any), carrying the accumulator, of type `ty`.
    fn add_loop(
        &mut self,
        (acc, c, offset): (&Var, &Var, Option<&Var>),
        (lo, hi): (&Var, &Var),
        ty: &Ty,
    ) -> Loop {
        let elem = match ty {
            Ty::Array(e, _) => (**e).clone(),
            other => other.clone(),
        };
        let (i, a, x, y, z, a2) = (
            self.fresh.var("i"),
            self.fresh.var("a"),
            self.fresh.var("x"),
            self.fresh.var("y"),
            self.fresh.var("z"),
            self.fresh.var("a"),
        );
        // The accumulator's index: `i`, or `lo + i` for a part.
        let mut stmts = Vec::new();
        let index = match offset {
            Some(lo) => {
                let at = self.fresh.var("at");
                let sum = Expr::Prim {
                    prim: Prim::IAdd,
                    args: vec![lo.clone(), i.clone()],
                };
                stmts.push(let_(&at, Ty::Int, sum));
                at
            }
            None => i.clone(),
        };
        let add = Expr::Prim {
            prim: Prim::Add,
            args: vec![x.clone(), y.clone()],
        };
        stmts.extend([
            let_(
                &x,
                elem.clone(),
                Expr::Index {
                    arr: a.clone(),
                    idx: index.clone(),
                },
            ),
            let_(
                &y,
                elem.clone(),
                Expr::Index {
                    arr: c.clone(),
                    idx: i.clone(),
                },
            ),
            let_(&z, elem, add),
            let_(
                &a2,
                ty.clone(),
                Expr::Set {
                    arr: a.clone(),
                    idx: index,
                    val: z,
                },
            ),
        ]);
        Loop {
            iter: Iter::Range {
                index: Binder::new(i, Ty::Int),
                lo: lo.clone(),
                hi: hi.clone(),
                step: None,
                rev: false,
                trip: None,
            },
            nl: vec![(Binder::new(a, ty.clone()), acc.clone())],
            lin: vec![],
            collect: vec![],
            zero_skip: false,
            body: Expr::block(
                stmts,
                Expr::Ret {
                    nl: vec![a2],
                    lin: vec![],
                },
            ),
        }
    }
}

/// `let v: ty; = rhs`.
fn let_(v: &Var, ty: Ty, rhs: Expr) -> Stmt {
    Stmt::Let {
        nl: vec![Binder::new(v.clone(), ty)],
        lin: vec![],
        rhs,
    }
}

/// Whether `t` is or holds an array (J passes an array on only by itself).
fn holds_array(t: &Ty) -> bool {
    match t {
        Ty::Array(..) | Ty::List(..) => true,
        Ty::Tuple(ts) | Ty::Sum(ts) => ts.iter().any(holds_array),
        Ty::Real(_) | Ty::Int | Ty::Bool | Ty::Tape(_) => false,
    }
}

/// Calls `f` with the name of every callee tape in `t`.
fn for_each_tape(t: &Ty, f: &mut impl FnMut(&Var)) {
    match t {
        Ty::Tape(name) => f(name),
        Ty::Tuple(ts) | Ty::Sum(ts) => ts.iter().for_each(|t| for_each_tape(t, f)),
        Ty::Array(e, _) | Ty::List(e, _) => for_each_tape(e, f),
        Ty::Real(_) | Ty::Int | Ty::Bool => {}
    }
}

/// `t` with every callee tape named in `tapes` replaced by its type there.
fn with_tapes(t: &Ty, tapes: &HashMap<Var, Ty>) -> Ty {
    match t {
        Ty::Tape(name) => tapes.get(name).cloned().unwrap_or_else(|| t.clone()),
        Ty::Tuple(ts) => Ty::Tuple(ts.iter().map(|t| with_tapes(t, tapes)).collect()),
        Ty::Sum(ts) => Ty::Sum(ts.iter().map(|t| with_tapes(t, tapes)).collect()),
        Ty::Array(e, n) => Ty::Array(Box::new(with_tapes(e, tapes)), *n),
        Ty::List(e, n) => Ty::List(Box::new(with_tapes(e, tapes)), *n),
        Ty::Real(_) | Ty::Int | Ty::Bool => t.clone(),
    }
}
