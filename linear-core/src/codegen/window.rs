//! Windows and cells: how a range loop reaches the arrays it indexes at
//! its index plus a loop-invariant offset (a slice of the elements it
//! reaches, made before it runs), or at one element in every iteration
//! (that element's value, carried).
//!
//! Rust checks every `a[k]`, and LLVM removes a check from a loop only
//! where it proves `k < a.len()` from what it knows before the loop.
//! [`super::bounds`] hoists the test for accesses at exactly the index,
//! but LLVM does not always use it: in a reversed loop, and for an index
//! such as `i - 1` or `c·d + j` (a row of a flat matrix), the check stayed
//! in the loop, a compare and a branch per access, and kept the loop from
//! being vectorised (the transposed Runge-Kutta stage `k̄[i] = 0; x̄[i] +=
//! t·k̄; ȳ[i - 1] += x[i]·k̄` ran at 2.2 times a hand-written adjoint over
//! exact slices, and at its speed once windowed).
//!
//! A window of array `a` is `&a[b..b + len]` (`&mut` for carried state),
//! made once before the loop: `b` is the index the first iteration
//! reaches, `len` the loop's trip count (a loop reaching an array at
//! several offsets is kept as it was: [`keep`]). The
//! loop counts its iterations `k` from 0 and binds `i = lo + k`; in the
//! body, `a[j]` becomes `w[j - b]`, which LLVM folds to `k` plus a
//! constant, below `len` by construction, and deletes the check (from
//! `i - lo` it did not, for `lo = 1`). A carried array is windowed in
//! place: the state holds the `&mut` slice, and the array itself is the
//! loop's result for that component. The list of a zipped loop is read
//! the same way, by position, so the loop has one exit (a zip of a range
//! and a list has two, and LLVM vectorises loops with one).
//!
//! A cell is a carried array of reals the body reaches at one element
//! `o + c` only, not at the index: a transposed loop accumulating the
//! cotangent of a value it read in every iteration (`x̄[j] += ..` in a
//! loop over `l`). Through memory, the sum is a chain of loads and stores
//! LLVM cannot keep in a register, as it cannot tell the array from the
//! others the loop writes; carried as a value, `laccum` is an addition.
//! The element is read before the loop and stored back after it, where
//! the loop runs (gmm's gradient at d = 20, k = 50: 47.8 to 36.5 ms).
//!
//! [`plan`] finds, for one loop over `lo..hi` (no step):
//!
//! * an array from outside the loop, or a carried array the body's
//!   top-level statements only write in place (`set`, `lset`, `laccum`)
//!   and pass on, whose every use in the body (at any depth) is an element
//!   access;
//! * where every index is `i + o + c` with the same `c` (a window) or
//!   every index is `o + c` with the same `c` (a cell, for carried reals):
//!   the loop's index, a sum and difference `o` of integers from outside
//!   the loop or computed from them by sums and products (the same for
//!   every access), and an integer constant `c`;
//! * where the accesses that bound the window are unconditional (top-level
//!   statements of the body, so made in every iteration), and the others
//!   (in a case arm or an inner loop) fall inside it; a cell has an
//!   unconditional access. A window of a loop that does not run is empty
//!   and a cell is not read, so neither panics where the loop would not;
//!   a window past the end panics before the loop, with the message of the
//!   first access past the end (`linear_ad::__private::window`), and a
//!   cell with the message of indexing its element. Generated code has no
//!   side effects to reorder around the panic.
//!
//! Not windowed: arrays of a length known at compile time (LLVM removes
//! their checks already), arrays also read in any other way (`len`, passed
//! to an inner loop or a call), and indices built otherwise (`2·i`, an
//! element of another array). A loop that reaches an array at two offsets
//! (`x[i]` and `x[i + 1]`) is left as it was, checks and all ([`keep`]
//! says why).

use proc_macro2::{Literal, TokenStream};
use quote::quote;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::{Names, Reach};
use crate::ir::{Expr, Iter, Loop, Prim, Stmt, Ty, Var};

/// The windows of one loop.
pub(super) struct Plan<'a> {
    pub lo: &'a Var,
    pub descending: bool,
    pub windows: Vec<Window>,
    /// The loop is generated as it was, with no window and not counted
    /// from 0 (see [`plan`]).
    pub keep: bool,
}

