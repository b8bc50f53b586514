//! `#[derive(Differentiable)]`: a struct's tangent struct, its
//! vector-space operations, and its layout macro ([`crate::layout`]).
//!
//! For `struct Particle { pos: [f64; 3], vel: [f64; 3], mass: f64, id:
//! usize }` it generates, beside the struct and with its visibility:
//!
//! * `ParticleTangent { pos, vel, mass }`: the differentiable fields
//!   (floats, fixed-size arrays, tuples, `Vec`s and derived structs; not
//!   integers, `bool`s or `#[nondiff]` fields), each of its tangent type;
//!   `Clone`, `Debug`, `PartialEq`, `Default` (the zero), `Copy` when
//!   every field is, and `Add`, `Sub`, `Neg`, `Mul<F>` with `F` the
//!   struct's float type;
//! * `impl linear_ad::Differentiable for Particle`;
//! * the conversions to the flat tuple the IR sees (`ToFlat`, and
//!   `FromFlat` where the struct has no constant field); a `Vec` field
//!   of floats, tuples or rows is no part of it but an array of its own,
//!   read through `ArrayField<K>` (the struct's and the tangent's; a
//!   field of a struct type with `Vec` fields adds that struct's), and
//!   the tangent is rebuilt with its buffers (`FromParts`), not by
//!   `FromFlat`;
//! * the layout macro `Particle!`, which `#[differentiable]` functions
//!   read the fields from.
//!
//! A struct generic in its float type (`struct V2<T: Float>`, one type
//! parameter bounded by `Float`, as functions may be) keeps it: the
//! tangent is `V2Tangent<T>`, and every impl is generic in `T` with the
//! user's bounds plus `linear_ad::Real`. Its layout keeps the generics, so
//! a function reads its fields at the float type it names
//! (`lower::structs`).
//!
//! A struct whose fields name other structs first collects their layouts
//! (a [`Job`] of kind [`Kind::Derive`]), to embed them in its own and to
//! know whether its tangent is `Copy`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

use crate::codegen::FloatParam;
use crate::layout::{struct_paths, Job, Kind, Layout, Structs};
use crate::lower::{is_float_param, Errors};

/// What a field of a derived struct is to differentiation.
enum Field {
    /// An integer, `bool` or `#[nondiff]` field: no tangent.
    Constant,
    /// A differentiable field; `copy` when its tangent is `Copy`, `flat`
    /// when it converts to the IR's flat value (no `Vec` in it), `rebuild`
    /// when it converts back (no constant field in a struct in it).
    Active {
        copy: bool,
        flat: bool,
        rebuild: bool,
    },
    /// A `Vec` of floats, tuples or arrays of them: outside the flat
    /// value, read in place through `ArrayField` (see `linear_ad`'s
    /// `structs` module).
    Array,
    /// A struct with this many `Vec` fields (its own and its nested
    /// structs'): its flat value is part of this one's, its `Vec`s are
    /// this one's too.
    Holder(usize),
}

