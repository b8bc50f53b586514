//! A result of several IR values: a function returning a tuple that holds
//! arrays (`-> (f64, Vec<f64>)`, `-> (Vec<f64>, (f64, Vec<f64>))`).
//!
//! The IR has no tuple holding an array that J could give a tangent: a
//! linear array is never packed into a tuple (invariant 11 of
//! [`crate::check`]). So such a result is not one IR value: each component
//! of the tuple (recursively, where a component is itself a tuple holding
//! an array) is an IR result of its own, in order, as the paper's
//! functions return several values (Fig. 2, `e^{m,n}`). J, U and T handle
//! several results already; code generation groups the IR results into
//! the Rust tuple again ([`Shape::results`]).
//!
//! The tuple is therefore built only where the function returns it: its
//! last expression (or final `return`) must be the tuple itself, `(s,
//! y)`, whose components are lowered one by one. A tuple holding an array
//! in a local variable, or returned early, is refused with an error that
//! says so.

use proc_macro2::Span;
use quote::ToTokens;
use syn::spanned::Spanned;

use super::call::CallSite;
use super::{Lowerer, Shape, Val};
use crate::ir::{Binder, Expr, Extern, Stmt, Ty, Var};

impl Shape {
    /// Whether a value of this shape is several IR results: a tuple
    /// holding an array read by index.
    pub fn grouped(&self) -> bool {
        matches!(self, Shape::Tuple(_)) && self.has_slice()
    }

    /// The shapes of the IR results a value of this shape is, in order:
    /// the shape itself, or for a [`Shape::grouped`] tuple its components'
    /// results, one after the other.
    pub fn results(&self) -> Vec<&Shape> {
        match self {
            Shape::Tuple(ss) if self.grouped() => ss.iter().flat_map(Shape::results).collect(),
            _ => vec![self],
        }
    }
}

impl Lowerer<'_> {
    /// The function's body, of the grouped result shape `ret`: its loops'
    /// exits desugared, then [`Lowerer::grouped_result`]. A `return`
    /// before the end is refused: it would need a variable to hold the
    /// result.
    pub(super) fn grouped_body(
        &mut self,
        block: &syn::Block,
        ret: &Shape,
    ) -> Option<(Shape, Vec<Var>)> {
        let block = super::sugar::desugar(&super::iter::split_chains(block));
        let block = match super::exits::needed(&block) {
            false => block,
            true => match super::exits::desugar_loops(&block) {
                Ok(b) => b,
                Err(span) => {
                    self.errs.push(span, "returning early (`return` or `?` before the end) is not supported yet in a function whose result is a tuple holding an array: let the branches assign variables, and end the function with the tuple (`(s, y)`)");
                    return None;
                }
            },
        };
        self.grouped_result(&block.stmts, ret)
    }

    /// The function's result, of the grouped shape `ret`, from the last of
    /// `stmts` (after lowering the others): one IR variable per result, and
    /// the shape with each array built in a local array as such
    /// ([`Shape::built`]). `None` with the error reported.
    fn grouped_result(&mut self, stmts: &[syn::Stmt], ret: &Shape) -> Option<(Shape, Vec<Var>)> {
        let Some((last, init)) = stmts.split_last() else {
            self.errs
                .push(Span::call_site(), "the function must end with its result");
            return None;
        };
        for s in init {
            self.stmt(s);
        }
        let tail = match last {
            syn::Stmt::Expr(syn::Expr::Return(r), _) => r.expr.as_deref(),
            syn::Stmt::Expr(e, None) => Some(e),
            _ => None,
        };
        let Some(tail) = tail else {
            self.stmt(last);
            self.errs.spanned(
                last,
                "the function must end with its result, the tuple itself (`(s, y)`)",
            );
            return None;
        };
        let mut vars = Vec::new();
        let shape = self.result_parts(tail, ret, &mut vars)?;
        Some((shape, vars))
    }

    /// The IR results of `e`, a value of shape `s`, pushed onto `out`.
    fn result_parts(&mut self, e: &syn::Expr, s: &Shape, out: &mut Vec<Var>) -> Option<Shape> {
        if let (Shape::Tuple(ss), true) = (s, s.grouped()) {
            let t = match unparen(e) {
                syn::Expr::Tuple(t) => t,
                // The results of a call of a function returning such a
                // tuple, returned as they are.
                e @ (syn::Expr::Path(_) | syn::Expr::Call(_) | syn::Expr::MethodCall(_)) => {
                    return self.returned_call(e, s, out)
                }
                _ => {
                    self.errs.spanned(e, NOT_A_TUPLE);
                    return None;
                }
            };
            if t.elems.len() != ss.len() {
                let msg = format!(
                    "this tuple has {} elements where the result type has {}",
                    t.elems.len(),
                    ss.len()
                );
                self.errs.spanned(t, msg);
                return None;
            }
            let parts: Vec<Option<Shape>> = t
                .elems
                .iter()
                .zip(ss)
                .map(|(e, s)| self.result_parts(e, s, out))
                .collect();
            return parts.into_iter().collect::<Option<_>>().map(Shape::Tuple);
        }
        self.ret_hint = Some(s.clone());
        self.tail = Some(e.to_token_stream());
        let v = self.expr(e, "r");
        self.ret_hint = None;
        let shape = match &v {
            Val::Active(var, t @ Ty::Array(..)) if self.linear_params.contains(var) => {
                self.errs.spanned(e, "returning an array parameter itself is not supported: build the result in a local array (`let mut y = vec![0.0; x.len()];`, then write its elements)");
                s.clone().built(t)
            }
            Val::Active(_, t) => s.clone().built(t),
            Val::Inactive(_) => s.clone(),
        };
        let var = self.materialize(v, &shape.ty(), e.span());
        out.push(var);
        Some(shape)
    }
}

