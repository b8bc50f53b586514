//! Lowering of writes to parts of tuples, structs and fixed-size arrays
//! held by value: `t.0 = e`, `t.1.0 += e`, `u[2] *= e` (literal indices),
//! `q.pos[0] += e`, with `t`, `u` and `q` local `let mut` variables.
//!
//! The IR's tuples are values, not places: a part write rebinds the whole
//! variable to a new tuple holding the old parts and the new one
//! (`unpack (a, b) = t in let t' = tup(e, b)`), which the later passes see
//! as any other tuple. A struct is the tuple of its differentiable fields
//! (see [`super::structs`]): a field write is the write of its component,
//! and the new tuple keeps the struct's shape. Its constant fields cannot
//! be written (the tuple does not hold them); the written struct still
//! reads them from its origin, but is no longer equal to it, so it cannot
//! cross a call. A loop or branch that writes a part carries the whole
//! variable (see [`super::control::assigned`]). Generated Rust moves the
//! parts, it copies no array: every part is a float or a tuple of them.

use proc_macro2::Span;
use quote::ToTokens;
use syn::spanned::Spanned;

use super::{Binding, Lowerer, Shape, Val};
use crate::ir::{Prim, Ty};

/// A place `root.k1.k2..` (or `root[k1]..` with literal indices): the root
/// variable's name and the path of parts, outermost first.
struct Place<'e> {
    root: &'e syn::Expr,
    name: String,
    path: Vec<(Part, Span)>,
}

/// One step of a place: a field (of a struct, or a tuple's `.k`) or an
/// element at a literal index.
#[derive(Clone)]
enum Part {
    Field(syn::Member),
    Elem(usize),
}

/// Reads `e` as a part of a local variable, `None` if it is not one (a
/// plain variable, an element of an array read by index, anything else).
fn place(e: &syn::Expr) -> Option<Place<'_>> {
    let mut path = Vec::new();
    let mut cur = e;
    loop {
        match cur {
            syn::Expr::Field(f) => {
                path.push((Part::Field(f.member.clone()), f.member.span()));
                cur = &f.base;
            }
            syn::Expr::Index(ix) => {
                let k = super::int_literal(&ix.index)?;
                path.push((Part::Elem(usize::try_from(k).ok()?), ix.index.span()));
                cur = &ix.expr;
            }
            syn::Expr::Paren(p) => cur = &p.expr,
            syn::Expr::Path(p) => {
                let name = p.path.get_ident()?.to_string();
                if path.is_empty() {
                    return None;
                }
                path.reverse();
                return Some(Place {
                    root: cur,
                    name,
                    path,
                });
            }
            _ => return None,
        }
    }
}

