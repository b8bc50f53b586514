//! Iterations over arrays, recognised in the syntax before lowering and
//! rewritten into loops over indices (`for k in 0..n { let v = a[k]; .. }`,
//! see `array.rs`): `a.iter()`, `&a`, `a`, `a.iter_mut()`, `&mut a`, over a
//! whole array or a part of one (`a[lo..hi]`, `a[lo..]`, `a[..hi]`,
//! `a[lo..=hi]`), with `.copied()`, `.cloned()`, `.rev()`, `.enumerate()`,
//! `.zip(..)`, `.skip(s)`, `.take(t)`, `.step_by(k)` and `.filter(|v| ..)`
//! applied.
//!
//! Every item is an affine function of one loop index `j` in `0..len`:
//! element `a[off + j]` of a source, or the count `off + j` of an
//! `enumerate` (`n - 1 - j` after a `rev`, which visits `j` from the top
//! down and counts from 0 there). A part of an array starts its offset at `lo`; `skip(s)`
//! adds `s` to every offset and takes `s` from the length, `take(t)` caps
//! the length (on a reversed iteration, `skip` and `take` apply at the
//! top of the range instead, which the reversed loop visits first); `zip`
//! runs to the shorter of its two lengths, each side keeping its offsets;
//! `step_by(k)` makes the items below it read index `k·j` (and the length
//! `⌈len / k⌉`; backwards, from the last item, an offset `(len - 1) % k`).
//! A `filter` keeps the items its closure accepts: the loop's body runs
//! under `if cond`, the closure's parameter bound to the item as it was
//! where the filter stands. `enumerate`, `zip`, `skip`, `take` and `step_by` after a
//! filter would count the items it kept, which indices cannot say: they
//! are not recognised, and the loop is reported where it is lowered.
//!
//! `a.chain(b)` is not one index loop: a `for` loop over it is split into
//! the loop over `a` then the same loop over `b` ([`split_chains`], before
//! early exits are desugared, a `break` skipping the second loop too);
//! reductions and collections, which are such loops, follow.
//!
//! An element out of an `Option` (`a.first()`, `a.last()`, `it.reduce(f)`,
//! `it.max_by(|a, b| a.total_cmp(b))`, `min_by`, unwrapped) is an index or
//! a `fold` ([`unwrapped`]).
//!
//! Lengths are computed as written (`a.len() - lo`, the minimum of two by
//! an `if`), so that generated code reads out of bounds, and panics, where
//! the original slices or indexes out of bounds.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;

/// An iteration over arrays: the arrays it reads (several for `zip`),
/// whether it runs backwards, the shape of its items, how many there are,
/// and the conditions they must meet.
pub(super) struct Chain {
    pub(super) sources: Vec<syn::Expr>,
    pub(super) rev: bool,
    pub(super) item: Item,
    /// The number of indices the loop runs over.
    pub(super) len: TokenStream,
    /// Each `filter`'s closure parameter, bound to the item as it stands
    /// there, and its body, in order.
    pub(super) filters: Vec<(syn::Pat, Item, syn::Expr)>,
}

/// How far an item is from the loop index: `None` for none (`a[k]`).
pub(super) type Offset = Option<TokenStream>;

/// The structure of an iteration's items.
#[derive(Clone)]
pub(super) enum Item {
    /// The element of source `k`, at the loop index plus the offset.
    Elem(usize, Offset),
    /// `(index, item)`: the count is the loop index plus the offset.
    Enumerate(Offset, Box<Item>),
    /// `(index, item)` counted down from the top, `rev().enumerate()`:
    /// the count is `n - 1` minus the loop index, for the given `n`.
    EnumerateRev(TokenStream, Box<Item>),
    /// `(item, item)`.
    Zip(Box<Item>, Box<Item>),
    /// The element of source `k` as a place (`iter_mut`): its name is an
    /// alias of `a[off + k]`, read and written through `*name`.
    Place(usize, Offset),
    /// The item at loop index `step · k` (`step_by(step)`).
    Stepped(TokenStream, Box<Item>),
}

