//! Structs with `#[derive(Differentiable)]` in differentiable functions:
//! parameters (by value and by reference), field reads, struct literals
//! (with `..base`), results and destructuring.
//!
//! There is no struct in the IR: a struct value is the tuple of its
//! differentiable fields in declaration order (a nested struct's field
//! is its own tuple), so J, U and T see tuples and need no rule of their
//! own. The lowering keeps each such tuple's [`StructShape`] beside its
//! variable (`Lowerer::shapes`) to resolve field names, and carries it
//! through the loops and branches that rebind a variable.
//!
//! `Vec` fields are not in the tuple either: the IR puts no array in a
//! tuple (invariant 11 of [`crate::check`]). A struct parameter with `Vec`
//! fields (its own or its nested structs') is its tuple then one IR array
//! parameter per `Vec` field, depth first ([`StructShape::arrays`],
//! `Lowerer::arrays`, a nested struct's share of them following its field
//! reads), which `p.xs` reads as it reads a `&Vec<f64>` parameter (code
//! generation splits the struct into these pieces, `expand::pieces`). Such
//! a struct is therefore a parameter by reference only, read and not
//! written, built or returned.
//!
//! Constant fields (integers, `bool`s, `#[nondiff]`) are not in the tuple.
//! They are read from the parameter itself, as Rust code in the prelude:
//! `p.id` where `p` is a struct parameter, or `p.a.id` where `p.a` is a
//! struct nested in it, is a constant. Such a value's Rust expression is
//! its *origin* (`Lowerer::origins`, following field reads and `let`s, not
//! loops and branches that rebind it). A struct with constant fields can
//! therefore not be built in the body, nor returned, nor written: every
//! value of such a struct in the IR is its origin's value, so a call
//! passes the origin itself to the callee (see `expand::companions`).

use std::rc::Rc;

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

use super::{Lowerer, Shape, Val};
use crate::ir::{Expr, Ty};
use crate::layout::Structs;

/// Where a struct value's constant fields are read from (see the module
/// doc).
#[derive(Clone, Debug)]
pub(super) struct Origin {
    /// The parameter, or a struct nested in one (`p.a`).
    expr: TokenStream,
    /// Whether `expr` is a reference already (a `&S` parameter).
    by_ref: bool,
    /// Whether the value is equal to it (no field written since).
    whole: bool,
    /// Whether `expr` is an element of an array-of-structs parameter
    /// ([`Lowerer::element_origin`]), which no call may borrow.
    element: bool,
}

/// The shape of a derived struct: each field's member and, for a
/// differentiable field, its shape.
#[derive(Clone, Debug, PartialEq)]
pub struct StructShape {
    /// The struct as the function names it (for a struct nested in
    /// another, as the enclosing struct names it: used in messages only).
    pub path: syn::Path,
    /// A `&S` parameter: its tangent in `f_jvp` is `&STangent`.
    pub by_ref: bool,
    pub fields: Vec<(syn::Member, Option<Shape>)>,
    /// The shape of `path`'s tangent struct (of its differentiable fields,
    /// named `<path as Differentiable>::Tangent`), as a derived `f_vjp`
    /// returns a struct's cotangent.
    pub of_tangent: bool,
}

impl StructShape {
    /// The shape of the struct `path` names, from its layout in
    /// `structs`; an error says which field no differentiable function
    /// can hold yet.
    pub fn resolve(
        path: &syn::Path,
        by_ref: bool,
        structs: &Structs,
    ) -> Result<StructShape, String> {
        let layout = structs
            .get(path)
            .ok_or_else(|| format!("`{}` is not a derived struct", show(path)))?;
        let (path, at) = &at_float(path, &layout.item.generics);
        let mut fields = Vec::new();
        for (i, f) in layout.item.fields.iter().enumerate() {
            let ty = &at(&f.ty);
            let member = match &f.ident {
                Some(id) => syn::Member::Named(id.clone()),
                None => syn::Member::Unnamed(syn::Index::from(i)),
            };
            let constant =
                f.attrs.iter().any(|a| a.path().is_ident("nondiff")) || super::is_constant_type(ty);
            let shape = if constant {
                None
            } else if let Some(s) = array_field(ty) {
                Some(s)
            } else if let Some(st) = nested_with_arrays(ty, &layout.nested) {
                Some(Shape::Struct(Rc::new(st)))
            } else {
                Some(Shape::from_type_in(ty, &layout.nested).ok_or_else(|| {
                    format!(
                        "field `{}` of `{}` has type `{}`, which differentiable functions do not hold in a struct yet (floats, fixed-size arrays, tuples, `Vec`s of them, and derived structs){}",
                        member_name(&member),
                        show(path),
                        super::show_type(ty),
                        why_not_held(ty, &layout.nested)
                    )
                })?)
            };
            fields.push((member, shape));
        }
        Ok(StructShape {
            path: path.clone(),
            by_ref,
            fields,
            of_tangent: false,
        })
    }