/// One array's window: `&array[start..start + len]` with `start = lo + o
/// + first` and `len = hi - lo + span`, where `o` is `offset`'s sum.
pub(super) struct Window {
    /// The array before the loop: an outer array, or a carried
    /// component's initial value.
    pub array: Var,
    /// The carried component (non-linear state first, then linear), if
    /// the array is carried state.
    pub state: Option<usize>,
    /// The loop-invariant part of every index: variables added (`false`)
    /// or subtracted (`true`).
    pub offset: Vec<(bool, Var)>,
    /// The smallest constant part of an index.
    pub first: i64,
    /// The largest constant part less the smallest.
    pub span: u64,
    /// The variables the body accesses the window through: the outer
    /// array, or the carried binder and its in-place updates.
    pub names: Vec<Var>,
    /// How to compute the offset's variables the body binds, before the
    /// loop.
    pub hoisted: Vec<(Var, Inv)>,
    /// `Some(c)` where every access is at the same element `o + c`, not
    /// at the index: a carried array of reals so accessed is a cell, the
    /// element's value carried as state and stored back after the loop.
    pub cell: Option<i64>,
}

/// A loop-invariant integer the body computes: from variables outside
/// the loop and constants, by integer sums, differences and products.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Inv {
    Var(Var),
    Lit(i64),
    Op(IntOp, Box<Inv>, Box<Inv>),
}

/// The integer operations of an [`Inv`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum IntOp {
    Add,
    Sub,
    Mul,
}

/// An index as `i·index + Σ ±terms + lit`, `terms` sorted.
#[derive(Clone, Debug, PartialEq)]
struct Form {
    index: bool,
    terms: Vec<(bool, Var)>,
    lit: i64,
}

impl Form {
    fn add(mut self, other: Form, negate: bool) -> Option<Form> {
        if negate && other.index {
            return None;
        }
        if self.index && other.index {
            return None;
        }
        self.index |= other.index;
        for (neg, v) in other.terms {
            let neg = neg != negate;
            // `v - v` cancels.
            match self.terms.iter().position(|(n, w)| *w == v && *n != neg) {
                Some(k) => {
                    self.terms.remove(k);
                }
                None => self.terms.push((neg, v)),
            }
        }
        self.terms.sort();
        self.lit = if negate {
            self.lit.checked_sub(other.lit)?
        } else {
            self.lit.checked_add(other.lit)?
        };
        Some(self)
    }
}

/// The windows of `l`, or `None` if it has none (see the module doc).
/// `types` gives every variable's type.
pub(super) fn plan<'a>(l: &'a Loop, types: &HashMap<Var, Ty>) -> Option<Plan<'a>> {
    let (index, lo, _, descending) = l.iter.unit_range()?;
    let Expr::Block { stmts, tail } = &l.body else {
        return None;
    };
    let body = Body::new(l, index);
    let mut windows = Vec::new();
    // Outer arrays: every array the body indexes that it does not bind.
    let mut outer: Vec<&Var> = Vec::new();
    for a in body.accesses.iter().map(|x| &x.array) {
        if !body.bound.contains(a) && !outer.contains(&a) {
            outer.push(a);
        }
    }
    let inits: Vec<&Var> = l.nl.iter().chain(&l.lin).map(|(_, v)| v).collect();
    for a in outer {
        // An array also moved into the state cannot be borrowed beside it.
        if !unsized_array(types.get(a)) || inits.contains(&a) {
            continue;
        }
        if let Some(w) = body.window(a.clone(), None, vec![a.clone()], 0) {
            if w.span > 0 {
                return Some(keep(lo, descending));
            }
            if w.cell.is_none() {
                windows.push(w);
            }
        }
    }
    for (k, (b, init)) in l.nl.iter().chain(&l.lin).enumerate() {
        let Ty::Array(elem, size) = &b.ty else {
            continue;
        };
        let Some(out) = super::bounds::state_out(l, tail, k) else {
            continue;
        };
        let Some(chain) = chain(stmts, &b.var, out) else {
            continue;
        };
        let Some(w) = body.window(init.clone(), Some(k), chain, 1) else {
            continue;
        };
        if w.cell.is_none() && w.span > 0 {
            return Some(keep(lo, descending));
        }
        // A cell holds one real; a window needs a length unknown to LLVM.
        let fits = match &w.cell {
            Some(_) => matches!(**elem, Ty::Real(_)),
            None => size.is_none(),
        };
        if fits {
            windows.push(w);
        }
    }
    (!windows.is_empty()).then_some(Plan {
        lo,
        descending,
        windows,
        keep: false,
    })
}

/// The plan of a loop left as it was: one that reaches an array at two
/// offsets (`x[i]` and `x[i + 1]`). Without checks between them, LLVM
/// makes `ā[i] += ..; ā[i + 1] += ..` one two-lane store, which the next
/// iteration's load of `ā[i - 1..=i]` overlaps, and store-to-load
/// forwarding fails every iteration: the chained Rosenbrock gradient took
/// three times as long, with `ā` windowed or not, once a window of `x`
/// at `i..=i + 1` in the forward loop had told LLVM the reversed loop's
/// `i + 1` was in bounds too. The check that stays keeps the stores apart.
fn keep(lo: &Var, descending: bool) -> Plan<'_> {
    Plan {
        lo,
        descending,
        windows: vec![],
        keep: true,
    }
}

