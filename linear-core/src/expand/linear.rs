//! `#[linear]`: linearity proved by lowering in linear mode, the transpose
//! by T, and the derivatives of a linear function by L then J.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

use rustc_hash::FxHashMap as HashMap;

use super::calls::Calls;
use super::items::{generate, Owner};
use super::{
    find, finish, from_ir, parse_input, pascal, pattern_idents, recheck, to_ir, wants_dump,
    without_markers, Passes,
};
use crate::check::check_linear_b;
use crate::codegen::{body, CallGen, Names};
use crate::ir::{Program, Var};
use crate::layout::{Job, Kind, Structs};
use crate::lower::{
    lower_fn, lower_fn_with, CallArg, CallSite, Errors, Lowered, Missing, Mode, Shape,
};
use crate::passes::{simplify::simplify, transpose::transpose, unzip};
use crate::signature::Sigs;

/// Expands `#[linear] item`: checks that `g` is linear in its `#[linear]`
/// parameters (every rejection at its span, naming the linear values
/// involved), and generates, with `g`'s visibility:
///
/// * `g_transpose(coefficients.., out_cotangent: R) -> In`: T of `g`, whose
///   coefficient computations run as the Rust prelude;
/// * `g_jvp`, `g_lin`, `g_vjp` as for `#[differentiable]`: a linear
///   function is differentiable too (linearity erasure, then J). Its float
///   coefficients are differentiable when its body lowers without calls,
///   and constants otherwise (calls may touch coefficients with arbitrary
///   functions);
/// * under `order = 2`, the second derivatives `#[differentiable(order =
///   2)]` generates, so that callers with `order = 2` can call it.
pub fn linear(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand_linear(attr, item, &Sigs::default(), true)
}

/// `#[linear]` again, once the signatures of the functions it calls are
/// known (the function itself was emitted before).
pub fn linear_with(attr: TokenStream, item: TokenStream, sigs: &Sigs) -> TokenStream {
    expand_linear(attr, item, sigs, false)
}

