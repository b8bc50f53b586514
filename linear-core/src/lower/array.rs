//! Lowering of arrays read by index: slices, `Vec`s and references to
//! fixed-size arrays of floats (or tuples of floats) passed as parameters.
//!
//! * `a[i]` with any integer expression `i` is `index(a, i)`; `a.len()` is
//!   `len(a)`. Out of bounds panics in every generated function as in the
//!   original: generated code indexes with Rust's checked `[]`.
//! * Arrays of rows (`&[[T; M]]` and the other kinds with `[T; M]`
//!   elements) are their flat IR arrays ([`super::Shape::row`]):
//!   `a[i][j]` is `index(a, i * M + j)`, `a[i]` the tuple of row `i`'s
//!   elements, `a.len()` is `len(a) / M`. A column `j` that is not a
//!   literal is checked: the index becomes `i * M + j % M + (j / M) *
//!   len(a)`, out of bounds (a panic, as in the original) when `j >= M`,
//!   and `i * M + j` when not (with `j`'s range known, as in
//!   `for j in 0..M`, rustc folds the check away).
//! * Iteration is index loops: `for v in a.iter()` (also `&a`, `a`,
//!   parts `a[lo..hi]`, `.copied()`, `.cloned()`, `.rev()`, `.enumerate()`,
//!   `.zip(b.iter())`, `.skip(s)`, `.take(t)`, `.step_by(k)`, `.chain(..)`, `.filter(|v| ..)`, on
//!   differentiable arrays and `#[nondiff]` data alike, recognised by
//!   `iter.rs`) is rewritten, before lowering, into `for k in 0..n { let v
//!   = a[k]; .. }`, with `n` the shorter length for a `zip`, offsets for
//!   parts and skips, and the body under `if` for a filter. Patterns bind values: `&v` and `v`
//!   both bind the element (and `*v` reads it). Through `a.iter_mut()` or
//!   `&mut a` (a local array) a name is the element's place instead:
//!   `*v` in the body becomes `a[k]`, read and written. `for c in
//!   a.chunks(k)` (and `chunks_exact`) runs over the chunks' indices, with
//!   `c[j]` read as `a[i * k + j]` and `c.len()` as the chunk's length;
//!   `for w in a.windows(k)` over the windows', `w[j]` read as `a[i + j]`.
//! * Reductions are loops: `it.sum::<f64>()`, `it.product::<f64>()`,
//!   `it.map(|v| e).sum()` (a map of a map is one body, the inner's value
//!   bound to the outer's parameter) and `it.fold(init, |acc, v| e)` (after
//!   a map too) over such an iteration (or over chunks or windows) become
//!   `{ let mut s = init; for v in it { s = s + e; } s }`; over a range
//!   (`(0..n).map(|i| e).sum()`, also `.rev()`, `.step_by(k)`) the loop
//!   runs the range itself.
//! * Collections are pushes: `it.collect()` and `it.map(|v| e).collect()`
//!   over the same iterations become `{ let mut c: Vec<T> = Vec::new();
//!   for v in it { c.push(e); } c }`, `T` from the turbofish, the `let`
//!   annotation or the function's result (rows `[T; M]` included). A
//!   collected `Vec` bound `let mut` is written in place, not copied.
//!   Closures are accepted only in these adapters.
//!
//! * Local arrays: `let mut y = vec![v; n]` or `[v; N]` (literal `N`) of
//!   floats or tuples of floats is `fill(n, v)`; `y[i] = e` and
//!   `y[i] op= e` rebind `y` to `set(y, i, ..)`, written in place, and a
//!   loop writing `y` carries it as state, as a branch does. A copy to
//!   write into (`let mut y = x.to_vec();`, `x.clone()`) is a local array
//!   filled by a loop, whether `x` has a derivative or is constant data
//!   ([`Lowerer::array_copy`], `constant_copy`).
//! * Growing arrays: `Vec::new()` and `Vec::with_capacity(n)` are
//!   `fill(0, 0)` (of the annotated element type, else the function's
//!   float), `y.push(e)` rebinds `y` to `push(y, e)`, pushed in place. A
//!   `mut` array parameter is a local copy ([`Lowerer::array_copy`]).
//!
//! The rewriting is syntactic and total (a chain it does not recognise is
//! left alone, and reported where it is lowered), so errors point at the
//! user's own code.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::spanned::Spanned;

use super::iter::{bind_item, leaf, parse, recognise, untyped, Bound};
use super::{Lowerer, Val};
use crate::ir::{Expr, Prim, Ty};

/// The prefix of a reduction's accumulator's name, which errors about
/// it do not show (`control::state_of`).
pub(super) const ACCUMULATOR: &str = "__linear_ad_s";