/// Expands `#[derive(Differentiable)] item`.
pub fn derive(item: TokenStream) -> TokenStream {
    let input: syn::DeriveInput = match syn::parse2(item) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let mut errs = Errors::default();
    let syn::Data::Struct(data) = &input.data else {
        let what = match &input.data {
            syn::Data::Enum(_) => "an enum",
            _ => "a union",
        };
        errs.spanned(&input.ident, format!("`Differentiable` cannot be derived for {what}: its tangent would depend on the variant; derive it for structs"));
        return errs.into_compile_errors();
    };
    let float = crate::lower::float_param(&input.generics);
    if !input.generics.params.is_empty() && float.is_none() {
        errs.spanned(&input.generics, "`Differentiable` can be derived for a struct generic in its float type only: one type parameter bounded by `Float` (`struct Point<T: num_traits::Float>`); lifetimes, const parameters and other type parameters are not supported");
    }
    // Within the struct, its float type parameter is a float.
    let _float = FloatParam::set(float);
    if matches!(data.fields, syn::Fields::Unit) {
        errs.spanned(
            &input.ident,
            "`Differentiable` needs fields: a unit struct has no tangent",
        );
    }
    let mut pending = Vec::new();
    for f in &data.fields {
        if !is_nondiff(f) && !crate::lower::is_constant_type(&f.ty) {
            check_field_type(&f.ty, &mut errs);
            struct_paths(&f.ty, &mut pending);
        }
    }
    if !errs.is_empty() {
        return errs.into_compile_errors();
    }
    let item = minimal(&input, data);
    Job::awaiting_layouts(Kind::Derive, TokenStream::new(), quote!(#item), pending).next()
}

fn is_nondiff(f: &syn::Field) -> bool {
    f.attrs.iter().any(|a| a.path().is_ident("nondiff"))
}

/// The struct as its layout records it: no attributes but `#[nondiff]`
/// and the fields' docs (the tangent's fields repeat them); its generics
/// (a float type parameter, which a user of the layout substitutes).
fn minimal(input: &syn::DeriveInput, data: &syn::DataStruct) -> syn::ItemStruct {
    let mut fields = data.fields.clone();
    for f in fields.iter_mut() {
        f.attrs
            .retain(|a| a.path().is_ident("nondiff") || a.path().is_ident("doc"));
    }
    let (vis, ident, generics) = (&input.vis, &input.ident, &input.generics);
    let where_clause = &generics.where_clause;
    match fields {
        syn::Fields::Unnamed(_) => {
            syn::parse_quote!(#vis struct #ident #generics #fields #where_clause;)
        }
        _ => syn::parse_quote!(#vis struct #ident #generics #where_clause #fields),
    }
}

/// Reports a differentiable field's type that has no tangent.
fn check_field_type(t: &syn::Type, errs: &mut Errors) {
    match t {
        syn::Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return;
            };
            let std = ["String", "Option", "Box", "HashMap", "Result", "char", "str"];
            if is_float_param(&p.path) {
                // The struct's float type.
            } else if std.iter().any(|n| last.ident == n) {
                errs.spanned(t, format!("a field of type `{}` has no tangent: mark it `#[nondiff]`", last.ident));
            } else if last.ident == "Vec" {
                if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
                    for arg in &a.args {
                        if let syn::GenericArgument::Type(t) = arg {
                            check_field_type(t, errs);
                        }
                    }
                }
            } else if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
                // A struct generic in its float type, at this struct's
                // float type or a concrete one (`Point<T>`, `Point<f64>`).
                for arg in &a.args {
                    match arg {
                        syn::GenericArgument::Type(t) if is_float_type(t) => {}
                        _ => errs.spanned(arg, "a struct field's type may be generic in a float type only (`Point<T>`, `Point<f64>`): write the concrete type, or mark the field `#[nondiff]`"),
                    }
                }
            } else if !last.arguments.is_none() {
                errs.spanned(t, "this field type has no tangent: use floats, fixed-size arrays, tuples, `Vec`s and derived structs, or mark the field `#[nondiff]`");
            }
        }
        syn::Type::Tuple(t) => t.elems.iter().for_each(|e| check_field_type(e, errs)),
        syn::Type::Array(a) => check_field_type(&a.elem, errs),
        syn::Type::Paren(p) => check_field_type(&p.elem, errs),
        syn::Type::Reference(_) => errs.spanned(t, "a reference field has no tangent the struct could own: store the value, or mark the field `#[nondiff]`"),
        _ => errs.spanned(t, "this field type has no tangent: use floats, fixed-size arrays, tuples, `Vec`s and derived structs, or mark the field `#[nondiff]`"),
    }
}

/// Whether `t` is `f64`, `f32` or the struct's float type parameter.
fn is_float_type(t: &syn::Type) -> bool {
    matches!(t, syn::Type::Path(p) if p.qself.is_none()
        && (p.path.is_ident("f64") || p.path.is_ident("f32") || is_float_param(&p.path)))
}