/// Where a tuple holding an array is written other than as a tuple.
const NOT_A_TUPLE: &str = "a tuple holding an array is built only as the function's result: end the function with the tuple itself (`(s, y)`), or the call that returns it, not a variable or a branch that holds it";

impl Lowerer<'_> {
    /// [`Lowerer::result_parts`] of `e`, a variable or a call: the results
    /// of a grouped call ([`Lowerer::emit_grouped_call`]) of shape `s`.
    fn returned_call(&mut self, e: &syn::Expr, s: &Shape, out: &mut Vec<Var>) -> Option<Shape> {
        let v = match self.expr(e, "r") {
            Val::Active(v, _) if self.poison.contains(&v) => return None,
            Val::Active(v, _) if self.unbound.iter().any(|(u, ..)| *u == v) => v,
            _ => {
                self.errs.spanned(e, NOT_A_TUPLE);
                return None;
            }
        };
        self.unbound_leaves(&v, out);
        Some(s.clone())
    }

    /// The results an unbound tuple stands for, pushed onto `out`.
    fn unbound_leaves(&self, v: &Var, out: &mut Vec<Var>) {
        match self.unpacked.get(v) {
            Some(parts) if self.unbound.iter().any(|(u, ..)| u == v) => {
                for p in parts {
                    self.unbound_leaves(p, out);
                }
            }
            _ => out.push(v.clone()),
        }
    }
}

/// `e` without the parentheses and invisible groups around it.
fn unparen(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => unparen(&p.expr),
        syn::Expr::Group(g) => unparen(&g.expr),
        other => other,
    }
}

impl Lowerer<'_> {
    /// A call of a function whose result is a tuple holding arrays: the
    /// extern returns each result by itself, bound to a variable of its
    /// own, and the tuple is a variable no statement binds, already
    /// unpacked into those ([`Lowerer::components`] reads them), which the
    /// caller destructures (`let (s, y) = f(x);`). Anything else the
    /// caller does with the tuple as a whole is refused once the function
    /// is lowered ([`Lowerer::check_grouped_uses`]).
    pub(super) fn emit_grouped_call(
        &mut self,
        name: Var,
        site: CallSite,
        (vars, tys): (Vec<Var>, Vec<Ty>),
        hint: &str,
    ) -> Val {
        let ret = site.ret.clone();
        let shapes = ret.results();
        let binders: Vec<Binder> = shapes
            .iter()
            .map(|s| Binder::new(self.fresh.var(hint), s.ty()))
            .collect();
        let constant = site.constant_positions();
        let rets = binders.iter().map(|b| b.ty.clone()).collect();
        self.externs.push(Extern {
            constant,
            pinned: site.pinned(),
            ..Extern::plain(name.clone(), (tys, vec![]), (rets, vec![]))
        });
        let span = site.path.span();
        let callee = super::structs::show(&site.path);
        self.calls.insert(name.clone(), site);
        self.out.push(Stmt::Let {
            nl: binders.clone(),
            lin: vec![],
            rhs: Expr::App {
                func: name,
                nl: vars,
                lin: vec![],
            },
        });
        for (b, s) in binders.iter().zip(&shapes) {
            self.types.insert(b.var.clone(), b.ty.clone());
            self.shapes.insert(b.var.clone(), (*s).clone());
        }
        let mut leaves = binders.into_iter().map(|b| b.var);
        let v = self.unbound_tuple(&ret, &mut leaves, hint, (span, &callee));
        Val::Active(v, ret.ty())
    }

    /// The variable standing for a tuple of shape `s` (grouped) whose
    /// results are `leaves`, in order: unpacked, never bound.
    fn unbound_tuple(
        &mut self,
        s: &Shape,
        leaves: &mut dyn Iterator<Item = Var>,
        hint: &str,
        (span, callee): (Span, &str),
    ) -> Var {
        let Shape::Tuple(ss) = s else {
            return leaves.next().unwrap_or_else(|| self.fresh.var(hint));
        };
        let parts: Vec<Var> = ss
            .iter()
            .map(|p| match p.grouped() {
                true => self.unbound_tuple(p, leaves, hint, (span, callee)),
                false => leaves.next().unwrap_or_else(|| self.fresh.var(hint)),
            })
            .collect();
        let v = self.fresh.var(hint);
        self.types.insert(v.clone(), s.ty());
        self.shapes.insert(v.clone(), s.clone());
        self.unpacked.insert(v.clone(), parts);
        self.unbound.push((v.clone(), span, callee.to_string()));
        v
    }

    /// Reports each tuple of a grouped call's results
    /// ([`Lowerer::emit_grouped_call`]) that `body` uses as a whole.
    pub(super) fn check_grouped_uses(&mut self, body: &[&[Stmt]]) {
        if self.unbound.is_empty() {
            return;
        }
        let mut used = std::collections::HashSet::new();
        for s in body.iter().flat_map(|b| b.iter()) {
            crate::visit::stmt_uses(s, &mut |v: &Var, _| {
                used.insert(v.clone());
            });
        }
        for (v, span, callee) in std::mem::take(&mut self.unbound) {
            if used.contains(&v) {
                self.errs.push(span, format!("`{callee}` returns a tuple holding an array, which differentiable code uses by its parts only (`let (s, y) = {callee}(..);`, `r.0`), not as a whole value (a branch's value, an argument)"));
            }
        }
    }
}