/// An array whose length is not a compile-time constant.
fn unsized_array(t: Option<&Ty>) -> bool {
    matches!(t, Some(Ty::Array(_, None)))
}

/// One element access: the array variable, its index, whether it is a
/// top-level statement of the body (made in every iteration).
struct Access {
    array: Var,
    idx: Var,
    always: bool,
}

/// What [`plan`] knows of a loop's body.
struct Body {
    index: Var,
    /// Every variable the loop binds: header, state and body binders.
    bound: HashSet<Var>,
    /// Single-binder definitions in the body, at any depth.
    defs: HashMap<Var, Expr>,
    accesses: Vec<Access>,
    uses: HashMap<Var, usize>,
}

impl Body {
    fn new(l: &Loop, index: &Var) -> Body {
        let mut bound: HashSet<Var> = HashSet::default();
        for b in l.iter.binders() {
            bound.insert(b.var.clone());
        }
        for (b, _) in l.nl.iter().chain(&l.lin) {
            bound.insert(b.var.clone());
        }
        crate::visit::for_each_bind(&l.body, &mut |v, _| {
            bound.insert(v.clone());
        });
        let mut defs = HashMap::default();
        let mut accesses = Vec::new();
        collect(&l.body, true, &mut defs, &mut accesses);
        let mut uses: HashMap<Var, usize> = HashMap::default();
        crate::visit::for_each_use(&l.body, &mut |v, _| {
            *uses.entry(v.clone()).or_default() += 1
        });
        Body {
            index: index.clone(),
            bound,
            defs,
            accesses,
            uses,
        }
    }

    /// The form of integer `v` in the loop, if it is one [`Form`] covers.
    fn form(&self, v: &Var, depth: usize) -> Option<Form> {
        if *v == self.index {
            return Some(Form {
                index: true,
                terms: vec![],
                lit: 0,
            });
        }
        if !self.bound.contains(v) {
            return Some(Form {
                index: false,
                terms: vec![(false, v.clone())],
                lit: 0,
            });
        }
        // Definitions come before their uses, so this ends; the depth
        // bounds the work on long chains of sums.
        if depth > 64 {
            return None;
        }
        match self.defs.get(v)? {
            Expr::Int(n) => Some(Form {
                index: false,
                terms: vec![],
                lit: *n,
            }),
            Expr::Prim {
                prim: prim @ (Prim::IAdd | Prim::ISub),
                args,
            } if args.len() == 2 => {
                let a = self.form(&args[0], depth + 1)?;
                let b = self.form(&args[1], depth + 1)?;
                a.add(b, *prim == Prim::ISub)
            }
            Expr::Ret { nl, lin } if nl.len() == 1 && lin.is_empty() => {
                self.form(&nl[0], depth + 1)
            }
            // A product the body computes from outside values (a row's
            // start, `c·width`, recomputed in a transposed loop) is a
            // term of its own, computed again before the loop.
            Expr::Prim {
                prim: Prim::IMul, ..
            } => self.invariant(v, depth).map(|_| Form {
                index: false,
                terms: vec![(false, v.clone())],
                lit: 0,
            }),
            _ => None,
        }
    }

    /// `v` as a computation from values outside the loop, if it is one.
    fn invariant(&self, v: &Var, depth: usize) -> Option<Inv> {
        if !self.bound.contains(v) {
            return Some(Inv::Var(v.clone()));
        }
        if depth > 64 {
            return None;
        }
        match self.defs.get(v)? {
            Expr::Int(n) => Some(Inv::Lit(*n)),
            Expr::Prim {
                prim: prim @ (Prim::IAdd | Prim::ISub | Prim::IMul),
                args,
            } if args.len() == 2 => Some(Inv::Op(
                match prim {
                    Prim::IAdd => IntOp::Add,
                    Prim::ISub => IntOp::Sub,
                    _ => IntOp::Mul,
                },
                Box::new(self.invariant(&args[0], depth + 1)?),
                Box::new(self.invariant(&args[1], depth + 1)?),
            )),
            Expr::Ret { nl, lin } if nl.len() == 1 && lin.is_empty() => {
                self.invariant(&nl[0], depth + 1)
            }
            _ => None,
        }
    }

