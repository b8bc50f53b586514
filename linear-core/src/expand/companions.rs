//! The callee side of the calling convention between differentiable
//! functions: associated functions of `f`'s linearization type.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

use crate::lower::Shape;

/// The callee-side half of the calling convention between differentiable
/// functions, as associated functions of `f`'s linearization type, the one
/// name a caller refers to: `__jvp`, `__lin`, `__apply` and `__transpose`
/// take one tangent (or cotangent) slot per parameter, constant ones
/// included, so a caller needs no knowledge of which of `f`'s parameters
/// are differentiable. A differentiable slot takes a tangent of its type or
/// `Inactive` (zero); a constant slot of `__jvp` takes only `Inactive`, so a
/// differentiable value passed to a constant parameter is reported there,
/// once.
pub(super) fn companions(
    item: &syn::ItemFn,
    params: &[crate::lower::Param],
    map_name: &syn::Ident,
    (ret_ty, ret_tan): (&TokenStream, &TokenStream),
    active: &[(usize, &Shape)],
    allow: &TokenStream,
) -> TokenStream {
    let fname = &item.sig.ident;
    let (jvp_name, lin_name) = (
        format_ident!("{}_jvp", fname),
        format_ident!("{}_lin", fname),
    );
    let n = params.len();
    let a: Vec<syn::Ident> = (0..n)
        .map(|i| format_ident!("__a{}", i, span = Span::mixed_site()))
        .collect();
    let d: Vec<syn::Ident> = (0..n)
        .map(|i| format_ident!("__d{}", i, span = Span::mixed_site()))
        .collect();
    let tys: Vec<&syn::Type> = params.iter().map(|p| &p.ty).collect();
    let slot_tys = |constant: TokenStream| -> Vec<TokenStream> {
        params
            .iter()
            .map(|p| match &p.active {
                Some((s, _)) => {
                    let t = s.rust();
                    quote!(impl ::linear_ad::__private::Tangent<#t>)
                }
                None => constant.clone(),
            })
            .collect()
    };
    let jvp_slots = slot_tys(quote!(impl ::linear_ad::__private::Constant));
    let apply_slots = slot_tys(quote!(impl ::core::marker::Sized));
    let tangents: Vec<TokenStream> = active
        .iter()
        .map(|(i, _)| {
            let di = &d[*i];
            quote!(::linear_ad::__private::Tangent::tangent(#di))
        })
        .collect();
    let constants: Vec<&syn::Ident> = params
        .iter()
        .zip(&d)
        .filter(|(p, _)| p.active.is_none())
        .map(|(_, di)| di)
        .collect();
    let packed = if tangents.len() == 1 {
        tangents[0].clone()
    } else {
        quote!((#(#tangents,)*))
    };
    let ct = syn::Ident::new("__ct", Span::mixed_site());
    let c: Vec<syn::Ident> = (0..active.len())
        .map(|k| format_ident!("__c{}", k, span = Span::mixed_site()))
        .collect();
    let unpack = if active.len() == 1 {
        let c0 = &c[0];
        quote!(let #c0 = ::linear_ad::LinearMap::transpose(self, #ct);)
    } else {
        quote!(let (#(#c,)*) = ::linear_ad::LinearMap::transpose(self, #ct);)
    };
    let mut k = 0;
    let (mut per_param, mut per_param_ty) = (Vec::new(), Vec::new());
    for p in params {
        match &p.active {
            Some((s, _)) => {
                let ck = &c[k];
                k += 1;
                per_param.push(quote!(#ck));
                per_param_ty.push(s.rust());
            }
            None => {
                per_param.push(quote!(::linear_ad::__private::Inactive));
                per_param_ty.push(quote!(::linear_ad::__private::Inactive));
            }
        }
    }
    quote! {
        #[doc(hidden)]
        #allow
        impl #map_name {
            #[inline]
            pub fn __jvp(#(#a: #tys,)* #(#d: #jvp_slots,)*) -> (#ret_ty, #ret_tan) {
                #(let _ = #constants;)*
                #jvp_name(#(#a,)* #(#tangents,)*)
            }

            #[inline]
            pub fn __lin(#(#a: #tys,)*) -> (#ret_ty, Self) {
                #lin_name(#(#a,)*)
            }

            #[inline]
            pub fn __apply(&self, #(#d: #apply_slots,)*) -> #ret_tan {
                #(let _ = #constants;)*
                ::linear_ad::LinearMap::apply(self, #packed)
            }

            #[inline]
            pub fn __transpose(&self, #ct: #ret_tan) -> (#(#per_param_ty,)*) {
                #unpack
                (#(#per_param,)*)
            }
        }
    }
}
