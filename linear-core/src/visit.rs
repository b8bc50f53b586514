//! Traversals shared by the passes: variable uses, free variables, fresh
//! names, the size measure of section 8, and a map over every type of a
//! function.
//!
//! Linearity of a use is syntactic: the position a variable occupies
//! (`Ret`'s second list, `LinAdd`'s operands, `LinScale`'s right operand, …)
//! says whether it is read as linear. No environment is needed.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::ir::{Binder, Expr, Func, Iter, Program, Stmt, Ty, Var};

/// Calls `f(var, is_linear)` for every variable occurrence in `e`, nested
/// blocks included, in evaluation order.
pub fn for_each_use<F: FnMut(&Var, bool) + ?Sized>(e: &Expr, f: &mut F) {
    match e {
        Expr::Block { stmts, tail } => {
            for s in stmts {
                stmt_uses(s, f);
            }
            for_each_use(tail, f);
        }
        Expr::Ret { nl, lin } | Expr::App { nl, lin, .. } => {
            nl.iter().for_each(|v| f(v, false));
            lin.iter().for_each(|v| f(v, true));
        }
        Expr::Lit { .. } | Expr::LinZero(_) => {}
        Expr::Tup(vs) | Expr::Prim { args: vs, .. } | Expr::Const { args: vs, .. } => {
            vs.iter().for_each(|v| f(v, false))
        }
        Expr::LinTup(vs) => vs.iter().for_each(|v| f(v, true)),
        Expr::LinAdd(a, b) => {
            f(a, true);
            f(b, true);
        }
        Expr::LinNeg(a) | Expr::Dup(a) => f(a, true),
        Expr::LinScale(s, a) => {
            f(s, false);
            f(a, true);
        }
        Expr::Drop(e) => for_each_use(e, f),
        Expr::Int(_) | Expr::Bool(_) => {}
        Expr::Inj { val, .. } => f(val, false),
        Expr::Index { arr, idx } => {
            f(arr, false);
            f(idx, false);
        }
        Expr::Len(arr) => f(arr, false),
        Expr::LinIndex { arr, idx } => {
            f(arr, true);
            f(idx, false);
        }
        Expr::LinAccum { arr, idx, val } | Expr::LinSet { arr, idx, val } => {
            f(arr, true);
            f(idx, false);
            f(val, true);
        }
        Expr::Fill { len, val, .. } => {
            f(len, false);
            f(val, false);
        }
        Expr::Set { arr, idx, val } => {
            f(arr, false);
            f(idx, false);
            f(val, false);
        }
        Expr::LinZeros { len, .. } => f(len, false),
        Expr::LinFree { arr, len } => {
            f(arr, true);
            f(len, false);
        }
        Expr::Push { arr, val } => {
            f(arr, false);
            f(val, false);
        }
        Expr::Pop { arr } => f(arr, false),
        Expr::LinPush { arr, val } => {
            f(arr, true);
            f(val, true);
        }
        Expr::LinPop { arr } => f(arr, true),
        Expr::Case { scrut, arms } => {
            f(scrut, false);
            for a in arms {
                for_each_use(&a.body, f);
            }
        }
        Expr::Loop(l) => {
            for v in l.iter.outer_vars() {
                f(&v, false);
            }
            l.nl.iter().for_each(|(_, v)| f(v, false));
            l.lin.iter().for_each(|(_, v)| f(v, true));
            if let Some(e) = l.iter.header_expr() {
                for_each_use(e, f);
            }
            for_each_use(&l.body, f);
        }
    }
}

/// The uses in one statement (its right-hand side or unpacked tuple).
pub fn stmt_uses<F: FnMut(&Var, bool) + ?Sized>(s: &Stmt, f: &mut F) {
    match s {
        Stmt::Let { rhs, .. } => for_each_use(rhs, f),
        Stmt::Unpack { tuple, .. } => f(tuple, false),
        Stmt::LinUnpack { tuple, .. } => f(tuple, true),
    }
}

/// Calls `f(var, is_linear)` for every binder inside `e` (not `e`'s free
/// variables' binders, which are outside it).
pub fn for_each_bind(e: &Expr, f: &mut impl FnMut(&Var, bool)) {
    for_each_binder(e, &mut |b, lin| f(&b.var, lin));
}