    /// The shape of its tangent struct, owned: its differentiable fields
    /// (nested structs' tangents), named `<path as Differentiable>::Tangent`.
    pub fn tangent_shape(&self) -> StructShape {
        let field = |s: &Shape| match s {
            Shape::Struct(st) => Shape::Struct(std::rc::Rc::new(st.tangent_shape())),
            other => other.clone(),
        };
        StructShape {
            path: self.path.clone(),
            by_ref: false,
            fields: self
                .fields
                .iter()
                .filter_map(|(m, s)| Some((m.clone(), Some(field(s.as_ref()?)))))
                .collect(),
            of_tangent: true,
        }
    }

    /// The differentiable fields but the `Vec`s, in order: the IR tuple's
    /// components.
    pub fn active(&self) -> impl Iterator<Item = (&syn::Member, &Shape)> {
        self.fields.iter().filter_map(|(m, s)| match s {
            Some(Shape::Slice(..)) | None => None,
            Some(s) => Some((m, s)),
        })
    }

    /// The `Vec` fields, those of nested structs included, depth first in
    /// declaration order, each with its path from the struct (`w`,
    /// `l1.w`): each is an IR array of its own, outside the tuple (an
    /// array has no place in a tuple, invariant 11 of [`crate::check`]).
    pub fn arrays(&self) -> Vec<(String, &Shape)> {
        let mut out = Vec::new();
        for (m, s) in &self.fields {
            match s {
                Some(s @ Shape::Slice(..)) => out.push((member_name(m), s)),
                Some(Shape::Struct(st)) => out.extend(
                    st.arrays()
                        .into_iter()
                        .map(|(p, s)| (format!("{}.{p}", member_name(m)), s)),
                ),
                _ => {}
            }
        }
        out
    }

    /// Whether the struct, or a struct nested in it, has `Vec` fields.
    pub fn has_arrays(&self) -> bool {
        !self.arrays().is_empty()
    }

    /// Where the `Vec` fields of field `m` start among
    /// [`StructShape::arrays`].
    pub(super) fn array_offset(&self, m: &syn::Member) -> usize {
        let mut j = 0;
        for (fm, s) in &self.fields {
            if fm == m {
                break;
            }
            match s {
                Some(Shape::Slice(..)) => j += 1,
                Some(Shape::Struct(st)) => j += st.arrays().len(),
                _ => {}
            }
        }
        j
    }

    /// Whether the struct, or a struct nested in it, has constant fields,
    /// which its flat value does not hold: such a struct crosses a call as
    /// its origin, not its flat value.
    pub fn has_constants(&self) -> bool {
        self.fields
            .iter()
            .any(|(_, s)| s.as_ref().is_none_or(super::has_constants))
    }

    /// The constant fields' names.
    fn constants(&self) -> Vec<String> {
        self.fields
            .iter()
            .filter(|(_, s)| s.is_none())
            .map(|(m, _)| format!("`{}`", member_name(m)))
            .collect()
    }

    /// The tangent struct's type.
    pub fn tangent(&self) -> TokenStream {
        let p = &self.path;
        quote!(<#p as ::linear_ad::Differentiable>::Tangent)
    }

    /// The tuple shape of the struct's flat value (`ToFlat::Flat`): nested
    /// structs as tuples too.
    pub fn flat(&self) -> Shape {
        Shape::Tuple(self.active().map(|(_, s)| flat(s)).collect())
    }

    /// Where field `m` is.
    pub(super) fn position(&self, m: &syn::Member) -> Place<'_> {
        let mut k = 0;
        for (fm, s) in &self.fields {
            match s {
                Some(Shape::Slice(..)) if fm == m => return Place::Array(self.array_offset(m)),
                Some(Shape::Slice(..)) => {}
                Some(s) if fm == m => return Place::Part(k, s),
                Some(_) => k += 1,
                None if fm == m => return Place::Constant,
                None => {}
            }
        }
        Place::Missing
    }
}

