//! `#[differentiable(lanes)]`: the linearization's `apply_lanes`, the
//! residual printed with every tangent float a `linear_ad::Lanes<T, K>`
//! ([`crate::codegen::LinearLanes`]), `f_jvp_lanes`, J(f) printed the
//! same way, and `f_jacobian`, which seeds lane `j` with the `j`-th unit
//! vector and reads the Jacobian off runs of up to 16 lanes. `f_hessian`
//! uses `f_vjp_lin`'s `apply_lanes` the same way
//! ([`super::second`]).
//!
//! Nothing here differentiates: `apply_lanes` is `apply`'s code, the
//! residual of U(J(f)), and `f_jvp_lanes` is `f_jvp`'s, J(f), with other
//! types. Lane `j` of their results is `apply` (`f_jvp`) of lane `j`, bit
//! for bit. A call runs through the callee's own (`__apply_lanes`,
//! `__jvp_lanes`), which its signature says it has.

use crate::expand::companions::CompanionLanes;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{hidden, readable, Calls, Owner, Sig};
use crate::expand::results::{pattern, Results};
use crate::expand::LanesAsk;
use crate::ir::{Float, Func};
use crate::lower::{Lowered, Shape};

/// The const parameter naming the lane count of `apply_lanes`.
pub(super) fn count() -> syn::Ident {
    hidden("__K")
}

/// Why `apply_lanes` cannot be generated for `f`, if it cannot: its
/// tangents must be floats, tuples and arrays of a concrete float type
/// (whose floats become lanes), and every function its residual calls
/// must have lanes of its own (its signature says so), which methods,
/// `#[linear]` functions and calls passing structs do not yet. With the
/// span of the call it is about, if it is about one.
pub(super) fn refusal(
    sig: &Sig,
    l: &Lowered,
    residual: &Func,
    calls: &Calls,
) -> Option<(String, Option<proc_macro2::Span>)> {
    if crate::codegen::FloatParam::get().is_some() {
        return Some(("`lanes` needs a concrete float type (`f64` or `f32`): `apply_lanes` of a function generic in its float type is not supported".into(), None));
    }
    if sig.active.iter().any(|(_, s)| s.has_struct()) || l.ret.has_struct() {
        return Some(("`lanes` needs tangents of floats, tuples and arrays: `apply_lanes` of a function taking or returning a struct is not supported yet".into(), None));
    }
    let mut why = None;
    crate::visit::any_subexpr(&residual.body, &mut |e| {
        let crate::ir::Expr::App { func, .. } = e else {
            return false;
        };
        let Some((site, _)) = calls.site(func) else {
            why = Some((
                format!("linear-ad internal error: `apply_lanes` of a residual calling `{func}`"),
                None,
            ));
            return true;
        };
        let name = Calls::callee_name_of(&site.path);
        let at = site.path.segments.last().map(|s| s.ident.span());
        why = match (site.lanes, site.passes_struct, site.order) {
            (true, false, _) => None,
            (_, true, _) => Some(format!("`lanes` is not supported yet for a function that passes a struct to another (`{name}`)")),
            (false, false, Some((crate::signature::Kind::Differentiable, crate::signature::Order::Derived))) => Some(format!("`lanes` is not supported yet for a function that calls a derivative (`{name}`): call it from a function without `lanes`")),
            (false, false, Some((crate::signature::Kind::Differentiable, _))) => Some(format!("`lanes` needs every function this one calls to have lanes: add `lanes` to `{name}`'s `#[differentiable]`")),
            (false, false, _) => Some(format!("`lanes` is not supported yet for a function that calls a method or a `#[linear]` function (`{name}`): only functions with `#[differentiable(lanes)]` have lanes")),
        }
        .map(|msg| (msg, at));
        why.is_some()
    });
    why
}

