//! `return`, `break` and `continue` (labelled or not) and `loop`, desugared
//! into the structured forms Linear A has, before lowering.
//!
//! A function that leaves a block early gets two `let mut` locals: the exit
//! code `__exit` (0: running; 1: returning; `2 + 2d` / `3 + 2d`: breaking
//! out of / continuing the loop at nesting depth `d`) and the result
//! `__ret`. Then:
//!
//! * `return e` is `__ret = e; __exit = 1`, `break` and `continue` set the
//!   code of their loop; after a statement that may exit, the rest of its
//!   block runs under `if __exit == 0 { .. }`;
//! * a loop that may be left early is a `while __exit == 0 && cond` loop
//!   (a `for` over `a..b`, `a..=b`, `(a..b).rev()` or `.step_by(k)` counts
//!   an index itself; `loop` has no condition); each iteration ends by
//!   clearing its own `continue` code and the loop by clearing its own
//!   `break` code, so a `return` keeps propagating outwards;
//! * the function's value is `__ret`, the tail expression assigned to it
//!   in every arm that produces it. `__ret` starts as `Default::default()`
//!   (a constant), or for a `Vec` result as `Vec::new()`, an empty local
//!   array that a `return y` assigns whole (its elements copied, as for
//!   any array assigned to a local one).
//!
//! This is a rewrite of control flow only: the derivative of the result is
//! the derivative along the path the primal takes, as for any branch.
//! Exits inside expressions (a `return` in a `let` initialiser) are left
//! in place, and lowering reports them.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::visit::Visit;