/// Calls `f(binder, is_linear)` for every binder inside `e`, with its type.
pub fn for_each_binder(e: &Expr, f: &mut impl FnMut(&Binder, bool)) {
    match e {
        Expr::Block { stmts, tail } => {
            for s in stmts {
                match s {
                    Stmt::Let { nl, lin, rhs } => {
                        nl.iter().for_each(|b| f(b, false));
                        lin.iter().for_each(|b| f(b, true));
                        for_each_binder(rhs, f);
                    }
                    Stmt::Unpack { vars, .. } => vars.iter().for_each(|b| f(b, false)),
                    Stmt::LinUnpack { vars, .. } => vars.iter().for_each(|b| f(b, true)),
                }
            }
            for_each_binder(tail, f);
        }
        Expr::Drop(e) => for_each_binder(e, f),
        Expr::Case { arms, .. } => {
            for a in arms {
                if let Some(b) = &a.bind {
                    f(b, false);
                }
                for_each_binder(&a.body, f);
            }
        }
        Expr::Loop(l) => {
            for b in l.iter.binders() {
                f(b, false);
            }
            l.nl.iter().for_each(|(b, _)| f(b, false));
            l.lin.iter().for_each(|(b, _)| f(b, true));
            if let Some(e) = l.iter.header_expr() {
                for_each_binder(e, f);
            }
            for_each_binder(&l.body, f);
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
        | Expr::LinPop { .. } => {}
    }
}

/// Whether `f` holds for `e` or any expression nested in it (right-hand
/// sides, tails, arms, loop headers and bodies, dropped code).
pub fn any_subexpr(e: &Expr, f: &mut dyn FnMut(&Expr) -> bool) -> bool {
    if f(e) {
        return true;
    }
    match e {
        Expr::Block { stmts, tail } => {
            stmts.iter().any(|s| match s {
                Stmt::Let { rhs, .. } => any_subexpr(rhs, f),
                Stmt::Unpack { .. } | Stmt::LinUnpack { .. } => false,
            }) || any_subexpr(tail, f)
        }
        Expr::Drop(inner) => any_subexpr(inner, f),
        Expr::Case { arms, .. } => arms.iter().any(|a| any_subexpr(&a.body, f)),
        Expr::Loop(l) => {
            l.iter.header_expr().is_some_and(|h| any_subexpr(h, f)) || any_subexpr(&l.body, f)
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
        | Expr::LinPop { .. } => false,
    }
}

/// Whether `let nl = rhs` binds data: one array of reals bound to a Rust
/// constant (a `#[nondiff]` slice). Data is immutable and has no tangent;
/// the residual reads it again as it reads an input array.
pub fn is_data(nl: &[Binder], rhs: &Expr) -> bool {
    matches!((nl, rhs), ([b], Expr::Const { .. }) if b.ty.is_linear_array())
}

/// The data arrays `e` binds ([`is_data`]).
pub fn data_arrays(e: &Expr) -> Vec<Var> {
    data_bindings(e).into_iter().map(|(v, _)| v).collect()
}

/// The local arrays of run-time length `f` binds at its top level (built by `fill` and
/// `set`, or returned by a loop that built them) that nothing writes or
/// consumes afterwards: every use reads an element (`index`) or the length
/// (`len`), and some read is in a loop. Each is the final value of its
/// array, so U reads its elements again in the residual, as it does a
/// parameter's, and the tape holds the array once (moved, not copied)
/// instead of an element per iteration.
pub fn final_arrays(f: &Func) -> Vec<Var> {
    let Expr::Block { stmts, .. } = &f.body else {
        return Vec::new();
    };
    let mut arrays: Vec<Var> = Vec::new();
    for s in stmts {
        if let Stmt::Let { nl, rhs, .. } = s {
            if !matches!(rhs, Expr::Const { .. }) {
                // `Vec`s: a fixed-size array is copied, and is small.
                let local = nl.iter().filter(|b| matches!(b.ty, Ty::Array(_, None)));
                arrays.extend(local.map(|b| b.var.clone()));
            }
        }
    }
    if arrays.is_empty() {
        return arrays;
    }
    let mut uses: HashMap<Var, usize> = HashMap::default();
    for_each_use(&f.body, &mut |v, _| {
        *uses.entry(v.clone()).or_default() += 1
    });
    let mut reads: HashMap<Var, usize> = HashMap::default();
    any_subexpr(&f.body, &mut |e| {
        if let Expr::Index { arr, .. } | Expr::Len(arr) = e {
            *reads.entry(arr.clone()).or_default() += 1;
        }
        false
    });
    // Read in a loop: otherwise the few elements read are saved instead
    // (the tape would keep the whole array alive for them).
    let mut in_loops: HashSet<Var> = HashSet::default();
    any_subexpr(&f.body, &mut |e| {
        if let Expr::Loop(l) = e {
            any_subexpr(&l.body, &mut |x| {
                if let Expr::Index { arr, .. } = x {
                    in_loops.insert(arr.clone());
                }
                false
            });
        }
        false
    });
    arrays.retain(|v| in_loops.contains(v) && uses.get(v).is_some_and(|n| reads.get(v) == Some(n)));
    arrays
}

/// The data arrays `e` binds, each with the constant bound to it.
pub fn data_bindings(e: &Expr) -> Vec<(Var, Var)> {
    let mut out = Vec::new();
    any_subexpr(e, &mut |x| {
        if let Expr::Block { stmts, .. } = x {
            for s in stmts {
                if let Stmt::Let { nl, lin, rhs } = s {
                    if let (true, Expr::Const { name, .. }) =
                        (lin.is_empty() && is_data(nl, rhs), rhs)
                    {
                        out.push((nl[0].var.clone(), name.clone()));
                    }
                }
            }
        }
        false
    });
    out
}

/// Calls `f` once for every linear variable `e` consumes, in order of
/// first use: its linear uses, in-place array reads (`lindex`) aside.
pub fn for_each_consumed(e: &Expr, f: &mut dyn FnMut(&Var)) {
    for_each_consumed_in(e, &|_| Vec::new(), f)
}

/// [`for_each_consumed`] where calls may borrow arrays: `borrowed(g)`
/// gives the positions of the linear parameters callee `g` reads in place
/// (an extern's borrowed arrays, see [`crate::ir::Extern`]).
pub fn for_each_consumed_in(
    e: &Expr,
    borrowed: &dyn Fn(&Var) -> Vec<usize>,
    f: &mut dyn FnMut(&Var),
) {
    let (mut order, mut uses) = (Vec::new(), HashMap::<Var, usize>::default());
    for_each_use(e, &mut |v, linear| {
        if linear {
            let n = uses.entry(v.clone()).or_insert(0);
            if *n == 0 {
                order.push(v.clone());
            }
            *n += 1;
        }
    });
    let mut read = |arr: &Var| {
        if let Some(n) = uses.get_mut(arr) {
            *n -= 1;
        }
    };
    any_subexpr(e, &mut |x| {
        match x {
            Expr::LinIndex { arr, .. } => read(arr),
            Expr::App { func, lin, .. } => {
                for k in borrowed(func) {
                    if let Some(a) = lin.get(k) {
                        read(a);
                    }
                }
            }
            _ => {}
        }
        false
    });
    order.iter().filter(|v| uses[*v] > 0).for_each(f);
}

/// The positions of `f`'s linear parameters that are linear arrays its
/// body reads in place and never consumes (borrowed: a caller lends them
/// and reads them again after the call; T gives each an accumulator), as
/// `borrowed` says of the functions `f` calls.
pub fn borrowed_params(f: &Func, borrowed: &dyn Fn(&Var) -> Vec<usize>) -> Vec<usize> {
    let mut consumed = rustc_hash::FxHashSet::default();
    for_each_consumed_in(&f.body, borrowed, &mut |v| {
        consumed.insert(v.clone());
    });
    f.lin_params
        .iter()
        .enumerate()
        .filter(|(_, b)| b.ty.is_linear_array() && !consumed.contains(&b.var))
        .map(|(k, _)| k)
        .collect()
}

/// The type of every variable `f` binds, parameters included.
pub fn binder_types(f: &Func) -> HashMap<Var, crate::ir::Ty> {
    let mut types = HashMap::with_capacity_and_hasher(
        f.nl_params.len() + f.lin_params.len() + binder_count(&f.body),
        Default::default(),
    );
    for b in f.nl_params.iter().chain(&f.lin_params) {
        types.insert(b.var.clone(), b.ty.clone());
    }
    for_each_binder(&f.body, &mut |b, _| {
        types.insert(b.var.clone(), b.ty.clone());
    });
    types
}

/// The binders a statement itself binds, with their types (not those
/// bound inside its right-hand side).
pub fn stmt_binds_typed(s: &Stmt, f: &mut impl FnMut(&Binder)) {
    match s {
        Stmt::Let { nl, lin, .. } => nl.iter().chain(lin).for_each(f),
        Stmt::Unpack { vars, .. } | Stmt::LinUnpack { vars, .. } => vars.iter().for_each(f),
    }
}

/// The variables a statement itself binds (not those bound inside its
/// right-hand side).
pub fn stmt_binds(s: &Stmt, f: &mut impl FnMut(&Var, bool)) {
    match s {
        Stmt::Let { nl, lin, .. } => {
            nl.iter().for_each(|b| f(&b.var, false));
            lin.iter().for_each(|b| f(&b.var, true));
        }
        Stmt::Unpack { vars, .. } => vars.iter().for_each(|b| f(&b.var, false)),
        Stmt::LinUnpack { vars, .. } => vars.iter().for_each(|b| f(&b.var, true)),
    }
}

/// Whether statement `s` itself binds `v`.
pub fn binds(s: &Stmt, v: &Var) -> bool {
    let mut found = false;
    stmt_binds_typed(s, &mut |b| found |= b.var == *v);
    found
}

/// Free variables of an expression, split by linearity, each listed once in
/// order of first use. Relies on unique binding within a function.
#[derive(Clone, Debug, Default)]
pub struct FreeVars {
    pub nl: Vec<Var>,
    pub lin: Vec<Var>,
}

/// How many binders `e` has: the size of a map keyed by them, made
/// before it is filled. Growing a table rehashes every key it holds,
/// which in an unoptimised macro (what `cargo build` runs) was a sixth of
/// the expansion's instructions.
pub fn binder_count(e: &Expr) -> usize {
    let mut n = 0;
    for_each_binder(e, &mut |_, _| n += 1);
    n
}

pub fn free_vars(e: &Expr) -> FreeVars {
    let mut bound = HashSet::with_capacity_and_hasher(binder_count(e), Default::default());
    for_each_bind(e, &mut |v, _| {
        bound.insert(v.clone());
    });
    collect_free(|f| for_each_use(e, f), &bound)
}

pub fn stmt_free_vars(s: &Stmt) -> FreeVars {
    let mut bound = HashSet::default();
    if let Stmt::Let { rhs, .. } = s {
        for_each_bind(rhs, &mut |v, _| {
            bound.insert(v.clone());
        });
    }
    collect_free(|f| stmt_uses(s, f), &bound)
}

fn collect_free(visit: impl FnOnce(&mut dyn FnMut(&Var, bool)), bound: &HashSet<Var>) -> FreeVars {
    let mut seen = HashSet::default();
    let mut out = FreeVars::default();
    visit(&mut |v: &Var, lin: bool| {
        if !bound.contains(v) && seen.insert(v.clone()) {
            if lin {
                out.lin.push(v.clone());
            } else {
                out.nl.push(v.clone());
            }
        }
    });
    out
}

/// Number of occurrences of each variable in a function body.
pub fn use_counts(e: &Expr) -> HashMap<Var, usize> {
    // Most variables read are bound in `e`.
    let mut counts = HashMap::with_capacity_and_hasher(binder_count(e), Default::default());
    for_each_use(e, &mut |v, _| *counts.entry(v.clone()).or_insert(0) += 1);
    counts
}

/// A supply of variable names not yet used in one function.
///
/// Generated names are `base.N`: the dot keeps them apart from every name
/// lowered from Rust, and `N` counts up from past the largest number any
/// name of the function already ends in ([`Var::number`]), which keeps
/// them apart from each other and from names an earlier pass generated.
/// Numbering past the largest, not avoiding a set of the names taken,
/// spares a hash-set insertion per name of the function on every pass
/// (8% of an unoptimised macro's time, which is what `cargo build` runs).
/// [`Fresh::named`], which lowering uses to keep the user's names where
/// it can, remembers the names it gave out.
#[derive(Clone, Debug, Default)]
pub struct Fresh {
    named: HashSet<Var>,
    next: u64,
}

impl Fresh {
    /// A supply avoiding every name bound or used in `f`.
    pub fn for_func(f: &Func) -> Fresh {
        let mut fresh = Fresh::default();
        fresh.reserve_func(f);
        fresh
    }

    pub fn reserve_func(&mut self, f: &Func) {
        let mut top = self.next;
        for b in f.nl_params.iter().chain(&f.lin_params) {
            top = top.max(b.var.number());
        }
        for_each_bind(&f.body, &mut |v, _| top = top.max(v.number()));
        for_each_use(&f.body, &mut |v, _| top = top.max(v.number()));
        self.next = top;
    }

    /// `hint` itself if this supply has not given it out, else a new name
    /// built from it. Lowering's hints are Rust identifiers, which have no
    /// `.`, so they are never one of [`Fresh::var`]'s names; a hint with a
    /// `.` could be, and is never kept.
    pub fn named(&mut self, hint: &str) -> Var {
        let v = Var::new(hint);
        if !hint.contains('.') && self.named.insert(v.clone()) {
            v
        } else {
            self.var(hint)
        }
    }

    /// A new name built from `hint` (up to its first dot).
    pub fn var(&mut self, hint: &str) -> Var {
        let base = hint.split('.').next().unwrap_or("v");
        let base = if base.is_empty() { "v" } else { base };
        self.next += 1;
        Var::new(&format!("{base}.{}", self.next))
    }
}

/// A function name derived from `base` that no function in `p` has.
pub fn derived_name(p: &Program, base: &Var, suffix: &str) -> Var {
    let mut name = Var::new(&format!("{base}.{suffix}"));
    let mut n = 1;
    while p.func(name.as_str()).is_some() {
        n += 1;
        name = Var::new(&format!("{base}.{suffix}{n}"));
    }
    name
}

/// Program size in the sense of section 8: every node of the grammar counts
/// 1, variable references included. Types count 1 per annotation (the
/// paper's type synonyms for tapes), so a call site's size does not grow
/// with the callee's tape.
pub fn size(p: &Program) -> usize {
    p.funcs.iter().map(func_size).sum()
}

pub fn func_size(f: &Func) -> usize {
    1 + f.nl_params.len()
        + f.lin_params.len()
        + f.nl_rets.len()
        + f.lin_rets.len()
        + expr_size(&f.body)
}

pub fn expr_size(e: &Expr) -> usize {
    match e {
        Expr::Block { stmts, tail } => {
            stmts
                .iter()
                .map(|s| match s {
                    Stmt::Let { nl, lin, rhs } => 1 + nl.len() + lin.len() + expr_size(rhs),
                    Stmt::Unpack { vars, .. } | Stmt::LinUnpack { vars, .. } => 2 + vars.len(),
                })
                .sum::<usize>()
                + expr_size(tail)
        }
        Expr::Ret { nl, lin } | Expr::App { nl, lin, .. } => 1 + nl.len() + lin.len(),
        Expr::Lit { .. } | Expr::LinZero(_) => 1,
        Expr::Const { args, .. } => 1 + args.len(),
        Expr::Tup(vs) | Expr::Prim { args: vs, .. } | Expr::LinTup(vs) => 1 + vs.len(),
        Expr::LinAdd(..) | Expr::LinScale(..) => 3,
        Expr::LinNeg(_) | Expr::Dup(_) => 2,
        Expr::Drop(e) => 1 + expr_size(e),
        Expr::Int(_) | Expr::Bool(_) => 1,
        Expr::Inj { .. } | Expr::Index { .. } | Expr::LinIndex { .. } => 3,
        Expr::Len(_) | Expr::LinZeros { .. } => 2,
        Expr::Fill { .. } | Expr::LinFree { .. } | Expr::Push { .. } | Expr::LinPush { .. } => 3,
        Expr::Pop { .. } | Expr::LinPop { .. } => 2,
        Expr::LinAccum { .. } | Expr::Set { .. } | Expr::LinSet { .. } => 4,
        Expr::Case { arms, .. } => {
            2 + arms
                .iter()
                .map(|a| usize::from(a.bind.is_some()) + expr_size(&a.body))
                .sum::<usize>()
        }
        Expr::Loop(l) => {
            let header = match &l.iter {
                Iter::Range { step, .. } => 3 + usize::from(step.is_some()),
                Iter::Each { .. } => 2,
                Iter::Zip { step, .. } => 5 + usize::from(step.is_some()),
                Iter::While { cond } => expr_size(cond),
                Iter::Replay { next, .. } => 4 + expr_size(next),
            };
            1 + header + 2 * (l.nl.len() + l.lin.len()) + l.collect.len() + expr_size(&l.body)
        }
    }
}

/// Makes every linear variable of `f` used exactly once, as Fig. 3 demands:
/// a linear variable read k > 1 times is fanned out by k-1 `dup`s right
/// after its binding (each read gets its own copy); one never read is
/// dropped there. Lowering from a language without linear types (Rust)
/// produces such code; J produces dups itself.
pub fn insert_dups_and_drops(f: &mut Func) {
    let mut counts: HashMap<Var, usize> = HashMap::default();
    for_each_use(&f.body, &mut |v, lin| {
        if lin {
            *counts.entry(v.clone()).or_insert(0) += 1;
        }
    });
    let mut fix = Linearize {
        counts,
        fresh: Fresh::for_func(f),
        copies: HashMap::default(),
    };
    let head: Vec<Stmt> = f.lin_params.iter().flat_map(|b| fix.fan(b)).collect();
    fix.walk(&mut f.body);
    if !head.is_empty() {
        let body = std::mem::replace(
            &mut f.body,
            Expr::Ret {
                nl: vec![],
                lin: vec![],
            },
        );
        f.body = Expr::block(head, body);
    }
}

struct Linearize {
    counts: HashMap<Var, usize>,
    fresh: Fresh,
    /// The copies each fanned-out variable's reads take, last read first.
    copies: HashMap<Var, Vec<Var>>,
}

impl Linearize {
    /// The `dup`s (or the `drop`) to put right after binding `b`.
    fn fan(&mut self, b: &Binder) -> Vec<Stmt> {
        let n = self.counts.get(&b.var).copied().unwrap_or(0);
        if n == 1 {
            return Vec::new();
        }
        if n == 0 {
            return vec![Stmt::Let {
                nl: vec![],
                lin: vec![],
                rhs: Expr::Drop(Box::new(Expr::lin_var(b.var.clone()))),
            }];
        }
        let mut out = Vec::new();
        let mut cur = b.var.clone();
        let mut mine = Vec::new();
        for _ in 1..n {
            let (x, y) = (
                self.fresh.var(b.var.as_str()),
                self.fresh.var(b.var.as_str()),
            );
            out.push(Stmt::Let {
                nl: vec![],
                lin: vec![
                    Binder::new(x.clone(), b.ty.clone()),
                    Binder::new(y.clone(), b.ty.clone()),
                ],
                rhs: Expr::Dup(cur),
            });
            mine.push(x);
            cur = y;
        }
        mine.push(cur);
        mine.reverse();
        self.copies.insert(b.var.clone(), mine);
        out
    }

    /// Gives a read its own copy.
    fn take(&mut self, v: &mut Var) {
        if let Some(c) = self.copies.get_mut(v).and_then(Vec::pop) {
            *v = c;
        }
    }

    fn walk(&mut self, e: &mut Expr) {
        match e {
            Expr::Block { stmts, tail } => {
                let old = std::mem::take(stmts);
                for mut s in old {
                    match &mut s {
                        Stmt::Let { rhs, .. } => self.walk(rhs),
                        Stmt::LinUnpack { tuple, .. } => self.take(tuple),
                        Stmt::Unpack { .. } => {}
                    }
                    let extra: Vec<Stmt> = match &s {
                        Stmt::Let { lin, .. } | Stmt::LinUnpack { vars: lin, .. } => {
                            lin.iter().flat_map(|b| self.fan(b)).collect()
                        }
                        Stmt::Unpack { .. } => Vec::new(),
                    };
                    stmts.push(s);
                    stmts.extend(extra);
                }
                self.walk(tail);
            }
            Expr::Ret { lin, .. } | Expr::App { lin, .. } | Expr::LinTup(lin) => {
                lin.iter_mut().for_each(|v| self.take(v));
            }
            Expr::LinAdd(a, b) => {
                self.take(a);
                self.take(b);
            }
            Expr::LinNeg(a) | Expr::LinScale(_, a) | Expr::Dup(a) => self.take(a),
            Expr::LinAccum { arr, val, .. } | Expr::LinSet { arr, val, .. } => {
                self.take(arr);
                self.take(val);
            }
            Expr::LinFree { arr, .. } | Expr::LinPop { arr } => self.take(arr),
            Expr::LinPush { arr, val } => {
                self.take(arr);
                self.take(val);
            }
            Expr::Drop(inner) => self.walk(inner),
            // Lowering in linear mode produces no control flow: arms would
            // need their reads counted separately.
            Expr::Case { arms, .. } => arms.iter_mut().for_each(|a| self.walk(&mut a.body)),
            Expr::Loop(l) => {
                l.lin.iter_mut().for_each(|(_, v)| self.take(v));
                self.walk(&mut l.body);
            }
            Expr::Int(_)
            | Expr::Bool(_)
            | Expr::Inj { .. }
            | Expr::Lit { .. }
            | Expr::Const { .. }
            | Expr::Tup(_)
            | Expr::Prim { .. }
            | Expr::LinZero(_)
            | Expr::Index { .. }
            | Expr::Len(_)
            | Expr::LinIndex { .. }
            | Expr::Fill { .. }
            | Expr::Set { .. }
            | Expr::Push { .. }
            | Expr::Pop { .. }
            | Expr::LinZeros { .. } => {}
        }
    }
}

/// Renames, in place, every variable bound inside `e`'s nested
/// expressions (not `e`'s own free variables) to a fresh name, and every
/// use of it: a copy of code placed next to the original keeps binders
/// unique within the function.
pub fn freshen_bound(e: &mut Expr, fresh: &mut Fresh) {
    let mut map: HashMap<Var, Var> = HashMap::default();
    for_each_bind(e, &mut |v, _| {
        map.insert(v.clone(), fresh.var(v.as_str()));
    });
    rename_all(e, &map);
}

fn rename_var(v: &mut Var, map: &HashMap<Var, Var>) {
    if let Some(w) = map.get(v) {
        *v = w.clone();
    }
}

fn rename_binder(b: &mut Binder, map: &HashMap<Var, Var>) {
    rename_var(&mut b.var, map);
}

/// Renames binders and uses throughout `e` by `map`.
pub fn rename_all(e: &mut Expr, map: &HashMap<Var, Var>) {
    let r = |vs: &mut Vec<Var>| vs.iter_mut().for_each(|v| rename_var(v, map));
    match e {
        Expr::Block { stmts, tail } => {
            for s in stmts {
                match s {
                    Stmt::Let { nl, lin, rhs } => {
                        nl.iter_mut()
                            .chain(lin.iter_mut())
                            .for_each(|b| rename_binder(b, map));
                        rename_all(rhs, map);
                    }
                    Stmt::Unpack { vars, tuple } | Stmt::LinUnpack { vars, tuple } => {
                        vars.iter_mut().for_each(|b| rename_binder(b, map));
                        rename_var(tuple, map);
                    }
                }
            }
            rename_all(tail, map);
        }
        Expr::Ret { nl, lin } | Expr::App { nl, lin, .. } => {
            r(nl);
            r(lin);
        }
        Expr::Tup(vs)
        | Expr::LinTup(vs)
        | Expr::Prim { args: vs, .. }
        | Expr::Const { args: vs, .. } => r(vs),
        Expr::LinAdd(a, b) | Expr::LinScale(a, b) => {
            rename_var(a, map);
            rename_var(b, map);
        }
        Expr::LinNeg(a)
        | Expr::Dup(a)
        | Expr::Inj { val: a, .. }
        | Expr::Len(a)
        | Expr::Pop { arr: a }
        | Expr::LinPop { arr: a } => rename_var(a, map),
        Expr::Push { arr, val } | Expr::LinPush { arr, val } => {
            rename_var(arr, map);
            rename_var(val, map);
        }
        Expr::Index { arr, idx } | Expr::LinIndex { arr, idx } => {
            rename_var(arr, map);
            rename_var(idx, map);
        }
        Expr::LinAccum { arr, idx, val }
        | Expr::Set { arr, idx, val }
        | Expr::LinSet { arr, idx, val } => {
            rename_var(arr, map);
            rename_var(idx, map);
            rename_var(val, map);
        }
        Expr::Fill { len, val: arr, .. } | Expr::LinFree { arr, len } => {
            rename_var(arr, map);
            rename_var(len, map);
        }
        Expr::LinZeros { len, .. } => rename_var(len, map),
        Expr::Drop(inner) => rename_all(inner, map),
        Expr::Case { scrut, arms } => {
            rename_var(scrut, map);
            for a in arms {
                if let Some(b) = &mut a.bind {
                    rename_binder(b, map);
                }
                rename_all(&mut a.body, map);
            }
        }
        Expr::Loop(l) => {
            match &mut l.iter {
                Iter::Range {
                    index,
                    lo,
                    hi,
                    step,
                    ..
                } => {
                    rename_binder(index, map);
                    rename_var(lo, map);
                    rename_var(hi, map);
                    if let Some(s) = step {
                        rename_var(s, map);
                    }
                }
                Iter::Each { elem, list, .. } => {
                    rename_binder(elem, map);
                    rename_var(list, map);
                }
                Iter::Zip {
                    index,
                    lo,
                    hi,
                    step,
                    elem,
                    list,
                    ..
                } => {
                    rename_binder(index, map);
                    rename_binder(elem, map);
                    for v in [lo, hi, list].into_iter().chain(step) {
                        rename_var(v, map);
                    }
                }
                Iter::While { cond } => rename_all(cond, map),
                Iter::Replay {
                    state,
                    init,
                    count,
                    next,
                    ..
                } => {
                    rename_binder(state, map);
                    rename_var(init, map);
                    rename_var(count, map);
                    rename_all(next, map);
                }
            }
            for (b, v) in l.nl.iter_mut().chain(l.lin.iter_mut()) {
                rename_binder(b, map);
                rename_var(v, map);
            }
            rename_all(&mut l.body, map);
        }
        Expr::Lit { .. } | Expr::LinZero(_) | Expr::Int(_) | Expr::Bool(_) => {}
    }
}

/// Every type in `f` (binders, results, and the types expressions name)
/// mapped by `m`.
pub fn retype(f: &mut Func, m: &dyn Fn(&Ty) -> Ty) {
    for b in f.nl_params.iter_mut().chain(f.lin_params.iter_mut()) {
        b.ty = m(&b.ty);
    }
    for t in f.nl_rets.iter_mut().chain(f.lin_rets.iter_mut()) {
        *t = m(t);
    }
    retype_expr(&mut f.body, m);
}

fn retype_expr(e: &mut Expr, m: &dyn Fn(&Ty) -> Ty) {
    let binders = |bs: &mut [Binder]| bs.iter_mut().for_each(|b| b.ty = m(&b.ty));
    match e {
        Expr::Block { stmts, tail } => {
            for s in stmts {
                match s {
                    Stmt::Let { nl, lin, rhs } => {
                        binders(nl);
                        binders(lin);
                        retype_expr(rhs, m);
                    }
                    Stmt::Unpack { vars, .. } | Stmt::LinUnpack { vars, .. } => binders(vars),
                }
            }
            retype_expr(tail, m);
        }
        Expr::Drop(inner) => retype_expr(inner, m),
        Expr::Case { arms, .. } => {
            for a in arms {
                if let Some(b) = &mut a.bind {
                    b.ty = m(&b.ty);
                }
                retype_expr(&mut a.body, m);
            }
        }
        Expr::Loop(l) => {
            match &mut l.iter {
                Iter::Range { index: b, .. }
                | Iter::Each { elem: b, .. }
                | Iter::Replay { state: b, .. } => b.ty = m(&b.ty),
                Iter::Zip { index, elem, .. } => {
                    index.ty = m(&index.ty);
                    elem.ty = m(&elem.ty);
                }
                Iter::While { .. } => {}
            }
            if let Some(h) = l.iter.header_expr_mut() {
                retype_expr(h, m);
            }
            for (b, _) in l.nl.iter_mut().chain(l.lin.iter_mut()) {
                b.ty = m(&b.ty);
            }
            for t in &mut l.collect {
                *t = m(t);
            }
            retype_expr(&mut l.body, m);
        }
        Expr::Const { ty, .. } | Expr::LinZero(ty) | Expr::LinZeros { ty, .. } => *ty = m(ty),
        Expr::Inj { sum, .. } => *sum = m(sum),
        Expr::Ret { .. }
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
        | Expr::LinPop { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn func(src: &str) -> Func {
        crate::parse::parse_program(src).unwrap().funcs.remove(0)
    }

    #[test]
    fn fresh_names_are_numbered_past_every_number_in_the_function() {
        // Numbers in a parameter, a binder and a use deep in a block; a
        // name whose last part is not all digits numbers nothing.
        let f = func(
            "def f(x.7: f64, y.jvp2: f64;) -> (f64;) =
               let a.3: f64; = { let b.12: f64; = x.7 * y.jvp2 in (b.12;) } in
               (a.3;)",
        );
        let mut fresh = Fresh::for_func(&f);
        assert_eq!(fresh.var("z").as_str(), "z.13");
        assert_eq!(
            fresh.var("b.12").as_str(),
            "b.14",
            "the base is the hint up to its dot"
        );
        let mut g = fresh.clone();
        g.reserve_func(&func("def g(u.40: f64;) -> (f64;) = (u.40;)"));
        assert_eq!(g.var("u").as_str(), "u.41");
        // A smaller function does not lower the count.
        fresh.reserve_func(&func("def h(u.1: f64;) -> (f64;) = (u.1;)"));
        assert_eq!(fresh.var("v").as_str(), "v.15");
    }

    #[test]
    fn named_keeps_a_hint_once_then_numbers_it() {
        let mut fresh = Fresh::default();
        assert_eq!(fresh.named("p").as_str(), "p");
        assert_eq!(fresh.named("p").as_str(), "p.1");
        assert_eq!(fresh.named("q").as_str(), "q");
        // A hint with a dot could be one of `var`'s names: never kept.
        assert_eq!(fresh.named("r.1").as_str(), "r.2");
    }
}