/// The body of `apply_lanes` (the residual printed in lanes, from `args`
/// as `apply` has them), as `ask` asks: `None` where it is not asked for
/// or, asked quietly, cannot be had; the refusal, at `lanes` or at the
/// call it is about, where it cannot.
pub(super) fn residual(
    ask: LanesAsk,
    (sig, l): (&Sig, &Lowered),
    residual: &Func,
    (args, calls): (&[(TokenStream, crate::codegen::Hold)], &Calls),
) -> Option<Result<TokenStream, TokenStream>> {
    match (ask, refusal(sig, l, residual, calls)) {
        (LanesAsk::No, _) | (LanesAsk::Quiet, Some(_)) => None,
        (LanesAsk::Asked(span), Some((why, at))) => Some(Err(
            quote::quote_spanned!(at.unwrap_or(span)=> ::core::compile_error!(#why);),
        )),
        (LanesAsk::Asked(_) | LanesAsk::Quiet, None) => {
            let _lanes = crate::codegen::LinearLanes::set(Some(count()));
            Some(Ok(crate::codegen::body_holding(residual, args, calls)))
        }
    }
}

/// Whether `f`'s lanes are for callers (`f_jvp_lanes`, the companions a
/// caller's lanes call): a free function's, where the user asked for them
/// and the linearization has `apply_lanes` (`has`); not the `apply_lanes`
/// `f_hessian` asks of a derived `f_vjp`, which callers reach only
/// through `__apply_lanes` ([`companion_lanes`]).
pub(super) fn public(ask: LanesAsk, owner: Owner, has: bool) -> bool {
    has && matches!(ask, LanesAsk::Asked(_)) && matches!(owner, Owner::Free)
}

/// Which lanes companions `f`'s linearization gets: both where its lanes
/// are public; `__apply_lanes` alone for a derived `f_vjp` whose
/// linearization has `apply_lanes` (`has`) for `f_hessian` (`Quiet`),
/// which callers' `f_hessian`s call through their own `f_vjp`s
/// (`passes::through`; their signatures say so, `Order::TwiceVjp`).
pub(super) fn companion_lanes(ask: LanesAsk, owner: Owner, has: bool) -> CompanionLanes {
    match (public(ask, owner, has), ask) {
        (true, _) => CompanionLanes::Both,
        (false, LanesAsk::Quiet) if has && matches!(owner, Owner::Free) => CompanionLanes::Apply,
        (false, _) => CompanionLanes::No,
    }
}

/// A free function's items for the lanes the user asked for:
/// `f_jvp_lanes`, and `f_jacobian` where the sizes are fixed.
pub(super) fn free_items(
    item: &syn::ItemFn,
    l: &Lowered,
    sig: &Sig,
    fj: &Func,
    (calls, names): (&Calls, &mut crate::codegen::Names),
) -> TokenStream {
    let jvp = jvp_item(item, l, sig, fj, (calls, names));
    let jacobian = jacobian(item, l, sig);
    quote!(#jvp #jacobian)
}

/// `apply_lanes`, the residual of `apply` run on `K` tangents at once
/// (`body`, printed in lanes): its tangent and result types are
/// `apply`'s with each float `T` replaced by `linear_ad::Lanes<T, K>`.
/// A linearization detached from its slices (`items::Detached`) has the
/// body in `__tangent_lanes`, which reads them from parameters (`ins`, and
/// `own`, the linearization's fields `apply_lanes` passes), as
/// `__tangent` does: a caller's `__apply_lanes` passes its own.
pub(super) fn method(
    sig: &Sig,
    (map_name, generics): (&syn::Ident, &TokenStream),
    tangent: &syn::Ident,
    body: TokenStream,
    (ins, own): (&[TokenStream], &[TokenStream]),
) -> TokenStream {
    let k = count();
    let (in_ty, ret_tan) = (
        crate::codegen::in_lanes(&sig.in_ty, &k),
        crate::codegen::in_lanes(&sig.ret_tan, &k),
    );
    let (allow, where_clause) = (&sig.allow, &sig.float.where_clause);
    let shown = readable("tangent");
    let doc = "Applies the derivative to `K` tangents at once, one per lane of each float (`linear_ad::Lanes`): lane `j` of the result is what `apply` gives for the tangent made of lane `j` of each input, computed by the same operations in one run over the tape. Generated by linear-ad for `#[differentiable(lanes)]`.";
    let apply = if ins.is_empty() {
        quote! {
            pub fn apply_lanes<const #k: usize>(&self, #shown: #in_ty) -> #ret_tan {
                let #tangent = #shown;
                #body
            }
        }
    } else {
        quote! {
            pub fn apply_lanes<const #k: usize>(&self, #shown: #in_ty) -> #ret_tan {
                self.__tangent_lanes::<#k>(#(#own,)* #shown)
            }
            #[doc(hidden)]
            #[inline]
            fn __tangent_lanes<const #k: usize>(&self, #(#ins,)* #tangent: #in_ty) -> #ret_tan {
                #body
            }
        }
    };
    quote! {
        #allow
        impl #generics #map_name #generics #where_clause {
            #[doc = #doc]
            #[inline]
            #apply
        }
    }
}