    /// The window of the array accessed through `names` (before the loop:
    /// `array`), if every use of those names is an access at the loop's
    /// index plus one offset, and the unconditional ones bound the rest.
    /// `passes` is how many uses are neither reads nor updates (a carried
    /// array's last update is the body's result: one).
    fn window(
        &self,
        array: Var,
        state: Option<usize>,
        names: Vec<Var>,
        passes: usize,
    ) -> Option<Window> {
        let mut offset: Option<Vec<(bool, Var)>> = None;
        let mut indexed: Option<bool> = None;
        let (mut always, mut sometimes): (Vec<i64>, Vec<i64>) = (Vec::new(), Vec::new());
        let mut count = 0;
        for a in self.accesses.iter().filter(|a| names.contains(&a.array)) {
            let f = self.form(&a.idx, 0)?;
            if offset.as_ref().is_some_and(|o| *o != f.terms)
                || indexed.is_some_and(|i| i != f.index)
            {
                return None;
            }
            offset = Some(f.terms);
            indexed = Some(f.index);
            if a.always {
                always.push(f.lit);
            } else {
                sometimes.push(f.lit);
            }
            count += 1;
        }
        let used: usize = names
            .iter()
            .map(|n| self.uses.get(n).copied().unwrap_or(0))
            .sum();
        if used != count + passes {
            return None;
        }
        let (first, last) = (*always.iter().min()?, *always.iter().max()?);
        if sometimes.iter().any(|c| *c < first || *c > last) {
            return None;
        }
        // The same element in every access: a cell, or nothing.
        let cell = match indexed? {
            true => None,
            false if first == last => Some(first),
            false => return None,
        };
        let offset = offset?;
        let hoisted = offset
            .iter()
            .filter(|(_, v)| self.bound.contains(v))
            .map(|(_, v)| Some((v.clone(), self.invariant(v, 0)?)))
            .collect::<Option<Vec<_>>>()?;
        Some(Window {
            array,
            state,
            cell,
            hoisted,
            offset,
            first,
            span: u64::try_from(last.checked_sub(first)?).ok()?,
            names,
        })
    }
}

/// Gathers single-binder definitions and element accesses in `e`;
/// `top` says `e` is the loop's body block (whose statements run in every
/// iteration).
fn collect(e: &Expr, top: bool, defs: &mut HashMap<Var, Expr>, out: &mut Vec<Access>) {
    crate::visit::any_subexpr(e, &mut |x| {
        if let Expr::Block { stmts, .. } = x {
            let always = top && std::ptr::eq(x, e);
            for s in stmts {
                let Stmt::Let { nl, lin, rhs } = s else {
                    continue;
                };
                if nl.len() + lin.len() == 1 {
                    let b = nl.iter().chain(lin).next().map(|b| b.var.clone());
                    if let Some(b) = b {
                        defs.insert(b, rhs.clone());
                    }
                }
                match rhs {
                    Expr::Index { arr, idx }
                    | Expr::LinIndex { arr, idx }
                    | Expr::LinAccum { arr, idx, .. }
                    | Expr::Set { arr, idx, .. }
                    | Expr::LinSet { arr, idx, .. } => out.push(Access {
                        array: arr.clone(),
                        idx: idx.clone(),
                        always,
                    }),
                    _ => {}
                }
            }
        }
        false
    });
}

/// The carried array `binder` and its in-place updates by top-level
/// statements, ending in `out`, the body's result for it; `None` if `out`
/// is not one of them or an update happens deeper.
fn chain(stmts: &[Stmt], binder: &Var, out: &Var) -> Option<Vec<Var>> {
    let mut names = vec![binder.clone()];
    for s in stmts {
        let Stmt::Let { nl, lin, rhs } = s else {
            continue;
        };
        let from = match rhs {
            Expr::LinAccum { arr, .. } | Expr::Set { arr, .. } | Expr::LinSet { arr, .. } => arr,
            _ => continue,
        };
        if names.last() == Some(from) && nl.len() + lin.len() == 1 {
            names.extend(nl.iter().chain(lin).map(|b| b.var.clone()));
        }
    }
    (names.last() == Some(out)).then_some(names)
}

/// Where a window starts relative to the loop's range: its offset and
/// constant.
type Base<'a> = (&'a [(bool, Var)], i64);

/// What a loop's windows add to its code: the statements making them
/// (after the loop's count, `n`), per windowed state component its owned
/// array, which the loop returns for it, and per cell its array and the
/// element's index, where the final state is stored.
#[derive(Default)]
pub(super) struct Opened {
    pub setup: TokenStream,
    pub owned: Vec<(usize, syn::Ident)>,
    pub cells: Vec<(usize, syn::Ident, syn::Ident)>,
    keys: Vec<Var>,
    count: Option<syn::Ident>,
}