/// `it.map(|p| b)` as `it`, `p` (without a type ascription) and `b`;
/// `it.map(f)`, a function or closure by name, as `it`, `v` and `f(v)`;
/// maps of maps composed.
/// `None` if `e` is not a `map` call, `Some(None)` if its argument is
/// neither.
#[allow(clippy::type_complexity)]
fn map_call(e: &syn::Expr) -> Option<Option<(&syn::Expr, TokenStream, TokenStream)>> {
    let syn::Expr::MethodCall(inner) = e else {
        return None;
    };
    if inner.method != "map" || inner.args.len() != 1 {
        return None;
    }
    let (p, b) = match &inner.args[0] {
        syn::Expr::Closure(cl) => {
            let [p] = cl.inputs.iter().collect::<Vec<_>>()[..] else {
                return Some(None);
            };
            let (p, b) = (untyped(p), &cl.body);
            (quote!(#p), quote!(#b))
        }
        syn::Expr::Path(f) if f.qself.is_none() && f.path.get_ident().is_some() => {
            let v = format_ident!("__linear_ad_mapped");
            (quote!(#v), quote!(#f(#v)))
        }
        _ => return Some(None),
    };
    // `it.map(f).map(g)`: one iteration, `g` applied to `f`'s value.
    match map_call(&inner.receiver) {
        Some(Some((it, p0, b0))) => Some(Some((it, p0, quote!({ let #p = #b0; #b })))),
        Some(None) => Some(None),
        None => Some(Some((&inner.receiver, p, b))),
    }
}

/// `stmts` with each `*name` of an alias replaced by its element; the
/// span of a use of an alias other than through `*`, if any.
fn through_places(
    stmts: &[syn::Stmt],
    places: &[(syn::Ident, syn::Expr)],
) -> Result<Vec<syn::Stmt>, Span> {
    use syn::visit_mut::VisitMut;
    struct Rewrite<'p> {
        places: &'p [(syn::Ident, syn::Expr)],
        stray: Option<Span>,
    }
    impl Rewrite<'_> {
        fn place(&self, e: &syn::Expr) -> Option<&syn::Expr> {
            let syn::Expr::Path(p) = e else { return None };
            let id = p.path.get_ident()?;
            self.places.iter().find(|(n, _)| n == id).map(|(_, e)| e)
        }
    }
    impl VisitMut for Rewrite<'_> {
        fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
            if let syn::Expr::Unary(u) = e {
                if matches!(u.op, syn::UnOp::Deref(_)) {
                    if let Some(p) = self.place(&u.expr) {
                        *e = p.clone();
                        return;
                    }
                }
            }
            if self.place(e).is_some() && self.stray.is_none() {
                self.stray = Some(e.span());
            }
            syn::visit_mut::visit_expr_mut(self, e);
        }
    }
    let mut r = Rewrite {
        places,
        stray: None,
    };
    let out = rewritten(stmts, &mut r);
    r.stray.map_or(Ok(out), Err)
}

/// `stmts` with `v` applied to each (a rewriter that records the first
/// use it cannot rewrite, which its caller reports).
fn rewritten(stmts: &[syn::Stmt], v: &mut impl syn::visit_mut::VisitMut) -> Vec<syn::Stmt> {
    let mut out = stmts.to_vec();
    for s in &mut out {
        v.visit_stmt_mut(s);
    }
    out
}

impl Lowerer<'_> {
    /// `a[i]` of a differentiable array, `None` if `base` is not one.
    pub(super) fn array_index(&mut self, base: &Val, ix: &syn::ExprIndex) -> Option<Val> {
        let Val::Active(a, Ty::Array(elem, _)) = base else {
            return None;
        };
        let (a, elem) = (a.clone(), (**elem).clone());
        let i = self.int(&ix.index);
        if let Some((row, m)) = self.row_of(&a) {
            return Some(self.whole_row(&a, i, &row, m));
        }
        let rhs = Expr::Index {
            arr: a.clone(),
            idx: i,
        };
        let v = self.emit("x", elem.clone(), rhs.clone());
        if let Some(super::Shape::Slice(s, _)) = self.shapes.get(&a).cloned() {
            self.shapes.insert(v.clone(), *s);
        }
        if let Expr::Index { idx, .. } = rhs {
            self.element_origin(&a, idx, &v);
        }
        Some(Val::Active(v, elem))
    }

    /// `a.len()` of a differentiable array, `None` if `recv` is not one.
    pub(super) fn array_len(&mut self, recv: &Val) -> Option<Val> {
        let Val::Active(a, Ty::Array(..)) = recv else {
            return None;
        };
        let mut n = self.emit_nd("n", Ty::Int, Expr::Len(a.clone()));
        if let Some((_, m)) = self.row_of(a) {
            // The rows of a flat array.
            let m = self.emit_nd("k", Ty::Int, Expr::Int(m as i64));
            n = self.int_prim(Prim::IDiv, n, m);
        }
        Some(Val::Active(n, Ty::Int))
    }

    /// The element and width of the rows of array `a`, if it holds rows
    /// (see [`super::Shape::row`]).
    fn row_of(&self, a: &crate::ir::Var) -> Option<(super::Shape, usize)> {
        let shape = self.shapes.get(a)?;
        shape.row().map(|(e, m)| (e.clone(), m))
    }

    pub(super) fn int_prim(
        &mut self,
        prim: Prim,
        a: crate::ir::Var,
        b: crate::ir::Var,
    ) -> crate::ir::Var {
        self.emit_nd(
            "n",
            Ty::Int,
            Expr::Prim {
                prim,
                args: vec![a, b],
            },
        )
    }

    /// Row `i` of a flat array of rows of width `m`: a tuple of its `m`
    /// elements (a `[T; m]` value), read at `i * m + c`.
    fn whole_row(
        &mut self,
        a: &crate::ir::Var,
        i: crate::ir::Var,
        row: &super::Shape,
        m: usize,
    ) -> Val {
        let width = self.emit_nd("k", Ty::Int, Expr::Int(m as i64));
        let start = self.int_prim(Prim::IMul, i, width);
        let elem = row.ty();
        let mut parts = Vec::with_capacity(m);
        for c in 0..m {
            let c = self.emit_nd("k", Ty::Int, Expr::Int(c as i64));
            let at = self.int_prim(Prim::IAdd, start.clone(), c);
            let rhs = Expr::Index {
                arr: a.clone(),
                idx: at,
            };
            parts.push(self.emit("x", elem.clone(), rhs));
        }
        let ty = Ty::Tuple(vec![elem; m]);
        let v = self.emit("x", ty.clone(), Expr::Tup(parts));
        self.shapes
            .insert(v.clone(), super::Shape::Array(Box::new(row.clone()), m));
        Val::Active(v, ty)
    }

    /// The flat index of `a[i][j]` in an array of rows of width `m`; a
    /// run-time `j` past the row lands past the end (see
    /// [`Lowerer::row_element`]).
    fn row_index(
        &mut self,
        a: &crate::ir::Var,
        m: usize,
        row_ix: &syn::Expr,
        col_ix: &syn::Expr,
    ) -> crate::ir::Var {
        let i = self.int(row_ix);
        let j = self.int(col_ix);
        let width = self.emit_nd("k", Ty::Int, Expr::Int(m as i64));
        let start = self.int_prim(Prim::IMul, i, width.clone());
        let col = if super::int_literal(col_ix).is_some() {
            j
        } else {
            let within = self.int_prim(Prim::IRem, j.clone(), width.clone());
            let past = self.int_prim(Prim::IDiv, j, width);
            let len = self.emit_nd("n", Ty::Int, Expr::Len(a.clone()));
            let out = self.int_prim(Prim::IMul, past, len);
            self.int_prim(Prim::IAdd, within, out)
        };
        self.int_prim(Prim::IAdd, start, col)
    }

    /// `a[i][j]` where `a` holds rows of width `m`: element `i * m + j` of
    /// the flat array, `None` if `base` (`a`, lowered) holds no rows. A
    /// literal `j` past the row is rustc's error on the original function;
    /// any other `j` is checked at run time: `j >= m` adds at least the
    /// array's length to the index, which then panics out of bounds as the
    /// original does (with the flat array's length in the message).
    pub(super) fn row_element(
        &mut self,
        base: &Val,
        row_ix: &syn::Expr,
        col_ix: &syn::Expr,
    ) -> Option<Val> {
        let Val::Active(a, Ty::Array(elem, _)) = base else {
            return None;
        };
        let (row, m) = self.row_of(a)?;
        let (a, elem) = (a.clone(), (**elem).clone());
        let at = self.row_index(&a, m, row_ix, col_ix);
        let v = self.emit("x", elem.clone(), Expr::Index { arr: a, idx: at });
        self.shapes.insert(v.clone(), row);
        Some(Val::Active(v, elem))
    }

    /// A `for` loop over arrays as a loop over their indices, `None` if
    /// it iterates over something else, `Some(Err(()))` after reporting a
    /// pattern that does not fit its items.
    pub(super) fn array_for(
        &mut self,
        f: &syn::ExprForLoop,
    ) -> Option<Result<syn::ExprForLoop, ()>> {
        if let Some(l) = self.chunk_for(f) {
            return Some(l);
        }
        let c = recognise(&f.expr)?;
        let k = format_ident!("__linear_ad_k{}", self.fresh_index());
        let mut bound = Bound::default();
        if let Err(span) = bind_item(&f.pat, &c.item, &quote!(#k), &c.sources, &mut bound) {
            self.errs.push(span, "this pattern does not match the iteration's items: bind names, `&name`, `_`, or tuples of them as `.enumerate()` and `.zip(..)` yield them (and a plain name for `iter_mut()`'s)");
            return Some(Err(()));
        }
        let stmts = match through_places(&f.body.stmts, &bound.places) {
            Ok(stmts) => stmts,
            Err(span) => {
                self.errs.push(span, "an element of `iter_mut()` is read and written through `*name` only (`*v = ..`, `*v += ..`, `*v * 2.0`)");
                return Some(Err(()));
            }
        };
        let lets = bound.lets;
        let n = &c.len;
        // Parenthesised: a block bound (`zip`'s) must not end the head.
        let range = if c.rev {
            quote!((0..#n).rev())
        } else {
            quote!((0..#n))
        };
        let mut body = quote!(#(#lets)* #(#stmts)*);
        // Innermost the last filter: each runs only on the items the
        // earlier ones kept.
        for (pat, item, cond) in c.filters.iter().rev() {
            let mut held = Bound::default();
            if bind_item(pat, item, &quote!(#k), &c.sources, &mut held).is_err()
                || !held.places.is_empty()
            {
                self.errs.spanned(pat, "this pattern does not match the filtered items: bind names, `&name`, `_`, or tuples of them");
                return Some(Err(()));
            }
            let held = held.lets;
            body = quote!({ #(#held)* if #cond { #body } });
        }
        // Spanned at the user's `for`: errors about the loop point there.
        let span = f.for_token.span;
        match parse(quote::quote_spanned!(span=> for #k in #range { #body })) {
            Some(l) => Some(Ok(l)),
            None => {
                self.errs.spanned(
                    &f.expr,
                    "linear-ad internal error: this loop could not be rewritten as a loop over indices",
                );
                Some(Err(()))
            }
        }
    }

    /// `for c in a.chunks(k)` (or `chunks_exact(k)`, `windows(k)`) as a loop over the
    /// chunks' indices, `c[j]` read as `a[i * k + j]` and `c.len()` as the
    /// chunk's length (the last of `chunks` may be shorter, and reading past
    /// it panics as in the original); `None` if `f` is not one.
    fn chunk_for(&mut self, f: &syn::ExprForLoop) -> Option<Result<syn::ExprForLoop, ()>> {
        let syn::Expr::MethodCall(m) = super::exits::strip(&f.expr) else {
            return None;
        };
        let kind = match m.method.to_string().as_str() {
            "chunks" => Parts::Chunks,
            "chunks_exact" => Parts::Exact,
            "windows" => Parts::Windows,
            _ => return None,
        };
        let a = leaf(&m.receiver)?;
        let [k] = m.args.iter().collect::<Vec<_>>()[..] else {
            return None;
        };
        let syn::Pat::Ident(name) = &*f.pat else {
            self.errs
                .spanned(&f.pat, "bind each chunk to a name (`for c in a.chunks(k)`)");
            return Some(Err(()));
        };
        let i = format_ident!("__linear_ad_k{}", self.fresh_index());
        let (n, len, start) = match kind {
            Parts::Exact => (quote!(#a.len() / (#k)), quote!((#k)), quote!(#i * (#k))),
            Parts::Chunks => {
                let rest = quote!((#a.len() - #i * (#k)));
                (
                    quote!((#a.len() + (#k) - 1) / (#k)),
                    quote!(if #rest < (#k) { #rest } else { #k }),
                    quote!(#i * (#k)),
                )
            }
            // Every run of `k` consecutive elements, none if there are
            // fewer.
            Parts::Windows => (
                quote!(if #a.len() < (#k) { 0 } else { #a.len() + 1 - (#k) }),
                quote!((#k)),
                quote!(#i),
            ),
        };
        let chunk = Chunk {
            name: &name.ident,
            start,
            array: &a,
            len,
            stray: None,
        };
        let stmts = match chunk.rewrite(&f.body.stmts) {
            Ok(stmts) => stmts,
            Err(span) => {
                self.errs
                    .push(span, "a chunk is read by index (`c[j]`) and `c.len()` only");
                return Some(Err(()));
            }
        };
        let span = f.for_token.span;
        match parse(quote::quote_spanned!(span=> for #i in 0..(#n) { #(#stmts)* })) {
            Some(l) => Some(Ok(l)),
            None => {
                self.errs.spanned(
                    &f.expr,
                    "linear-ad internal error: this loop could not be rewritten as a loop over indices",
                );
                Some(Err(()))
            }
        }
    }

    /// A reduction over arrays (`sum`, `map(..).sum`, `fold`) as a block
    /// with a loop, `None` if `m` is not one.
    pub(super) fn array_reduction(&mut self, m: &syn::ExprMethodCall) -> Option<syn::Expr> {
        let acc = format_ident!("{ACCUMULATOR}{}", self.fresh_index());
        let method = m.method.to_string();
        // The items, through a `map` if there is one (`it.map(f).fold(..)`).
        let (iter, pat, item, mapped) = match map_call(&m.receiver) {
            Some(Some((it, p, b))) => (it, p, quote!((#b)), true),
            Some(None) => return None,
            None => {
                let v = format_ident!("__linear_ad_v{}", self.fresh_index());
                (&*m.receiver, quote!(#v), quote!(#v), false)
            }
        };
        let (init, pat, body) = match (method.as_str(), m.args.len()) {
            ("sum", 0) => (quote!(0.0), pat, quote!(#acc + #item)),
            ("product", 0) => (quote!(1.0), pat, quote!(#acc * #item)),
            ("fold", 2) => {
                let init = &m.args[0];
                match &m.args[1] {
                    syn::Expr::Closure(cl) => {
                        let [a, p] = cl.inputs.iter().collect::<Vec<_>>()[..] else {
                            return None;
                        };
                        let (a, p, b) = (untyped(a), untyped(p), &cl.body);
                        match mapped {
                            // The fold's item is the map's value.
                            true => {
                                let p = by_value(p);
                                (
                                    quote!(#init),
                                    pat,
                                    quote!({ let #p = #item; let #a = #acc; #b }),
                                )
                            }
                            false => (quote!(#init), quote!(#p), quote!({ let #a = #acc; #b })),
                        }
                    }
                    // `fold(f64::NEG_INFINITY, f64::max)`: a float's
                    // method of two floats, by its path.
                    syn::Expr::Path(f) => {
                        let name = binary_method(&f.path)?;
                        (quote!(#init), pat, quote!(#acc.#name(#item)))
                    }
                    _ => return None,
                }
            }
            _ => return None,
        };
        let chained = super::iter::split_chain(iter).is_some();
        if recognise(iter).is_none() && !is_range(iter) && !is_parts(iter) && !chained {
            return None;
        }
        // Spanned at the method, so that an error about the loop (its
        // accumulator's type) points at the user's `fold` or `sum`.
        let span = m.method.span();
        parse(quote::quote_spanned!(span=> {
            let mut #acc = #init;
            for #pat in #iter {
                #acc = #body;
            }
            #acc
        }))
    }

    /// `iter.collect()` and `iter.map(|p| e).collect()` over arrays, into
    /// a `Vec`, as a block that pushes each item onto a new local `Vec`
    /// in a loop; `None` if `m` is not one. The element type is the
    /// turbofish's (`collect::<Vec<T>>()`), else that of the `Vec` expected
    /// (`ret`, from a `let` annotation or the function's result), else
    /// the function's float (a push says when that does not fit).
    pub(super) fn array_collect(
        &mut self,
        m: &syn::ExprMethodCall,
        ret: Option<&super::Shape>,
    ) -> Option<syn::Expr> {
        if !is_collect(m) {
            return None;
        }
        let acc = format_ident!("__linear_ad_c{}", self.fresh_index());
        let (iter, pat, item) = match map_call(&m.receiver) {
            Some(Some((it, p, b))) => (it, p, b),
            Some(None) => return None,
            None => {
                let other = &*m.receiver;
                let v = format_ident!("__linear_ad_v{}", self.fresh_index());
                (other, quote!(#v), quote!(#v))
            }
        };
        let chained = super::iter::split_chain(iter).is_some();
        if recognise(iter).is_none() && !is_range(iter) && !is_parts(iter) && !chained {
            return None;
        }
        let turbofish = m.turbofish.as_ref().and_then(|t| match t.args.first() {
            Some(syn::GenericArgument::Type(t)) => Some(quote!(: #t)),
            _ => None,
        });
        let annotation = turbofish.or_else(|| match ret {
            Some(s @ super::Shape::Slice(_, super::SliceKind::Vec)) => {
                let t = s.rust();
                Some(quote!(: #t))
            }
            _ => None,
        });
        parse(quote!({
            let mut #acc #annotation = ::std::vec::Vec::new();
            for #pat in #iter {
                #acc.push(#item);
            }
            #acc
        }))
    }

    fn fresh_index(&mut self) -> usize {
        self.next_const += 1;
        self.next_const
    }
}

/// A closure parameter's pattern as it binds a value: `&v` (and `&&v`)
/// as `v`, which a `let` of the value itself then binds.
fn by_value(p: &syn::Pat) -> &syn::Pat {
    match p {
        syn::Pat::Reference(r) => by_value(&r.pat),
        other => other,
    }
}

/// The method a path to a float's method of two floats names (`f64::max`,
/// `f32::min`, `T::hypot`), which `fold` may be given instead of a
/// closure.
fn binary_method(path: &syn::Path) -> Option<&syn::Ident> {
    let [owner, method] = path.segments.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let binary = [
        "max",
        "min",
        "hypot",
        "atan2",
        "powf",
        "copysign",
        "rem_euclid",
    ];
    (owner.arguments.is_none() && binary.iter().any(|b| method.ident == b)).then_some(&method.ident)
}

/// Whether `e` is a method call this module lowers as a reduction.
pub(super) fn is_reduction(m: &syn::ExprMethodCall) -> bool {
    matches!(
        (m.method.to_string().as_str(), m.args.len()),
        ("sum" | "product", 0) | ("fold", 2)
    )
}

/// How `chunk_for` cuts an array.
enum Parts {
    Chunks,
    Exact,
    Windows,
}

/// Whether `e` iterates over an array's chunks or windows
/// (`a.chunks(k)`, `a.chunks_exact(k)`, `a.windows(k)`), which a `for`
/// loop runs over their indices.
fn is_parts(e: &syn::Expr) -> bool {
    matches!(super::exits::strip(e), syn::Expr::MethodCall(m)
        if m.args.len() == 1
            && ["chunks", "chunks_exact", "windows"].iter().any(|n| m.method == n)
            && leaf(&m.receiver).is_some())
}

/// Whether `e` iterates over a range of integers (`a..b`, `(a..b).rev()`,
/// `(a..b).step_by(k)`), which a `for` loop runs as it is.
fn is_range(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Range(r) => r.start.is_some() && r.end.is_some(),
        syn::Expr::Paren(p) => is_range(&p.expr),
        syn::Expr::Group(g) => is_range(&g.expr),
        syn::Expr::MethodCall(m) => {
            matches!(
                (m.method.to_string().as_str(), m.args.len()),
                ("rev", 0) | ("step_by", 1)
            ) && is_range(&m.receiver)
        }
        _ => false,
    }
}

/// Whether `m` is `.collect()`, with or without a turbofish.
pub(super) fn is_collect(m: &syn::ExprMethodCall) -> bool {
    m.method == "collect" && m.args.is_empty()
}

/// `Vec::new()` or `Vec::with_capacity(n)` (by any path ending so).
fn is_empty_vec(e: &syn::Expr) -> bool {
    let syn::Expr::Call(c) = e else { return false };
    let syn::Expr::Path(p) = &*c.func else {
        return false;
    };
    let names: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    match names.as_slice() {
        [.., v, f] if v == "Vec" => {
            (f == "new" && c.args.is_empty()) || (f == "with_capacity" && c.args.len() == 1)
        }
        _ => false,
    }
}

/// `vec![v; n]` or `[v; N]`: the value, the length, and `N` for an inline
/// array of a literal length.
fn fill_parts(e: &syn::Expr) -> Option<(syn::Expr, syn::Expr, Option<u64>)> {
    match e {
        syn::Expr::Paren(p) => fill_parts(&p.expr),
        syn::Expr::Group(g) => fill_parts(&g.expr),
        syn::Expr::Repeat(r) => {
            let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(n),
                ..
            }) = &*r.len
            else {
                return None;
            };
            let size = n.base10_parse::<u64>().ok()?;
            Some(((*r.expr).clone(), (*r.len).clone(), Some(size)))
        }
        syn::Expr::Macro(m) if m.mac.path.is_ident("vec") => {
            let tokens = &m.mac.tokens;
            let r: syn::ExprRepeat = syn::parse2(quote!([#tokens])).ok()?;
            Some(((*r.expr).clone(), (*r.len).clone(), None))
        }
        _ => None,
    }
}

/// The Rust literal of the zero of a vector type: `0.0`, `(0.0, 0.0)`.
fn zero_tokens(t: &Ty) -> TokenStream {
    match t {
        Ty::Tuple(ts) => {
            let ts = ts.iter().map(zero_tokens);
            quote!((#(#ts,)*))
        }
        _ => quote!(0.0),
    }
}

impl Lowerer<'_> {
    /// A local array of floats (or tuples of floats) to write in place:
    /// `vec![v; n]` or `[v; N]` (literal `N`) bound by `let mut`, as
    /// `fill(n, v)`; `None` if `e` is neither.
    pub(super) fn local_array(&mut self, e: &syn::Expr) -> Option<Val> {
        if let Some(v) = self.vec_of_elements(e) {
            return Some(v);
        }
        if is_empty_vec(e) {
            return Some(self.empty_vec(e.span()));
        }
        if let syn::Expr::MethodCall(m) = e {
            // A collected `Vec` is new: written in place, not copied first.
            if is_collect(m) {
                return Some(self.expr(e, "c"));
            }
            if let Some(v) = self.constant_copy(m) {
                return Some(v);
            }
        }
        let (val, len, size) = fill_parts(e)?;
        if let Some((row_val, m)) = fill_parts(&val).and_then(|(v, _, m)| Some((v, m?))) {
            return self.local_rows(&row_val, m as usize, &len, size, e);
        }
        let v = self.expr(&val, "fill");
        let elem = match &v {
            Val::Active(_, t) => t.clone(),
            Val::Inactive(tokens) => self.infer_tokens(tokens).unwrap_or(Ty::F64),
        };
        if !elem.is_vector() {
            return None;
        }
        let v = self.materialize(v, &elem, val.span());
        let n = self.int(&len);
        Some(self.fill(n, v, elem, size))
    }

    /// `vec![[v; m]; n]` or `[[v; m]; N]`: a local array of `n` rows of
    /// width `m`, the flat `fill(n * m, v)` holding rows (as a parameter
    /// `&[[T; m]]` does, [`super::Shape::row`]).
    fn local_rows(
        &mut self,
        val: &syn::Expr,
        m: usize,
        len: &syn::Expr,
        size: Option<u64>,
        whole: &syn::Expr,
    ) -> Option<Val> {
        let v = self.expr(val, "fill");
        let float = Ty::Real(self.float());
        if matches!(&v, Val::Active(_, t) if *t != float) {
            self.errs.spanned(
                whole,
                "the rows of a local array hold floats: `vec![[0.0; M]; n]`",
            );
            return Some(self.placeholder());
        }
        let v = self.materialize(v, &float, val.span());
        let n = self.int(len);
        let width = self.emit_nd("k", Ty::Int, Expr::Int(m as i64));
        let flat = self.int_prim(Prim::IMul, n, width);
        let a = self.fill(flat, v, float, size.map(|n| n * m as u64));
        let kind = match size {
            Some(n) => super::SliceKind::Array(n as usize),
            None => super::SliceKind::Vec,
        };
        let row = super::Shape::Array(Box::new(super::Shape::Float(self.float())), m);
        if let Val::Active(v, _) = &a {
            self.shapes
                .insert(v.clone(), super::Shape::Slice(Box::new(row), kind));
        }
        Some(a)
    }

    /// Element `c` of a row value: a part of the IR tuple, or `row[c]` of
    /// an inactive Rust array (`[1.0, 2.0]`, where `.0` would not parse).
    fn row_part(&mut self, row: &Val, c: usize, span: Span) -> Val {
        match row {
            Val::Inactive(t) => {
                let c = proc_macro2::Literal::usize_unsuffixed(c);
                Val::Inactive(quote!((#t)[#c]))
            }
            Val::Active(..) => self.select(row.clone(), c, span),
        }
    }

    /// `fill(n, v)`: a new local array of `n` elements `v` of type `elem`.
    fn fill(&mut self, n: crate::ir::Var, v: crate::ir::Var, elem: Ty, size: Option<u64>) -> Val {
        let ty = Ty::Array(Box::new(elem), size);
        let rhs = Expr::Fill {
            len: n,
            val: v,
            size,
        };
        let a = self.emit("a", ty.clone(), rhs);
        Val::Active(a, ty)
    }

    /// An empty local `Vec` that pushes fill: `fill(0, 0)` of the
    /// annotated element type (`let mut y: Vec<(f64, f64)> = Vec::new();`),
    /// else of the function's float type. The capacity is a hint the IR
    /// does not keep (a push grows the `Vec` as Rust's does).
    fn empty_vec(&mut self, span: Span) -> Val {
        let hint = self.ret_hint.clone();
        let (elem, rows) = match &hint {
            // Rows (`Vec<[f64; 3]>`): a flat array, pushed a row at a time.
            Some(s @ super::Shape::Slice(_, super::SliceKind::Vec)) if s.row().is_some() => {
                (Ty::Real(self.float()), Some(s.clone()))
            }
            // Structs (`Vec<Body>`): their flat values, which reads of its
            // elements see as structs again.
            Some(s @ super::Shape::Slice(e, super::SliceKind::Vec)) if s.elements().is_some() => {
                (e.ty(), Some(s.clone()))
            }
            Some(super::Shape::Slice(e, super::SliceKind::Vec)) => (e.ty(), None),
            _ => (Ty::Real(self.float()), None),
        };
        let zero = self.materialize(Val::Inactive(zero_tokens(&elem)), &elem, span);
        let n = self.emit_nd("n", Ty::Int, Expr::Int(0));
        let a = self.fill(n, zero, elem, None);
        if let (Val::Active(v, _), Some(rows)) = (&a, rows) {
            self.shapes.insert(v.clone(), rows);
        }
        a
    }

    /// `y.push(e)` on a local `Vec` `y`: `y` rebound to `push(y, e)`,
    /// written in place. `false` if `m` is not a push on one.
    pub(super) fn push_stmt(&mut self, m: &syn::ExprMethodCall) -> bool {
        if m.method != "push" || m.args.len() != 1 {
            return false;
        }
        let syn::Expr::Path(p) = &*m.receiver else {
            return false;
        };
        let Some(id) = p.path.get_ident() else {
            return false;
        };
        let name = id.to_string();
        let Some(super::Binding::Active(a, ty @ Ty::Array(..), mutable)) =
            self.lookup(&name).cloned()
        else {
            return false;
        };
        let Ty::Array(elem, None) = &ty else {
            // A fixed-size array has no `push`: rustc says so.
            self.errs.rustc_reports();
            return true;
        };
        if !mutable {
            self.errs.spanned(&m.receiver, format!("`{name}` is not a local `Vec` made by `let mut {name} = Vec::new();` (or `Vec::with_capacity(n)`, `vec![..]`): pushes are supported on those"));
            return true;
        }
        let arg = &m.args[0];
        let v = self.expr(arg, "e");
        if let Some((_, width)) = self.row_of(&a) {
            // A row: its elements, pushed in order onto the flat array.
            let mut cur = a;
            for c in 0..width {
                let part = self.row_part(&v, c, arg.span());
                let part = self.materialize(part, elem, arg.span());
                cur = self.emit(
                    "a",
                    ty.clone(),
                    Expr::Push {
                        arr: cur,
                        val: part,
                    },
                );
            }
            self.set_existing(&name, super::Binding::Active(cur, ty, true));
            return true;
        }
        if let Val::Active(pushed, t) = &v {
            if t != &**elem {
                let example = match self.shapes.get(pushed) {
                    Some(super::Shape::Struct(st)) => super::structs::show(&st.path),
                    _ => "(f64, f64)".to_string(),
                };
                self.errs.spanned(arg, format!("this value has type {t}, but `{name}` holds {elem}: annotate its element type (`let mut {name}: Vec<{example}> = Vec::new();`)"));
                // What reads it would only repeat the mismatch.
                self.poisoned_names.insert(name.clone());
                self.set_existing(&name, super::Binding::Poisoned);
                return true;
            }
        }
        let v = self.materialize(v, elem, arg.span());
        let new = self.emit("a", ty.clone(), Expr::Push { arr: a, val: v });
        self.set_existing(&name, super::Binding::Active(new, ty, true));
        true
    }

    /// `vec![a, b, c]` as an array of floats (or tuples of floats):
    /// `fill(3, 0)` then a `set` per element, in order; `None` if `e` is
    /// not that macro or its elements are not vectors.
    pub(super) fn vec_of_elements(&mut self, e: &syn::Expr) -> Option<Val> {
        let syn::Expr::Macro(m) = e else { return None };
        if !m.mac.path.is_ident("vec") {
            return None;
        }
        let parser = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        let elems = m.mac.parse_body_with(parser).ok()?;
        let vals: Vec<(Val, Span)> = elems
            .iter()
            .map(|x| (self.expr(x, "e"), x.span()))
            .collect();
        let elem = vals
            .iter()
            .find_map(|(v, _)| match v {
                Val::Active(_, t) => Some(t.clone()),
                Val::Inactive(_) => None,
            })
            .or_else(|| match &vals.first()?.0 {
                Val::Inactive(tokens) => self.infer_tokens(tokens),
                Val::Active(..) => None,
            })?;
        if !elem.is_vector() {
            return None;
        }
        let vars: Vec<_> = vals
            .into_iter()
            .map(|(v, span)| self.materialize(v, &elem, span))
            .collect();
        let zero = self.materialize(Val::Inactive(zero_tokens(&elem)), &elem, m.span());
        let n = self.emit_nd("n", Ty::Int, Expr::Int(vars.len() as i64));
        let ty = Ty::Array(Box::new(elem), None);
        let mut a = self.emit(
            "a",
            ty.clone(),
            Expr::Fill {
                len: n,
                val: zero,
                size: None,
            },
        );
        for (k, v) in vars.into_iter().enumerate() {
            let i = self.emit_nd("k", Ty::Int, Expr::Int(k as i64));
            let rhs = Expr::Set {
                arr: a,
                idx: i,
                val: v,
            };
            a = self.emit("a", ty.clone(), rhs);
        }
        Some(Val::Active(a, ty))
    }

    /// A new local array holding the elements of `src` (of type `ty`), to
    /// write in place: `let mut y = x.to_vec();` lowered as the Rust it
    /// means, `let mut y = vec![0.0; x.len()]; for i in 0..x.len() { y[i]
    /// = x[i]; }` (`[0.0; N]` and `0..N` for a fixed length). A loop of
    /// sets, so J, U and T need no rule of their own: the tangent is copied
    /// the same way, and the reverse pass takes each slot's cotangent back
    /// out of the copy's buffer into the source's.
    pub(super) fn array_copy(&mut self, src: crate::ir::Var, ty: &Ty) -> Val {
        // A `[T; N]` of floats by value is a tuple in the IR, read by
        // index as an array (`Shape::Array`): its copy is a local array.
        let fixed = self.fixed_floats(&src, ty);
        let Some(Ty::Array(elem, size)) = fixed.as_ref().or(Some(ty)) else {
            return Val::Active(src, ty.clone());
        };
        let (from, to, i) = (
            format_ident!("__linear_ad_copy_from"),
            format_ident!("__linear_ad_copy_to"),
            format_ident!("__linear_ad_copy_i"),
        );
        let zero = zero_tokens(elem);
        let (init, len) = match size {
            Some(n) => {
                let n = proc_macro2::Literal::u64_unsuffixed(*n);
                (quote!([#zero; #n]), quote!(#n))
            }
            None => (quote!(vec![#zero; #from.len()]), quote!(#from.len())),
        };
        let code = quote! {{
            let mut #to = #init;
            for #i in 0..#len {
                #to[#i] = #from[#i];
            }
        }};
        // A copy of an array of structs holds structs too (`out[i].x`).
        let elements = match self.shapes.get(&src) {
            Some(super::Shape::Slice(e, _)) if matches!(**e, super::Shape::Struct(_)) => {
                Some(super::Shape::Slice(e.clone(), super::SliceKind::Vec))
            }
            _ => None,
        };
        let from = (
            from.to_string(),
            super::Binding::Active(src, ty.clone(), false),
        );
        let copy = self.lowered_copy(code, &to, Some(from));
        if let (Val::Active(v, _), Some(s)) = (&copy, elements) {
            self.shapes.insert(v.clone(), s);
        }
        copy
    }

    /// The local-array type of a copy of `src`, a by-value `[T; N]` of
    /// floats (`N > 0`), whose IR type `ty` is a tuple; `None` for any
    /// other value (a tuple of floats, written by field, is not one).
    pub(super) fn fixed_floats(&self, src: &crate::ir::Var, ty: &Ty) -> Option<Ty> {
        match (ty, self.shapes.get(src)) {
            (Ty::Tuple(ts), Some(super::Shape::Array(e, n)))
                if *n > 0 && matches!(**e, super::Shape::Float(_)) =>
            {
                Some(Ty::Array(Box::new(ts[0].clone()), Some(*n as u64)))
            }
            _ => None,
        }
    }

    /// Lowers `code`, a block that builds the array `to`, in a scope of its
    /// own (holding `bound`, if any), and gives `to`'s value.
    fn lowered_copy(
        &mut self,
        code: TokenStream,
        to: &proc_macro2::Ident,
        bound: Option<(String, super::Binding)>,
    ) -> Val {
        self.scopes.push(Default::default());
        if let Some((name, binding)) = bound {
            self.set(name, binding);
        }
        if let Ok(block) = syn::parse2::<syn::Block>(code) {
            for s in &block.stmts {
                self.stmt(s);
            }
        }
        let copy = match self.lookup(&to.to_string()) {
            Some(super::Binding::Active(v, t, _)) => Val::Active(v.clone(), t.clone()),
            _ => self.placeholder(),
        };
        self.scopes.pop();
        copy
    }

    /// `let mut y = x.to_vec();` (or `x.clone()`) of an array of floats
    /// without a derivative (a `#[nondiff]` parameter, a field of one):
    /// a local array starting from constants, lowered as the Rust it
    /// means, `let mut y = vec![0.0; x.len()]; for i in 0..x.len() { y[i]
    /// = x[i]; }`, so that writes of differentiable values into it follow
    /// the rules of local arrays. `None` when `x` is not such an array.
    fn constant_copy(&mut self, m: &syn::ExprMethodCall) -> Option<Val> {
        if !(m.method == "to_vec" || m.method == "clone") || !m.args.is_empty() {
            return None;
        }
        // Read twice below: only a place, never a computation.
        let place = matches!(&*m.receiver, syn::Expr::Path(_) | syn::Expr::Field(_));
        let recv = &m.receiver;
        let elem = self.infer(&syn::parse_quote!(#recv[0]))?;
        if !place || !matches!(elem, Ty::Real(_)) || !self.is_constant(recv) {
            return None;
        }
        let (to, i) = (
            format_ident!("__linear_ad_copy_to"),
            format_ident!("__linear_ad_copy_i"),
        );
        let code = quote! {{
            let mut #to = vec![0.0; #recv.len()];
            for #i in 0..#recv.len() {
                #to[#i] = #recv[#i];
            }
        }};
        Some(self.lowered_copy(code, &to, None))
    }

    /// Whether the place `e` (a name, or fields of one) is rooted in a
    /// binding without a derivative: a `#[nondiff]` or integer parameter,
    /// or a prelude value.
    fn is_constant(&self, e: &syn::Expr) -> bool {
        match e {
            syn::Expr::Field(f) => self.is_constant(&f.base),
            syn::Expr::Path(p) => p.path.get_ident().is_some_and(|id| {
                matches!(
                    self.lookup(&id.to_string()),
                    Some(super::Binding::Param | super::Binding::Inactive(..))
                )
            }),
            _ => false,
        }
    }

    /// `a[i] = e;` or `a[i] op= e;` on a local array `a` (see
    /// [`Lowerer::local_array`]): `a` is rebound to `set(a, i, e)`, written
    /// in place. Returns whether `target` was such an element.
    pub(super) fn element_write(
        &mut self,
        target: &syn::Expr,
        op: Option<crate::ir::Prim>,
        right: &syn::Expr,
    ) -> bool {
        let syn::Expr::Index(ix) = target else {
            return false;
        };
        if self.row_write(ix, op, right) {
            return true;
        }
        let name = match &*ix.expr {
            syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
            _ => None,
        };
        let Some(name) = name else {
            self.errs.spanned(&ix.expr, "element writes are supported on local arrays (`let mut y = vec![0.0; n]`, `[0.0; N]`), written `y[i] = ..`");
            return true;
        };
        let (a, ty) = match self.lookup(&name).cloned() {
            Some(super::Binding::Active(a, ty @ Ty::Array(..), true)) => (a, ty),
            // Reported where it was bound.
            Some(super::Binding::Poisoned) => return true,
            Some(super::Binding::Param) => {
                self.errs.spanned(&ix.expr, format!("`{name}` is a parameter: write into a local copy (`let mut y = vec![0.0; {name}.len()];`) and return it"));
                return true;
            }
            _ => {
                self.errs.spanned(&ix.expr, format!("`{name}` is not a local array of floats made by `let mut {name} = vec![0.0; n]` or `[0.0; N]`: element writes are supported on those"));
                return true;
            }
        };
        let i = self.int(&ix.index);
        if let Some((_, m)) = self.row_of(&a) {
            if op.is_some() {
                // `+=` on a `[T; M]`: rustc rejects the original.
                self.errs.rustc_reports();
                return true;
            }
            let width = self.emit_nd("k", Ty::Int, Expr::Int(m as i64));
            let start = self.int_prim(Prim::IMul, i, width);
            let row = self.expr(right, &name);
            let mut cur = a;
            for c in 0..m {
                let k = self.emit_nd("k", Ty::Int, Expr::Int(c as i64));
                let at = self.int_prim(Prim::IAdd, start.clone(), k);
                let part = self.row_part(&row, c, right.span());
                let float = Ty::Real(self.float());
                let v = self.materialize(part, &float, right.span());
                let set = Expr::Set {
                    arr: cur,
                    idx: at,
                    val: v,
                };
                cur = self.emit("a", ty.clone(), set);
            }
            self.set_existing(&name, super::Binding::Active(cur, ty, true));
            return true;
        }
        self.write_at(&name, (a, ty), i, op, (target, right));
        true
    }

    /// `a[i][j] = e` (or `op=`) on a local array of rows `a`: a write at
    /// the flat index. `false` if `ix` is not an element of one.
    fn row_write(
        &mut self,
        ix: &syn::ExprIndex,
        op: Option<crate::ir::Prim>,
        right: &syn::Expr,
    ) -> bool {
        let syn::Expr::Index(inner) = &*ix.expr else {
            return false;
        };
        let syn::Expr::Path(p) = &*inner.expr else {
            return false;
        };
        let Some(name) = p.path.get_ident().map(|i| i.to_string()) else {
            return false;
        };
        let Some(super::Binding::Active(a, ty @ Ty::Array(..), true)) = self.lookup(&name).cloned()
        else {
            return false;
        };
        let Some((_, m)) = self.row_of(&a) else {
            return false;
        };
        let at = self.row_index(&a, m, &inner.index, &ix.index);
        let target = syn::Expr::Index(ix.clone());
        self.write_at(&name, (a, ty), at, op, (&target, right));
        true
    }

    /// `name[i] op= right` on the local array `a` of type `ty`, at the
    /// IR index `i`: `name` rebound to `set(a, i, v)`.
    fn write_at(
        &mut self,
        name: &str,
        (a, ty): (crate::ir::Var, Ty),
        i: crate::ir::Var,
        op: Option<crate::ir::Prim>,
        (target, right): (&syn::Expr, &syn::Expr),
    ) {
        let Ty::Array(elem, _) = &ty else { return };
        let elem = (**elem).clone();
        self.context = matches!(elem, Ty::Real(_)).then(|| elem.clone());
        let rhs = self.expr(right, name);
        let value = match op {
            None => rhs,
            Some(op) => {
                let cur = self.emit(
                    "x",
                    elem.clone(),
                    Expr::Index {
                        arr: a.clone(),
                        idx: i.clone(),
                    },
                );
                let sym = super::ops::assign_symbol(op);
                let whole = quote!(#target #sym #right);
                let cur = Val::Active(cur, elem.clone());
                self.binary(op, cur, rhs, target.span(), right.span(), &whole, name)
            }
        };
        let v = self.materialize(value, &elem, right.span());
        let next = self.emit(
            "a",
            ty.clone(),
            Expr::Set {
                arr: a,
                idx: i,
                val: v,
            },
        );
        self.set_existing(name, super::Binding::Active(next, ty, true));
    }
}

/// A chunk of `array` as the body of [`Lowerer::chunk_for`] reads it.
struct Chunk<'c> {
    name: &'c syn::Ident,
    array: &'c syn::Expr,
    /// The index of the chunk's first element.
    start: proc_macro2::TokenStream,
    /// The chunk's length.
    len: proc_macro2::TokenStream,
    /// A use of the chunk other than `c[j]` and `c.len()`.
    stray: Option<Span>,
}

impl Chunk<'_> {
    fn rewrite(mut self, stmts: &[syn::Stmt]) -> Result<Vec<syn::Stmt>, Span> {
        let out = rewritten(stmts, &mut self);
        self.stray.map_or(Ok(out), Err)
    }

    fn is_chunk(&self, e: &syn::Expr) -> bool {
        matches!(super::exits::strip(e), syn::Expr::Path(p) if p.path.get_ident() == Some(self.name))
    }
}

impl syn::visit_mut::VisitMut for Chunk<'_> {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        let new = match &*e {
            syn::Expr::Index(ix) if self.is_chunk(&ix.expr) => {
                let mut j = (*ix.index).clone();
                self.visit_expr_mut(&mut j);
                let (a, start) = (self.array, &self.start);
                parse(quote!(#a[#start + (#j)]))
            }
            syn::Expr::MethodCall(m)
                if m.method == "len" && m.args.is_empty() && self.is_chunk(&m.receiver) =>
            {
                let len = &self.len;
                parse(quote!((#len)))
            }
            syn::Expr::Path(_) if self.is_chunk(e) => {
                self.stray.get_or_insert(e.span());
                None
            }
            _ => None,
        };
        match new {
            Some(n) => *e = n,
            None => syn::visit_mut::visit_expr_mut(self, e),
        }
    }
}