/// `f_jacobian(params..) -> (R, [[T; n]; m])`, where the differentiable
/// parameters have `n` real coordinates and the result `m`, all of one
/// float type `T` (a float, tuples and fixed-size arrays of them, by
/// value or by reference): one forward pass (`f_lin`) and runs of
/// `apply_lanes` over up to 16 lanes, lane `k` of the run from `first`
/// seeded with the unit vector `first + k`. `None` for other signatures.
fn jacobian(item: &syn::ItemFn, l: &Lowered, sig: &Sig) -> Option<TokenStream> {
    let mut floats = Vec::new();
    for s in sig.active.iter().map(|(_, s)| *s).chain([&l.ret]) {
        floats_of(s, &mut floats)?;
    }
    let t = match floats.as_slice() {
        [first, rest @ ..] if rest.iter().all(|f| f == first) && *first != Float::Generic => {
            crate::codegen::float_ty(*first)
        }
        _ => return None,
    };
    let n: usize = sig
        .active
        .iter()
        .map(|(_, s)| super::second::coords(s))
        .sum::<Option<usize>>()?;
    let m = super::second::coords(&l.ret)?;
    let fname = &item.sig.ident;
    let link = sig.owner.doc_path(fname, true);
    let (name, lin_name) = (
        format_ident!("{}_jacobian", fname),
        format_ident!("{}_lin", fname),
    );
    let doc = format!("The value of [`{link}`] and its Jacobian: row `i` the derivatives of the result's `i`-th real coordinate, column `j` those in the differentiable parameters' `j`-th (coordinates in order: a tuple's components, an array's elements). Forward mode in lanes: one forward pass (`{lin_name}`) and runs of the linearization over up to 16 lanes (`apply_lanes`), {n} times the arithmetic of one `apply` in all; with many more inputs than outputs, `transpose` per output costs less. Generated by linear-ad (`lanes`).");
    let (y, map, v, dy, i, j, jac) = (
        hidden("__y"),
        hidden("__map"),
        hidden("__v"),
        hidden("__dy"),
        hidden("__i"),
        hidden("__j"),
        hidden("__jac"),
    );
    let (nl, ml) = (
        proc_macro2::Literal::usize_unsuffixed(n),
        proc_macro2::Literal::usize_unsuffixed(m),
    );
    let width = run_width(n);
    let (in_l, ret_l) = (
        crate::codegen::in_lanes(&sig.in_ty, &width),
        crate::codegen::in_lanes(&sig.ret_tan, &width),
    );
    let lane = quote!(::linear_ad::Lanes<#t, #width>);
    let args = sig.passed.iter();
    let ret_ty = &sig.ret_ty;
    let first = hidden("__first");
    let body = quote! {
        let (#y, #map) = #lin_name(#(#args,)*);
        let mut #jac = [[<#t as ::linear_ad::__private::Vector>::zero(); #nl]; #ml];
        for #first in (0..#nl).step_by(#width) {
            let #v: #in_l = ::linear_ad::__private::lane_seeds::<#t, _, #width>(#first);
            let #dy: #ret_l = #map.apply_lanes(#v);
            for #i in 0..#ml {
                let #v = <#ret_l as ::linear_ad::__private::Coords<#lane>>::coord(&#dy, #i);
                for #j in 0..::core::cmp::min(#width, #nl - #first) {
                    #jac[#i][#first + #j] = #v[#j];
                }
            }
        }
        (#y, #jac)
    };
    Some(sig.emit(
        (quote!(#[doc = #doc] #[inline]), sig.vis),
        &name,
        (None, &sig.passing, &[]),
        quote!((#ret_ty, [[#t; #nl]; #ml])),
        body,
    ))
}

/// Lanes per run of `apply_lanes` for `n` coordinates: all of them, up
/// to `linear_ad::__private::LANES` (16) a run.
pub(super) fn run_width(n: usize) -> proc_macro2::Literal {
    proc_macro2::Literal::usize_unsuffixed(n.clamp(1, 16))
}

/// The float types of a value of shape `s`, if it has the fixed size a
/// Jacobian needs (floats, tuples, arrays of known length).
fn floats_of(s: &Shape, out: &mut Vec<Float>) -> Option<()> {
    match s {
        Shape::Float(f) => out.push(*f),
        Shape::Tuple(ss) => {
            for s in ss {
                floats_of(s, out)?;
            }
        }
        Shape::Array(s, _) => floats_of(s, out)?,
        Shape::Slice(
            s,
            crate::lower::SliceKind::ArrayRef(_) | crate::lower::SliceKind::Array(_),
        ) => floats_of(s, out)?,
        Shape::Slice(..) | Shape::Struct(_) => return None,
    }
    Some(())
}

/// `f_jvp_lanes(params.., tangents..) -> (R, R̃)`: J(f) printed in lanes,
/// `K` directional derivatives in one run of the primal, with no tape
/// (the tangent types `f_jvp`'s, each float a `Lanes<T, K>`).
fn jvp_item(
    item: &syn::ItemFn,
    l: &Lowered,
    sig: &Sig,
    fj: &Func,
    (calls, names): (&Calls, &mut crate::codegen::Names),
) -> TokenStream {
    let k = count();
    let _lanes = crate::codegen::LinearLanes::set(Some(k.clone()));
    let (ys, dys) = (Results::new("__y", &l.ret), Results::new("__dy", &l.ret));
    let y_out = ys.value(names, crate::expand::primal_from_ir);
    let dy_out = dys.value(names, crate::expand::from_ir);
    let bound = pattern(&ys.names.iter().chain(&dys.names).collect::<Vec<_>>());
    let jvp_body = crate::codegen::body(fj, &sig.jvp_args(), calls);
    let name = &item.sig.ident;
    let link = sig.owner.doc_path(name, true);
    let doc = format!("Forward mode of [`{link}`] in lanes: its value and `K` directional derivatives at once, lane `j` of each result float the derivative along lane `j` of the tangents (`linear_ad::Lanes`), from one run with no tape. Generated by linear-ad (`lanes`).");
    let jvp_name = format_ident!("{}_jvp_lanes", name);
    let checks = sig.tangent_length_checks(&jvp_name.to_string());
    let tangents = sig
        .tangent_params
        .iter()
        .map(|t| crate::codegen::in_lanes(t, &k));
    let (ret_ty, ret_lanes) = (&sig.ret_ty, crate::codegen::in_lanes(&sig.ret_tan, &k));
    let (markers, prelude, params) = (&sig.used_markers, sig.prelude, &sig.params);
    let (vis, allow) = (sig.vis, &sig.allow);
    quote! {
        #[doc = #doc]
        #[inline]
        #allow
        #vis fn #jvp_name<const #k: usize>(#(#params,)* #(#tangents,)*) -> (#ret_ty, #ret_lanes) {
            #(#markers)*
            #(#prelude)*
            #(#checks)*
            let #bound = #jvp_body;
            (#y_out, #dy_out)
        }
    }
}