impl Opened {
    /// The statements storing each cell's final value (`fin`, the final
    /// state) back into its array, where the loop ran.
    pub(super) fn stores(&self, fin: &[syn::Ident]) -> TokenStream {
        let Some(n) = &self.count else {
            return quote!();
        };
        self.cells
            .iter()
            .filter_map(|(k, own, at)| {
                let f = fin.get(*k)?;
                Some(quote!(if #n != 0 { #own[#at] = #f; }))
            })
            .collect()
    }
}

/// How loop `l` reaches its arrays: its header and the statement binding
/// an iteration's values from `item` (counted from 0 where it has windows
/// or is a zip read by position, [`counted`]; else as before,
/// [`super::loop_header`]), and what goes before it ([`Opened`]), the
/// carried arrays' initial values in `inits` replaced by their windows or
/// cells, registered in `names` until [`close`].
pub(super) fn reach(
    l: &Loop,
    item: &syn::Ident,
    inits: &mut [syn::Ident],
    names: &mut Names,
) -> (TokenStream, TokenStream, Opened) {
    let count = names.temp("n");
    let plan = plan(l, &names.types);
    let keep = plan.as_ref().is_some_and(|p| p.keep);
    let mut opened = match plan.as_ref().filter(|p| !p.keep) {
        Some(p) => open(p, l, &count, inits, names),
        None => Opened::default(),
    };
    let windowed = !opened.keys.is_empty();
    let by_count = match &l.iter {
        _ if keep => None,
        Iter::Range { .. } if !windowed => None,
        _ => counted(&l.iter, &count, item, names),
    };
    let (header, bind, list) = match by_count {
        Some(Counted { list, range, bind }) => (range, bind, list),
        None => {
            let (header, bind) = super::loop_header(&l.iter, item, names);
            (header, bind, quote!())
        }
    };
    if !windowed && list.is_empty() {
        return (header, bind, opened);
    }
    // The count comes first: the windows and the list's window need it.
    let Some((_, lo, hi, _)) = l.iter.unit_range() else {
        return (header, bind, opened);
    };
    let (lo, hi) = (names.ident(lo), names.ident(hi));
    let windows = std::mem::take(&mut opened.setup);
    opened.setup = quote! {
        let #count: usize = if #lo < #hi { #hi - #lo } else { 0 };
        #windows
        #list
    };
    opened.count = Some(count);
    (header, bind, opened)
}

/// A loop counted from 0 ([`counted`]): the list's window of a zip, the
/// range of the count, and the statements binding the index (and element)
/// from an iteration's item.
struct Counted {
    list: TokenStream,
    range: TokenStream,
    bind: TokenStream,
}

/// Makes `plan`'s windows: statements computing them, given the loop's
/// count `n` (0 if it does not run), the carried arrays' initial values
/// in `inits` replaced by their windows, and every name the body accesses
/// a window through registered in `names` until [`close`].
fn open(
    plan: &Plan,
    l: &Loop,
    n: &syn::Ident,
    inits: &mut [syn::Ident],
    names: &mut Names,
) -> Opened {
    let mut opened = Opened::default();
    // Windows with the same start share its computation.
    let mut bases: Vec<(Base, syn::Ident)> = Vec::new();
    for w in &plan.windows {
        match (w.cell, w.state) {
            (Some(c), Some(k)) => open_cell(w, (c, k), l, n, inits, names, &mut opened),
            (None, _) | (Some(_), None) => {
                let b = base(plan, w, &mut bases, names, &mut opened.setup);
                open_window(w, (b, n), plan.descending, inits, names, &mut opened);
            }
        }
        opened.keys.extend(w.names.iter().cloned());
    }
    opened
}

/// The first index of `w`'s window: a new statement computing it, or that
/// of an earlier window with the same offset and constant. The window's
/// length is the loop's count: a window spans one offset ([`keep`]).
fn base<'w>(
    plan: &Plan,
    w: &'w Window,
    bases: &mut Vec<(Base<'w>, syn::Ident)>,
    names: &mut Names,
    setup: &mut TokenStream,
) -> syn::Ident {
    let key = (w.offset.as_slice(), w.first);
    if let Some((_, b)) = bases.iter().find(|(k, _)| *k == key) {
        return b.clone();
    }
    let b = names.temp("base");
    let lo = names.ident(plan.lo);
    let start = index(Some(quote!(#lo)), w, w.first, names);
    // The first index unconditionally, so that `i - b` folds to the count
    // `k` (`i` is `lo + k`); a loop that does not run has an empty window,
    // which fits anywhere.
    setup.extend(quote!(let #b: usize = #start;));
    bases.push((key, b.clone()));
    b
}

/// Makes the window `w` of first index `b` and length `len`.
fn open_window(
    w: &Window,
    (b, len): (syn::Ident, &syn::Ident),
    desc: bool,
    inits: &mut [syn::Ident],
    names: &mut Names,
    opened: &mut Opened,
) {
    let s = names.temp("win");
    match w.state {
        None => {
            let a = names.ident(&w.array);
            opened.setup.extend(quote! {
                let #s = ::linear_ad::__private::window(&#a, #b, #len, #desc);
            });
            names
                .windows
                .insert(w.array.clone(), Reach::Window(Some(s), b));
        }
        Some(k) => {
            let own = names.temp("own");
            let init = &inits[k];
            opened.setup.extend(quote! {
                let mut #own = #init;
                let #s = ::linear_ad::__private::window_mut(&mut #own, #b, #len, #desc);
            });
            inits[k] = s;
            opened.owned.push((k, own));
            for v in &w.names {
                names
                    .windows
                    .insert(v.clone(), Reach::Window(None, b.clone()));
                names.slices.insert(v.clone());
            }
        }
    }
}

/// Makes the cell of carried component `k`, element `o + c`: its value
/// read before the loop if the loop runs (the loop reads it in its first
/// iteration: a cell has an unconditional access), carried as state.
fn open_cell(
    w: &Window,
    (c, k): (i64, usize),
    l: &Loop,
    n: &syn::Ident,
    inits: &mut [syn::Ident],
    names: &mut Names,
    opened: &mut Opened,
) {
    let (own, at, cell) = (names.temp("own"), names.temp("at"), names.temp("cell"));
    let linear = k >= l.nl.len();
    let zero = match l.nl.iter().chain(&l.lin).nth(k).map(|(b, _)| &b.ty) {
        Some(Ty::Array(e, _)) if linear => super::zero(e),
        Some(Ty::Array(e, _)) => match **e {
            Ty::Real(f) => super::float_lit(0.0, f),
            _ => super::zero(e),
        },
        _ => quote!(()),
    };
    let init = &inits[k];
    let index = index(None, w, c, names);
    opened.setup.extend(quote! {
        let mut #own = #init;
        let #at: usize = #index;
        let #cell = if #n == 0 { #zero } else { #own[#at] };
    });
    inits[k] = cell;
    opened.owned.push((k, own.clone()));
    opened.cells.push((k, own, at));
    for v in &w.names {
        names.windows.insert(v.clone(), Reach::Cell);
        names.slices.insert(v.clone());
    }
}

/// What an element access does: read, store a value, or add one in
/// place.
#[derive(Clone, Copy)]
pub(super) enum Op<'a> {
    Read,
    Store(&'a Var),
    Add(&'a Var),
}

/// An access of `arr[idx]` through the window or cell the loop being
/// generated reaches `arr` by, or `None` if it reaches `arr` directly.
/// A window is indexed from its first index (a carried one, a `&mut`
/// slice, is written through and passed on); a cell is the element's
/// value, a real.
pub(super) fn access(arr: &Var, idx: &Var, op: Op, names: &mut Names) -> Option<TokenStream> {
    let reach = names.windows.get(arr)?.clone();
    let (a, i) = (names.ident(arr), names.ident(idx));
    Some(match (reach, op) {
        (Reach::Window(w, b), Op::Read) => {
            let w = w.unwrap_or(a);
            quote!(#w[#i - #b])
        }
        (Reach::Window(_, b), Op::Store(v)) => {
            let v = names.ident(v);
            quote!({ #a[#i - #b] = #v; #a })
        }
        (Reach::Window(_, b), Op::Add(v)) => {
            let t = names.types.get(v).cloned().unwrap_or(Ty::F64);
            let v = names.ident(v);
            let add = super::accumulate(&t, quote!(#a[#i - #b]), quote!(#v));
            quote!({ #add #a })
        }
        (Reach::Cell, Op::Read) => quote!({ let _ = #i; #a }),
        (Reach::Cell, Op::Store(v)) => {
            let v = names.ident(v);
            quote!({ let _ = (#i, #a); #v })
        }
        (Reach::Cell, Op::Add(v)) => {
            let v = names.ident(v);
            quote!({ let _ = #i; #a + #v })
        }
    })
}

/// Ends the windows' registration once the loop's body is generated.
pub(super) fn close(opened: &Opened, names: &mut Names) {
    for k in &opened.keys {
        names.windows.remove(k);
    }
}

/// The index `from + o + c`, `o` being `w`'s offset, wrapping as release
/// builds compute indices.
fn index(from: Option<TokenStream>, w: &Window, c: i64, names: &mut Names) -> TokenStream {
    let op = |neg: bool| match neg {
        true => quote!(::core::primitive::usize::wrapping_sub),
        false => quote!(::core::primitive::usize::wrapping_add),
    };
    // `None` stands for 0, which a first added term replaces.
    let mut s = from;
    for (neg, v) in &w.offset {
        let v = match w.hoisted.iter().find(|(h, _)| h == v) {
            Some((_, inv)) => invariant(inv, names),
            None => {
                let v = names.ident(v);
                quote!(#v)
            }
        };
        s = Some(match (s, *neg) {
            (None, false) => v,
            (s, neg) => {
                let (f, s) = (op(neg), s.unwrap_or_else(|| quote!(0)));
                quote!(#f(#s, #v))
            }
        });
    }
    let s = s.unwrap_or_else(|| quote!(0));
    if c == 0 {
        return s;
    }
    let (f, k) = (op(c < 0), Literal::u64_unsuffixed(c.unsigned_abs()));
    quote!(#f(#s, #k))
}

/// The tokens computing `inv`, wrapping as release builds compute it.
fn invariant(inv: &Inv, names: &mut Names) -> TokenStream {
    match inv {
        Inv::Var(v) => {
            let v = names.ident(v);
            quote!(#v)
        }
        Inv::Lit(n) if *n < 0 => {
            let k = Literal::u64_unsuffixed(n.unsigned_abs());
            quote!(::core::primitive::usize::wrapping_neg(#k))
        }
        Inv::Lit(n) => {
            let k = Literal::u64_unsuffixed(n.unsigned_abs());
            quote!(#k)
        }
        Inv::Op(op, a, b) => {
            let f = match op {
                IntOp::Add => quote!(wrapping_add),
                IntOp::Sub => quote!(wrapping_sub),
                IntOp::Mul => quote!(wrapping_mul),
            };
            let (a, b) = (invariant(a, names), invariant(b, names));
            quote!(::core::primitive::usize::#f(#a, #b))
        }
    }
}

/// The header of a loop over `lo..hi` that counts its iterations `k` in
/// `0..n` instead, binding the index `i = lo + k` (and a zip's element,
/// the list's window read at its position): the statements before the
/// loop, the iterator, and the statements binding from `item`. LLVM proves
/// `k < n` where it could not prove `i - 1 < hi - 1` for `lo = 1`, and a
/// zip read by position has one exit, not two. `None` for a loop with a
/// step, a zip of non-`Copy` elements (read in place from the list), and
/// other headers.
fn counted(iter: &Iter, n: &syn::Ident, item: &syn::Ident, names: &mut Names) -> Option<Counted> {
    let (index, lo, down, zip) = match iter {
        Iter::Range {
            index,
            lo,
            step: None,
            rev,
            ..
        } => (index, lo, *rev, None),
        Iter::Zip {
            index,
            lo,
            step: None,
            desc,
            elem,
            list,
            rev,
            ..
        } if super::is_copy(&elem.ty) => (index, lo, *desc != *rev, Some((elem, list, *desc))),
        Iter::Range { .. }
        | Iter::Zip { .. }
        | Iter::Each { .. }
        | Iter::While { .. }
        | Iter::Replay { .. } => return None,
    };
    let (lo, i) = (names.ident(lo), names.ident(&index.var));
    let range = match down {
        true => quote!((0..#n).rev()),
        false => quote!((0..#n)),
    };
    let mut bind = quote!(let #i = #lo + #item;);
    let mut list_window = quote!();
    if let Some((elem, list, desc)) = zip {
        let (l, w, e) = (
            names.ident(list),
            names.temp("list"),
            names.ident(&elem.var),
        );
        list_window = quote!(let #w = ::linear_ad::__private::window(&#l, 0, #n, false););
        // The m-th element goes with the range's m-th index in its own
        // order: downwards, `hi - 1 - m` is `i`.
        let pos = match desc {
            true => quote!(#n - 1 - #item),
            false => quote!(#item),
        };
        bind.extend(quote!(let #e = #w[#pos];));
    }
    Some(Counted {
        list: list_window,
        range,
        bind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_program;

    /// The windows of the first loop in the body of `src`'s only
    /// function: per window, the array before the loop, its offset's
    /// variables (`-` before a subtracted one), first constant and span.
    fn windows(src: &str) -> Vec<String> {
        let p = parse_program(src).expect("parses");
        crate::check::check(&p).expect("type-checks");
        let f = &p.funcs[0];
        let l = super::super::first_loop(f);
        let types = crate::visit::binder_types(f);
        let Some(plan) = plan(l, &types) else {
            return vec![];
        };
        plan.windows
            .iter()
            .map(|w| {
                let offset: Vec<String> = w
                    .offset
                    .iter()
                    .map(|(neg, v)| format!("{}{v}", if *neg { "-" } else { "" }))
                    .collect();
                let cell = if w.cell.is_some() { " (cell)" } else { "" };
                format!(
                    "{} [{}] {} {}{cell}",
                    w.array,
                    offset.join(" "),
                    w.first,
                    w.span
                )
            })
            .collect()
    }

    fn with_body(header: &str, body: &str) -> String {
        format!(
            "def f(x: array(f64), y0: array(f64), r: int;) -> (f64;) =
               let one: int; = 1i in
               let n: int; = len(x) in
               let s0: f64; = 0.0 in
               let s: f64, y: array(f64); = loop for i: int in {header} carry(acc: f64 = s0, a: array(f64) = y0;) collect() {{
                 {body}
               }} in
               let ; = drop(y) in
               let ; = drop(r) in
               (s;)"
        )
    }

    #[test]
    fn offsets_from_outside_and_constants() {
        // `x[r + i - 1]`: a window of `x` from `lo + r - 1`; the state `a`
        // written at `i`.
        let body = "let k0: int; = iadd(r, i) in
                    let m: int; = -1i in
                    let k1: int; = iadd(k0, m) in
                    let x1: f64; = index(x, k1) in
                    let u: f64; = acc + x1 in
                    let a2: array(f64); = set(a, i, x1) in
                    (u, a2;)";
        let src = with_body("range(one, n) rev", body);
        assert_eq!(windows(&src), vec!["x [r] -1 0", "y0 [] 0 0"]);
        // `x[i + r]` beside it: two offsets, and the loop is left as it
        // was (see `keep`).
        let two = body.replace(
            "let u: f64; = acc + x1 in",
            "let k2: int; = iadd(i, r) in
             let x2: f64; = index(x, k2) in
             let t: f64; = x1 + x2 in
             let u: f64; = acc + t in",
        );
        let p = parse_program(&with_body("range(one, n)", &two)).expect("parses");
        let f = &p.funcs[0];
        let kept =
            plan(super::super::first_loop(f), &crate::visit::binder_types(f)).map(|p| p.keep);
        assert_eq!(kept, Some(true));
    }

    #[test]
    fn an_index_not_of_the_form_is_not_windowed() {
        // `x[2·i]`, and the state read at `i` but replaced by a new array.
        let body = "let two: int; = 2i in
                    let k: int; = imul(two, i) in
                    let xk: f64; = index(x, k) in
                    let u: f64; = acc + xk in
                    let ai: f64; = index(a, i) in
                    let a2: array(f64); = fill(n, ai) in
                    (u, a2;)";
        assert_eq!(
            windows(&with_body("range(one, n)", body)),
            Vec::<String>::new()
        );
    }

    #[test]
    fn an_access_in_an_arm_must_fall_inside_the_unconditional_ones() {
        // `x[i + k]` only in an arm, beside `x[i]` in every iteration.
        let arm = |k: i64| {
            format!(
                "let xi: f64; = index(x, i) in
                 let zero: f64; = 0.0 in
                 let pos: bool; = gt(xi, zero) in
                 let t: f64; = case pos {{
                   true => {{
                     let c: int; = {k}i in
                     let j: int; = iadd(i, c) in
                     let xj: f64; = index(x, j) in
                     (xj;)
                   }}
                   | false => (zero;)
                 }} in
                 let u: f64; = acc + t in
                 (u, a;)"
            )
        };
        // `i + 1` is past the window of `x[i]`: a loop ending at `x`'s
        // end would panic where the arm is never taken.
        assert!(windows(&with_body("range(one, n)", &arm(1))).is_empty());
        assert_eq!(
            windows(&with_body("range(one, n)", &arm(0))),
            vec!["x [] 0 0"]
        );
    }

    #[test]
    fn an_array_read_otherwise_is_not_windowed() {
        // `len(x)` in the body.
        let body = "let xi: f64; = index(x, i) in
                    let m: int; = len(x) in
                    let ; = drop(m) in
                    let u: f64; = acc + xi in
                    (u, a;)";
        assert_eq!(
            windows(&with_body("range(one, n)", body)),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_stepped_range_has_no_windows() {
        let body = "let xi: f64; = index(x, i) in
                    let u: f64; = acc + xi in
                    (u, a;)";
        assert!(windows(&with_body("range(one, n, n)", body)).is_empty());
        assert_eq!(windows(&with_body("range(one, n)", body)), vec!["x [] 0 0"]);
    }

    #[test]
    fn a_product_from_outside_is_computed_again_before_the_loop() {
        // `x[r·n + i]`, the product computed in the body, as a transposed
        // loop recomputes a row's start.
        let body = "let w: int; = imul(r, n) in
                    let k: int; = iadd(w, i) in
                    let xk: f64; = index(x, k) in
                    let u: f64; = acc + xk in
                    (u, a;)";
        assert_eq!(
            windows(&with_body("range(one, n)", body)),
            vec!["x [w] 0 0"]
        );
        // A product with the index is not an offset.
        let body = body.replace("imul(r, n)", "imul(r, i)");
        assert!(windows(&with_body("range(one, n)", &body)).is_empty());
    }

    #[test]
    fn state_accessed_at_one_element_is_a_cell() {
        // `a[r] = a[r] + x[i]` in every iteration: a cell, beside the
        // window of `x`.
        let body = "let xi: f64; = index(x, i) in
                    let ar: f64; = index(a, r) in
                    let t: f64; = ar + xi in
                    let a2: array(f64); = set(a, r, t) in
                    (acc, a2;)";
        assert_eq!(
            windows(&with_body("range(one, n) rev", body)),
            vec!["x [] 0 0", "y0 [r] 0 0 (cell)"]
        );
        // Two elements: neither a cell nor a window.
        let two = body.replace("set(a, r, t)", "set(a, one, t)");
        assert_eq!(windows(&with_body("range(one, n)", &two)), vec!["x [] 0 0"]);
    }
}
