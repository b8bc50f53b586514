//! Fixed-size arrays of floats held by value (`a: [f64; 3]`, a struct's
//! `p.pos`) indexed by a run-time integer (`a[i]` in `for i in 0..3`).
//!
//! Such an array is an IR tuple, whose parts are read by literal indices
//! only. To index it at run time it is copied, once, into a local IR array,
//! its *view*: `fill` and one `set` per element, the Rust
//! `let v = [a.0, a.1, a.2];`, which the index then reads (`index(v, i)`).
//! No IR form is new, so J, U and T apply the rules of `fill`, `set` and
//! `index`: the tangent is copied alike, and T accumulates the loop's
//! cotangents into the view's buffer (`v̄[i] += ..` in the reversed loop),
//! then hands each slot back to its tuple component once, after it.
//!
//! The copy is made before the loop that indexes the array (see
//! [`Lowerer::view_indexed_arrays`]), so the loop reads it in place rather
//! than copying it per iteration; hence only a variable or field that the
//! loop does not write (its value is the same in every iteration). In
//! straight-line code at the function's top level, the copy is made at
//! the first such index.

use rustc_hash::FxHashMap as HashMap;
use syn::visit::Visit;

use super::{Binding, Lowerer, Val};
use crate::ir::{Expr, Ty, Var};

impl Lowerer<'_> {
    /// Before a loop (its condition, if a `while`, and its body) that
    /// writes the variables `assigned`: the views of the arrays held by
    /// value that it indexes by a non-literal integer, rooted at a variable
    /// it does not write.
    pub(super) fn view_indexed_arrays(
        &mut self,
        (cond, body): (Option<&syn::Expr>, &syn::Block),
        assigned: &[String],
    ) {
        struct Indexed<'e>(Vec<&'e syn::Expr>);
        impl<'e> Visit<'e> for Indexed<'e> {
            fn visit_expr_index(&mut self, ix: &'e syn::ExprIndex) {
                if super::int_literal(&ix.index).is_none() {
                    self.0.push(&ix.expr);
                }
                syn::visit::visit_expr_index(self, ix);
            }
            fn visit_expr_closure(&mut self, _: &'e syn::ExprClosure) {}
            fn visit_item(&mut self, _: &'e syn::Item) {}
        }
        let mut found = Indexed(Vec::new());
        if let Some(c) = cond {
            found.visit_expr(c);
        }
        found.visit_block(body);
        for base in found.0 {
            let Some(root) = root_name(base) else {
                continue;
            };
            if assigned.contains(&root) {
                continue;
            }
            if !matches!(
                self.lookup(&root),
                Some(Binding::Active(_, Ty::Tuple(_), _))
            ) {
                continue;
            }
            // Lowered here speculatively: a problem with it is reported
            // where the body lowers it.
            let mark = self.errs.mark();
            let v = self.expr(base, "v");
            if self.errs.mark() != mark {
                self.errs.roll_back(mark);
                continue;
            }
            if let Val::Active(var, _) = &v {
                if !self.views.contains_key(var) {
                    self.make_view(var);
                }
            }
        }
    }

    /// The view of the array held by value `base`, if it has one; at the
    /// function's top level, made now if it can be.
    pub(super) fn view_of(&mut self, base: &Val) -> Option<Val> {
        let Val::Active(var, Ty::Tuple(_)) = base else {
            return None;
        };
        if !self.views.contains_key(var) && self.depth == 0 {
            self.make_view(var);
        }
        let view = self.views.get(var)?.clone();
        let ty = self.types.get(&view)?.clone();
        Some(Val::Active(view, ty))
    }

    /// The views before a loop, to restore after it when it is nested in a
    /// loop or branch (whose block scopes the views made for it).
    pub(super) fn views_before(&self) -> Option<HashMap<Var, Var>> {
        (self.depth > 0).then(|| self.views.clone())
    }

    /// Copies the tuple `var`, if it is an array of floats held by value,
    /// into a fresh local array: `fill(N, 0)` then `set` of each element.
    fn make_view(&mut self, var: &Var) {
        // By its type: a tuple of floats that Rust indexes is an array (a
        // field's shape is not kept beside its variable).
        let Some(Ty::Tuple(ts)) = self.types.get(var).cloned() else {
            return;
        };
        let (Some(Ty::Real(f)), n) = (ts.first().cloned(), ts.len()) else {
            return;
        };
        if ts.iter().any(|t| *t != Ty::Real(f)) || self.poison.contains(var) {
            return;
        }
        let span = proc_macro2::Span::call_site();
        let Some(parts) = self.components(var, &Ty::Tuple(ts), span) else {
            return;
        };
        let elem = Ty::Real(f);
        let ty = Ty::Array(Box::new(elem.clone()), Some(n as u64));
        let zero = self.emit_nd(
            "z",
            elem.clone(),
            Expr::Lit {
                value: 0.0,
                float: f,
            },
        );
        let len = self.emit_nd("n", Ty::Int, Expr::Int(n as i64));
        let mut a = self.emit(
            "v",
            ty.clone(),
            Expr::Fill {
                len,
                val: zero,
                size: Some(n as u64),
            },
        );
        for (k, (p, _)) in parts.into_iter().enumerate() {
            let idx = self.emit_nd("k", Ty::Int, Expr::Int(k as i64));
            a = self.emit(
                "v",
                ty.clone(),
                Expr::Set {
                    arr: a,
                    idx,
                    val: p,
                },
            );
        }
        self.views.insert(var.clone(), a);
    }
}

/// The variable a place expression (`a`, `p.pos`, `self.a.pos`) reads.
fn root_name(e: &syn::Expr) -> Option<String> {
    match e {
        syn::Expr::Path(p) => p.path.get_ident().map(ToString::to_string),
        syn::Expr::Field(f) => root_name(&f.base),
        syn::Expr::Paren(p) => root_name(&p.expr),
        _ => None,
    }
}