impl Lowerer<'_> {
    /// `target = right` or `target op= right` where `target` is a part of
    /// a local tuple or fixed-size array held by value; `false` (nothing
    /// done) when it is not, for the caller's other rules.
    pub(super) fn part_write(
        &mut self,
        target: &syn::Expr,
        op: Option<Prim>,
        right: &syn::Expr,
    ) -> bool {
        let Some(p) = place(target) else {
            return false;
        };
        match self.lookup(&p.name).cloned() {
            Some(Binding::Active(_, Ty::Tuple(_), true)) => {}
            Some(Binding::Inactive(_, true)) => {}
            // An array read by index has element writes of its own.
            Some(Binding::Active(_, Ty::Array(..), _)) | None => return false,
            Some(Binding::Param) => {
                self.errs.spanned(
                    p.root,
                    "assigning to a parameter is not supported: bind a new `let mut` variable",
                );
                return true;
            }
            // Not mutable, a parameter, not a tuple: rustc reports it on
            // the original function.
            Some(_) => {
                self.errs.rustc_reports();
                return true;
            }
        }
        let hint = p.name.clone();
        let context = self.float_context(target);
        let value = match op {
            Some(op) => {
                let cur = self.expr(target, &hint);
                self.context = context;
                let rhs = self.expr(right, &hint);
                let sym = super::ops::assign_symbol(op);
                let whole = quote::quote!(#target #sym #right);
                self.binary(op, cur, rhs, target.span(), right.span(), &whole, &hint)
            }
            None => {
                self.context = context;
                self.expr(right, &hint)
            }
        };
        let root = self.expr(p.root, &hint);
        let Some(new) = self.replace_part(root, &p.path, value, right.span()) else {
            return true;
        };
        if let Val::Active(var, ty) = new {
            self.set_existing(&p.name, Binding::Active(var, ty, true));
        }
        true
    }

    /// `base` with the part at `path` replaced by `value`: a new tuple,
    /// with `base`'s struct shape if it has one.
    fn replace_part(
        &mut self,
        base: Val,
        path: &[(Part, Span)],
        value: Val,
        span: Span,
    ) -> Option<Val> {
        let ((part, k_span), rest) = path.split_first()?;
        let base = match base {
            Val::Active(v, t) => (v, t),
            Val::Inactive(tokens) => {
                let Some(t) = self.infer_tokens(&tokens) else {
                    self.errs.push(*k_span, "cannot tell the type of the tuple written here: annotate its `let` (`let mut t: (f64, f64) = ..;`)");
                    return None;
                };
                (self.materialize(Val::Inactive(tokens), &t, span), t)
            }
        };
        let shape = self.shape_of(&base.0);
        let k = &self.part_index(&shape, part, *k_span)?;
        let parts = self.components(&base.0, &base.1, *k_span)?;
        let Some((old, old_ty)) = parts.get(*k).cloned() else {
            // No such field, or an index past the array: rustc's error on
            // the original function.
            self.errs.rustc_reports();
            return None;
        };
        let new = if rest.is_empty() {
            value
        } else {
            // A nested struct's fields are named through its shape.
            if let (Shape::Struct(st), Part::Field(m)) = (&shape, part) {
                if let super::structs::Place::Part(_, inner) = st.position(m) {
                    self.nested_field(&base.0, m, &old, inner);
                }
            }
            self.replace_part(Val::Active(old, old_ty.clone()), rest, value, span)?
        };
        let new = match new {
            Val::Active(v, t) if t == old_ty => Val::Active(v, t),
            // A value of another type: rustc reports it on the original.
            Val::Active(..) => {
                self.errs.rustc_reports();
                return None;
            }
            inactive => Val::Active(self.materialize(inactive, &old_ty, span), old_ty.clone()),
        };
        let vals = parts
            .into_iter()
            .enumerate()
            .map(|(i, (v, t))| {
                let val = if i == *k {
                    new.clone()
                } else {
                    Val::Active(v, t)
                };
                (val, span, new_tokens(&i))
            })
            .collect();
        let new = self.aggregate(vals, matches!(shape, Shape::Array(..)), "t");
        if let (Val::Active(v, _), Shape::Struct(_)) = (&new, &shape) {
            self.shapes.insert(v.clone(), shape.clone());
            self.written_struct(&base.0, v);
        }
        Some(new)
    }

    /// The component a part names in a value of this shape: a struct's
    /// field by its position among the differentiable ones.
    fn part_index(&mut self, shape: &Shape, part: &Part, span: Span) -> Option<usize> {
        match (shape, part) {
            (Shape::Struct(st), Part::Field(m)) => match st.position(m) {
                super::structs::Place::Part(k, _) => Some(k),
                super::structs::Place::Array(_) => {
                    self.errs.push(span, "a `Vec` field of a struct cannot be written in a differentiable function yet: build the new values in a local `Vec` (`let mut v = vec![0.0; n];`)");
                    None
                }
                super::structs::Place::Constant => {
                    self.errs.push(span, "a constant field cannot be written in a differentiable function: the struct value here holds its differentiable fields only; compute the new value in a local");
                    None
                }
                // rustc reports an unknown field on the original function.
                super::structs::Place::Missing => {
                    self.errs.rustc_reports();
                    None
                }
            },
            (_, Part::Field(syn::Member::Unnamed(i))) => Some(i.index as usize),
            (_, Part::Elem(k)) => Some(*k),
            // A named field of a value that is no struct: rustc's error.
            (_, Part::Field(syn::Member::Named(_))) => {
                self.errs.rustc_reports();
                None
            }
        }
    }
}

/// The tokens `aggregate` names a part by in its errors (none arise: every
/// part is already an IR variable of its type).
fn new_tokens(i: &usize) -> proc_macro2::TokenStream {
    syn::Index::from(*i).to_token_stream()
}