/// Lowers and generates, or, while a callee's signature is missing, the
/// next step of the job that fetches it (see [`crate::signature`]);
/// `first` says whether the function itself is still to be emitted.
fn expand_linear(attr: TokenStream, item: TokenStream, sigs: &Sigs, first: bool) -> TokenStream {
    let (args, item_fn, mut errs) = match parse_input(attr.clone(), item, "linear") {
        Ok(parsed) => parsed,
        Err(out) => return out,
    };
    if let Some(path) = &args.jvp {
        errs.spanned(path, "`jvp = ..` belongs on `#[differentiable]`: a `#[linear]` function's derivative is itself");
    }
    let order = super::second_order(&args, &mut errs);
    let clean = without_markers(&item_fn);
    let clean = first.then_some(&clean);
    let mut missing = Missing::default();
    let structs = Structs::default();
    let lowered = lower_fn_with(
        &item_fn,
        &mut errs,
        Mode::Linear,
        &structs,
        sigs,
        &mut missing,
    );
    if !missing.is_empty() {
        let item = quote!(#item_fn);
        let job = Job::awaiting(Kind::Linear, attr, item, (&structs, sigs), missing);
        let next = job.next();
        return quote!(#clean #next);
    }
    finish(&item_fn, clean, lowered, errs, |l| {
        generate_linear(&item_fn, &without_markers(&item_fn), l, (args.dump, order))
    })
}

fn generate_linear(
    item: &syn::ItemFn,
    clean: &syn::ItemFn,
    l: &Lowered,
    (dump, order): (bool, Option<Span>),
) -> Result<TokenStream, String> {
    let name = item.sig.ident.to_string();
    let source = Program {
        externs: l.externs.clone(),
        funcs: vec![l.func.clone()],
    };
    recheck(|| check_linear_b(&source), "lowered linear function:")?;
    let t = simplify(&transpose(&simplify(&source)).map_err(|e| e.to_string())?);
    recheck(|| check_linear_b(&t), "after T:")?;
    if wants_dump(&name, dump) {
        eprintln!("== linear-ad: `{name}` (#[linear]) lowered ==\n{source}\n== T ==\n{t}");
    }
    let gt = find(&t, &format!("{name}.t"))?;
    let map_name = syn::Ident::new(
        &format!("{}Linearization", pascal(&name)),
        item.sig.ident.span(),
    );
    let (differentiable, order) = derivatives(item, clean, &map_name, order)?;
    let user_allows = item.attrs.iter().filter(|a| a.path().is_ident("allow"));
    let allow = quote!(#[allow(clippy::too_many_arguments)] #(#user_allows)*);
    let transpose_fn = transpose_item(item, l, gt, &allow);
    let companion = linear_companion(item, l, &map_name, &allow);
    let callee = crate::signature::callee_items(
        item,
        (crate::signature::Kind::Linear, order, false),
        &Default::default(),
        (&map_name, false),
    );
    Ok(quote! {
        #transpose_fn
        #differentiable
        #companion
        #callee
    })
}

/// `g_jvp`, `g_lin`, `g_vjp`: the float coefficients differentiable if
/// that lowers without calls, else held constant; only the type callers
/// refer to when neither lowers. Under `order = 2` (at `order`), also
/// `g_hvp`, `g_hessian` and the second-order companions, exactly as for
/// `#[differentiable(order = 2)]`: a linear function is differentiated
/// twice by the same pipeline (its derivative, linear in `(x, ẋ)` when the
/// coefficients are constant, is bilinear in them otherwise). Returns the
/// items and the order callers may differentiate `g` to.
fn derivatives(
    item: &syn::ItemFn,
    clean: &syn::ItemFn,
    map_name: &syn::Ident,
    order: Option<Span>,
) -> Result<(TokenStream, crate::signature::Order), String> {
    let mut errs = Errors::default();
    let diff = match lower_fn(clean, &mut errs) {
        Some(d) if errs.is_empty() && d.externs.is_empty() => Some((clean.clone(), d)),
        _ => {
            let held = with_constant_coefficients(item);
            let mut errs = Errors::default();
            lower_fn(&held, &mut errs)
                .filter(|_| errs.is_empty())
                .map(|d| (held, d))
        }
    };
    let vis = &item.vis;
    Ok(match &diff {
        Some((f, d)) => {
            let passes = Passes {
                second_order: order,
                ..Passes::with(unzip::Checkpoint::SaveAll)
            };
            let g = generate(f, d, false, passes, Owner::Free)?;
            // With its coefficients held constant, `g_vjp` returns no
            // cotangent for them, where callers reading `g`'s signature
            // (the coefficients differentiable) would expect one: they do
            // not go through it (their own `_vjp` is by forward mode).
            let order = match g.order {
                crate::signature::Order::TwiceVjp { .. } if *f != *clean => {
                    crate::signature::Order::Twice
                }
                other => other,
            };
            (quote!(#g), order)
        }
        None => {
            // Asked for, but there is nothing to differentiate twice: say
            // so where it was asked, not at each caller.
            let refusal = order.map(|span| {
                quote_spanned!(span=> ::core::compile_error!(
                    "`order = 2` cannot be generated for this `#[linear]` function: its derivatives are not generated (its body does not lower as a differentiable function)"
                );)
            });
            (
                quote!(#[doc(hidden)] #vis struct #map_name; #refusal),
                crate::signature::Order::Once,
            )
        }
    })
}

/// The `#[linear]` parameters, with their shapes.
fn linear_params(l: &Lowered) -> Vec<(&crate::lower::Param, &Shape)> {
    l.params
        .iter()
        .filter_map(|p| p.active.as_ref().map(|(s, _)| (p, s)))
        .collect()
}

/// `In`: the type of the `#[linear]` parameters, a tuple if several.
fn linear_in_ty(lin: &[(&crate::lower::Param, &Shape)]) -> TokenStream {
    if let [(_, s)] = lin {
        return s.rust();
    }
    let ts = lin.iter().map(|(_, s)| s.rust());
    quote!((#(#ts,)*))
}

/// `g_transpose(coefficients.., out_cotangent: R) -> In`: T of `g`.
fn transpose_item(
    item: &syn::ItemFn,
    l: &Lowered,
    gt: &crate::ir::Func,
    allow: &TokenStream,
) -> TokenStream {
    let mut names = Names::default();
    let calls = LinearCalls { sites: &l.calls };
    let lin = linear_params(l);
    let coefficients = l.params.iter().filter(|p| p.active.is_none());
    let mut sig_params = Vec::new();
    let mut used = Vec::new();
    for p in coefficients {
        let (pat, ty) = (&p.pat, &p.ty);
        sig_params.push(quote!(#pat: #ty));
        let mut ids = Vec::new();
        pattern_idents(pat, &mut ids);
        used.extend(ids.into_iter().map(|id| quote!(let _ = &#id;)));
    }
    let (prelude, ret_ty, in_ty) = (&l.prelude, l.ret.rust(), linear_in_ty(&lin));
    let ct = syn::Ident::new("out_cotangent", Span::mixed_site());
    let ct_ir = to_ir(quote!(#ct), &l.ret, &mut names);
    let b = body(gt, &[ct_ir], &calls);
    let out = if let [(_, s)] = lin.as_slice() {
        from_ir(b, s, &mut names)
    } else {
        let parts: Vec<syn::Ident> = (0..lin.len())
            .map(|k| format_ident!("__c{}", k, span = Span::mixed_site()))
            .collect();
        let outs: Vec<TokenStream> = parts
            .iter()
            .zip(&lin)
            .map(|(p, (_, s))| from_ir(quote!(#p), s, &mut names))
            .collect();
        quote!({ let (#(#parts,)*) = #b; (#(#outs,)*) })
    };
    let name = &item.sig.ident;
    let t_name = format_ident!("{}_transpose", name);
    let doc = format!(
        "The transpose (adjoint) of [`{name}`] in its `#[linear]` parameters: for every output cotangent ȳ and input x, ⟨x, {name}_transpose(ȳ)⟩ = ⟨{name}(x), ȳ⟩. Generated by `#[linear]`."
    );
    let vis = &item.vis;
    quote! {
        #[doc = #doc]
        #allow
        #[inline]
        #vis fn #t_name(#(#sig_params,)* #ct: #ret_ty) -> #in_ty {
            #(#used)*
            #(#prelude)*
            #out
        }
    }
}

/// The callee-side half of calls from other `#[linear]` functions: one
/// slot per parameter; a coefficient slot takes `Coef(value)`, a linear
/// slot `LinSlot`, so a mismatch is a type error at that argument.
fn linear_companion(
    item: &syn::ItemFn,
    l: &Lowered,
    map_name: &syn::Ident,
    allow: &TokenStream,
) -> TokenStream {
    let lin = linear_params(l);
    let ret_ty = l.ret.rust();
    let ct = syn::Ident::new("out_cotangent", Span::mixed_site());
    let t_name = format_ident!("{}_transpose", item.sig.ident);
    let d: Vec<syn::Ident> = (0..l.params.len())
        .map(|i| format_ident!("__d{}", i, span = Span::mixed_site()))
        .collect();
    let c: Vec<syn::Ident> = (0..lin.len())
        .map(|k| format_ident!("__c{}", k, span = Span::mixed_site()))
        .collect();
    let (mut slot_tys, mut coef_args, mut per_ty, mut per) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut k = 0;
    for (p, di) in l.params.iter().zip(&d) {
        match &p.active {
            Some((s, _)) => {
                slot_tys.push(quote!(impl ::linear_ad::__private::LinearSlot));
                per_ty.push(s.rust());
                let ck = &c[k];
                per.push(quote!(#ck));
                k += 1;
            }
            None => {
                let ty = &p.ty;
                slot_tys.push(quote!(impl ::linear_ad::__private::CoefArg<#ty>));
                coef_args.push(quote!(::linear_ad::__private::CoefArg::coef(#di)));
                per_ty.push(quote!(::linear_ad::__private::Inactive));
                per.push(quote!(::linear_ad::__private::Inactive));
            }
        }
    }
    let linear_slots = l
        .params
        .iter()
        .zip(&d)
        .filter(|(p, _)| p.active.is_some())
        .map(|(_, di)| di);
    let unpack = if let [c0] = c.as_slice() {
        quote!(let #c0 = #t_name(#(#coef_args,)* #ct);)
    } else {
        quote!(let (#(#c,)*) = #t_name(#(#coef_args,)* #ct);)
    };
    quote! {
        #[doc(hidden)]
        #allow
        impl #map_name {
            #[inline]
            pub fn __linear_transpose(#(#d: #slot_tys,)* #ct: #ret_ty) -> (#(#per_ty,)*) {
                #(let _ = #linear_slots;)*
                #unpack
                (#(#per,)*)
            }
        }
    }
}

/// `f` with every parameter not marked `#[linear]` marked `#[nondiff]`.
fn with_constant_coefficients(f: &syn::ItemFn) -> syn::ItemFn {
    let mut f = f.clone();
    for input in f.sig.inputs.iter_mut() {
        if let syn::FnArg::Typed(pt) = input {
            let linear = pt.attrs.iter().any(|a| a.path().is_ident("linear"));
            pt.attrs.retain(|a| !a.path().is_ident("linear"));
            if !linear {
                pt.attrs.push(syn::parse_quote!(#[nondiff]));
            }
        }
    }
    f
}

/// Rust for the transposed calls of a `#[linear]` function to other
/// `#[linear]` functions (`call.N.t`).
struct LinearCalls<'a> {
    sites: &'a HashMap<Var, CallSite>,
}

impl CallGen for LinearCalls<'_> {
    fn call(
        &self,
        func: &Var,
        _nl: &[syn::Ident],
        lin: &[syn::Ident],
        names: &mut Names,
    ) -> Option<TokenStream> {
        let calls = Calls {
            sites: self.sites,
            opaques: &HashMap::default(),
        };
        let (site, stage) = calls.site(func)?;
        if stage != "t" {
            return None;
        }
        let ty = &site.callee;
        let ct = lin.first()?;
        let ct_rust = super::arg_from_ir(quote!(#ct), &site.ret, names);
        let (mut slots, mut pats, mut outs) = (Vec::new(), Vec::new(), Vec::new());
        for a in &site.args {
            match a {
                // A `#[linear]` function holds no structs, so no origins.
                CallArg::Active(s, span) | CallArg::Origin(s, _, span) => {
                    slots.push(quote_spanned!(*span=> ::linear_ad::__private::LinSlot));
                    let c = names.temp("c");
                    // Through `Tangent`, so a coefficient position (already
                    // reported at its argument) converts without a second
                    // error.
                    let t = s.rust();
                    let got = quote_spanned!(*span=> <_ as ::linear_ad::__private::Tangent<#t>>::tangent(#c));
                    outs.push(to_ir(got, s, names));
                    pats.push(quote!(#c));
                }
                // Lowering makes none in a `#[linear]` function, whose
                // integers are all constants of the prelude and which
                // passes no arrays.
                CallArg::Discrete(_)
                | CallArg::Data { .. }
                | CallArg::Again { .. }
                | CallArg::Part { .. } => return None,
                CallArg::Inactive(id, span) => {
                    slots.push(quote_spanned!(*span=> ::linear_ad::__private::Coef(#id)));
                    pats.push(quote!(_));
                }
            }
        }
        let out = if outs.len() == 1 {
            outs[0].clone()
        } else {
            quote!((#(#outs,)*))
        };
        Some(quote!({ let (#(#pats,)*) = <#ty>::__linear_transpose(#(#slots,)* #ct_rust); #out }))
    }
}