/// Where a field of a struct value is (see [`StructShape::position`]).
pub(super) enum Place<'a> {
    /// Component `k` of the tuple, of this shape.
    Part(usize, &'a Shape),
    /// The `j`-th `Vec` field: an IR array of its own.
    Array(usize),
    /// A constant field.
    Constant,
    /// No field of the struct.
    Missing,
}

/// The shape of a `Vec` field a function reads in place, as the array
/// read by index of a `&Vec<T>` parameter.
fn array_field(t: &syn::Type) -> Option<Shape> {
    match Shape::from_param_type(t)? {
        Shape::Slice(e, super::SliceKind::Vec) => Some(Shape::Slice(e, super::SliceKind::VecRef)),
        _ => None,
    }
}

/// A field's struct type with `Vec` fields: a struct may nest it as a
/// field (not in a tuple or an array, which would hold arrays).
fn nested_with_arrays(t: &syn::Type, structs: &Structs) -> Option<StructShape> {
    let syn::Type::Path(p) = t else {
        return None;
    };
    StructShape::resolve(&p.path, false, structs)
        .ok()
        .filter(StructShape::has_arrays)
}

/// Why a field of type `t` has no shape, for the message saying so.
fn why_not_held(t: &syn::Type, structs: &Structs) -> &'static str {
    if named_length(t) {
        return ": the macro reads array lengths from the source, so write the length as a literal (`[f64; 8]`), not a constant";
    }
    if holds_struct_with_arrays(t, structs) {
        ": a struct with `Vec` fields may be a field itself, but not in a tuple or an array"
    } else {
        ""
    }
}

/// Whether a tuple or array type holds a struct with `Vec` fields.
fn holds_struct_with_arrays(t: &syn::Type, structs: &Structs) -> bool {
    match t {
        syn::Type::Path(_) => nested_with_arrays(t, structs).is_some(),
        syn::Type::Tuple(tu) => tu
            .elems
            .iter()
            .any(|e| holds_struct_with_arrays(e, structs)),
        syn::Type::Array(a) => holds_struct_with_arrays(&a.elem, structs),
        syn::Type::Paren(p) => holds_struct_with_arrays(&p.elem, structs),
        _ => false,
    }
}

