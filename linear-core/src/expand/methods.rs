//! `#[differentiable]` on an inherent `impl` block: derivatives of the
//! methods marked `#[differentiable]` inside it; on an impl of `Add`,
//! `Sub`, `Mul`, `Div` or `Neg`, of its method, as the inherent method it
//! amounts to (`operator_form`), which differentiable code calls for `a +
//! b` on structs.
//!
//! An attribute on a method alone cannot work: it sees neither the type
//! its `self` is (so not that struct's layout, see [`crate::layout`]) nor
//! a place for the linearization type, since an `impl` holds no structs.
//! On the block, it sees both. It keeps the block as written (markers
//! removed) and adds, once the layouts of the structs involved are known,
//! a second `impl` of the same type with `m_jvp`, `m_lin` and `m_vjp` for
//! each marked method `m`, and the linearization types beside it.
//!
//! A method is differentiated as the free function it desugars to: the
//! receiver `&self` becomes the first parameter, `self: &Type` (Rust reads
//! that back as the same receiver in the generated methods), and `Self` is
//! spelled as the block's type, so that lowering resolves struct literals
//! and paths as it does in free functions. The receiver is therefore the
//! first slot of every tangent and cotangent list, as any first parameter
//! is; `#[nondiff] &self` holds it constant.
//!
//! Other differentiable code calls a marked method (`p.energy(g)`,
//! `Particle::energy(&p, g)`, `self.energy(g)`) as it calls a function,
//! through the companions of the method's linearization type
//! (`expand::companions`). A caller cannot name that type beside the
//! method as it does a function's alias (an `impl` holds no aliases or
//! macros), so the block also implements
//! `linear_ad::__private::Method<{key of "energy"}>` for the type, whose
//! associated type is the linearization: the caller names it from the
//! receiver's type, which it knows. The methods of the block know each
//! other's signatures, so their results need no annotation among
//! themselves; elsewhere a result that is not a float takes a `let` type.
//! With `order = 2`, a method's `_vjp` goes through the `_vjp`s of the
//! block's methods it calls: the block takes each such method to have a
//! differentiable `_vjp`, then expands again without every claim the
//! method's own expansion disproved (`methods_with`).
//!
//! Invariants: the generated items never mention `Self` outside the
//! generated `impl`; the linearization type of method `m` of `Type` is
//! `Type_MLinearization`, distinct from a free function's (whose names hold
//! no `_`) and as visible as `Type` when its layout is known, since the
//! `Method` impl may not expose a less visible type and the linearization's
//! `LinearMap` impl names `Type`'s tangent, which is as visible as `Type`.

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

use super::items::{self, Owner};
use super::{fn_struct_paths, generated, passes, start_job, Args};
use crate::codegen::FloatParam;
use crate::layout::{ByPath, Job, Kind, Structs};
use crate::lower::{lower_fn_with, Errors, Missing, Mode};
use crate::signature::{Kind as SigKind, Order, Sig, Sigs};