impl Item {
    /// The item with every offset moved on by `by`.
    fn shifted(self, by: &TokenStream) -> Item {
        let add = |off: Offset| Some(plus(off, by));
        match self {
            Item::Elem(s, off) => Item::Elem(s, add(off)),
            Item::Place(s, off) => Item::Place(s, add(off)),
            Item::Enumerate(off, inner) => Item::Enumerate(add(off), Box::new(inner.shifted(by))),
            // `n - 1 - (k + by)`.
            Item::EnumerateRev(n, inner) => {
                Item::EnumerateRev(less(&n, by), Box::new(inner.shifted(by)))
            }
            Item::Zip(a, b) => Item::Zip(Box::new(a.shifted(by)), Box::new(b.shifted(by))),
            // `step · (k + by)`.
            Item::Stepped(step, inner) => {
                let by = quote!((#step * #by));
                Item::Stepped(step, Box::new(inner.shifted(&by)))
            }
        }
    }
}

/// `off + by`.
fn plus(off: Offset, by: &TokenStream) -> TokenStream {
    match off {
        None => quote!((#by)),
        Some(o) => quote!((#o + (#by))),
    }
}

/// The loop index `k` plus `off`.
pub(super) fn at(k: &TokenStream, off: &Offset) -> TokenStream {
    match off {
        None => quote!(#k),
        Some(o) => quote!(#o + #k),
    }
}

/// A chain being recognised, before it is a [`Chain`].
struct Part {
    item: Item,
    rev: bool,
    len: TokenStream,
    filters: Vec<(syn::Pat, Item, syn::Expr)>,
}

/// Recognises an iteration over arrays (see the module doc); `None` for
/// anything else.
pub(super) fn recognise(e: &syn::Expr) -> Option<Chain> {
    let mut sources = Vec::new();
    let p = chain(e, &mut sources, true)?;
    Some(Chain {
        sources,
        rev: p.rev,
        item: p.item,
        len: p.len,
        filters: p.filters,
    })
}

fn chain(e: &syn::Expr, sources: &mut Vec<syn::Expr>, top: bool) -> Option<Part> {
    match e {
        syn::Expr::Paren(p) => chain(&p.expr, sources, top),
        syn::Expr::Group(g) => chain(&g.expr, sources, top),
        syn::Expr::Reference(r) if r.mutability.is_none() => source(&r.expr, sources, false),
        syn::Expr::Reference(r) if top => source(&r.expr, sources, true),
        syn::Expr::Path(_) if top => source(e, sources, false),
        syn::Expr::MethodCall(m) => adapter(m, sources),
        _ => None,
    }
}

/// `m`, an iterator method applied to a chain (or starting one).
fn adapter(m: &syn::ExprMethodCall, sources: &mut Vec<syn::Expr>) -> Option<Part> {
    let name = m.method.to_string();
    let arg = m.args.first();
    match (name.as_str(), m.args.len()) {
        ("iter" | "into_iter", 0) => source(&m.receiver, sources, false),
        // Elements written through (`*v = ..`): places, not values.
        ("iter_mut", 0) => source(&m.receiver, sources, true),
        ("copied" | "cloned", 0) => chain(&m.receiver, sources, false),
        ("rev", 0) => chain(&m.receiver, sources, false).map(|p| Part { rev: !p.rev, ..p }),
        ("enumerate", 0) => {
            let p = chain(&m.receiver, sources, false)?;
            // `rev().enumerate()` counts from 0 down the storage order,
            // from the top; `filter(..).enumerate()` counts only the items
            // kept, which is not an index loop.
            let item = match p.rev {
                true => Item::EnumerateRev(p.len.clone(), Box::new(p.item)),
                false => Item::Enumerate(None, Box::new(p.item)),
            };
            p.filters.is_empty().then(|| Part { item, ..p })
        }
        ("zip", 1) => {
            let a = chain(&m.receiver, sources, false)?;
            let b = chain(&m.args[0], sources, true)?;
            let plain = |p: &Part| !p.rev && p.filters.is_empty();
            (plain(&a) && plain(&b)).then(|| Part {
                len: min(&a.len, &b.len),
                item: Item::Zip(Box::new(a.item), Box::new(b.item)),
                rev: false,
                filters: vec![],
            })
        }
        ("skip", 1) => {
            let p = chain(&m.receiver, sources, false)?;
            let s = arg?;
            let s = quote!((#s));
            let len = less(&p.len, &s);
            p.filters.is_empty().then(|| match p.rev {
                // The last `s` in storage order go first.
                true => Part { len, ..p },
                false => Part {
                    len,
                    item: p.item.shifted(&s),
                    ..p
                },
            })
        }
        ("take", 1) => {
            let p = chain(&m.receiver, sources, false)?;
            let t = arg?;
            let len = min(&p.len, &quote!((#t)));
            p.filters.is_empty().then(|| match p.rev {
                // The top `t` in storage order.
                true => Part {
                    item: p.item.shifted(&less(&p.len, &len)),
                    len,
                    ..p
                },
                false => Part { len, ..p },
            })
        }
        // Every `step`-th item, from the first in the order visited: `len`
        // becomes `⌈len / step⌉`; backwards, the first visited is the
        // last, `(len - 1) % step` above the first stepped one.
        ("step_by", 1) => {
            let p = chain(&m.receiver, sources, false)?;
            let step = arg?;
            let (step, n) = (quote!((#step)), &p.len);
            let len = quote!(((#n + #step - 1) / #step));
            let item = match p.rev {
                true => p.item.shifted(&quote!(((#n + #step - 1) % #step))),
                false => p.item,
            };
            p.filters.is_empty().then(|| Part {
                item: Item::Stepped(step, Box::new(item)),
                len,
                ..p
            })
        }
        ("filter", 1) => {
            let p = chain(&m.receiver, sources, false)?;
            let syn::Expr::Closure(cl) = arg? else {
                return None;
            };
            let [pat] = cl.inputs.iter().collect::<Vec<_>>()[..] else {
                return None;
            };
            let mut p = p;
            p.filters
                .push((untyped(pat).clone(), p.item.clone(), (*cl.body).clone()));
            Some(p)
        }
        _ => None,
    }
}

/// A source of elements (values, or places if `place`): an array (a path
/// or a field) or a part of one, `a[lo..hi]`.
fn source(e: &syn::Expr, sources: &mut Vec<syn::Expr>, place: bool) -> Option<Part> {
    let (a, lo, len) = match unparen(e) {
        syn::Expr::Index(ix) => {
            let syn::Expr::Range(r) = unparen(&ix.index) else {
                return None;
            };
            let a = leaf(&ix.expr)?;
            let lo = r.start.as_ref().map(|s| quote!((#s)));
            let hi = match (&r.end, &r.limits) {
                (Some(h), syn::RangeLimits::HalfOpen(_)) => quote!((#h)),
                (Some(h), syn::RangeLimits::Closed(_)) => quote!(((#h) + 1)),
                (None, _) => quote!(#a.len()),
            };
            let len = match &lo {
                Some(lo) => quote!((#hi - #lo)),
                None => hi,
            };
            (a, lo, len)
        }
        _ => {
            let a = leaf(e)?;
            let len = quote!(#a.len());
            (a, None, len)
        }
    };
    sources.push(a);
    let k = sources.len() - 1;
    let item = match place {
        true => Item::Place(k, lo),
        false => Item::Elem(k, lo),
    };
    Some(Part {
        item,
        rev: false,
        len,
        filters: vec![],
    })
}

/// `a.chain(b)`, under `.copied()` or `.cloned()` (then applied to each
/// side): the two iterations, in order, `b` as an iteration (`&x`, `x`
/// or `x[1..]` iterated). A loop over it is the loop over `a`, then the
/// same loop over `b`.
pub(super) fn split_chain(e: &syn::Expr) -> Option<(syn::Expr, syn::Expr)> {
    let syn::Expr::MethodCall(m) = unparen(e) else {
        return None;
    };
    match (m.method.to_string().as_str(), m.args.len()) {
        ("chain", 1) => {
            let b = match unparen(&m.args[0]) {
                syn::Expr::Reference(r) if r.mutability.is_none() => {
                    let inner = &r.expr;
                    parse(quote!(#inner.iter()))?
                }
                b @ (syn::Expr::Path(_) | syn::Expr::Field(_) | syn::Expr::Index(_)) => {
                    parse(quote!(#b.iter()))?
                }
                b => b.clone(),
            };
            Some(((*m.receiver).clone(), b))
        }
        ("copied" | "cloned", 0) => {
            let (a, b) = split_chain(&m.receiver)?;
            let method = &m.method;
            Some((parse(quote!(#a.#method()))?, parse(quote!(#b.#method()))?))
        }
        _ => None,
    }
}

/// `block` with every `for p in a.chain(b) { body }` written as the loop
/// over `a` then the same loop over `b` ([`split_chain`]), before early
/// exits are desugared (`exits.rs`), which then see plain loops. A
/// `break` of such a loop also skips the second: it sets a flag the
/// second loop runs under.
pub(super) fn split_chains(block: &syn::Block) -> syn::Block {
    use syn::visit_mut::VisitMut;
    struct Split(usize);
    impl VisitMut for Split {
        fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
            if let syn::Expr::ForLoop(f) = e {
                if let (None, Some((a, b))) = (&f.label, split_chain(&f.expr)) {
                    self.0 += 1;
                    let (pat, body) = (&f.pat, &f.body);
                    let split = match breaks(body) {
                        false => quote!({ for #pat in #a #body for #pat in #b #body }),
                        true => {
                            let flag = quote::format_ident!("__linear_ad_broke{}", self.0);
                            let mut first = (*body).clone();
                            SetFlag(&flag).visit_block_mut(&mut first);
                            quote!({
                                let mut #flag = false;
                                for #pat in #a #first
                                if !#flag { for #pat in #b #body }
                            })
                        }
                    };
                    if let Ok(s) = syn::parse2::<syn::Expr>(split) {
                        *e = s;
                    }
                }
            }
            syn::visit_mut::visit_expr_mut(self, e);
        }
        fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}
        fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    }
    /// Every `break` of the loop whose body this is sets the flag first.
    struct SetFlag<'a>(&'a syn::Ident);
    impl VisitMut for SetFlag<'_> {
        fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
            match e {
                syn::Expr::Break(b) if b.label.is_none() => {
                    let flag = self.0;
                    if let Ok(s) = syn::parse2(quote!({ #flag = true; #b })) {
                        *e = s;
                    }
                }
                syn::Expr::ForLoop(f) => self.visit_expr_mut(&mut f.expr),
                syn::Expr::While(w) => self.visit_expr_mut(&mut w.cond),
                syn::Expr::Loop(_) | syn::Expr::Closure(_) => {}
                _ => syn::visit_mut::visit_expr_mut(self, e),
            }
        }
        fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    }
    let mut out = block.clone();
    Split(0).visit_block_mut(&mut out);
    out
}

/// Whether a loop body has a `break` of its own loop (not of a loop
/// inside it, nor in a closure).
pub(super) fn breaks(body: &syn::Block) -> bool {
    use syn::visit::Visit;
    struct Breaks(bool);
    impl<'ast> Visit<'ast> for Breaks {
        fn visit_expr_break(&mut self, _: &'ast syn::ExprBreak) {
            self.0 = true;
        }
        fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
            self.visit_expr(&f.expr);
        }
        fn visit_expr_while(&mut self, w: &'ast syn::ExprWhile) {
            self.visit_expr(&w.cond);
        }
        fn visit_expr_loop(&mut self, _: &'ast syn::ExprLoop) {}
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut b = Breaks(false);
    b.visit_block(body);
    b.0
}

/// The array an iteration starts from: a path or a field.
pub(super) fn leaf(e: &syn::Expr) -> Option<syn::Expr> {
    match unparen(e) {
        e @ (syn::Expr::Path(_) | syn::Expr::Field(_)) => Some(e.clone()),
        _ => None,
    }
}

fn unparen(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => unparen(&p.expr),
        syn::Expr::Group(g) => unparen(&g.expr),
        other => other,
    }
}

/// The smaller of two lengths.
fn min(a: &TokenStream, b: &TokenStream) -> TokenStream {
    quote!({
        let __linear_ad_a = #a;
        let __linear_ad_b = #b;
        if __linear_ad_a < __linear_ad_b { __linear_ad_a } else { __linear_ad_b }
    })
}

/// `a - b`, or none if `b` is more.
fn less(a: &TokenStream, b: &TokenStream) -> TokenStream {
    quote!({
        let __linear_ad_a = #a;
        let __linear_ad_b = #b;
        if __linear_ad_a < __linear_ad_b { 0 } else { __linear_ad_a - __linear_ad_b }
    })
}

/// A closure parameter without its type ascription (`|v: &f64|`).
pub(super) fn untyped(p: &syn::Pat) -> &syn::Pat {
    match p {
        syn::Pat::Type(t) => &t.pat,
        other => other,
    }
}

/// Parses generated syntax; `None` where the user's pieces spliced into it
/// do not fit, so that the macro reports an error instead of panicking.
pub(super) fn parse<T: syn::parse::Parse>(t: TokenStream) -> Option<T> {
    syn::parse2(t).ok()
}

/// `let` statements binding `pat` to the item `item` of iteration index
/// `k`: one per name, so that tuples of an index and elements need no
/// tuple value.
pub(super) fn bind_item(
    pat: &syn::Pat,
    item: &Item,
    k: &TokenStream,
    sources: &[syn::Expr],
    out: &mut Bound,
) -> Result<(), Span> {
    if let Item::Stepped(step, inner) = item {
        return bind_item(pat, inner, &quote!((#step * #k)), sources, out);
    }
    match pat {
        syn::Pat::Reference(r) => return bind_item(&r.pat, item, k, sources, out),
        syn::Pat::Paren(p) => return bind_item(&p.pat, item, k, sources, out),
        syn::Pat::Wild(_) => return Ok(()),
        _ => {}
    }
    if let Item::Place(s, off) = item {
        let syn::Pat::Ident(i) = pat else {
            return Err(pat.span());
        };
        let (a, ix) = (&sources[*s], at(k, off));
        let place = parse(quote!(#a[#ix])).ok_or_else(|| pat.span())?;
        out.places.push((i.ident.clone(), place));
        return Ok(());
    }
    let pair = |pat: &syn::Pat| -> Result<(syn::Pat, syn::Pat), Span> {
        let syn::Pat::Tuple(t) = pat else {
            return Err(pat.span());
        };
        match t.elems.iter().collect::<Vec<_>>()[..] {
            [a, b] => Ok((a.clone(), b.clone())),
            _ => Err(pat.span()),
        }
    };
    let value = match item {
        Item::Place(..) | Item::Stepped(..) => return Err(pat.span()),
        Item::Elem(s, off) => {
            let (a, ix) = (&sources[*s], at(k, off));
            quote!(#a[#ix])
        }
        Item::Enumerate(off, inner) => {
            let (i, rest) = pair(pat)?;
            bind_whole(&i, &mut out.lets, at(k, off))?;
            return bind_item(&rest, inner, k, sources, out);
        }
        Item::EnumerateRev(n, inner) => {
            let (i, rest) = pair(pat)?;
            bind_whole(&i, &mut out.lets, quote!((#n - 1 - #k)))?;
            return bind_item(&rest, inner, k, sources, out);
        }
        Item::Zip(a, b) => {
            let (pa, pb) = pair(pat)?;
            bind_item(&pa, a, k, sources, out)?;
            return bind_item(&pb, b, k, sources, out);
        }
    };
    bind_whole(pat, &mut out.lets, value)
}

/// What an iteration's pattern binds: `let`s of element values, and the
/// names that alias elements written in place (`iter_mut`).
#[derive(Default)]
pub(super) struct Bound {
    pub(super) lets: Vec<syn::Stmt>,
    pub(super) places: Vec<(syn::Ident, syn::Expr)>,
}

/// `let pat = value;` for a name, `_`, or a tuple of them (an element that
/// is a tuple), with `&` patterns read as the values they match.
fn bind_whole(pat: &syn::Pat, out: &mut Vec<syn::Stmt>, value: TokenStream) -> Result<(), Span> {
    fn by_value(p: &syn::Pat) -> Option<TokenStream> {
        match p {
            syn::Pat::Ident(i) if i.subpat.is_none() && i.by_ref.is_none() => Some(quote!(#p)),
            syn::Pat::Wild(_) => Some(quote!(#p)),
            syn::Pat::Reference(r) => by_value(&r.pat),
            syn::Pat::Paren(q) => by_value(&q.pat),
            syn::Pat::Tuple(t) => {
                let elems = t.elems.iter().map(by_value).collect::<Option<Vec<_>>>()?;
                Some(quote!((#(#elems,)*)))
            }
            _ => None,
        }
    }
    let p = by_value(pat).ok_or_else(|| pat.span())?;
    out.push(parse(quote!(let #p = #value;)).ok_or_else(|| pat.span())?);
    Ok(())
}

/// An element taken out of an `Option` of an array (`a.first()`,
/// `a.last()`, `it.reduce(f)`, with `.copied()` or `.cloned()`) by
/// `.unwrap()`, `.expect(..)` or `.unwrap_or(e)`, as code without the
/// `Option`: `a[0]`, `a[a.len() - 1]`, a `fold` from the first element
/// over the rest, and for `unwrap_or`, an `if` on the array's length.
/// An empty array panics where the original's `unwrap` panics (at the
/// index). `None` for anything else.
pub(super) fn unwrapped(m: &syn::ExprMethodCall) -> Option<syn::Expr> {
    let default = match (m.method.to_string().as_str(), m.args.len()) {
        ("unwrap" | "expect", _) => None,
        ("unwrap_or", 1) => Some(&m.args[0]),
        _ => return None,
    };
    let mut inner = unparen(&m.receiver);
    while let syn::Expr::MethodCall(c) = inner {
        match (c.method.to_string().as_str(), c.args.len()) {
            ("copied" | "cloned", 0) => inner = unparen(&c.receiver),
            _ => break,
        }
    }
    let syn::Expr::MethodCall(c) = inner else {
        return None;
    };
    let (value, array) = match (c.method.to_string().as_str(), c.args.len()) {
        ("first", 0) => {
            let a = leaf(&c.receiver)?;
            (quote!(#a[0]), a)
        }
        ("last", 0) => {
            let a = leaf(&c.receiver)?;
            (quote!(#a[#a.len() - 1]), a)
        }
        (name @ ("reduce" | "max_by" | "min_by"), 1) => {
            let chain = recognise(&c.receiver)?;
            let a = chain.sources.first()?.clone();
            if chain.sources.len() != 1 || chain.rev || !chain.filters.is_empty() {
                return None;
            }
            let Item::Elem(0, None) = chain.item else {
                return None;
            };
            let f = match name {
                "reduce" => {
                    let f = &c.args[0];
                    quote!(#f)
                }
                // The larger (smaller) by a comparator of the two items
                // in order: `max` (`min`) of the float type; reversed,
                // the other.
                _ => {
                    let m = match (name == "max_by") == in_order(&c.args[0])? {
                        true => quote!(max),
                        false => quote!(min),
                    };
                    quote!(|__linear_ad_p, __linear_ad_q| __linear_ad_p.#m(__linear_ad_q))
                }
            };
            (quote!(#a[1..].iter().copied().fold(#a[0], #f)), a)
        }
        _ => return None,
    };
    parse(match default {
        None => value,
        Some(d) => quote!(if #array.len() > 0 { #value } else { #d }),
    })
}

/// Whether `f` compares its two items in order (`|a, b| a.total_cmp(b)`,
/// `|a, b| a.partial_cmp(b).unwrap()`, through `&` and `*` as written):
/// `Some(true)`, `Some(false)` reversed (`b.total_cmp(a)`), `None` for any
/// other closure.
fn in_order(f: &syn::Expr) -> Option<bool> {
    let syn::Expr::Closure(cl) = unparen(f) else {
        return None;
    };
    let names: Vec<String> = cl.inputs.iter().map(pat_name).collect::<Option<_>>()?;
    let [a, b] = names.as_slice() else {
        return None;
    };
    let mut call = unparen(&cl.body);
    if let syn::Expr::MethodCall(m) = call {
        if matches!(m.method.to_string().as_str(), "unwrap" | "expect") {
            call = unparen(&m.receiver);
        }
    }
    let syn::Expr::MethodCall(m) = call else {
        return None;
    };
    if !matches!(m.method.to_string().as_str(), "total_cmp" | "partial_cmp") || m.args.len() != 1 {
        return None;
    }
    let (x, y) = (name_of(&m.receiver)?, name_of(&m.args[0])?);
    match (x == *a && y == *b, x == *b && y == *a) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    }
}

/// The name a closure parameter binds (`a`, `&a`, `&&a`, `a: &f64`).
fn pat_name(p: &syn::Pat) -> Option<String> {
    match untyped(p) {
        syn::Pat::Ident(i) => Some(i.ident.to_string()),
        syn::Pat::Reference(r) => pat_name(&r.pat),
        _ => None,
    }
}

/// The variable `e` reads, through `&`, `*` and parentheses.
fn name_of(e: &syn::Expr) -> Option<String> {
    match unparen(e) {
        syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        syn::Expr::Reference(r) => name_of(&r.expr),
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => name_of(&u.expr),
        _ => None,
    }
}