/// Whether `f`'s body has anything to desugar: a `return` before its end,
/// a `break`, a `continue` or a `loop`.
pub(super) fn needed(block: &syn::Block) -> bool {
    struct Any(bool);
    impl<'ast> Visit<'ast> for Any {
        fn visit_expr_return(&mut self, _: &'ast syn::ExprReturn) {
            self.0 = true;
        }
        fn visit_expr_break(&mut self, _: &'ast syn::ExprBreak) {
            self.0 = true;
        }
        fn visit_expr_continue(&mut self, _: &'ast syn::ExprContinue) {
            self.0 = true;
        }
        fn visit_expr_loop(&mut self, _: &'ast syn::ExprLoop) {
            self.0 = true;
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut stmts = block.stmts.as_slice();
    if let Some((syn::Stmt::Expr(syn::Expr::Return(_), _), init)) = stmts.split_last() {
        stmts = init;
    }
    let mut v = Any(false);
    for s in stmts {
        v.visit_stmt(s);
    }
    v.0
}

/// Whether an expression may leave the function or an enclosing loop
/// (`return`, `?`, `break` or `continue` of a loop outside it).
pub(super) fn leaves(e: &syn::Expr) -> bool {
    exits_from(Node::Expr(e), &[])
}

/// What [`exits_from`] looks into: a statement, or an expression (read
/// where it is, not copied into a statement).
enum Node<'a> {
    Stmt(&'a syn::Stmt),
    Expr(&'a syn::Expr),
}

/// Whether a loop body has an exit to rewrite: a `return`, or a `break` or
/// `continue` of this loop or an outer one.
fn body_exits(body: &syn::Block) -> bool {
    body.stmts.iter().any(|s| exits(s, &[]))
}

/// Whether `node` may transfer control out of itself: a `return`, or a
/// `break` / `continue` of a loop outside it (`inner_labels` are the
/// labels of loops inside, none at the start).
fn exits(node: &syn::Stmt, inner_labels: &[String]) -> bool {
    exits_from(Node::Stmt(node), inner_labels)
}

/// [`exits`], of a statement or an expression.
fn exits_from(node: Node<'_>, inner_labels: &[String]) -> bool {
    struct Exits {
        depth: usize,
        labels: Vec<String>,
        found: bool,
    }
    impl Exits {
        fn outer(&self, label: &Option<syn::Lifetime>) -> bool {
            match label {
                Some(l) => !self.labels.contains(&l.ident.to_string()),
                None => self.depth == 0,
            }
        }
        fn in_loop(&mut self, label: &Option<syn::Label>, f: impl FnOnce(&mut Self)) {
            self.depth += 1;
            if let Some(l) = label {
                self.labels.push(l.name.ident.to_string());
            }
            f(self);
            if label.is_some() {
                self.labels.pop();
            }
            self.depth -= 1;
        }
    }
    impl<'ast> Visit<'ast> for Exits {
        fn visit_expr_return(&mut self, _: &'ast syn::ExprReturn) {
            self.found = true;
        }
        fn visit_expr_break(&mut self, b: &'ast syn::ExprBreak) {
            self.found |= self.outer(&b.label);
        }
        fn visit_expr_continue(&mut self, c: &'ast syn::ExprContinue) {
            self.found |= self.outer(&c.label);
        }
        fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
            self.visit_expr(&f.expr);
            self.in_loop(&f.label, |s| s.visit_block(&f.body));
        }
        fn visit_expr_while(&mut self, w: &'ast syn::ExprWhile) {
            self.in_loop(&w.label, |s| {
                s.visit_expr(&w.cond);
                s.visit_block(&w.body)
            });
        }
        fn visit_expr_loop(&mut self, l: &'ast syn::ExprLoop) {
            self.in_loop(&l.label, |s| s.visit_block(&l.body));
        }
        fn visit_expr_try(&mut self, t: &'ast syn::ExprTry) {
            self.found = true;
            syn::visit::visit_expr_try(self, t);
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut v = Exits {
        depth: 0,
        labels: inner_labels.to_vec(),
        found: false,
    };
    match node {
        Node::Stmt(s) => v.visit_stmt(s),
        Node::Expr(e) => v.visit_expr(e),
    }
    v.found
}

/// The loops enclosing the statements being rewritten, innermost last.
struct Ctx {
    loops: Vec<Option<String>>,
}

impl Ctx {
    fn codes(&self, label: &Option<syn::Lifetime>) -> Option<(u8, u8)> {
        let d = match label {
            Some(l) => self
                .loops
                .iter()
                .rposition(|x| x.as_deref() == Some(&*l.ident.to_string()))?,
            None => self.loops.len().checked_sub(1)?,
        };
        let d = u8::try_from(d).ok()?;
        Some((2 + 2 * d, 3 + 2 * d))
    }
}

fn ident(name: &str) -> syn::Ident {
    syn::Ident::new(name, Span::call_site())
}

/// The function body with its exits desugared; `ret` is the return type.
pub(super) fn desugar(block: &syn::Block, ret: &syn::Type) -> syn::Block {
    let (exit, result) = (ident("__exit"), ident("__ret"));
    let mut stmts = block.stmts.clone();
    // The tail (or final `return e`) assigns the result.
    if let Some(last) = stmts.pop() {
        match last {
            syn::Stmt::Expr(syn::Expr::Return(r), _) if r.expr.is_some() => {
                let e = r.expr.as_deref().cloned();
                stmts.extend(assign_tail(e.as_ref()));
            }
            syn::Stmt::Expr(e, None) => stmts.extend(assign_tail(Some(&e))),
            other => stmts.push(other),
        }
    }
    let mut ctx = Ctx { loops: Vec::new() };
    let body = rewrite(&stmts, &mut ctx);
    // A `Vec` result starts as an empty local array, assigned whole.
    let init = if is_vec(ret) {
        quote!(::std::vec::Vec::new())
    } else {
        quote!(<#ret as ::core::default::Default>::default())
    };
    let code: TokenStream = quote! {{
        let mut #exit: u8 = 0;
        let mut #result: #ret = #init;
        #(#body)*
        #result
    }};
    syn::parse2(code).unwrap_or_else(|_| block.clone())
}

/// The body with the exits of its loops (`break`, `continue`, `loop`)
/// desugared and its last expression kept as written, for a result that
/// is several IR values and so has no variable to assign
/// (`results.rs`); `Err` with the statement that returns early (a
/// `return` or `?` before the end), which would need one.
pub(super) fn desugar_loops(block: &syn::Block) -> Result<syn::Block, Span> {
    use syn::spanned::Spanned;
    let Some((tail, init)) = block.stmts.split_last() else {
        return Ok(block.clone());
    };
    if let Some(s) = init.iter().find(|s| exits(s, &[])) {
        return Err(first_return(s).unwrap_or_else(|| s.span()));
    }
    let exit = ident("__exit");
    let body = rewrite(init, &mut Ctx { loops: Vec::new() });
    let code: TokenStream = quote! {{
        let mut #exit: u8 = 0;
        #(#body)*
        #tail
    }};
    Ok(syn::parse2(code).unwrap_or_else(|_| block.clone()))
}

/// The span of the first `return` or `?` in `s`, outside closures.
fn first_return(s: &syn::Stmt) -> Option<Span> {
    use syn::spanned::Spanned;
    struct First(Option<Span>);
    impl<'ast> Visit<'ast> for First {
        fn visit_expr_return(&mut self, r: &'ast syn::ExprReturn) {
            self.0 = self.0.or(Some(r.span()));
        }
        fn visit_expr_try(&mut self, t: &'ast syn::ExprTry) {
            self.0 = self.0.or(Some(t.question_token.span()));
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut v = First(None);
    v.visit_stmt(s);
    v.0
}

/// Whether `t` is `Vec<..>` (by any path ending so).
fn is_vec(t: &syn::Type) -> bool {
    match t {
        syn::Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == "Vec"),
        syn::Type::Paren(p) => is_vec(&p.elem),
        syn::Type::Group(g) => is_vec(&g.elem),
        _ => false,
    }
}

/// `__ret = e`, pushed into the arms of a tail `if` or `match` so that
/// arms that exit need no value.
fn assign_tail(e: Option<&syn::Expr>) -> Vec<syn::Stmt> {
    let result = ident("__ret");
    let Some(e) = e else { return Vec::new() };
    match e {
        syn::Expr::If(i) if i.else_branch.is_some() => {
            let mut i = i.clone();
            tail_block(&mut i.then_branch);
            if let Some((_, els)) = &mut i.else_branch {
                let inner = (**els).clone();
                **els = match inner {
                    syn::Expr::Block(mut b) => {
                        tail_block(&mut b.block);
                        syn::Expr::Block(b)
                    }
                    other => {
                        let stmts = assign_tail(Some(&other));
                        syn::parse_quote!({ #(#stmts)* })
                    }
                };
            }
            vec![syn::Stmt::Expr(syn::Expr::If(i), None)]
        }
        syn::Expr::Match(m) => {
            let mut m = m.clone();
            for arm in &mut m.arms {
                let stmts = assign_tail(Some(&arm.body));
                *arm.body = syn::parse_quote!({ #(#stmts)* });
                arm.comma = Some(Default::default());
            }
            vec![syn::Stmt::Expr(syn::Expr::Match(m), None)]
        }
        syn::Expr::Block(b) if b.label.is_none() => {
            let mut b = b.clone();
            tail_block(&mut b.block);
            vec![syn::Stmt::Expr(syn::Expr::Block(b), None)]
        }
        syn::Expr::Return(r) => assign_tail(r.expr.as_deref()),
        // An arm that leaves (`break`, `continue`, `panic!`) has no value.
        syn::Expr::Break(_) | syn::Expr::Continue(_) | syn::Expr::Macro(_) => {
            vec![syn::Stmt::Expr(e.clone(), Some(Default::default()))]
        }
        other => vec![syn::parse_quote!(#result = #other;)],
    }
}

fn tail_block(b: &mut syn::Block) {
    if let Some(syn::Stmt::Expr(e, None)) = b.stmts.last().cloned() {
        b.stmts.pop();
        b.stmts.extend(assign_tail(Some(&e)));
    }
}

/// Rewrites statements: exits become assignments of `__exit`, and the rest
/// of a block after a statement that may exit is guarded.
fn rewrite(stmts: &[syn::Stmt], ctx: &mut Ctx) -> Vec<syn::Stmt> {
    let exit = ident("__exit");
    let mut out = Vec::new();
    for (k, s) in stmts.iter().enumerate() {
        let may_exit = exits(s, &[]);
        out.push(rewrite_stmt(s, ctx));
        if may_exit {
            let rest = rewrite(&stmts[k + 1..], ctx);
            if !rest.is_empty() {
                out.push(syn::parse_quote!(if #exit == 0 { #(#rest)* }));
            }
            return out;
        }
    }
    out
}

fn rewrite_block(b: &syn::Block, ctx: &mut Ctx) -> syn::Block {
    let stmts = rewrite(&b.stmts, ctx);
    syn::parse_quote!({ #(#stmts)* })
}

fn rewrite_stmt(s: &syn::Stmt, ctx: &mut Ctx) -> syn::Stmt {
    match s {
        syn::Stmt::Expr(e, semi) => match rewrite_expr(e, ctx) {
            Some(e) => syn::Stmt::Expr(e, semi.or(Some(Default::default()))),
            None => s.clone(),
        },
        other => other.clone(),
    }
}

/// A statement-position expression with its exits desugared, or `None`
/// where it has no exit of its own to rewrite.
fn rewrite_expr(e: &syn::Expr, ctx: &mut Ctx) -> Option<syn::Expr> {
    let (exit, result) = (ident("__exit"), ident("__ret"));
    Some(match e {
        syn::Expr::Return(r) => {
            let v = r.expr.as_ref()?;
            syn::parse_quote!({ #result = #v; #exit = 1; })
        }
        syn::Expr::Break(b) if b.expr.is_none() => {
            let (brk, _) = ctx.codes(&b.label)?;
            syn::parse_quote!({ #exit = #brk; })
        }
        syn::Expr::Continue(c) => {
            let (_, cont) = ctx.codes(&c.label)?;
            syn::parse_quote!({ #exit = #cont; })
        }
        syn::Expr::If(i) => {
            let mut i = i.clone();
            i.then_branch = rewrite_block(&i.then_branch, ctx);
            if let Some((_, els)) = &mut i.else_branch {
                let inner = (**els).clone();
                **els = match &inner {
                    syn::Expr::Block(b) => {
                        let block = rewrite_block(&b.block, ctx);
                        syn::Expr::Block(syn::ExprBlock { block, ..b.clone() })
                    }
                    other => rewrite_expr(other, ctx).unwrap_or(inner),
                };
            }
            syn::Expr::If(i)
        }
        syn::Expr::Match(m) => {
            let mut m = m.clone();
            for arm in &mut m.arms {
                let body = (*arm.body).clone();
                let stmts = rewrite(&[syn::Stmt::Expr(body, Some(Default::default()))], ctx);
                *arm.body = syn::parse_quote!({ #(#stmts)* });
                arm.comma = Some(Default::default());
            }
            syn::Expr::Match(m)
        }
        syn::Expr::Block(b) if b.label.is_none() => {
            let block = rewrite_block(&b.block, ctx);
            syn::Expr::Block(syn::ExprBlock { block, ..b.clone() })
        }
        syn::Expr::While(w) if body_exits(&w.body) => {
            let label = w.label.as_ref().map(|l| l.name.ident.to_string());
            let cond = &w.cond;
            early_loop(label, quote!(), quote!(&& (#cond)), quote!(), &w.body, ctx)
        }
        syn::Expr::Loop(l) => {
            let label = l.label.as_ref().map(|l| l.name.ident.to_string());
            early_loop(label, quote!(), quote!(), quote!(), &l.body, ctx)
        }
        syn::Expr::ForLoop(f) if body_exits(&f.body) => {
            let label = f.label.as_ref().map(|l| l.name.ident.to_string());
            let d = ctx.loops.len();
            let i = format_ident!("__i{}", d);
            let (lo, hi) = (format_ident!("__lo{}", d), format_ident!("__hi{}", d));
            let pat = &f.pat;
            let (setup, cond, head) = counted(&f.expr, &i, &lo, &hi, pat)?;
            early_loop(label, setup, cond, head, &f.body, ctx)
        }
        syn::Expr::While(w) => {
            let mut w = w.clone();
            ctx.loops
                .push(w.label.as_ref().map(|l| l.name.ident.to_string()));
            w.body = rewrite_block(&w.body, ctx);
            ctx.loops.pop();
            syn::Expr::While(w)
        }
        syn::Expr::ForLoop(f) => {
            let mut f = f.clone();
            ctx.loops
                .push(f.label.as_ref().map(|l| l.name.ident.to_string()));
            f.body = rewrite_block(&f.body, ctx);
            ctx.loops.pop();
            syn::Expr::ForLoop(f)
        }
        _ => return None,
    })
}

/// `while __exit == 0 <cond> { <head> body; clear continue }; clear break`.
fn early_loop(
    label: Option<String>,
    setup: TokenStream,
    cond: TokenStream,
    head: TokenStream,
    body: &syn::Block,
    ctx: &mut Ctx,
) -> syn::Expr {
    let exit = ident("__exit");
    ctx.loops.push(label);
    let (brk, cont) = ctx.codes(&None).unwrap_or((2, 3));
    let body = rewrite(&body.stmts, ctx);
    ctx.loops.pop();
    syn::parse_quote!({
        #setup
        while #exit == 0 #cond {
            #head
            #(#body)*
            if #exit == #cont { #exit = 0; }
        }
        if #exit == #brk { #exit = 0; }
    })
}

/// A `for` loop over a range as a counted `while`: setup, condition,
/// and the statements that bind the pattern and advance the index.
fn counted(
    range: &syn::Expr,
    i: &syn::Ident,
    lo: &syn::Ident,
    hi: &syn::Ident,
    pat: &syn::Pat,
) -> Option<(TokenStream, TokenStream, TokenStream)> {
    let (r, rev, step) = match range {
        syn::Expr::Paren(p) => return counted(&p.expr, i, lo, hi, pat),
        syn::Expr::Range(r) => (r, false, None),
        syn::Expr::MethodCall(m) if m.method == "rev" => match strip(&m.receiver) {
            syn::Expr::Range(r) => (r, true, None),
            _ => return elements(range, i, hi, pat),
        },
        syn::Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 => {
            match strip(&m.receiver) {
                syn::Expr::Range(r) => (r, false, Some(m.args[0].clone())),
                _ => return None,
            }
        }
        _ => return elements(range, i, hi, pat),
    };
    let (a, b) = (r.start.as_ref()?, r.end.as_ref()?);
    let closed = matches!(r.limits, syn::RangeLimits::Closed(_));
    let step = step.map_or(quote!(1), |k| quote!(#k));
    Some(if rev {
        let top = if closed { quote!((#b) + 1) } else { quote!(#b) };
        (
            quote!(let #lo = #a; let mut #i = #top;),
            quote!(&& #i > #lo),
            quote!(#i -= 1; let #pat = #i;),
        )
    } else {
        let test = if closed { quote!(<=) } else { quote!(<) };
        (
            quote!(let #hi = #b; let mut #i = #a;),
            quote!(&& #i #test #hi),
            quote!(let #pat = #i; #i += #step;),
        )
    })
}

/// A `for` loop over an array's elements (the iterations
/// `super::iter` recognises: `a.iter()`, `&a`, `a[lo..hi]`, `.copied()`,
/// `.enumerate()`, `.zip(..)`, `.rev()`, `.skip(s)`, `.take(t)`, `.step_by(k)`; not
/// `.filter(..)`) as a counted `while` over its indices, the pattern
/// binding elements by value as there.
fn elements(
    iter: &syn::Expr,
    i: &syn::Ident,
    hi: &syn::Ident,
    pat: &syn::Pat,
) -> Option<(TokenStream, TokenStream, TokenStream)> {
    let c = super::iter::recognise(iter)?;
    let mut bound = super::iter::Bound::default();
    super::iter::bind_item(pat, &c.item, &quote::quote!(#i), &c.sources, &mut bound).ok()?;
    // Loops through `iter_mut()` stay `for` loops (not with an exit), and
    // so do filtered ones.
    if !bound.places.is_empty() || !c.filters.is_empty() {
        return None;
    }
    let lets = bound.lets;
    let n = c.len;
    Some(if c.rev {
        (
            quote!(let mut #i = #n;),
            quote!(&& #i > 0),
            quote!(#i -= 1; #(#lets)*),
        )
    } else {
        (
            quote!(let #hi = #n; let mut #i = 0;),
            quote!(&& #i < #hi),
            quote!(#(#lets)* #i += 1;),
        )
    })
}

/// `e` without the parentheses around it.
pub(super) fn strip(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip(&p.expr),
        other => other,
    }
}