/// Expands `#[differentiable(attr)] impl Type { .. }`: the block as
/// written, then the derivatives of its marked methods (at once, or once
/// the layouts they need have arrived).
pub(super) fn differentiable_impl(attr: TokenStream, block: syn::ItemImpl) -> TokenStream {
    let mut errs = Errors::default();
    if !attr.is_empty() {
        errs.spanned(&attr, "`#[differentiable]` on an `impl` block takes no arguments: put them on the methods (`#[differentiable(checkpoint = \"state\")] fn m(..)`)");
    }
    let clean = clean_block(&block);
    // An operator impl is differentiated as the inherent method it
    // amounts to (`impl Mul<f64> for V` as `V::mul_f64`).
    let block = match &block.trait_ {
        Some(_) => match operator_form(&block, &mut errs) {
            Some(b) => b,
            None => {
                let e = errs.into_compile_errors();
                return quote!(#clean #e);
            }
        },
        None => block,
    };
    let Some(self_ty) = owner_type(&block, &mut errs) else {
        let e = errs.into_compile_errors();
        return quote!(#clean #e);
    };
    let mut pending = Vec::new();
    let mut marked = 0;
    for m in methods(&block) {
        if marker(m).is_none() {
            continue;
        }
        marked += 1;
        if let Some(f) = as_fn(&block, &self_ty, m, &mut errs) {
            pending.extend(fn_struct_paths(&f));
        }
    }
    if marked == 0 {
        errs.spanned(&block.self_ty, "no method of this `impl` is marked `#[differentiable]`: mark the ones to differentiate");
    }
    if !errs.is_empty() {
        let e = errs.into_compile_errors();
        return quote!(#clean #e);
    }
    let start = start_job(
        Kind::Methods,
        TokenStream::new(),
        block.into_token_stream(),
        pending,
    );
    quote!(#clean #start)
}

/// The derivatives of the marked methods of `block`, given the layouts of
/// the structs they name and the signatures of the functions they call
/// (the block itself was emitted before); or, while some signature is
/// missing, the next step of the job that fetches it.
pub fn methods_with(tokens: TokenStream, known: &Structs, sigs: &Sigs) -> TokenStream {
    let block: syn::ItemImpl = match syn::parse2(tokens.clone()) {
        Ok(b) => b,
        Err(e) => return e.to_compile_error(),
    };
    let mut errs = Errors::default();
    let Some(self_ty) = owner_type(&block, &mut errs) else {
        return errs.into_compile_errors();
    };
    let mut own = own_sigs(&block, &self_ty, known, sigs);
    // A method with `order = 2` is first taken to have a differentiable
    // `_vjp`, so that its callers in the block go through it; where its
    // expansion finds otherwise, the block is expanded again without that
    // claim (each round withdraws one at least, so this ends).
    let (fns, items, missing) = loop {
        let (fns, items, missing, found) = expand_methods(&block, &self_ty, known, &own);
        let wrong: Vec<(syn::Path, Sig)> = own
            .iter()
            .filter(|(path, s)| {
                matches!(s.order, Order::TwiceVjp { .. })
                    && found
                        .get(path)
                        .is_some_and(|o| !matches!(**o, Order::TwiceVjp { .. }))
            })
            .map(|(path, s)| {
                let mut s = (**s).clone();
                s.order = Order::Twice;
                (path.clone(), s)
            })
            .collect();
        if wrong.is_empty() {
            break (fns, items, missing);
        }
        for (path, s) in wrong {
            own.set(path, std::rc::Rc::new(s));
        }
    };
    if !missing.is_empty() {
        let (attr, known) = (TokenStream::new(), (known, sigs));
        let checks = super::derive_checks(&missing.layouts);
        let job = Job::awaiting(Kind::Methods, attr, tokens, known, missing);
        let next = job.next();
        return quote!(#checks #next);
    }
    let (impl_token, brace) = (block.impl_token, block.brace_token);
    let (generics, where_clause) = (&block.generics, &block.generics.where_clause);
    let mut out = quote!(#impl_token #generics #self_ty #where_clause);
    brace.surround(&mut out, |o| o.extend(fns));
    quote!(#out #items)
}

/// The generated functions and items of the marked methods of `block`,
/// given the signatures `own` of the block's methods and the functions
/// they call; the layouts still missing; and the order each method's
/// expansion found it has, by the path its callers call it by.
fn expand_methods(
    block: &syn::ItemImpl,
    self_ty: &syn::Type,
    known: &Structs,
    own: &Sigs,
) -> (TokenStream, TokenStream, Missing, ByPath<Order>) {
    let (mut fns, mut items) = (TokenStream::new(), TokenStream::new());
    let mut missing = Missing::default();
    let mut found = ByPath::<Order>::default();
    let vis = struct_vis(self_ty, known);
    for m in methods(block) {
        let Some(attr) = marker(m) else { continue };
        let mut errs = Errors::default();
        let Some(f) = as_fn(block, self_ty, m, &mut errs) else {
            items.extend(errs.into_compile_errors());
            continue;
        };
        let args = super::parse_args(attr, &mut errs);
        let owner = Owner::Method {
            ty: self_ty,
            vis: vis.unwrap_or(&m.vis),
            generic: !block.generics.params.is_empty(),
        };
        let out = expand_method(&args, &f, errs, (known, own, &mut missing), owner);
        match out {
            Ok(g) => {
                if let Some(path) = method_path(self_ty, &f.sig.ident) {
                    found.set(path, std::rc::Rc::new(g.order));
                }
                fns.extend(g.fns);
                items.extend(g.items);
            }
            Err(e) => items.extend(e),
        }
    }
    (fns, items, missing, found)
}

/// One marked method's generated functions and items, or its errors.
fn expand_method(
    args: &Args,
    f: &syn::ItemFn,
    mut errs: Errors,
    (known, sigs, missing): (&Structs, &Sigs, &mut Missing),
    owner: Owner,
) -> Result<items::Generated, TokenStream> {
    let passes = passes(args, &mut errs);
    let _float = FloatParam::set(crate::lower::float_param(&f.sig.generics));
    let lowered = lower_fn_with(f, &mut errs, Mode::Differentiable, known, sigs, missing);
    generated(f, lowered, errs, |l| {
        items::generate(f, l, args.dump, passes, owner)
    })
}

/// `sigs` and the signatures of the block's own methods, by the paths its
/// methods call them by (`Type::m`, which `self.m(..)` and `Self::m(..)`
/// become): calls within the block need no annotation, and a call of an
/// unmarked one is reported as such.
fn own_sigs(block: &syn::ItemImpl, self_ty: &syn::Type, known: &Structs, sigs: &Sigs) -> Sigs {
    let mut own = sigs.clone();
    let syn::Type::Path(owner) = self_ty else {
        return own;
    };
    for m in methods(block) {
        let Some(f) = as_fn(block, self_ty, m, &mut Errors::default()) else {
            continue;
        };
        let kind = match marker(m) {
            Some(_) if takes_arrays(&f.sig, known) => SigKind::Closed,
            Some(_) => SigKind::Differentiable,
            None => SigKind::Unmarked,
        };
        // `order = 2`: its `_jvp` is differentiable (its errors are the
        // method's own expansion's to report).
        let twice = marker(m).is_some_and(|attr| {
            let mut quiet = Errors::default();
            super::second_order(&super::parse_args(attr, &mut quiet), &mut quiet).is_some()
        });
        let mut path = owner.path.clone();
        path.segments.push(f.sig.ident.clone().into());
        let sig = Sig {
            kind,
            // `order = 2`: taken to have a differentiable `_vjp` until its
            // expansion finds otherwise (`methods_with`).
            order: match twice {
                true => Order::TwiceVjp { lanes: false },
                false => Order::Once,
            },
            // Methods have no lanes yet.
            lanes: false,
            sig: f.sig,
            structs: known.clone(),
        };
        own.insert(path, std::rc::Rc::new(sig));
    }
    own
}

/// The path by which the block's methods call the method `name` of
/// `self_ty` (`Type::name`), as [`own_sigs`] records it.
fn method_path(self_ty: &syn::Type, name: &syn::Ident) -> Option<syn::Path> {
    let syn::Type::Path(owner) = self_ty else {
        return None;
    };
    let mut path = owner.path.clone();
    path.segments.push(name.clone().into());
    Some(path)
}

/// Whether a differentiable parameter of `sig` is an array that calls
/// cannot pass yet (its generated code has no companions to call): an
/// array read by index other than a slice of floats, or a struct with
/// `Vec` fields; or whether it takes slices both differentiable and
/// `#[nondiff]` (callers outside the block, which do not know its
/// signature, could not tell the constant ones: see `items::generate`).
fn takes_arrays(sig: &syn::Signature, known: &Structs) -> bool {
    let float = crate::lower::float_param(&sig.generics);
    let (mut blocking, mut slices, mut constant_slices) = (false, false, false);
    for input in &sig.inputs {
        let syn::FnArg::Typed(pt) = input else {
            continue;
        };
        let slice = crate::lower::array_param(&pt.ty, float.as_ref());
        if pt.attrs.iter().any(|a| a.path().is_ident("nondiff")) {
            constant_slices |= slice;
            continue;
        }
        slices |= slice;
        blocking |= !slice
            && !crate::lower::is_constant_type(&pt.ty)
            && crate::lower::Shape::from_param_type_in(&pt.ty, known)
                .is_some_and(|s| s.has_slice());
    }
    blocking || (slices && constant_slices)
}

/// The visibility of the block's type, if its layout is known: its
/// methods' linearization types take it, since the `Method` impl that
/// names one may not be more visible than it, and the type's tangent
/// (which the linearization's `LinearMap` impl names) has it.
fn struct_vis<'a>(self_ty: &syn::Type, known: &'a Structs) -> Option<&'a syn::Visibility> {
    let syn::Type::Path(p) = self_ty else {
        return None;
    };
    known.get(&p.path).map(|l| &l.item.vis)
}

/// The operators whose impls can be differentiable, by trait.
const OPERATORS: [&str; 5] = ["Add", "Sub", "Mul", "Div", "Neg"];

/// An operator impl (`impl Add for V`, `impl Mul<f64> for V`, `impl Neg
/// for V`) as the inherent block of the one method it amounts to, which
/// differentiable code calls for `a + b`, `v * k`, `-v` on structs: the
/// trait's method, marked, public as the impl is, with `Self::Output`
/// spelled out, and named after the operator and, for a float right-hand
/// side, its type (`mul_f64`), so that `Mul<f64>` and `Mul<V>` for one
/// type get distinct names (the caller names it the same way from the
/// operand it has).
fn operator_form(block: &syn::ItemImpl, errs: &mut Errors) -> Option<syn::ItemImpl> {
    let (path, _) = block.trait_.as_ref()?;
    let last = path.segments.last()?;
    if !OPERATORS.iter().any(|o| last.ident == o) {
        errs.spanned(path, "`#[differentiable]` applies to inherent `impl` blocks (`impl Type { .. }`) and to impls of the operators `Add`, `Sub`, `Mul`, `Div` and `Neg`, not to other trait impls: write the operation as a method or a free function");
        return None;
    }
    let output = block.items.iter().find_map(|i| match i {
        syn::ImplItem::Type(t) if t.ident == "Output" => Some(t.ty.clone()),
        _ => None,
    });
    let rhs = match &last.arguments {
        syn::PathArguments::AngleBracketed(a) => a.args.first().and_then(|g| match g {
            syn::GenericArgument::Type(syn::Type::Path(t))
                if t.path.is_ident("f64") || t.path.is_ident("f32") =>
            {
                t.path.get_ident().cloned()
            }
            _ => None,
        }),
        _ => None,
    };
    let mut out = block.clone();
    out.trait_ = None;
    out.items.retain(|i| matches!(i, syn::ImplItem::Fn(_)));
    for item in out.items.iter_mut() {
        let syn::ImplItem::Fn(m) = item else { continue };
        if marker(m).is_none() {
            m.attrs.push(syn::parse_quote!(#[differentiable]));
        }
        m.vis = syn::parse_quote!(pub);
        if let Some(t) = &rhs {
            m.sig.ident = quote::format_ident!("{}_{}", m.sig.ident, t, span = m.sig.ident.span());
        }
        if let Some(o) = &output {
            SpellOutput(o).visit_signature_mut(&mut m.sig);
        }
    }
    Some(out)
}

/// Replaces `Self::Output` by the impl's `Output` type.
struct SpellOutput<'a>(&'a syn::Type);

impl VisitMut for SpellOutput<'_> {
    fn visit_type_mut(&mut self, t: &mut syn::Type) {
        if let syn::Type::Path(p) = t {
            let names: Vec<String> = p
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            if p.qself.is_none() && names == ["Self", "Output"] {
                *t = self.0.clone();
                return;
            }
        }
        syn::visit_mut::visit_type_mut(self, t);
    }
}

/// The type an `impl` block is for, if `#[differentiable]` supports the
/// block: inherent, generic in its float type at most.
fn owner_type(block: &syn::ItemImpl, errs: &mut Errors) -> Option<syn::Type> {
    if let Some((path, _)) = &block.trait_ {
        // Operator impls arrive here as their inherent form.
        errs.spanned(
            path,
            "`#[differentiable]` applies to inherent `impl` blocks and operator impls",
        );
        return None;
    }
    if !block.generics.params.is_empty() && crate::lower::float_param(&block.generics).is_none() {
        errs.spanned(&block.generics, "`#[differentiable]` supports `impl` blocks generic in their float type only: one type parameter bounded by `Float` (`impl<T: num_traits::Float> Point<T> { .. }`); lifetimes, const parameters and other type parameters are not supported");
        return None;
    }
    match &*block.self_ty {
        syn::Type::Path(p) if p.qself.is_none() => Some((*block.self_ty).clone()),
        other => {
            errs.spanned(other, "`#[differentiable]` applies to `impl` blocks of a named struct (`impl Particle { .. }`)");
            None
        }
    }
}

fn methods(block: &syn::ItemImpl) -> impl Iterator<Item = &syn::ImplItemFn> {
    block.items.iter().filter_map(|i| match i {
        syn::ImplItem::Fn(m) => Some(m),
        _ => None,
    })
}

/// Whether `a` is the `#[differentiable]` marker (under any path, such as
/// `#[linear_ad::differentiable]`).
fn is_marker(a: &syn::Attribute) -> bool {
    a.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "differentiable")
}

/// The arguments of `m`'s `#[differentiable(..)]` marker, if it has one.
fn marker(m: &syn::ImplItemFn) -> Option<TokenStream> {
    let a = m.attrs.iter().find(|a| is_marker(a))?;
    Some(match &a.meta {
        syn::Meta::List(l) => l.tokens.clone(),
        syn::Meta::Path(_) | syn::Meta::NameValue(_) => TokenStream::new(),
    })
}

/// The block as the user wrote it, minus the markers rustc does not know
/// (on methods, receivers and parameters), so that it compiles on its own
/// whatever becomes of the derivatives.
fn clean_block(block: &syn::ItemImpl) -> syn::ItemImpl {
    let mut block = block.clone();
    for item in block.items.iter_mut() {
        let syn::ImplItem::Fn(m) = item else { continue };
        m.attrs.retain(|a| !is_marker(a));
        for input in m.sig.inputs.iter_mut() {
            let attrs = match input {
                syn::FnArg::Receiver(r) => &mut r.attrs,
                syn::FnArg::Typed(pt) => &mut pt.attrs,
            };
            attrs.retain(|a| !a.path().is_ident("nondiff") && !a.path().is_ident("linear"));
        }
    }
    block
}

/// Method `m` of `self_ty` as the free function it desugars to: the
/// receiver a first parameter named `self`, `Self` spelled out. `None`,
/// with an error, for a receiver that cannot be differentiated.
fn as_fn(
    block: &syn::ItemImpl,
    self_ty: &syn::Type,
    m: &syn::ImplItemFn,
    errs: &mut Errors,
) -> Option<syn::ItemFn> {
    let mut sig = m.sig.clone();
    let mut ok = true;
    // A method of a block generic in its float type is a function
    // generic in it (whose generated methods do not declare it again:
    // `Owner::Method::generic`).
    if !block.generics.params.is_empty() {
        if !sig.generics.params.is_empty() {
            errs.spanned(&sig.generics, "a method of an `impl` block generic in its float type cannot have generic parameters of its own: the block's float type is the method's");
            ok = false;
        }
        sig.generics = block.generics.clone();
    }
    for input in sig.inputs.iter_mut() {
        let syn::FnArg::Receiver(r) = input else {
            continue;
        };
        let span = r.self_token.span;
        let owner = syn::Ident::new("Self", span);
        let ty: syn::Type = match &r.kind {
            syn::ReceiverKind::Value => syn::parse_quote_spanned!(span=> #owner),
            syn::ReceiverKind::Reference(_, _, Some(_)) => {
                errs.spanned(&*r, "`&mut self` methods cannot be differentiable: a differentiable function returns what it computes; take `&self` (or `self`) and return the new value");
                ok = false;
                continue;
            }
            syn::ReceiverKind::Reference(_, lifetime, None) => {
                syn::parse_quote_spanned!(span=> & #lifetime #owner)
            }
            syn::ReceiverKind::Typed(_, ty) => (**ty).clone(),
            _ => {
                errs.spanned(
                    &*r,
                    "this receiver is not supported: take `&self` or `self`",
                );
                ok = false;
                continue;
            }
        };
        let pat = syn::Pat::Ident(syn::PatIdent {
            attrs: Vec::new(),
            by_ref: None,
            mutability: r.mutability,
            ident: syn::Ident::new("self", span),
            subpat: None,
        });
        *input = syn::FnArg::Typed(syn::PatType {
            attrs: r.attrs.clone(),
            pat: Box::new(pat),
            colon_token: Default::default(),
            ty: Box::new(ty),
        });
    }
    if !ok {
        return None;
    }
    let mut f = syn::ItemFn {
        attrs: m.attrs.iter().filter(|a| !is_marker(a)).cloned().collect(),
        vis: m.vis.clone(),
        modifiers: m.modifiers.clone(),
        sig,
        block: Box::new(m.block.clone()),
    };
    SpellSelf(self_ty).visit_item_fn_mut(&mut f);
    Some(f)
}

/// Replaces `Self` by the `impl` block's type, in types and paths.
struct SpellSelf<'a>(&'a syn::Type);

impl VisitMut for SpellSelf<'_> {
    fn visit_type_mut(&mut self, t: &mut syn::Type) {
        if let syn::Type::Path(p) = t {
            if p.qself.is_none() && p.path.is_ident("Self") {
                let mut owner = self.0.clone();
                respan(&mut owner, p.path.span());
                *t = owner;
                return;
            }
        }
        syn::visit_mut::visit_type_mut(self, t);
    }

    fn visit_path_mut(&mut self, p: &mut syn::Path) {
        let starts_with_self = p
            .segments
            .first()
            .is_some_and(|s| s.ident == "Self" && p.leading_colon.is_none());
        if let (true, syn::Type::Path(owner)) = (starts_with_self, self.0) {
            let rest: Vec<syn::PathSegment> = p.segments.iter().skip(1).cloned().collect();
            let span = p.segments[0].ident.span();
            let mut path = owner.path.clone();
            for s in path.segments.iter_mut() {
                s.ident.set_span(span);
                // `Point::<T>`, which parses in expressions too.
                if let syn::PathArguments::AngleBracketed(a) = &mut s.arguments {
                    a.colon2_token = Some(Default::default());
                }
            }
            path.segments.extend(rest);
            *p = path;
        }
        syn::visit_mut::visit_path_mut(self, p);
    }
}

/// Gives the identifiers of a type path `span`, so that errors about the
/// spelled-out `Self` point where the user wrote it.
fn respan(t: &mut syn::Type, span: Span) {
    if let syn::Type::Path(p) = t {
        for s in p.path.segments.iter_mut() {
            s.ident.set_span(span);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn as_free(src: &str) -> String {
        let block: syn::ItemImpl = syn::parse_str(src).unwrap();
        let ty = (*block.self_ty).clone();
        let m = methods(&block).next().unwrap();
        let f = as_fn(&block, &ty, m, &mut Errors::default()).unwrap();
        f.into_token_stream().to_string()
    }

    #[test]
    fn receiver_becomes_first_parameter_and_self_is_spelled_out() {
        let f = as_free(
            "impl geo::P { fn m(&self, k: f64) -> Self { Self { x: self.x * k, ..*self } } }",
        );
        assert_eq!(
            f,
            "fn m (self : & geo :: P , k : f64) -> geo :: P { geo :: P { x : self . x * k , .. * self } }"
        );
    }

    #[test]
    fn by_value_receiver_keeps_mut() {
        let f = as_free("impl P { fn m(mut self) -> f64 { self.x } }");
        assert_eq!(f, "fn m (mut self : P) -> f64 { self . x }");
    }

    #[test]
    fn mut_reference_receiver_is_refused() {
        let block: syn::ItemImpl =
            syn::parse_str("impl P { fn m(&mut self) -> f64 { self.x } }").unwrap();
        let ty = (*block.self_ty).clone();
        let mut errs = Errors::default();
        let m = methods(&block).next().unwrap();
        assert!(as_fn(&block, &ty, m, &mut errs).is_none());
        assert!(errs
            .into_compile_errors()
            .to_string()
            .contains("`&mut self` methods cannot be differentiable"));
    }
}