/// The tangent type of a differentiable field type.
fn tangent_ty(t: &syn::Type) -> TokenStream {
    match t {
        _ if is_float_type(t) => quote!(#t),
        syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Vec") => {
            let inner = vec_elem(p).map(tangent_ty).unwrap_or_else(|| quote!(#t));
            quote!(::std::vec::Vec<#inner>)
        }
        syn::Type::Path(_) => quote!(<#t as ::linear_ad::Differentiable>::Tangent),
        syn::Type::Tuple(tu) => {
            let e = tu.elems.iter().map(tangent_ty);
            quote!((#(#e,)*))
        }
        syn::Type::Array(a) => {
            let (e, n) = (tangent_ty(&a.elem), &a.len);
            quote!([#e; #n])
        }
        syn::Type::Paren(p) => tangent_ty(&p.elem),
        other => quote!(#other),
    }
}

fn vec_elem(p: &syn::TypePath) -> Option<&syn::Type> {
    let syn::PathArguments::AngleBracketed(a) = &p.path.segments.last()?.arguments else {
        return None;
    };
    a.args.iter().find_map(|g| match g {
        syn::GenericArgument::Type(t) => Some(t),
        _ => None,
    })
}

/// What is true of every field of a struct: its tangent is `Copy`, it
/// converts to a flat value, it converts back.
fn all_of(fields: &[(&syn::Field, Field)]) -> (bool, bool, bool) {
    fields
        .iter()
        .fold((true, true, true), |acc, (_, f)| match f {
            Field::Constant => (acc.0, acc.1, false),
            Field::Array | Field::Holder(_) => (false, acc.1, acc.2),
            Field::Active {
                copy,
                flat,
                rebuild,
            } => (acc.0 && *copy, acc.1 && *flat, acc.2 && *rebuild),
        })
}

/// A differentiable field type's `(copy, flat, rebuild)` (see
/// [`Field::Active`]), knowing the layouts of the structs it names.
fn classify(t: &syn::Type, known: &Structs) -> (bool, bool, bool) {
    match t {
        _ if is_float_type(t) => (true, true, true),
        syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Vec") => {
            (false, false, false)
        }
        syn::Type::Path(p) => match known.get(&p.path) {
            Some(l) => {
                // Its fields in its own float type parameter's name.
                let _float = FloatParam::set(crate::lower::float_param(&l.item.generics));
                let fields = fields_of(&l.item, &l.nested);
                // A struct with `Vec` fields has no place in a tuple or an
                // array (a field of this type is a `Field::Holder`).
                if fields
                    .iter()
                    .any(|(_, f)| matches!(f, Field::Array | Field::Holder(_)))
                {
                    return (false, false, false);
                }
                all_of(&fields)
            }
            None => (false, false, false),
        },
        syn::Type::Tuple(tu) => tu
            .elems
            .iter()
            .map(|e| classify(e, known))
            .fold((true, true, true), |a, b| {
                (a.0 && b.0, a.1 && b.1, a.2 && b.2)
            }),
        syn::Type::Array(a) => classify(&a.elem, known),
        syn::Type::Paren(p) => classify(&p.elem, known),
        _ => (false, false, false),
    }
}

/// Each field of `item` and what it is.
fn fields_of<'a>(item: &'a syn::ItemStruct, known: &Structs) -> Vec<(&'a syn::Field, Field)> {
    item.fields
        .iter()
        .map(|f| {
            let kind = if is_nondiff(f) || crate::lower::is_constant_type(&f.ty) {
                Field::Constant
            } else if is_array_field(&f.ty) {
                Field::Array
            } else if let Some(n) = arrays_in(&f.ty, known).filter(|n| *n > 0) {
                Field::Holder(n)
            } else {
                let (copy, flat, rebuild) = classify(&f.ty, known);
                Field::Active {
                    copy,
                    flat,
                    rebuild,
                }
            };
            (f, kind)
        })
        .collect()
}

/// For a field type naming a derived struct, how many `Vec` fields it
/// has, its nested structs' included.
fn arrays_in(t: &syn::Type, known: &Structs) -> Option<usize> {
    let syn::Type::Path(p) = t else {
        return None;
    };
    let l = known.get(&p.path)?;
    let _float = FloatParam::set(crate::lower::float_param(&l.item.generics));
    let n = fields_of(&l.item, &l.nested)
        .iter()
        .map(|(_, f)| match f {
            Field::Array => 1,
            Field::Holder(n) => *n,
            Field::Constant | Field::Active { .. } => 0,
        })
        .sum();
    Some(n)
}

/// Whether `t` is a `Vec` a function reads in place: of floats, or of
/// tuples or fixed-size arrays of them.
fn is_array_field(t: &syn::Type) -> bool {
    fn plain(t: &syn::Type) -> bool {
        match t {
            _ if is_float_type(t) => true,
            syn::Type::Tuple(tu) => !tu.elems.is_empty() && tu.elems.iter().all(plain),
            syn::Type::Array(a) => plain(&a.elem),
            syn::Type::Paren(p) => plain(&p.elem),
            _ => false,
        }
    }
    match t {
        syn::Type::Path(p) if p.qself.is_none() => {
            p.path.segments.last().is_some_and(|s| s.ident == "Vec")
                && vec_elem(p).is_some_and(plain)
        }
        syn::Type::Paren(p) => is_array_field(&p.elem),
        _ => false,
    }
}

/// The struct's float type: its float type parameter, or that of its
/// first float field, nested structs included; `f64` when none says.
fn float_of(item: &syn::ItemStruct, known: &Structs) -> TokenStream {
    fn find(t: &syn::Type, known: &Structs) -> Option<TokenStream> {
        match t {
            syn::Type::Path(p) if p.path.is_ident("f64") => Some(quote!(f64)),
            syn::Type::Path(p) if p.path.is_ident("f32") => Some(quote!(f32)),
            syn::Type::Path(p) => match p.path.segments.last() {
                Some(s) if s.ident == "Vec" => vec_elem(p).and_then(|e| find(e, known)),
                // A struct generic in its float type, at a concrete one.
                Some(s) if !s.arguments.is_none() => vec_elem(p).and_then(|e| find(e, known)),
                _ => {
                    let l = known.get(&p.path)?;
                    l.item.fields.iter().find_map(|f| find(&f.ty, &l.nested))
                }
            },
            syn::Type::Tuple(tu) => tu.elems.iter().find_map(|e| find(e, known)),
            syn::Type::Array(a) => find(&a.elem, known),
            syn::Type::Paren(p) => find(&p.elem, known),
            _ => None,
        }
    }
    if let Some(t) = crate::lower::float_param(&item.generics) {
        return quote!(#t);
    }
    fields_of(item, known)
        .iter()
        .filter(|(_, k)| !matches!(k, Field::Constant))
        .find_map(|(f, _)| find(&f.ty, known))
        .unwrap_or_else(|| quote!(f64))
}

/// The generics of the impls for a struct and its tangent: none, or for
/// a struct generic in its float type `T`, `impl<T> .. for Name<T> where
/// T: (the user's bounds) + linear_ad::Real` (see `linear_ad::Real`).
struct Impl {
    /// `<T>` after `impl`.
    params: TokenStream,
    /// `<T>` after the type's name.
    args: TokenStream,
    where_clause: TokenStream,
}

impl Impl {
    fn of(generics: &syn::Generics) -> Impl {
        let mut g = generics.clone();
        if let Some(t) = crate::lower::float_param(generics) {
            g.make_where_clause()
                .predicates
                .push(syn::parse_quote!(#t: ::linear_ad::Real));
        }
        let (params, args, where_clause) = g.split_for_impl();
        Impl {
            params: params.to_token_stream(),
            args: args.to_token_stream(),
            where_clause: where_clause.to_token_stream(),
        }
    }

    /// `impl<T> trait_ for ty<T> where ..`, before the braces.
    fn header(&self, trait_: TokenStream, ty: &syn::Ident) -> TokenStream {
        let Impl {
            params,
            args,
            where_clause,
        } = self;
        quote!(impl #params #trait_ for #ty #args #where_clause)
    }
}

/// The derive's output once the layouts of the structs the fields name
/// are `known`.
pub fn finish(item: TokenStream, known: &Structs) -> TokenStream {
    let item: syn::ItemStruct = match syn::parse2(item) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let _float = FloatParam::set(crate::lower::float_param(&item.generics));
    let fields = fields_of(&item, known);
    let active: Vec<(&syn::Field, syn::Member)> = fields
        .iter()
        .enumerate()
        .filter(|(_, (_, k))| !matches!(k, Field::Constant))
        .map(|(i, (f, _))| (*f, member(f, i)))
        .collect();
    let arrays: Vec<Arrays> = fields
        .iter()
        .filter(|(_, k)| !matches!(k, Field::Constant))
        .map(|(_, k)| match k {
            Field::Array => Arrays::Own,
            Field::Holder(n) => Arrays::Nested(*n),
            Field::Constant | Field::Active { .. } => Arrays::None,
        })
        .collect();
    // The tangent of a tuple struct numbers its fields anew, without the
    // constant ones.
    let tangent_members: Vec<syn::Member> = active
        .iter()
        .enumerate()
        .map(|(i, (f, m))| match m {
            syn::Member::Named(_) => m.clone(),
            syn::Member::Unnamed(_) => member(f, i),
        })
        .collect();
    let (copy, flat, rebuild) = all_of(&fields);
    let name = &item.ident;
    let tan = format_ident!("{}Tangent", name);
    let float = float_of(&item, known);
    let imp = Impl::of(&item.generics);
    let tangent = tangent_struct(&item, &active, &tangent_members, (&tan, &imp), copy);
    let ops = tangent_ops((&tan, &imp), &tangent_members, &float);
    let layout = Layout {
        item: item.clone(),
        nested: known.clone(),
    };
    let own_layout = layout_macro(&item, &layout);
    // The tangent struct's own layout: differentiable code can build one
    // (`PointTangent { x: .., y: .. }`, a direction for `f_jvp`) and read
    // one by field.
    let tangent_layout = {
        let tan_item = tangent_item(&item, &active, &tan);
        let layout = Layout {
            item: tan_item.clone(),
            nested: known.clone(),
        };
        layout_macro(&tan_item, &layout)
    };
    let conversions = if flat {
        conversions(
            (name, &tan, &imp),
            &active,
            &tangent_members,
            &arrays,
            rebuild,
        )
    } else {
        quote!()
    };
    let differentiable = quote!(::linear_ad::Differentiable);
    let (of_name, of_tan) = (
        imp.header(differentiable.clone(), name),
        imp.header(differentiable, &tan),
    );
    let args = &imp.args;
    quote! {
        #tangent
        #ops
        #of_name {
            type Tangent = #tan #args;
        }
        #of_tan {
            type Tangent = Self;
        }
        #conversions
        #own_layout
        #tangent_layout
    }
}

/// The tangent struct's fields: the differentiable ones, of their tangent
/// types, with their docs if `docs`.
fn tangent_fields(active: &[(&syn::Field, syn::Member)], docs: bool) -> Vec<TokenStream> {
    active
        .iter()
        .map(|(f, _)| {
            let (fvis, ty) = (&f.vis, tangent_ty(&f.ty));
            let docs = f.attrs.iter().filter(|a| docs && a.path().is_ident("doc"));
            match &f.ident {
                Some(id) => quote!(#(#docs)* #fvis #id: #ty),
                None => quote!(#(#docs)* #fvis #ty),
            }
        })
        .collect()
}

/// `<Name>Tangent` as its layout records it: the differentiable fields,
/// of their tangent types, under the struct's generics.
fn tangent_item(
    item: &syn::ItemStruct,
    active: &[(&syn::Field, syn::Member)],
    tan: &syn::Ident,
) -> syn::ItemStruct {
    let vis = &item.vis;
    let fields = tangent_fields(active, false);
    let (generics, where_clause) = (&item.generics, &item.generics.where_clause);
    match item.fields {
        syn::Fields::Unnamed(_) => {
            syn::parse_quote!(#vis struct #tan #generics (#(#fields,)*) #where_clause;)
        }
        _ => syn::parse_quote!(#vis struct #tan #generics #where_clause { #(#fields,)* }),
    }
}

fn member(f: &syn::Field, i: usize) -> syn::Member {
    match &f.ident {
        Some(id) => syn::Member::Named(id.clone()),
        None => syn::Member::Unnamed(syn::Index {
            index: i as u32,
            span: f.ty.span(),
        }),
    }
}

/// `<Name>Tangent`, with the struct's visibility and its fields'.
fn tangent_struct(
    item: &syn::ItemStruct,
    active: &[(&syn::Field, syn::Member)],
    members: &[syn::Member],
    (tan, imp): (&syn::Ident, &Impl),
    copy: bool,
) -> TokenStream {
    let vis = &item.vis;
    // Its fields name the tangents of generic structs, so it takes the
    // impls' bound on the float type.
    let (generics, where_clause) = (&imp.params, &imp.where_clause);
    let doc = format!("The tangent (and cotangent) of a [`{}`]: its differentiable fields, generated by `#[derive(Differentiable)]`.", item.ident);
    let copy = copy.then(|| quote!(Copy,));
    let fields = tangent_fields(active, true);
    let zeros = members
        .iter()
        .map(|m| quote!(#m: ::linear_ad::__private::Zero::__zero()));
    let body = if matches!(item.fields, syn::Fields::Unnamed(_)) {
        quote!(#generics (#(#fields,)*) #where_clause;)
    } else {
        quote!(#generics #where_clause { #(#fields,)* })
    };
    let default = imp.header(quote!(::core::default::Default), tan);
    let zero = imp.header(quote!(::linear_ad::__private::Zero), tan);
    quote! {
        #[doc = #doc]
        #[derive(Clone, #copy Debug, PartialEq)]
        #vis struct #tan #body
        #default {
            /// The zero tangent.
            fn default() -> Self {
                Self { #(#zeros,)* }
            }
        }
        #zero {
            fn __zero() -> Self {
                ::core::default::Default::default()
            }
        }
    }
}

/// `Add`, `Sub`, `Neg`, `Mul<F>` and `Linear<F>` on the tangent, field by
/// field.
fn tangent_ops(
    (tan, imp): (&syn::Ident, &Impl),
    m: &[syn::Member],
    float: &TokenStream,
) -> TokenStream {
    let lin = quote!(::linear_ad::__private::Linear::<#float>);
    let [linear, add, sub, neg, mul] = [
        quote!(::linear_ad::__private::Linear<#float>),
        quote!(::core::ops::Add),
        quote!(::core::ops::Sub),
        quote!(::core::ops::Neg),
        quote!(::core::ops::Mul<#float>),
    ]
    .map(|t| imp.header(t, tan));
    quote! {
        #linear {
            fn __add(self, other: Self) -> Self {
                Self { #(#m: #lin::__add(self.#m, other.#m),)* }
            }
            fn __sub(self, other: Self) -> Self {
                Self { #(#m: #lin::__sub(self.#m, other.#m),)* }
            }
            fn __neg(self) -> Self {
                Self { #(#m: #lin::__neg(self.#m),)* }
            }
            fn __scale(self, s: #float) -> Self {
                Self { #(#m: #lin::__scale(self.#m, s),)* }
            }
        }
        #add {
            type Output = Self;
            fn add(self, other: Self) -> Self {
                #lin::__add(self, other)
            }
        }
        #sub {
            type Output = Self;
            fn sub(self, other: Self) -> Self {
                #lin::__sub(self, other)
            }
        }
        #neg {
            type Output = Self;
            fn neg(self) -> Self {
                #lin::__neg(self)
            }
        }
        #mul {
            type Output = Self;
            fn mul(self, s: #float) -> Self {
                #lin::__scale(self, s)
            }
        }
    }
}

/// Which `Vec`s an active field holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Arrays {
    /// None: the field is part of the flat value.
    None,
    /// It is one.
    Own,
    /// It is a struct with this many: its flat value is part of the flat
    /// value, its `Vec`s are the enclosing struct's too.
    Nested(usize),
}

/// `ToFlat` for the struct and its tangent; `FromFlat` for the tangent,
/// and for the struct when it has no constant field (`rebuild`). With
/// `Vec` fields (`arrays`, per active field), see [`array_conversions`].
fn conversions(
    (name, tan, imp): (&syn::Ident, &syn::Ident, &Impl),
    active: &[(&syn::Field, syn::Member)],
    tangent_members: &[syn::Member],
    arrays: &[Arrays],
    rebuild: bool,
) -> TokenStream {
    // The fields of the flat value.
    let in_flat = |k: &usize| arrays[*k] != Arrays::Own;
    let flat_fields: Vec<usize> = (0..active.len()).filter(in_flat).collect();
    let m: Vec<&syn::Member> = flat_fields.iter().map(|k| &active[*k].1).collect();
    let tm: Vec<&syn::Member> = flat_fields.iter().map(|k| &tangent_members[*k]).collect();
    let tys: Vec<&syn::Type> = flat_fields.iter().map(|k| &active[*k].0.ty).collect();
    let ttys: Vec<TokenStream> = tys.iter().map(|t| tangent_ty(t)).collect();
    let flat = quote!(::linear_ad::__private::ToFlat);
    // A struct of `Vec` fields only has the empty flat value.
    let unit = m.is_empty().then(|| quote!(#[allow(clippy::unused_unit)]));
    let to_flat = |ty: &syn::Ident, tys: &[TokenStream], m: &[&syn::Member]| {
        let header = imp.header(flat.clone(), ty);
        quote! {
            #header {
                type Flat = (#(<#tys as #flat>::Flat,)*);
                #[inline]
                #unit
                fn flat(&self) -> Self::Flat {
                    (#(#flat::flat(&self.#m),)*)
                }
            }
        }
    };
    let primal_tys: Vec<TokenStream> = tys.iter().map(|t| quote!(#t)).collect();
    let primal = to_flat(name, &primal_tys, &m);
    let tangent = to_flat(tan, &ttys, &tm);
    if arrays.iter().all(|a| *a == Arrays::None) {
        let from = quote!(::linear_ad::__private::FromFlat);
        let idx = (0..m.len()).map(syn::Index::from).collect::<Vec<_>>();
        let from_flat = |ty: &syn::Ident, m: &[&syn::Member]| {
            let header = imp.header(from.clone(), ty);
            quote! {
                #header {
                    #[inline]
                    fn from_flat(flat: Self::Flat) -> Self {
                        Self { #(#m: #from::from_flat(flat.#idx),)* }
                    }
                }
            }
        };
        let tangent_from = from_flat(tan, &tm);
        let primal_from = rebuild.then(|| from_flat(name, &m));
        return quote!(#primal #tangent #tangent_from #primal_from);
    }
    let parts = array_conversions((name, tan, imp), active, tangent_members, arrays);
    quote!(#primal #tangent #parts)
}

/// For a struct with `Vec` fields (its own, `Arrays::Own`, or a nested
/// struct's, `Arrays::Nested`): `ArrayField<K>` for the struct and its
/// tangent, the `K`-th `Vec` depth first in declaration order (a nested
/// struct's read through its own `ArrayField`), and `FromParts` for the
/// tangent, which hands each nested struct its share of the `Vec`s.
fn array_conversions(
    (name, tan, imp): (&syn::Ident, &syn::Ident, &Impl),
    active: &[(&syn::Field, syn::Member)],
    tangent_members: &[syn::Member],
    arrays: &[Arrays],
) -> TokenStream {
    let private = quote!(::linear_ad::__private);
    let (mut impls, mut elems, mut inits) = (Vec::new(), Vec::new(), Vec::new());
    let (mut k, mut flat_index) = (0usize, 0usize);
    for (((f, m), tm), a) in active.iter().zip(tangent_members).zip(arrays) {
        let (ty, tty) = (&f.ty, tangent_ty(&f.ty));
        match a {
            Arrays::None => {
                let i = syn::Index::from(flat_index);
                inits.push(quote!(#tm: #private::FromFlat::from_flat(flat.#i)));
                flat_index += 1;
            }
            Arrays::Own => {
                let (e, i) = (vec_elem_of(ty), syn::Index::from(k));
                inits.push(quote!(#tm: arrays.#i));
                impls.push(array_field(imp, (name, k, &e), quote!(&self.#m)));
                impls.push(array_field(imp, (tan, k, &e), quote!(&self.#tm)));
                elems.push(e);
                k += 1;
            }
            Arrays::Nested(n) => {
                let (i, mine) = (
                    syn::Index::from(flat_index),
                    (k..k + n).map(syn::Index::from),
                );
                inits.push(
                    quote!(#tm: #private::FromParts::from_parts(flat.#i, (#(arrays.#mine,)*))),
                );
                flat_index += 1;
                for j in 0..*n {
                    let (e, te) = (
                        quote!(<#ty as #private::ArrayField<#j>>::Elem),
                        quote!(<#tty as #private::ArrayField<#j>>::Elem),
                    );
                    let read =
                        |own: &syn::Member| quote!(#private::ArrayField::<#j>::array(&self.#own));
                    impls.push(array_field(imp, (name, k, &e), read(m)));
                    impls.push(array_field(imp, (tan, k, &te), read(tm)));
                    elems.push(te);
                    k += 1;
                }
            }
        }
    }
    let header = imp.header(quote!(#private::FromParts), tan);
    let flat_param = if flat_index == 0 {
        quote!(_)
    } else {
        quote!(flat)
    };
    quote! {
        #(#impls)*
        #header {
            type Arrays = (#(#private::Vec<#elems>,)*);
            #[inline]
            fn from_parts(#flat_param: Self::Flat, arrays: Self::Arrays) -> Self {
                Self { #(#inits,)* }
            }
        }
    }
}

/// `ArrayField<K>` for `ty`, whose `K`-th `Vec` of `elem`s `read` borrows.
fn array_field(
    imp: &Impl,
    (ty, k, elem): (&syn::Ident, usize, &TokenStream),
    read: TokenStream,
) -> TokenStream {
    let header = imp.header(quote!(::linear_ad::__private::ArrayField<#k>), ty);
    quote! {
        #header {
            type Elem = #elem;
            #[inline]
            fn array(&self) -> &[#elem] {
                #read
            }
        }
    }
}

/// The element type of a `Vec<E>` field.
fn vec_elem_of(t: &syn::Type) -> TokenStream {
    match t {
        syn::Type::Path(p) => vec_elem(p).map(|e| quote!(#e)).unwrap_or_default(),
        syn::Type::Paren(p) => vec_elem_of(&p.elem),
        _ => TokenStream::new(),
    }
}

/// The layout macro `Name!`, re-exported beside the struct so it resolves
/// wherever the struct's name does ([`crate::namesake`]).
fn layout_macro(item: &syn::ItemStruct, layout: &Layout) -> TokenStream {
    let site = Span::mixed_site();
    let state = syn::Ident::new("state", site);
    let dollar = quote_spanned!(site=> $);
    let rules = quote! {
        (@__linear_ad_layout #dollar(#dollar #state:tt)*) => {
            ::linear_ad::__private::__resume! { (#layout) #dollar(#dollar #state)* }
        };
    };
    crate::namesake::namesake("layout", &item.ident, &item.vis, &quote!(#item), rules)
}