/// For a struct generic in its float type (`struct Point<F: Float>`), the
/// path at a float type and its field types at it: `Point<T>` in a
/// function generic in `T` reads the field `x: F` as `x: T`, `Point<f64>`
/// as `x: f64`. A path without the argument (a struct literal `Point {
/// .. }`) takes the function's float type parameter, or `f64`. For any
/// other struct, the path and the field types as they are.
#[allow(clippy::type_complexity)]
fn at_float(
    path: &syn::Path,
    generics: &syn::Generics,
) -> (syn::Path, Box<dyn Fn(&syn::Type) -> syn::Type>) {
    let Some(param) = super::float_param(generics) else {
        return (path.clone(), Box::new(|t: &syn::Type| t.clone()));
    };
    let given = path.segments.last().and_then(|s| match &s.arguments {
        syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
            syn::GenericArgument::Type(t) => Some(t.clone()),
            _ => None,
        }),
        _ => None,
    });
    let arg: syn::Type = given.unwrap_or_else(|| match crate::codegen::FloatParam::get() {
        Some(t) => syn::parse_quote!(#t),
        None => syn::parse_quote!(f64),
    });
    let at = crate::layout::at_arg(path, &quote!(#arg));
    (at, Box::new(move |t: &syn::Type| subst(t, &param, &arg)))
}

/// `t` with the type parameter `param` replaced by `arg`.
pub(super) fn subst(t: &syn::Type, param: &syn::Ident, arg: &syn::Type) -> syn::Type {
    let mut t = t.clone();
    Subst(param, arg).visit_type_mut(&mut t);
    t
}

/// Replaces a type parameter by a type.
struct Subst<'a>(&'a syn::Ident, &'a syn::Type);

impl syn::visit_mut::VisitMut for Subst<'_> {
    fn visit_type_mut(&mut self, t: &mut syn::Type) {
        match t {
            syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident(self.0) => {
                *t = self.1.clone()
            }
            _ => syn::visit_mut::visit_type_mut(self, t),
        }
    }
}

/// A shape with its structs as the tuples of their flat values.
pub fn flat(s: &Shape) -> Shape {
    match s {
        Shape::Struct(st) => st.flat(),
        Shape::Tuple(ss) => Shape::Tuple(ss.iter().map(flat).collect()),
        Shape::Array(e, n) => Shape::Array(Box::new(flat(e)), *n),
        Shape::Float(_) | Shape::Slice(..) => s.clone(),
    }
}

fn member_name(m: &syn::Member) -> String {
    match m {
        syn::Member::Named(id) => id.to_string(),
        syn::Member::Unnamed(i) => i.index.to_string(),
    }
}

pub(super) fn show(p: &syn::Path) -> String {
    p.to_token_stream().to_string().replace(' ', "")
}

impl Lowerer<'_> {
    /// The struct shape of a lowered value, if it is a struct.
    pub(super) fn struct_of(&self, v: &Val) -> Option<Rc<StructShape>> {
        match v {
            Val::Active(var, _) => match self.shapes.get(var) {
                Some(Shape::Struct(st)) => Some(st.clone()),
                _ => None,
            },
            Val::Inactive(_) => None,
        }
    }

    /// `base.member`: a field of a struct, a constant field read from a
    /// struct parameter, or a part of a tuple.
    pub(super) fn field_expr(&mut self, f: &syn::ExprField, hint: &str) -> Val {
        let base = self.expr(&f.base, hint);
        let Some(st) = self.struct_of(&base) else {
            return match &f.member {
                syn::Member::Unnamed(idx) => self.select(base, idx.index as usize, f.span()),
                syn::Member::Named(_) => {
                    let assumed = match &base {
                        Val::Active(v, _) => self.assumed_float(v),
                        Val::Inactive(_) => None,
                    };
                    if let Some(why) = assumed {
                        self.errs.spanned(&f.member, why);
                    } else if !matches!(&base, Val::Active(v, _) if self.poison.contains(v)) {
                        self.errs.spanned(&f.member, "a named field of a value that is not a struct with `#[derive(Differentiable)]`: differentiable values are floats, tuples, arrays and derived structs");
                    }
                    self.placeholder()
                }
            };
        };
        match st.position(&f.member) {
            Place::Part(k, shape) => self.select_field(base, (k, &f.member), shape, f.span()),
            Place::Array(j) => self.array_field(&base, j, &f.member),
            Place::Constant => match self.origin(&base) {
                Some(o) => {
                    let m = &f.member;
                    Val::Inactive(quote!(#o.#m))
                }
                None => {
                    self.errs.spanned(&f.member, format!("the constant field `{}` can only be read from a parameter (`p.{0}`) or a struct nested in one (`p.a.{0}`): this struct value was rebound by a loop or a branch, which keeps its differentiable fields only", member_name(&f.member)));
                    self.placeholder()
                }
            },
            Place::Missing => {
                self.errs.spanned(
                    &f.member,
                    format!(
                        "`{}` has no field `{}`",
                        show(&st.path),
                        member_name(&f.member)
                    ),
                );
                self.placeholder()
            }
        }
    }

    /// The `j`-th `Vec` field (`m`) of the struct value `base`: the IR
    /// array it is, for a struct parameter or a copy of one whose other
    /// fields were written ([`Lowerer::arrays`]).
    fn array_field(&mut self, base: &Val, j: usize, m: &syn::Member) -> Val {
        let found = match base {
            Val::Active(v, _) => self.arrays.get(v).and_then(|a| a.get(j)).cloned(),
            Val::Inactive(_) => None,
        };
        match found {
            Some(a) => {
                let ty = self.types[&a].clone();
                Val::Active(a, ty)
            }
            None => {
                self.errs.spanned(m, format!("the `Vec` field `{}` can only be read from a parameter (`p.{0}`): this struct value was rebound by a loop or a branch, which keeps its other fields only", member_name(m)));
                self.placeholder()
            }
        }
    }

    /// `elem`, element `i` of the array-of-structs parameter `a`, reads
    /// its constant fields from the parameter, which each generated
    /// function that runs the IR keeps as `__linear_ad_orig_<name>`
    /// beside the flat copy the IR reads (`expand::items::own_elements`):
    /// `__linear_ad_orig_bodies[i].m`, the index read through a name bound
    /// to the IR's index at the function's top scope, so that the read
    /// means the same index wherever it is lowered. Not whole: the element
    /// is no parameter a call could borrow.
    pub(super) fn element_origin(
        &mut self,
        a: &crate::ir::Var,
        i: crate::ir::Var,
        elem: &crate::ir::Var,
    ) {
        let Some(name) = self.element_params.get(a) else {
            return;
        };
        if !matches!(self.shapes.get(elem), Some(Shape::Struct(st)) if st.has_constants()) {
            return;
        }
        let param = quote::format_ident!("__linear_ad_orig_{}", name);
        let ix = quote::format_ident!("__linear_ad_ix{}", self.origins.len() + 1);
        if let Some(top) = self.scopes.first_mut() {
            top.insert(ix.to_string(), super::Binding::Active(i, Ty::Int, false));
        }
        let o = Origin {
            expr: quote!(#param[#ix]),
            by_ref: false,
            whole: false,
            element: true,
        };
        self.origins.insert(elem.clone(), o);
    }

    /// Whether the struct value `v` is an element of an array-of-structs
    /// parameter, whose constant fields it reads from there.
    pub(super) fn is_element(&self, v: &crate::ir::Var) -> bool {
        self.origins.get(v).is_some_and(|o| o.element)
    }

    /// The Rust expression a struct value's constant fields are read
    /// from, if it has one (see the module doc).
    pub(super) fn origin(&self, v: &Val) -> Option<TokenStream> {
        match v {
            Val::Active(var, _) => self.origins.get(var).map(|o| o.expr.clone()),
            Val::Inactive(_) => None,
        }
    }

    /// A borrow of the struct value `v`'s origin, `Ok` if `v` is equal to
    /// it, `Err(true)` if it has one but a field was written since.
    pub(super) fn borrow_origin(&self, v: &crate::ir::Var) -> Result<TokenStream, bool> {
        let o = self.origins.get(v).ok_or(false)?;
        let e = &o.expr;
        match (o.whole, o.by_ref) {
            (false, _) => Err(true),
            (true, true) => Ok(e.clone()),
            (true, false) => Ok(quote!(&#e)),
        }
    }

    /// `new` is the struct value `old` with a differentiable field
    /// written: the same constant fields, no longer equal to the origin.
    pub(super) fn written_struct(&mut self, old: &crate::ir::Var, new: &crate::ir::Var) {
        // Its `Vec` fields are not written (see `Lowerer::part_index`).
        if let Some(a) = self.arrays.get(old).cloned() {
            self.arrays.insert(new.clone(), a);
        }
        if let Some(o) = self.origins.get(old).cloned() {
            let o = Origin { whole: false, ..o };
            self.origins.insert(new.clone(), o);
        }
    }

    /// `S { a: e, b, ..base }`: the tuple of the fields' values.
    pub(super) fn struct_expr(&mut self, e: &syn::ExprStruct, hint: &str) -> Val {
        let path = self.at_function_float(&e.path);
        let st = match StructShape::resolve(&path, false, &self.structs) {
            Ok(st) => Rc::new(st),
            // A struct the signature does not name: its layout is fetched
            // and the function lowered again (see `layout`).
            Err(_) if self.structs.get(&e.path).is_none() => {
                if !self.missing_layouts.contains(&e.path) {
                    self.missing_layouts.push(e.path.clone());
                }
                return self.placeholder();
            }
            Err(msg) => {
                let msg = if self.structs.get(&e.path).is_some() {
                    msg
                } else {
                    format!("{msg}: derive `Differentiable` for it (`#[derive(linear_ad::Differentiable)]`) to build it in a differentiable function")
                };
                self.errs.spanned(&e.path, msg);
                return self.placeholder();
            }
        };
        if st.has_arrays() {
            self.errs.spanned(&e.path, format!("`{}` has `Vec` fields, which a struct built in a differentiable function cannot hold yet: take it as a parameter (`&{0}`) and return the values computed from it", show(&st.path)));
            return self.placeholder();
        }
        let constants = st.constants();
        if !constants.is_empty() {
            self.errs.spanned(&e.path, format!("`{}` has constant fields ({}), which a struct built in a differentiable function cannot hold yet: build it outside, or mark no field `#[nondiff]`", show(&st.path), constants.join(", ")));
            return self.placeholder();
        }
        if let Some(q) = &e.qself {
            self.errs
                .spanned(&q.ty, "qualified struct paths are not supported");
            return self.placeholder();
        }
        let rest = e.rest.as_ref().map(|r| (self.expr(r, hint), r.span()));
        let mut vars = Vec::new();
        let mut tys = Vec::new();
        for (k, (m, shape)) in st.active().enumerate() {
            let ty = shape.ty();
            let given = e.fields.iter().find(|fv| fv.member == *m);
            let (val, span) = match (given, &rest) {
                (Some(fv), _) => (self.expr(&fv.expr, hint), fv.expr.span()),
                (None, Some((base, span))) => (self.select(base.clone(), k, *span), *span),
                (None, None) => {
                    self.errs
                        .spanned(&e.path, format!("missing field `{}`", member_name(m)));
                    return self.placeholder();
                }
            };
            if matches!(&val, Val::Active(v, _) if self.poison.contains(v)) {
                return self.placeholder();
            }
            vars.push(self.materialize(val, &ty, span));
            tys.push(ty);
        }
        for fv in &e.fields {
            if matches!(st.position(&fv.member), Place::Missing | Place::Constant) {
                self.errs.spanned(
                    &fv.member,
                    format!(
                        "`{}` has no field `{}`",
                        show(&st.path),
                        member_name(&fv.member)
                    ),
                );
            }
        }
        let ty = Ty::Tuple(tys);
        let v = self.emit(hint, ty.clone(), Expr::Tup(vars));
        self.shapes.insert(v.clone(), Shape::Struct(st));
        Val::Active(v, ty)
    }

    /// `path` naming a struct generic in its float type without its
    /// argument, at the function's float type: its float type parameter
    /// or, in a function that has none, the float type of its
    /// differentiable parameters (`V2 { .. }` is `V2::<f32>` in a function
    /// of `f32`s; `V2::m(..)` calls `V2::<f32>::m`).
    pub(super) fn at_function_float(&self, path: &syn::Path) -> syn::Path {
        let bare = path.segments.last().is_some_and(|s| s.arguments.is_none());
        let generic = self
            .structs
            .get(path)
            .is_some_and(|l| !l.item.generics.params.is_empty());
        if !bare || !generic {
            return path.clone();
        }
        let f = match crate::codegen::FloatParam::get() {
            Some(t) => quote!(#t),
            None => crate::codegen::float_ty(self.float()),
        };
        crate::layout::at_arg(path, &f)
    }

    /// `let S { a, b: (x, y), .. } = v;` and `let S(a, b) = v;`.
    pub(super) fn bind_struct_pattern(&mut self, p: &syn::Pat, path: &syn::Path, v: Val) {
        let Some(st) = self.struct_of(&v) else {
            if !matches!(&v, Val::Active(var, _) if self.poison.contains(var)) {
                self.errs.spanned(p, "this pattern destructures a struct, but the value is not a struct with `#[derive(Differentiable)]`");
            }
            return;
        };
        if st.path.segments.last().map(|s| &s.ident) != path.segments.last().map(|s| &s.ident) {
            self.errs.spanned(
                path,
                format!(
                    "this pattern is for `{}`, but the value is a `{}`",
                    show(path),
                    show(&st.path)
                ),
            );
            return;
        }
        let fields: Vec<(syn::Member, &syn::Pat)> = match p {
            syn::Pat::Struct(ps) => ps
                .fields
                .iter()
                .map(|f| (f.member.clone(), &*f.pat))
                .collect(),
            syn::Pat::TupleStruct(ts) => ts
                .elems
                .iter()
                .enumerate()
                .filter(|(_, e)| !matches!(e, syn::Pat::Rest(_)))
                .map(|(i, e)| (syn::Member::Unnamed(syn::Index::from(i)), e))
                .collect(),
            _ => return,
        };
        for (m, sub) in fields {
            match st.position(&m) {
                Place::Part(k, shape) => {
                    let c = self.select_field(v.clone(), (k, &m), shape, sub.span());
                    self.bind_pattern(sub, c);
                }
                Place::Array(j) => {
                    let a = self.array_field(&v, j, &m);
                    self.bind_pattern(sub, a);
                }
                Place::Constant if matches!(sub, syn::Pat::Wild(_)) => {}
                Place::Constant => match self.origin(&v) {
                    Some(o) => self.bind_pattern(sub, Val::Inactive(quote!(#o.#m))),
                    None => self.errs.spanned(sub, format!("the constant field `{}` can only be bound from a parameter or a struct nested in one: this struct value was rebound by a loop or a branch, which keeps its differentiable fields only", member_name(&m))),
                },
                Place::Missing => self.errs.spanned(sub, format!("`{}` has no field `{}`", show(&st.path), member_name(&m))),
            }
        }
    }

    /// Records the struct parameter `v` bound by `pat`: when `pat` is a
    /// plain name, it is its own origin.
    ///
    /// A struct with constant fields is borrowed first thing, in the
    /// prelude (`let __o = &p;`), and its origin is that borrow: the
    /// generated code rebinds `p` to its flat value, and a constant field
    /// read in a branch or a loop is computed there, after the rebinding.
    pub(super) fn struct_param(&mut self, v: &crate::ir::Var, pat: &syn::Pat, st: &StructShape) {
        if let syn::Pat::Ident(i) = pat {
            let id = &i.ident;
            let (expr, by_ref) = if st.has_constants() {
                let alias = self.new_inactive_name("o");
                let borrow = if st.by_ref { quote!(#id) } else { quote!(&#id) };
                self.prelude.push(quote!(let #alias = #borrow;));
                (quote!(#alias), true)
            } else {
                (quote!(#id), st.by_ref)
            };
            let o = Origin {
                expr,
                by_ref,
                whole: true,
                element: false,
            };
            self.origins.insert(v.clone(), o);
        }
    }

    /// Component `k` of the struct value `base`, a field of shape `shape`:
    /// a nested struct keeps its shape for the field reads that follow.
    /// A nested struct read from a value with an origin has the field's
    /// origin.
    fn select_field(
        &mut self,
        base: Val,
        (k, m): (usize, &syn::Member),
        shape: &Shape,
        span: Span,
    ) -> Val {
        let base_var = match &base {
            Val::Active(v, _) => Some(v.clone()),
            Val::Inactive(_) => None,
        };
        let v = self.select(base, k, span);
        if let (Some(b), Val::Active(var, _)) = (base_var, &v) {
            self.nested_field(&b, m, var, shape);
        }
        v
    }

    /// Records that `var` is the field `m` (of shape `shape`) of the struct
    /// value `base`: a nested struct keeps its shape for the field reads
    /// that follow, and has the field's origin if `base` has one.
    pub(super) fn nested_field(
        &mut self,
        base: &crate::ir::Var,
        m: &syn::Member,
        var: &crate::ir::Var,
        shape: &Shape,
    ) {
        let Shape::Struct(inner) = shape else {
            return;
        };
        self.shapes.insert(var.clone(), shape.clone());
        // A nested struct's `Vec` fields are its share of the base's.
        if let (Some(all), Some(Shape::Struct(outer))) =
            (self.arrays.get(base), self.shapes.get(base))
        {
            let from = outer.array_offset(m);
            let mine = all[from..from + inner.arrays().len()].to_vec();
            if !mine.is_empty() {
                self.arrays.insert(var.clone(), mine);
            }
        }
        if let Some(o) = self.origins.get(base).cloned() {
            let expr = &o.expr;
            let o = Origin {
                expr: quote!(#expr.#m),
                by_ref: false,
                whole: o.whole,
                element: o.element,
            };
            self.origins.insert(var.clone(), o);
        }
    }
}

/// Whether `t` holds an array whose length is not an integer literal
/// (`[f64; N]`), which no macro can evaluate.
fn named_length(t: &syn::Type) -> bool {
    match t {
        syn::Type::Array(a) => {
            !matches!(
                &a.len,
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(_),
                    ..
                })
            ) || named_length(&a.elem)
        }
        syn::Type::Tuple(t) => t.elems.iter().any(named_length),
        syn::Type::Paren(p) => named_length(&p.elem),
        syn::Type::Group(g) => named_length(&g.elem),
        _ => false,
    }
}
