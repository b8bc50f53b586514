//! The items `#[differentiable]` adds beside `f`: `f_jvp`, the
//! linearization type with its `LinearMap` and `TapeSize` impls, `f_lin`,
//! `f_vjp`, the companions other differentiable functions call, with
//! `order = 2` `f_hvp` and `f_hessian` ([`second`]), and with `lanes`
//! `apply_lanes` and `f_jacobian` ([`lanes`]).
//!
//! Each body is the Rust printing ([`crate::codegen`]) of one function of
//! the pipeline's output: U(J(f))'s forward pass, its residual and T of the
//! residual, each printed once. The forward pass is a hidden function that
//! `f_lin` and `f_vjp` call, the residual the linearization's `__tangent`
//! (called by `apply` and, where the tape owns no heap memory, `f_jvp`),
//! and its transpose the linearization's `__reverse` (called by
//! `transpose` and `f_vjp`). `f_jvp` prints J(f) itself only where the
//! forward pass would allocate a tape it does not need (loops) or where
//! its signature differs from `apply`'s (tangent arrays, structs by
//! reference). The shared code is inlined always in an optimised build
//! ([`inline_always_optimised`]), so `f_vjp` runs the code it would as one function
//! (bit for bit; timed within 5% of the fused code), while each crate type- and
//! borrow-checks it once: printing every function whole made a
//! 2,000-statement function's expansion 5 MB, now 2.4 MB. What the
//! functions share otherwise (parameter names, tangent types, conversions
//! between Rust values and IR values) is computed once, in [`Sig`].

mod derived;
mod lanes;
mod second;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

use super::calls::Calls;
use super::companions::companions;
use super::pieces::{join, pieces, Piece};
use super::results::{pattern, places, Results};
use super::{
    find, from_ir, pascal, pattern_idents, pipeline, primal_from_ir, result_to_ir, to_ir,
    wants_dump, LanesAsk, Passes, Stages,
};
use crate::codegen::{body, body_holding, inline_always_optimised, Hold, Names};
use crate::ir::{Func, Program, Ty, Var};
use crate::lower::{Lowered, Shape};

/// What the generated functions' signatures and bodies share.
struct Sig<'a> {
    /// Whose function `f` is.
    owner: Owner<'a>,
    /// The float type parameter of a generic `f` (see [`FloatGenerics`]).
    float: FloatGenerics,
    /// `f`'s visibility.
    vis: &'a syn::Visibility,
    /// The linearization type's: `f`'s, or for a method its type's, which
    /// the `Method` impl naming the linearization must not exceed and the
    /// tangent types it names do not exceed (see `expand::methods`).
    map_vis: &'a syn::Visibility,
    /// The differentiable parameters: position and shape.
    active: Vec<(usize, &'a Shape)>,
    /// The IR parameters they are passed as (see `expand::pieces`).
    pieces: Vec<Piece<'a>>,
    /// `f`'s parameters as the generated functions declare them.
    params: Vec<TokenStream>,
    /// `let _ = &p;` for constant parameters a body may not read.
    used_markers: Vec<TokenStream>,
    /// One tangent parameter per differentiable parameter (`f_jvp`), and
    /// their names.
    tangent_params: Vec<TokenStream>,
    tangent_idents: Vec<syn::Ident>,
    /// The differentiable parameters, and their tangents, as IR values
    /// (one per piece).
    primal_ir: Vec<TokenStream>,
    tangent_ir: Vec<TokenStream>,
    /// `R`, and `In` (the tangent of the differentiable parameters).
    /// The result's type, and its tangent's (they differ for a struct).
    ret_ty: TokenStream,
    ret_tan: TokenStream,
    in_ty: TokenStream,
    /// The pieces' IR variables, Rust values and shapes (for the input
    /// arrays a tape holds).
    inputs: Vec<(Var, TokenStream, Shape)>,
    /// The same for the `#[nondiff]` data a tape may borrow.
    data: Vec<(Var, TokenStream, Shape)>,
    /// `f`'s parameters with the input lifetime on the references to
    /// arrays, for an `f_lin` whose linearization borrows them.
    params_borrowed: Vec<TokenStream>,
    /// `f`'s parameters as `f_lin` and `f_vjp` declare them, which pass
    /// them on to the forward pass ([`passing_params`]): as declared, and
    /// with the input lifetime (for an `f_lin` whose linearization
    /// borrows); and the arguments passing them.
    passing: Vec<TokenStream>,
    passing_borrowed: Vec<TokenStream>,
    passed: Vec<TokenStream>,
    /// Lints allowed on every item: the user's `#[allow]`s, and
    /// `too_many_arguments` (`f_jvp` takes a tangent per parameter).
    allow: TokenStream,
    /// The inactive statements every primal computation runs first.
    prelude: &'a [TokenStream],
    /// Each array-of-structs parameter copied into the `Vec` of its
    /// elements' flat values, which the IR reads (`Shape::elements`): run
    /// first by every function that runs the IR on the parameters (the
    /// forward pass, `f_jvp`), and for `f_jvp`'s tangents.
    own_primals: Vec<TokenStream>,
    own_tangents: Vec<TokenStream>,
    /// Per piece that is an array of run-time length: its value and its
    /// tangent's in `f_jvp`, whose lengths must agree, as messages name
    /// them.
    runtime_arrays: Vec<[(TokenStream, String); 2]>,
}

/// [`own_elements`] for `f`'s parameters (the primals, as the functions
/// that run the IR need them) and for `f_jvp`'s tangents.
fn own_params(
    active: &[(usize, &Shape)],
    primal_idents: &[Option<syn::Ident>],
    tangent_idents: &[syn::Ident],
    names: &mut Names,
) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let primals = |i: usize, _| primal_idents[i].as_ref().map(|id| quote!(#id));
    let tangents = |_, k: usize| {
        let id = &tangent_idents[k];
        Some(quote!(#id))
    };
    (
        own_elements(active, primals, true, names),
        own_elements(active, tangents, false, names),
    )
}

/// `let x = flat_elements(&x[..]);` for each differentiable parameter of
/// `active` that is an array of structs, `x` named by `name` from the
/// parameter's position among all parameters and among the differentiable
/// ones. A primal array whose structs have constant fields is kept as
/// `__linear_ad_orig_x` first, which the IR's reads of those fields name
/// (`lower::structs`, `element_origin`). Structs with fixed-size array
/// fields are converted element by element, their arrays to the IR's
/// tuples ([`super::elements_to_ir`]).
fn own_elements(
    active: &[(usize, &Shape)],
    name: impl Fn(usize, usize) -> Option<TokenStream>,
    primal: bool,
    names: &mut Names,
) -> Vec<TokenStream> {
    let mut out = Vec::new();
    for (k, (i, s)) in active.iter().enumerate() {
        let (Some(st), Some(id)) = (s.elements(), name(*i, k)) else {
            continue;
        };
        let keep = primal && st.has_constants();
        let orig = match keep {
            true => {
                let orig = format_ident!("__linear_ad_orig_{}", id.to_string());
                quote!(#orig)
            }
            false => id.clone(),
        };
        let flat = super::elements_to_ir(&orig, s, names);
        out.push(match keep {
            true => quote!(let #orig = #id; let #id = #flat;),
            false => quote!(let #id = #flat;),
        });
    }
    out
}

fn borrowing_params(
    l: &Lowered,
    params: &[TokenStream],
    primal_idents: &[Option<syn::Ident>],
) -> Vec<TokenStream> {
    l.params
        .iter()
        .zip(params)
        .zip(primal_idents)
        .map(|((p, decl), id)| match (borrowed_ty(l, p), id) {
            (Some(r), Some(id)) => quote!(#id: #r),
            (Some(r), None) => {
                let pat = &p.pat;
                quote!(#pat: #r)
            }
            (None, _) => decl.clone(),
        })
        .collect()
}

/// Parameter `p`'s type in an `f_lin` whose linearization borrows input
/// arrays, if it differs from the declared one: the input lifetime on a
/// reference to an array read by index, to a struct whose `Vec` fields the
/// tape borrows, or to `#[nondiff]` data the tape may borrow.
fn borrowed_ty(l: &Lowered, p: &crate::lower::Param) -> Option<syn::TypeReference> {
    let syn::Type::Reference(r) = &p.ty else {
        return None;
    };
    let borrowed = r.lifetime.is_none()
        && match &p.active {
            Some((s, _)) => matches!(s, Shape::Slice(..)) || !p.arrays.is_empty(),
            None => data_param(l, &p.pat).is_some(),
        };
    borrowed.then(|| {
        let mut r = r.clone();
        r.lifetime = Some(input_lifetime());
        r
    })
}

/// `f`'s parameters as a function that only passes them on declares them
/// (with the input lifetime if `borrowed`, see [`borrowing_params`]), and
/// the arguments that pass them on: each under its own name, or a hidden
/// one for a parameter bound by a pattern (taken whole, unpacked by the
/// callee).
fn passing_params(
    l: &Lowered,
    primal_idents: &[Option<syn::Ident>],
    borrowed: bool,
) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let (mut decls, mut args) = (Vec::new(), Vec::new());
    for (i, (p, id)) in l.params.iter().zip(primal_idents).enumerate() {
        let id = match (id, &p.pat) {
            (Some(id), _) => id.clone(),
            (None, syn::Pat::Ident(pi)) if pi.subpat.is_none() && pi.by_ref.is_none() => {
                pi.ident.clone()
            }
            (None, _) => hidden(&format!("__p{i}")),
        };
        let ty = match borrowed.then(|| borrowed_ty(l, p)).flatten() {
            Some(r) => quote!(#r),
            None => {
                let t = &p.ty;
                quote!(#t)
            }
        };
        decls.push(quote!(#id: #ty));
        args.push(quote!(#id));
    }
    (decls, args)
}

/// The data array standing for parameter `pat` if it is `#[nondiff]`
/// data read by index ([`crate::lower::Lowered::data`]), and the
/// parameter's identifier.
fn data_param<'l>(l: &'l Lowered, pat: &syn::Pat) -> Option<(&'l Var, syn::Ident, &'l Shape)> {
    let syn::Pat::Ident(pi) = pat else {
        return None;
    };
    l.data
        .iter()
        .find(|(_, name, _)| pi.ident == name)
        .map(|(v, _, s)| (v, pi.ident.clone(), s))
}

/// The tangent parameters' identifiers: `x_tangent` for a parameter
/// named `x`, a hidden one for a pattern.
fn tangent_idents(
    active: &[(usize, &Shape)],
    primal_idents: &[Option<syn::Ident>],
) -> Vec<syn::Ident> {
    active
        .iter()
        .map(|(i, _)| match primal_idents[*i].as_ref() {
            Some(id) if !id.to_string().starts_with("__") => hidden(&format!("{id}_tangent")),
            _ => hidden(&format!("__t{i}")),
        })
        .collect()
}

/// [`Sig::runtime_arrays`].
fn runtime_arrays(
    pieces: &[Piece],
    primal_idents: &[Option<syn::Ident>],
    tangent_idents: &[syn::Ident],
    active: &[(usize, &Shape)],
) -> Vec<[(TokenStream, String); 2]> {
    pieces
        .iter()
        .filter(|p| p.shape.runtime_array())
        .filter_map(|p| {
            let id = primal_idents[active[p.param].0].as_ref()?;
            let t = &tangent_idents[p.param];
            Some([
                (p.of(&quote!(#id), true), p.label(&id.to_string())),
                (p.of(&quote!(#t), true), p.label(&t.to_string())),
            ])
        })
        .collect()
}

/// `f`'s parameters as the generated functions declare them, the
/// identifiers of the differentiable ones (the user's own for a plain
/// name, else a hidden one), and `let _ = &p;` for the constant ones.
#[allow(clippy::type_complexity)]
fn declared_params(l: &Lowered) -> (Vec<TokenStream>, Vec<Option<syn::Ident>>, Vec<TokenStream>) {
    let (mut params, mut primal_idents, mut used_markers) = (Vec::new(), Vec::new(), Vec::new());
    for (i, p) in l.params.iter().enumerate() {
        let ty = &p.ty;
        if p.active.is_some() {
            let id = match &p.pat {
                syn::Pat::Ident(pi) if pi.subpat.is_none() => pi.ident.clone(),
                _ => hidden(&format!("__p{i}")),
            };
            params.push(quote!(#id: #ty));
            primal_idents.push(Some(id));
        } else {
            let pat = &p.pat;
            params.push(quote!(#pat: #ty));
            let mut ids = Vec::new();
            pattern_idents(pat, &mut ids);
            used_markers.extend(ids.into_iter().map(|id| quote!(let _ = &#id;)));
            primal_idents.push(None);
        }
    }
    (params, primal_idents, used_markers)
}

fn hidden(name: &str) -> syn::Ident {
    syn::Ident::new(name, Span::mixed_site())
}

/// A parameter name that shows in the user's docs (`cotangent`, not
/// `__cotangent`). Its body rebinds it to a [`hidden`] name first thing,
/// since the generated code's own variables share its mixed-site
/// hygiene and could be named after a user's `cotangent`.
fn readable(name: &str) -> syn::Ident {
    syn::Ident::new(name, Span::mixed_site())
}

impl<'a> Sig<'a> {
    fn new(
        item: &'a syn::ItemFn,
        l: &'a Lowered,
        owner: Owner<'a>,
        names: &mut Names,
    ) -> Result<Sig<'a>, String> {
        let active: Vec<(usize, &Shape)> = l
            .params
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.active.as_ref().map(|(s, _)| (i, s)))
            .collect();
        if active.is_empty() {
            return Err("no differentiable parameter".into());
        }
        let (params, primal_idents, used_markers) = declared_params(l);
        let tangent_idents = tangent_idents(&active, &primal_idents);
        let tangent_params = active
            .iter()
            .zip(&tangent_idents)
            .map(|((_, s), id)| {
                let t = s.rust();
                quote!(#id: #t)
            })
            .collect();
        let pieces = pieces(l);
        let primal_of = |p: &Piece| {
            let id = primal_idents[active[p.param].0]
                .as_ref()
                .map(|id| quote!(#id))
                .unwrap_or_default();
            p.of(&id, true)
        };
        let primal_ir = pieces
            .iter()
            .map(|p| to_ir(primal_of(p), &p.shape, names))
            .collect();
        let tangent_ir = pieces
            .iter()
            .map(|p| {
                let id = &tangent_idents[p.param];
                to_ir(p.of(&quote!(#id), true), &p.shape, names)
            })
            .collect();
        let in_ty = if active.len() == 1 {
            active[0].1.owned()
        } else {
            let ts = active.iter().map(|(_, s)| s.owned());
            quote!((#(#ts,)*))
        };
        let inputs = pieces
            .iter()
            .map(|p| (p.var.clone(), primal_of(p), p.shape.clone()))
            .collect();
        let data = l
            .params
            .iter()
            .filter_map(|p| data_param(l, &p.pat))
            .map(|(v, id, s)| (v.clone(), quote!(#id), s.clone()))
            .collect();
        let runtime_arrays = runtime_arrays(&pieces, &primal_idents, &tangent_idents, &active);
        let params_borrowed = borrowing_params(l, &params, &primal_idents);
        let (passing, passed) = passing_params(l, &primal_idents, false);
        let (passing_borrowed, _) = passing_params(l, &primal_idents, true);
        let user_allows = item.attrs.iter().filter(|a| a.path().is_ident("allow"));
        let (own_primals, own_tangents) =
            own_params(&active, &primal_idents, &tangent_idents, names);
        Ok(Sig {
            owner,
            float: FloatGenerics {
                outer: matches!(owner, Owner::Method { generic: true, .. }),
                ..FloatGenerics::of(&item.sig.generics)
            },
            vis: &item.vis,
            map_vis: owner.map_vis().unwrap_or(&item.vis),
            active,
            pieces,
            params,
            used_markers,
            tangent_params,
            tangent_idents,
            primal_ir,
            tangent_ir,
            ret_ty: l.ret.primal(),
            ret_tan: l.ret.owned(),
            in_ty,
            inputs,
            data,
            params_borrowed,
            passing,
            passing_borrowed,
            passed,
            allow: quote!(#[allow(clippy::too_many_arguments)] #(#user_allows)*),
            prelude: &l.prelude,
            runtime_arrays,
            own_primals,
            own_tangents,
        })
    }

    /// Whether `f_jvp` takes every tangent as `apply` does, by value (not a
    /// struct's by reference).
    fn tangents_owned(&self) -> bool {
        self.active
            .iter()
            .all(|(_, s)| s.rust().to_string() == s.owned().to_string())
    }

    /// `f_jvp`'s checks that each tangent array has its primal's length.
    fn tangent_length_checks(&self, fn_name: &str) -> Vec<TokenStream> {
        self.runtime_arrays
            .iter()
            .map(|[(p, p_name), (t, t_name)]| {
                length_check(
                    t,
                    &quote!(#p.len()),
                    &format!(
                        "`{fn_name}`: the tangent `{t_name}` must have the length of `{p_name}`"
                    ),
                )
            })
            .collect()
    }

    /// A generated function with `f`'s parameters, then `extra` ones: the
    /// lints allowed, the constant parameters marked used and the prelude
    /// run before `body`.
    fn function(
        &self,
        doc: &str,
        name: &syn::Ident,
        extra: &[TokenStream],
        ret: TokenStream,
        body: TokenStream,
    ) -> TokenStream {
        let (markers, prelude) = (&self.used_markers, self.prelude);
        self.emit(
            (quote!(#[doc = #doc] #[inline]), self.vis),
            name,
            (None, &self.params, extra),
            ret,
            quote!(#(#markers)* #(#prelude)* #body),
        )
    }

    /// A function of the given attributes and visibility, name, lifetime
    /// parameter (with `f`'s float parameter), parameters then `extra`
    /// ones, result type and body, with the lints allowed.
    fn emit(
        &self,
        (attrs, vis): (TokenStream, &syn::Visibility),
        name: &syn::Ident,
        (lifetime, params, extra): (Option<syn::Lifetime>, &[TokenStream], &[TokenStream]),
        ret: TokenStream,
        body: TokenStream,
    ) -> TokenStream {
        let allow = &self.allow;
        let (generics, where_clause) = (self.float.fn_decl(lifetime), &self.float.where_clause);
        quote! {
            #attrs
            #allow
            #vis fn #name #generics (#(#params,)* #(#extra,)*) -> #ret #where_clause {
                #body
            }
        }
    }

    /// The forward pass shared by `f_lin` and `f_vjp`, `f_lin`'s body as a
    /// hidden function of `f`'s parameters (with the input lifetime if the
    /// linearization borrows), which both call; inlined wherever it is
    /// called in an optimised build, so that `f_vjp`'s tape stays in
    /// registers as if the two were one function, and left to the
    /// compiler's choice in a debug build, where forced inlining would
    /// only make LLVM compile it again.
    fn forward_helper(
        &self,
        name: &syn::Ident,
        lifetime: Option<syn::Lifetime>,
        ret: TokenStream,
        body: TokenStream,
    ) -> TokenStream {
        let (markers, prelude) = (&self.used_markers, self.prelude);
        let params = if lifetime.is_some() {
            &self.params_borrowed
        } else {
            &self.params
        };
        let inline = inline_always_optimised();
        let own = &self.own_primals;
        // Private: `doc(hidden)` would still leave it in `f`'s module's
        // public names.
        self.emit(
            (quote!(#[doc(hidden)] #inline), &syn::Visibility::Inherited),
            name,
            (lifetime, params, &[]),
            ret,
            quote!(#(#markers)* #(#own)* #(#prelude)* #body),
        )
    }

    /// A call of the forward helper `name` ([`Sig::forward_helper`]) with
    /// the parameters of a function declaring [`Sig::passing`].
    fn call_forward(&self, name: &syn::Ident) -> TokenStream {
        let args = &self.passed;
        match self.owner {
            Owner::Free => quote!(#name(#(#args),*)),
            Owner::Method { .. } => quote!(Self::#name(#(#args),*)),
        }
    }

    /// The IR arguments of a function of the parameters and their
    /// tangents (J(f), and the HVP of `order = 2`).
    fn jvp_args(&self) -> Vec<TokenStream> {
        self.primal_ir
            .iter()
            .chain(&self.tangent_ir)
            .cloned()
            .collect()
    }

    /// The array parameters read by index, in order, with their lengths'
    /// expressions in the primal: T gives each an accumulator, a zeroed
    /// buffer its caller passes in.
    fn arrays(&self) -> Vec<(&Shape, TokenStream)> {
        self.inputs
            .iter()
            .filter(|(_, _, s)| matches!(s, Shape::Slice(..)))
            .map(|(_, e, s)| (s, quote!(#e.len())))
            .collect()
    }

    /// Converts IR cotangents of the differentiable parameters' pieces
    /// (`value`, a tuple of them if there are several) to `In`.
    fn pack_cotangents(&self, names: &mut Names, value: TokenStream) -> TokenStream {
        let parts: Vec<syn::Ident> = (0..self.pieces.len())
            .map(|k| format_ident!("__c{}", k, span = Span::mixed_site()))
            .collect();
        let outs: Vec<TokenStream> = self
            .active
            .iter()
            .enumerate()
            .map(|(k, (_, s))| {
                let mine: Vec<TokenStream> = parts
                    .iter()
                    .zip(&self.pieces)
                    .filter(|(_, p)| p.param == k)
                    .map(|(c, _)| quote!(#c))
                    .collect();
                join(s, &mine, names)
            })
            .collect();
        let bind = match parts.as_slice() {
            [c] => quote!(#c),
            _ => quote!((#(#parts,)*)),
        };
        let out = match outs.as_slice() {
            [o] => o.clone(),
            _ => quote!((#(#outs,)*)),
        };
        quote!({ let #bind = #value; #out })
    }

    /// Binds an `In` tangent (`tangent`) as IR values: the arguments that
    /// follow the tape in `apply` (one per piece), and the statement that
    /// binds them.
    fn unpack_tangents(
        &self,
        names: &mut Names,
        tangent: &syn::Ident,
    ) -> (TokenStream, Vec<TokenStream>) {
        let convs = self
            .pieces
            .iter()
            .map(|p| {
                to_ir(
                    p.of(&self.tangent_part(p.param, tangent), false),
                    &p.shape,
                    names,
                )
            })
            .collect();
        let own = own_elements(
            &self.active,
            |_, k| Some(self.tangent_part(k, tangent)),
            false,
            names,
        );
        if self.active.len() == 1 {
            return (quote!(#(#own)*), convs);
        }
        let parts: Vec<TokenStream> = (0..self.active.len())
            .map(|k| self.tangent_part(k, tangent))
            .collect();
        (quote!(let (#(#parts,)*) = #tangent; #(#own)*), convs)
    }

    /// The tangent of the `k`th differentiable parameter in `apply`, once
    /// [`Sig::unpack_tangents`] has bound it.
    fn tangent_part(&self, k: usize, tangent: &syn::Ident) -> TokenStream {
        if self.active.len() == 1 {
            quote!(#tangent)
        } else {
            let d = format_ident!("__d{}", k, span = Span::mixed_site());
            quote!(#d)
        }
    }
}

/// The generics of the generated items of a function generic in its
/// float type `T`: the user's bounds on `T`, plus `linear_ad::Real`
/// (implemented by `f32` and `f64`), which the runtime's buffers and
/// zeros need and which `num_traits::Float` alone cannot give them (a
/// blanket impl over `Float` would overlap the impls for arrays).
/// Empty for a function that is not generic.
#[derive(Clone, Default)]
struct FloatGenerics {
    /// `T`.
    param: Option<syn::Ident>,
    /// `where T: bounds + linear_ad::Real, ..`: the user's bounds on `T`,
    /// inline or in the `where` clause, then the `where` clause's other
    /// predicates.
    where_clause: TokenStream,
    /// Whether `T` is the parameter of the enclosing `impl` block (a
    /// method's), which the generated functions must not declare again.
    outer: bool,
}

impl FloatGenerics {
    fn of(generics: &syn::Generics) -> FloatGenerics {
        let Some(t) = crate::lower::float_param(generics) else {
            return FloatGenerics::default();
        };
        // Every bound in the `where` clause, none in the parameter list:
        // bounds in both places are a clippy warning.
        let bounds: Vec<&syn::TypeParamBound> =
            generics.type_params().flat_map(|p| &p.bounds).collect();
        let user = generics
            .where_clause
            .iter()
            .flat_map(|w| &w.predicates)
            .map(|p| quote!(#p,));
        FloatGenerics {
            where_clause: quote!(where #t: #(#bounds +)* ::linear_ad::Real, #(#user)*),
            param: Some(t),
            outer: false,
        }
    }

    /// [`FloatGenerics::decl`] for a generated function: without `T` if
    /// the enclosing block declares it.
    fn fn_decl(&self, lifetime: Option<syn::Lifetime>) -> TokenStream {
        let param = if self.outer {
            None
        } else {
            self.param.as_ref()
        };
        generics_of(lifetime, param)
    }

    /// `<'lt, T>`, for declarations and uses alike (the bounds are in the
    /// `where` clause); nothing if both are absent.
    fn decl(&self, lifetime: Option<syn::Lifetime>) -> TokenStream {
        generics_of(lifetime, self.param.as_ref())
    }

    /// The linearization's field that uses `T` whatever the tape holds,
    /// and its initialiser.
    fn marker(&self) -> Option<(TokenStream, TokenStream)> {
        let t = self.param.as_ref()?;
        Some((
            quote!(__float: ::core::marker::PhantomData<#t>),
            quote!(__float: ::core::marker::PhantomData),
        ))
    }
}

/// `<'lt, T>`, `<'lt>`, `<T>` or nothing.
fn generics_of(lifetime: Option<syn::Lifetime>, param: Option<&syn::Ident>) -> TokenStream {
    let t = param.map(|t| quote!(#t));
    let parts: Vec<TokenStream> = lifetime.map(|l| quote!(#l)).into_iter().chain(t).collect();
    if parts.is_empty() {
        quote!()
    } else {
        quote!(<#(#parts),*>)
    }
}

/// Panics, with `msg`, unless the tangent or cotangent array `value` has
/// length `len`: a shorter one would index out of bounds deep in the
/// generated code, and a longer one would be cut silently.
fn length_check(value: &TokenStream, len: &TokenStream, msg: &str) -> TokenStream {
    quote!(::core::assert_eq!(#value.len(), #len, #msg);)
}

/// A zeroed cotangent buffer for an array parameter of shape `s`, of
/// length `len` (unused for `&[T; n]`).
fn zero_buffer(s: &Shape, len: TokenStream) -> TokenStream {
    if let Some((e, m)) = s.row() {
        // The flat array of rows of width `m`.
        let e = e.rust();
        let len = match s {
            Shape::Slice(_, crate::lower::SliceKind::ArrayRef(n)) => quote!(#n),
            _ => len,
        };
        return quote!(::linear_ad::__private::zeros::<#e>(#len * #m));
    }
    match s {
        Shape::Slice(e, crate::lower::SliceKind::ArrayRef(n)) => {
            let e = e.rust();
            quote!(<[#e; #n] as ::linear_ad::__private::Vector>::zero())
        }
        other => {
            let e = match other {
                // An array of structs: a buffer of their IR values.
                Shape::Slice(e, _) if other.elements().is_some() => crate::lower::ty_rust(&e.ty()),
                Shape::Slice(e, _) => e.rust(),
                _ => other.rust(),
            };
            quote!(::linear_ad::__private::zeros::<#e>(#len))
        }
    }
}

/// The pipeline's output for `f`, and the functions code is printed from.
struct Outputs<'a> {
    jvp: &'a Func,
    forward: &'a Func,
    residual: &'a Func,
    transposed: &'a Func,
}

impl<'a> Outputs<'a> {
    /// `f`'s functions among the `stages`, the forward pass, residual and
    /// transpose from `flat` where its tapes were flattened.
    fn of(stages: &'a Stages, flat: Option<&'a [Func; 3]>, f: &str) -> Result<Self, String> {
        let jvp = find(&stages.jvp, &format!("{f}.jvp"))?;
        Ok(match flat {
            Some([forward, residual, transposed]) => Outputs {
                jvp,
                forward,
                residual,
                transposed,
            },
            None => Outputs {
                jvp,
                forward: find(&stages.unzipped, &format!("{f}.jvp.nl"))?,
                residual: find(&stages.unzipped, &format!("{f}.jvp.lin"))?,
                transposed: find(&stages.transposed, &format!("{f}.jvp.lin.t"))?,
            },
        })
    }
}

/// What `#[differentiable]` adds for `f`: functions (`f_jvp`, `f_lin`,
/// `f_vjp`), which for a method go into an `impl` of its type, and the
/// items beside them (the linearization type and its impls).
pub(super) struct Generated {
    pub(super) fns: TokenStream,
    pub(super) items: TokenStream,
    /// Whether other differentiable functions can call `f`: its
    /// linearization has the companions they call.
    pub(super) callable: bool,
    /// Whether callers hold its linearization detached from its input
    /// arrays, as `FLinearization<'static>` ([`Detached`]).
    pub(super) detached_static: bool,
    /// How many times callers can differentiate their calls of `f`.
    pub(super) order: crate::signature::Order,
    /// Whether `f`'s linearization has `apply_lanes`.
    pub(super) lanes: bool,
}

impl quote::ToTokens for Generated {
    /// A free function's items, all at the top level.
    fn to_tokens(&self, out: &mut TokenStream) {
        out.extend(self.fns.clone());
        out.extend(self.items.clone());
    }
}

/// Whose function `f` is: a free function's, or a method of `ty` (whose
/// generated functions are methods too, and whose linearization type is
/// named after both).
#[derive(Clone, Copy)]
pub(super) enum Owner<'a> {
    Free,
    /// A method of `ty`, declared with visibility `vis`, in an `impl`
    /// block generic in its float type when `generic` (whose generated
    /// methods then use the block's `T` rather than declare their own).
    Method {
        ty: &'a syn::Type,
        vis: &'a syn::Visibility,
        generic: bool,
    },
}

impl<'a> Owner<'a> {
    fn map_vis(&self) -> Option<&'a syn::Visibility> {
        match self {
            Owner::Free => None,
            Owner::Method { vis, .. } => Some(vis),
        }
    }

    /// The type whose associated functions the companions call (`None`:
    /// free functions, called by name).
    fn callee_type(&self) -> Option<&'a syn::Type> {
        match self {
            Owner::Free => None,
            Owner::Method { ty, .. } => Some(ty),
        }
    }

    /// For a method `f`, the impl of `Method` by which callers name its
    /// linearization type `map` (see `linear_ad::__private::Method`).
    fn method_impl(
        &self,
        f: &syn::Ident,
        map: &syn::Ident,
        (generics, where_clause): (TokenStream, &TokenStream),
        map_args: &TokenStream,
    ) -> Option<TokenStream> {
        let t = self.callee_type()?;
        let key = method_key(f);
        Some(quote! {
            #[doc(hidden)]
            impl #generics ::linear_ad::__private::Method<#key> for #t #where_clause {
                type Linearization = #map #map_args;
            }
        })
    }

    /// How docs link to `f`, from inside its `impl` or from beside it.
    fn doc_path(&self, f: &syn::Ident, inside: bool) -> String {
        match self {
            Owner::Free => f.to_string(),
            Owner::Method { .. } if inside => format!("Self::{f}"),
            // Without generic arguments, which a doc link cannot hold.
            Owner::Method {
                ty: syn::Type::Path(p),
                ..
            } => {
                let bare = crate::layout::bare(&p.path);
                format!("{}::{f}", quote!(#bare)).replace(' ', "")
            }
            Owner::Method { ty, .. } => format!("{}::{f}", quote!(#ty)).replace(' ', ""),
        }
    }

    /// The linearization type's name: `FLinearization`, or
    /// `Type_FLinearization` for a method of `Type` (`GeoPoint_F..` for
    /// `geo::Point`).
    fn map_name(&self, f: &syn::Ident) -> syn::Ident {
        let owner = match self {
            Owner::Free => String::new(),
            // Every segment: `impl a::P` and `impl b::P` in one module
            // get distinct linearizations.
            Owner::Method { ty, .. } => match ty {
                syn::Type::Path(p) => p
                    .path
                    .segments
                    .iter()
                    .map(|s| pascal(&s.ident.to_string()))
                    .collect(),
                _ => String::new(),
            },
        };
        // `_` after a method's owner: a free function's name never holds
        // one, so `Hidden::sq`'s never meets the function `hidden_sq`'s.
        let sep = if owner.is_empty() { "" } else { "_" };
        syn::Ident::new(
            &format!("{owner}{sep}{}Linearization", pascal(&f.to_string())),
            f.span(),
        )
    }
}

/// The `Method` key of the method `name` (see
/// `linear_ad::__private::Method`), as a const argument.
pub(crate) fn method_key(name: &syn::Ident) -> TokenStream {
    let text = name.to_string();
    let text = text.trim_start_matches("r#");
    quote::quote_spanned!(name.span()=> { ::linear_ad::__private::method_key(#text) })
}

/// The name of a free function's linearization type.
pub(super) fn map_name(item: &syn::ItemFn) -> syn::Ident {
    Owner::Free.map_name(&item.sig.ident)
}

/// The forward pass and residuals of `f` with the records of its loops
/// inside loops or branches in flat arrays
/// ([`crate::passes::records::flat_tapes`]), type-checked again in debug
/// builds; `None` where it has none.
fn flat_tapes(stages: &Stages, name: &str) -> Result<Option<[Func; 3]>, String> {
    let Some(fs) =
        crate::passes::records::flat_tapes(&stages.transposed, name).map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    if cfg!(debug_assertions) {
        let p = Program {
            externs: stages.transposed.externs.clone(),
            funcs: fs.to_vec(),
        };
        crate::check::check_linear_b(&p).map_err(|e| format!("after flat tapes: {e}"))?;
    }
    Ok(Some(fs))
}

/// Every item `#[differentiable]` adds for `f`.
pub(super) fn generate(
    item: &syn::ItemFn,
    l: &Lowered,
    dump: bool,
    passes: Passes,
    owner: Owner,
) -> Result<Generated, String> {
    let name = item.sig.ident.to_string();
    if wants_dump(&name, dump) {
        // Before the pipeline, so that a pass's error comes with its input.
        eprintln!("== linear-ad: `{name}` lowered ==\n{}", l.func);
    }
    let stages = pipeline(&l.func, &l.externs, passes)?;
    if wants_dump(&name, dump) {
        dump_stages(&stages);
    }
    let flat = flat_tapes(&stages, &name)?;
    let out = Outputs::of(&stages, flat.as_ref(), &name)?;
    let calls = Calls {
        sites: &l.calls,
        opaques: &l.opaques,
    };
    let mut names = Names::default();
    let sig = Sig::new(item, l, owner, &mut names)?;
    let map_name = owner.map_name(&item.sig.ident);
    // The forward pass `f_lin` and `f_vjp` share.
    let fwd_body = crate::codegen::forward_body(out.forward, &sig.primal_ir, &calls);
    let fwd = (&fwd_body, passes.lanes);
    let lin = lin_items(item, l, &sig, &out, fwd, &map_name, &calls, &mut names)?;
    let jvp_fn = if lin.shares_jvp && sig.tangents_owned() {
        shared_jvp_item(item, &sig)
    } else {
        jvp_item(item, l, &sig, out.jvp, &calls, &mut names)
    };
    let vjp_fn = vjp_item(item, l, &sig, lin.detached.as_ref());
    let public_lanes = lanes::public(passes.lanes, owner, lin.lanes);
    let jacobian =
        public_lanes.then(|| lanes::free_items(item, l, &sig, out.jvp, (&calls, &mut names)));
    let (with_arrays, callable) = callability(l, &sig, lin.detached.is_some(), owner);
    let (second_fns, directional) = match passes.second_order {
        Some(span) => {
            let (fns, d) =
                second::items(item, l, &sig, (&stages, passes), (&calls, &mut names), span);
            (Some(fns), d)
        }
        None => (None, None),
    };
    let derived::Callees {
        code: derived,
        vjp_lin,
        vjp_callable,
        vjp_lanes,
        twice,
    } = derived::callees(
        item,
        l,
        &sig,
        (directional.as_ref(), &stages, passes),
        (
            callable,
            derived::Detachment {
                arrays: with_arrays,
                statically: with_arrays && lin.borrows,
            },
        ),
    );
    // After the derived callees: the Hessian linearizes `f_vjp` once
    // where `f_vjp_lin` exists.
    let hessian = directional
        .is_some()
        .then(|| second::hessian(item, &sig, (vjp_lin, vjp_lanes)));
    let detached_static = with_arrays && lin.borrows;
    let companions = callable.then(|| {
        callee_side(
            (item, l, &sig, owner),
            &map_name,
            (
                lanes::companion_lanes(passes.lanes, owner, lin.lanes),
                passes.second_order.is_none(),
            ),
            (with_arrays, detached_static),
        )
    });
    Ok(Generated {
        fns: {
            let lin_fns = &lin.fns;
            let derived = &derived.fns;
            quote!(#jvp_fn #lin_fns #vjp_fn #jacobian #second_fns #hessian #derived)
        },
        items: {
            let (lin_items, derived) = (&lin.items, &derived.items);
            quote!(#lin_items #companions #derived)
        },
        callable,
        lanes: lin.lanes,
        detached_static,
        order: order_of(
            passes.second_order.is_some(),
            twice,
            (vjp_callable, vjp_lanes),
        ),
    })
}

/// The order callers see: `Once` without `order = 2`; with it, whether
/// callers can differentiate `f` twice (`twice`: through calls) and
/// whether its `f_vjp` is differentiable too (with lanes or not).
fn order_of(second: bool, twice: bool, (vjp, lanes): (bool, bool)) -> crate::signature::Order {
    use crate::signature::Order;
    match (second, twice, vjp) {
        (false, _, _) => Order::Once,
        (true, true, true) => Order::TwiceVjp { lanes },
        (true, true, false) => Order::Twice,
        (true, false, _) => Order::OwnOnly,
    }
}

/// Prints each stage of `stages` (`#[differentiable(dump)]`).
fn dump_stages(stages: &Stages) {
    let transposes = stages.transposed.funcs.iter();
    let transposes = transposes.filter(|f| f.name.as_str().ends_with(".t"));
    eprintln!(
        "== simplified ==\n{}\n== J (simplified) ==\n{}\n== U (simplified) ==\n{}\n== T of the residual (simplified) ==\n{}",
        stages.source,
        stages.jvp,
        stages.unzipped,
        transposes.map(ToString::to_string).collect::<String>()
    );
}

/// Whether other differentiable code can pass `f` arrays (its
/// linearization `detached` from them), and whether it can call `f` at all.
///
/// Other differentiable functions cannot pass arrays read by index, nor
/// structs in tuples or arrays, yet: no companions to call. They can
/// receive any result: a caller owns an array result as its own IR array,
/// and T gives it a cotangent buffer. A generic function's callers name
/// its linearization at their arguments' float type (`cube<f64>`); a
/// method of a generic block's name it through the receiver's type
/// (`Point<T>`, `Point<f64>`). With arrays, callers pass them back to the
/// detached linearization (see [`Detached`]). A method's callers outside
/// its block may not know its signature, so they cannot tell its
/// `#[nondiff]` slices: those keep it closed.
fn callability(l: &Lowered, sig: &Sig, detached: bool, owner: Owner) -> (bool, bool) {
    let structs = !sig
        .active
        .iter()
        .all(|(_, s)| super::companions::crosses(s));
    let with_arrays = detached && (matches!(owner, Owner::Free) || !nondiff_slices(l, sig));
    let callable = (sig.arrays().is_empty() || with_arrays) && !structs;
    (with_arrays, callable)
}

/// The callee side of calls of `f` (`companions`), for a function other
/// differentiable code can call: with `lanes`, and detached from its
/// slices (`with_arrays`, a linearization named `'static` if it
/// borrows: [`Detached`]).
fn callee_side(
    (item, l, sig, owner): (&syn::ItemFn, &Lowered, &Sig, Owner),
    map_name: &syn::Ident,
    (lanes, once): (crate::expand::companions::CompanionLanes, bool),
    (with_arrays, detached_static): (bool, bool),
) -> TokenStream {
    let float = (sig.float.decl(None), &sig.float.where_clause);
    let map_ty = sig
        .float
        .decl(detached_static.then(|| syn::Lifetime::new("'static", Span::call_site())));
    let c = companions(
        item,
        &l.params,
        (map_name, (float.0.clone(), map_ty.clone()), float.1),
        (&sig.ret_ty, &sig.ret_tan),
        &sig.active,
        &sig.allow,
        (owner.callee_type(), lanes),
        (with_arrays, detached_static),
    );
    let m = owner.method_impl(&item.sig.ident, map_name, float.clone(), &map_ty);
    let once = (once && owner.callee_type().is_some())
        .then(|| {
            crate::expand::companions::once_only(
                &l.params,
                (map_name, &map_ty),
                (&float.0, float.1),
                (with_arrays, sig.float.param.as_ref()),
                &sig.allow,
            )
        })
        .flatten();
    quote!(#c #m #once)
}

/// Whether `f` has `#[nondiff]` slice parameters (as calls pass them,
/// [`crate::lower::array_param`]).
fn nondiff_slices(l: &Lowered, sig: &Sig) -> bool {
    l.params
        .iter()
        .any(|p| p.active.is_none() && crate::lower::array_param(&p.ty, sig.float.param.as_ref()))
}

/// `f_jvp(params.., tangents..) -> (R, R)`: J(f).
fn jvp_item(
    item: &syn::ItemFn,
    l: &Lowered,
    sig: &Sig,
    fj: &Func,
    calls: &Calls,
    names: &mut Names,
) -> TokenStream {
    let (ys, dys) = (Results::new("__y", &l.ret), Results::new("__dy", &l.ret));
    let y_out = ys.value(names, primal_from_ir);
    let dy_out = dys.value(names, from_ir);
    let bound = pattern(&ys.names.iter().chain(&dys.names).collect::<Vec<_>>());
    let jvp_body = body(fj, &sig.jvp_args(), calls);
    let name = &item.sig.ident;
    let link = sig.owner.doc_path(name, true);
    let doc = format!("Forward mode of [`{link}`]: its value and its directional derivative along the given tangents (one per differentiable parameter). Generated by linear-ad.");
    let (ret_ty, ret_tan) = (&sig.ret_ty, &sig.ret_tan);
    let jvp_name = format_ident!("{}_jvp", name);
    let checks = sig.tangent_length_checks(&jvp_name.to_string());
    let own = sig.own_primals.iter().chain(&sig.own_tangents);
    sig.function(
        &doc,
        &jvp_name,
        &sig.tangent_params,
        quote!((#ret_ty, #ret_tan)),
        quote!(#(#checks)* #(#own)* let #bound = #jvp_body; (#y_out, #dy_out)),
    )
}

/// `f_jvp` as the forward pass `f_lin` runs, then the derivative `apply`
/// runs, each the same code as theirs, inlined (see [`inline_always_optimised`]):
/// the same operations as J(f)'s on the same values, in another order,
/// for a tape held in registers (only for a tape that owns no heap
/// memory: [`Lin::shares_jvp`]).
fn shared_jvp_item(item: &syn::ItemFn, sig: &Sig) -> TokenStream {
    let (y, map) = (hidden("__y"), hidden("__map"));
    let name = &item.sig.ident;
    let link = sig.owner.doc_path(name, true);
    let doc = format!("Forward mode of [`{link}`]: its value and its directional derivative along the given tangents (one per differentiable parameter). Generated by linear-ad.");
    let (ret_ty, ret_tan) = (&sig.ret_ty, &sig.ret_tan);
    let jvp_name = format_ident!("{}_jvp", name);
    let tangent = match sig.tangent_idents.as_slice() {
        [one] => quote!(#one),
        many => quote!((#(#many,)*)),
    };
    let forward = sig.call_forward(&forward_name(item));
    sig.emit(
        (quote!(#[doc = #doc] #[inline]), sig.vis),
        &jvp_name,
        (None, &sig.passing, &sig.tangent_params),
        quote!((#ret_ty, #ret_tan)),
        quote! {
            let (#y, #map) = #forward;
            (#y, #map.__tangent(#tangent))
        },
    )
}

/// The tape as a struct: one field per saved value, named after its IR
/// variable (as printed by `dump`), except in a tape of more than
/// [`WIDE`](crate::codegen::WIDE) values, whose values the forward pass
/// computed are held in groups of `WIDE`, tuples in fields `__tape0`,
/// `__tape1`, ... ([`Slot`]).
///
/// rustc finds a struct's field by name by a linear search of its fields
/// (`FnCtxt::check_expr_field`), so every `self.x` costs time linear in the
/// struct's width: with one field per value, `apply`, `transpose` and the
/// derived `Clone` of a 10,000-statement function's linearization (17,500
/// fields) took about 0.9 s of type checking. A tuple's field is found by
/// its index.
struct Tape {
    fields: Vec<syn::Ident>,
    /// Per field, where the struct holds it.
    slots: Vec<Slot>,
    tys: Vec<Ty>,
    /// Per field, the array parameter it holds, if any: U saves an input
    /// array read by index as the array itself, never its elements, so the
    /// linearization borrows it (`&'a [T]`), or owns a `Vec<T>` the
    /// function took by value (moved in, not copied).
    inputs: Vec<Option<(TokenStream, Shape)>>,
    /// Per field, the IR variable of the parameter (or `#[nondiff]` data
    /// array) it holds, if any.
    input_vars: Vec<Option<Var>>,
    /// One `usize` per array parameter of run-time length: the length of
    /// its cotangent buffer.
    lens: Vec<syn::Ident>,
}

/// Where the linearization's struct holds a tape value ([`Tape`]).
#[derive(Clone, Copy)]
enum Slot {
    /// In a field of its own, named after the value.
    Own,
    /// Element `.1` of the tuple in group field `.0`.
    Group(usize, usize),
}

/// The name of a linearization's group field `g` ([`Slot::Group`]).
fn group_field(g: usize) -> syn::Ident {
    format_ident!("__tape{}", g)
}

/// The lifetime of the input arrays a linearization borrows.
fn input_lifetime() -> syn::Lifetime {
    syn::Lifetime::new("'__linear_ad_in", Span::call_site())
}

impl Tape {
    fn new(
        forward: &Func,
        residual: &Func,
        params: &[(Var, TokenStream, Shape)],
    ) -> Result<Tape, String> {
        let tys = match forward.nl_rets.last() {
            Some(Ty::Tuple(ts)) => ts.clone(),
            _ => return Err("the forward pass returns no tape".into()),
        };
        let vars: Vec<Var> = match &residual.body {
            crate::ir::Expr::Block { stmts, .. } => match stmts.first() {
                Some(crate::ir::Stmt::Unpack { vars, .. }) => {
                    vars.iter().map(|b| b.var.clone()).collect()
                }
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        let held: Vec<Option<&(Var, TokenStream, Shape)>> = (0..tys.len())
            .map(|k| {
                let v = vars.get(k)?;
                params
                    .iter()
                    .find(|(p, _, s)| p == v && matches!(s, Shape::Slice(..)))
            })
            .collect();
        let inputs = held
            .iter()
            .map(|h| h.map(|(_, id, s)| (id.clone(), s.clone())))
            .collect();
        let input_vars = held.iter().map(|h| h.map(|(v, _, _)| v.clone())).collect();
        // The values the forward pass computed (not the input arrays the
        // tape holds): in groups, if there are more than `WIDE` of them.
        let computed: Vec<usize> = (0..tys.len()).filter(|&k| held[k].is_none()).collect();
        let mut slots = vec![Slot::Own; tys.len()];
        let mut field_names = Names::default();
        if tys.len() > crate::codegen::WIDE {
            for (i, &k) in computed.iter().enumerate() {
                slots[k] = Slot::Group(i / crate::codegen::WIDE, i % crate::codegen::WIDE);
            }
            for g in 0..computed.len().div_ceil(crate::codegen::WIDE) {
                field_names.reserve(&group_field(g).to_string());
            }
        }
        let fields = (0..tys.len())
            .map(|k| match vars.get(k) {
                Some(v) => field_names.ident(v),
                None => format_ident!("t{}", k),
            })
            .map(|id| syn::Ident::new(&id.to_string(), Span::call_site()))
            .collect();
        Ok(Tape {
            fields,
            slots,
            tys,
            inputs,
            input_vars,
            lens: Vec::new(),
        })
    }

    /// Whether the linearization borrows an input array (and so has a
    /// lifetime parameter).
    fn borrows(&self) -> bool {
        self.inputs.iter().flatten().any(|(_, s)| !s.owned_input())
    }

    /// The linearization's lifetime, if it borrows.
    fn lifetime(&self) -> Option<syn::Lifetime> {
        self.borrows().then(input_lifetime)
    }

    /// The Rust type of field `k`.
    fn field_ty(&self, k: usize, calls: &Calls) -> TokenStream {
        match (&self.inputs[k], &self.tys[k]) {
            (Some((_, s)), t) if s.owned_input() => crate::lower::owned_array(t),
            (Some(_), Ty::Array(e, n)) => {
                let (lt, e) = (input_lifetime(), calls.rust_ty(e));
                match n {
                    Some(n) => {
                        let n = proc_macro2::Literal::usize_unsuffixed(*n as usize);
                        quote!(&#lt [#e; #n])
                    }
                    None => quote!(&#lt [#e]),
                }
            }
            // A flat array of inner loops' records
            // (`passes::records::flat_tapes`), which the forward pass made.
            (None, Ty::Array(e, _)) if crate::codegen::pooled(e) => {
                let e = calls.rust_ty(e);
                quote!(::linear_ad::__private::Tape<#e>)
            }
            (None, Ty::Array(e, _)) => {
                let e = calls.rust_ty(e);
                quote!(::linear_ad::__private::Vec<#e>)
            }
            (_, t) => calls.rust_ty(t),
        }
    }

    /// The linearization's field initialisers in the order they may run:
    /// the forward pass's tape (which borrows the inputs), the lengths
    /// (`lens`), then the `Vec`s taken by value, moved in last.
    fn field_inits(&self, elems: &[TokenStream], lens: Vec<TokenStream>) -> Vec<TokenStream> {
        let (mut read, mut moved) = (Vec::new(), Vec::new());
        for (k, f) in self.fields.iter().enumerate() {
            let init = self.field_init(k, &elems[k]);
            match (&self.inputs[k], self.slots[k]) {
                (Some((_, s)), _) if s.owned_input() => moved.push(quote!(#f: #init)),
                (_, Slot::Own) => read.push(quote!(#f: #init)),
                (_, Slot::Group(..)) => {}
            }
        }
        for (g, members) in self.groups().iter().enumerate() {
            let (g, inits) = (
                group_field(g),
                members.iter().map(|&k| self.field_init(k, &elems[k])),
            );
            read.push(quote!(#g: (#(#inits,)*)));
        }
        read.extend(lens);
        read.extend(moved);
        read
    }

    /// Whether each group field `g` holds exactly the forward pass's tape
    /// elements `WIDE·g ..`, as they are: then a tape the forward pass
    /// returns in groups (`codegen::forward_body`) moves into the struct
    /// a group at a time ([`Tape::group_inits`]).
    fn aligned(&self) -> bool {
        let wide = crate::codegen::WIDE;
        (0..self.tys.len()).all(|k| {
            matches!(self.slots[k], Slot::Group(g, i) if g == k / wide && i == k % wide)
                && self.inputs[k].is_none()
                && !matches!(&self.tys[k], Ty::Array(e, _) if crate::codegen::pooled(e))
        })
    }

    /// [`Tape::field_inits`] for an [`aligned`](Tape::aligned) tape
    /// returned in groups as `tape`: each group field is the group.
    /// Unpacking thousands of values into locals and packing them again
    /// cost rustc's MIR optimiser (its scalar replacement of aggregates)
    /// time quadratic in the tape's length, in release builds: 1.2 s of
    /// a 2,000-statement function's 2.2 s build, 42 s of 55 s at 10,000
    /// (the macro optimised).
    fn group_inits(&self, tape: &syn::Ident, lens: Vec<TokenStream>) -> Vec<TokenStream> {
        let mut read: Vec<TokenStream> = (0..self.groups().len())
            .map(|g| {
                let (f, i) = (group_field(g), syn::Index::from(g));
                quote!(#f: #tape.#i)
            })
            .collect();
        read.extend(lens);
        read
    }

    /// The fields of each group field, in order ([`Slot::Group`]).
    fn groups(&self) -> Vec<Vec<usize>> {
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for (k, slot) in self.slots.iter().enumerate() {
            if let Slot::Group(g, _) = *slot {
                if groups.len() <= g {
                    groups.push(Vec::new());
                }
                groups[g].push(k);
            }
        }
        groups
    }

    /// Field `k` as a place in a linearization `map`: `map.x`, or
    /// `map.__tape3.5` for a value held in a group.
    fn place(&self, map: TokenStream, k: usize) -> TokenStream {
        match self.slots[k] {
            Slot::Own => {
                let f = &self.fields[k];
                quote!(#map.#f)
            }
            Slot::Group(g, p) => {
                let (g, p) = (group_field(g), syn::Index::from(p));
                quote!(#map.#g.#p)
            }
        }
    }

    /// Whether field `k` is built from the forward pass's tape element `k`
    /// ([`Tape::field_init`]).
    fn reads_element(&self, k: usize) -> bool {
        !matches!(&self.inputs[k], Some((_, s)) if s.owned_input())
    }

    /// The expression field `k` is built from in `f_lin`: the forward
    /// pass's tape element `elem`, or the parameter itself where the
    /// linearization takes a `Vec` by value.
    fn field_init(&self, k: usize, elem: &TokenStream) -> TokenStream {
        match &self.inputs[k] {
            Some((id, s)) if s.owned_input() => match s.row() {
                // Moved in as its flat array, not copied.
                Some(_) => quote!(#id.into_flattened()),
                None => quote!(#id),
            },
            None if matches!(&self.tys[k], Ty::Array(e, _) if crate::codegen::pooled(e)) => {
                quote!(::linear_ad::__private::Tape::from(#elem))
            }
            _ => quote!(#elem),
        }
    }

    /// The tape as `apply` and `transpose` read it, in place: its
    /// non-`Copy` parts (lists, sums holding them, callees' tapes) by
    /// reference.
    fn read_in_place(&self, detached: Option<&Detached>) -> TokenStream {
        let reads = self.tys.iter().enumerate().map(|(k, t)| {
            let place = self.place(quote!(self), k);
            if let Some(id) = detached.and_then(|d| d.input_of(k)) {
                quote!(&#id)
            } else if crate::codegen::is_copy(t) {
                place
            } else {
                quote!(&#place)
            }
        });
        quote!((#(#reads,)*))
    }

    /// Whether every field is `Copy` (then the tape owns no heap memory).
    fn is_copy(&self) -> bool {
        (0..self.tys.len()).all(|k| match &self.inputs[k] {
            Some((_, s @ Shape::Slice(..))) => !s.owned_input(),
            _ => crate::codegen::is_copy(&self.tys[k]),
        })
    }

    /// The struct, with `Clone` (and `Copy` where every field is), and its
    /// `TapeSize` and `Debug` impls.
    fn items(&self, map_name: &syn::Ident, sig: &Sig, doc: &str, calls: &Calls) -> TokenStream {
        let Sig {
            map_vis: vis,
            allow,
            ..
        } = sig;
        let (mut fields, mut field_tys) = (Vec::new(), Vec::new());
        for (k, f) in self.fields.iter().enumerate() {
            if let Slot::Own = self.slots[k] {
                fields.push(quote!(#f));
                field_tys.push(self.field_ty(k, calls));
            }
        }
        for (g, members) in self.groups().iter().enumerate() {
            let tys = members.iter().map(|&k| self.field_ty(k, calls));
            let g = group_field(g);
            fields.push(quote!(#g));
            field_tys.push(quote!((#(#tys,)*)));
        }
        let float = &sig.float;
        let (generics, where_clause) = (float.decl(self.lifetime()), &float.where_clause);
        fields.extend(self.lens.iter().map(|f| quote!(#f)));
        field_tys.extend(self.lens.iter().map(|_| quote!(usize)));
        let marker = float.marker().map(|(decl, _)| quote!(#decl,));
        let derive = if self.is_copy() {
            quote!(#[derive(Clone, Copy)])
        } else {
            quote!(#[derive(Clone)])
        };
        // Only the parts that own heap memory, summed over a flat array: a
        // chain of `+` as long as the tape nests as deep in rustc's parser.
        let heap: Vec<TokenStream> = (0..self.tys.len())
            .map(|k| (self.place(quote!(self), k), &self.tys[k], &self.inputs[k]))
            .map(|(place, t, input)| match (input, t) {
                // A flat array of records: reals and integers only.
                (None, Ty::Array(e, _)) => {
                    let e = calls.rust_ty(e);
                    quote!((#place).capacity() * ::core::mem::size_of::<#e>())
                }
                _ => calls.heap_bytes(place, t),
            })
            .filter(|h| h.to_string() != "0usize")
            .collect();
        let heap_len = heap.len();
        let map_str = map_name.to_string();
        // `Debug` by hand: per-iteration records may be tuples longer than
        // the standard library's `Debug` impls.
        quote! {
            #[doc = #doc]
            #derive
            #allow
            #[allow(non_camel_case_types)]
            #vis struct #map_name #generics #where_clause {
                #(#fields: #field_tys,)*
                #marker
            }

            #allow
            impl #generics ::linear_ad::TapeSize for #map_name #generics #where_clause {
                fn tape_bytes(&self) -> usize {
                    let __heap: [usize; #heap_len] = [#(#heap),*];
                    ::core::mem::size_of::<Self>() + __heap.iter().sum::<usize>()
                }
            }

            #allow
            impl #generics ::core::fmt::Debug for #map_name #generics #where_clause {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.debug_struct(#map_str)
                        .field("tape_bytes", &::linear_ad::TapeSize::tape_bytes(self))
                        .finish_non_exhaustive()
                }
            }
        }
    }
}

/// What the linearization keeps of the arrays' lengths, and the checks
/// of `apply`'s and `transpose`'s arguments against them.
struct Lengths {
    /// Field initialisers of the tape's lengths, in `f_lin`.
    len_inits: Vec<TokenStream>,
    /// `apply`'s checks of its tangent arrays.
    tangent_checks: Vec<TokenStream>,
    /// The same checks, as `apply_lanes` reports them.
    lanes_checks: Vec<TokenStream>,
    /// `transpose`'s check of its cotangent array (if the result is one).
    ct_check: TokenStream,
}

impl Lengths {
    /// One tape field per array parameter of run-time length (the length
    /// of its cotangent buffer, which `transpose` zeroes: pushed on
    /// `t_args`) and one for a result of run-time length, `y_len` in
    /// `f_lin`.
    #[allow(clippy::too_many_arguments)]
    fn new(
        sig: &Sig,
        l: &Lowered,
        tape: &mut Tape,
        t_args: &mut Vec<(TokenStream, Hold)>,
        tangent: &syn::Ident,
        cotangent: &syn::Ident,
    ) -> Lengths {
        let name = &l.func.name;
        let lin_name = format!("{name}_lin");
        let (mut len_inits, mut tangent_checks, mut lanes_checks) =
            (Vec::new(), Vec::new(), Vec::new());
        let pieces = sig.pieces.iter().filter(|p| p.is_array());
        for (k, ((s, len), piece)) in sig.arrays().into_iter().zip(pieces).enumerate() {
            let field = format_ident!("__len{}", k);
            t_args.push((zero_buffer(s, quote!(self.#field)), Hold::Owned));
            if s.runtime_array() {
                tape.lens.push(field.clone());
                len_inits.push(quote!(#field: #len));
                let i = sig.active[piece.param].0 + 1;
                let what = piece.describe(i);
                let t = piece.of(&sig.tangent_part(piece.param, tangent), false);
                for (method, checks) in [
                    ("LinearMap::apply", &mut tangent_checks),
                    ("apply_lanes", &mut lanes_checks),
                ] {
                    let msg = format!("`{method}` of `{lin_name}`'s linearization: the tangent of {what} has the wrong length");
                    checks.push(length_check(&t, &quote!(self.#field), &msg));
                }
            }
        }
        // The cotangent of a result of run-time length has its length.
        let places = super::results::places(&quote!(#cotangent), &l.ret);
        let ct_check = len_outs(&l.ret)
            .into_iter()
            .map(|(field, i)| {
                let y_len = y_len(i);
                tape.lens.push(field.clone());
                len_inits.push(quote!(#field: #y_len));
                let msg = format!("`LinearMap::transpose` of `{lin_name}`'s linearization: the cotangent must have the length of `{name}`'s result{}", which_result(&l.ret, i));
                length_check(&places[i].0, &quote!(self.#field), &msg)
            })
            .collect();
        Lengths {
            len_inits,
            tangent_checks,
            lanes_checks,
            ct_check,
        }
    }
}

/// The linearization's fields holding the lengths of the results of
/// run-time length, which `transpose` and `f_vjp` check the cotangents
/// against, each with its result's index.
fn len_outs(ret: &Shape) -> Vec<(syn::Ident, usize)> {
    let results = ret.results();
    let one = results.len() == 1;
    results
        .iter()
        .enumerate()
        .filter(|(_, s)| s.runtime_array())
        .map(|(i, _)| match one {
            true => (format_ident!("__len_out"), i),
            false => (format_ident!("__len_out{}", i), i),
        })
        .collect()
}

/// The length of result `i` (of run-time length) in `f_lin`.
fn y_len(i: usize) -> syn::Ident {
    match i {
        0 => hidden("__y_len"),
        i => format_ident!("__y_len{}", i, span = Span::mixed_site()),
    }
}

/// Which result a message about result `i` of a result of shape `ret` is
/// about: nothing for one result, else its position in the tuple.
fn which_result(ret: &Shape, i: usize) -> String {
    match ret.results().len() {
        1 => String::new(),
        _ => format!(" (its array result number {})", i + 1),
    }
}

/// The docs of the linearization type and of `f_lin`.
fn lin_docs(sig: &Sig, name: &syn::Ident, lin_name: &syn::Ident) -> (String, String) {
    let (link_out, link_in) = (
        sig.owner.doc_path(name, false),
        sig.owner.doc_path(name, true),
    );
    let lin_link = sig.owner.doc_path(lin_name, false);
    (
        format!("The linearization of [`{link_out}`] at a point, returned by [`{lin_link}`]: the tape of values its derivative needs. Generated by linear-ad."),
        format!("Linearizes [`{link_in}`] once: its value, and a [`LinearMap`](::linear_ad::LinearMap) that applies the derivative at this point (`apply`, forward mode) and its transpose (`transpose`, reverse mode) from one saved tape. Generated by linear-ad."),
    )
}

/// The linearization type (the tape, `LinearMap` from the residual and its
/// transpose), and `f_lin(params..) -> (R, FLinearization)`, U(J(f))'s
/// forward pass.
#[allow(clippy::too_many_arguments)]
fn lin_items(
    item: &syn::ItemFn,
    l: &Lowered,
    sig: &Sig,
    out: &Outputs,
    (fwd_body, lanes): (&(TokenStream, Option<usize>), LanesAsk),
    map_name: &syn::Ident,
    calls: &Calls,
    names: &mut Names,
) -> Result<Lin, String> {
    let held: Vec<_> = sig.inputs.iter().chain(&sig.data).cloned().collect();
    let mut tape = Tape::new(out.forward, out.residual, &held)?;
    let lin_name = format_ident!("{}_lin", item.sig.ident);
    let (map_doc, lin_doc) = lin_docs(sig, &item.sig.ident, &lin_name);
    let detached = Detached::plan(l, sig, &tape);
    let self_tape = tape.read_in_place(detached.as_ref());

    let (tangent, cotangent) = (hidden("__tangent"), hidden("__cotangent"));
    let (unpack, ts) = sig.unpack_tangents(names, &tangent);
    let mut args = vec![(self_tape.clone(), Hold::Shallow)];
    args.extend(ts.into_iter().map(|t| (t, Hold::Owned)));
    let apply = body_holding(out.residual, &args, calls);
    let rs = Results::new("__r", &l.ret);
    let (r, conv) = (
        pattern(&rs.names.iter().collect::<Vec<_>>()),
        rs.value(names, from_ir),
    );
    let lanes = lanes::residual(lanes, (sig, l), out.residual, (&args, calls));
    let has_lanes = matches!(lanes, Some(Ok(_)));

    let mut t_args = vec![(self_tape, Hold::Shallow)];
    for (place, s) in places(&quote!(#cotangent), &l.ret) {
        t_args.push((result_to_ir(place, s, names), Hold::Owned));
    }
    let ys = Results::new("__y", &l.ret);
    let lengths = Lengths::new(sig, l, &mut tape, &mut t_args, &tangent, &cotangent);
    let Lengths {
        len_inits,
        tangent_checks,
        lanes_checks,
        ct_check,
    } = lengths;
    let zeros = detached.as_ref().map_or_else(Vec::new, |d| {
        d.start_from_accumulators(&mut t_args, l.ret.results().len())
    });
    let apply_body = quote!({ #unpack #(#tangent_checks)* let #r = #apply; #conv });
    let lanes =
        lanes.map(|b| b.map(|apply| quote!({ #unpack #(#lanes_checks)* let #r = #apply; #conv })));
    let tape_items = tape.items(map_name, sig, &map_doc, calls);
    let t_body = body_holding(out.transposed, &t_args, calls);
    let transpose_out = sig.pack_cotangents(names, t_body);

    let generics = sig.float.decl(tape.lifetime());
    let measure: Vec<TokenStream> = len_outs(&l.ret)
        .into_iter()
        .map(|(_, i)| {
            let (y, y_len) = (&ys.names[i], y_len(i));
            let len = super::result_len(&quote!(#y), ys.shapes[i]);
            quote!(let #y_len = #len;)
        })
        .collect();
    let fns = lin_fns(
        (item, l, sig, &tape),
        (fwd_body, map_name, &lin_name, &lin_doc),
        (len_inits, measure),
        names,
    );
    let maps = MapBodies {
        apply: apply_body,
        lanes,
        ct_check,
        transpose: transpose_out,
        zeros,
    };
    let map_impls = maps.impls(
        sig,
        (map_name, &generics),
        (&tangent, &cotangent),
        detached.as_ref(),
    );
    let detach = detached
        .as_ref()
        .map(|d| d.detach_fn(&tape, sig, (map_name, &generics)));
    let items = quote!(#tape_items #map_impls #detach);
    let lin = Lin {
        items,
        fns,
        lanes: has_lanes,
        // Not where `f_lin` would allocate a tape `f_jvp` does not need,
        // nor check tangent arrays' lengths under `apply`'s name.
        shares_jvp: tape.is_copy() && sig.arrays().is_empty(),
        detached,
        borrows: tape.borrows(),
    };
    Ok(lin)
}

/// `f_lin(params..) -> (R, FLinearization)` and the forward pass it shares
/// with `f_vjp` (see [`Sig::forward_helper`]), which builds the
/// linearization from the forward pass's `tape`, the lengths it keeps
/// (`len_inits`) and, where the cotangents of results are checked, the
/// results' lengths (`measure`).
fn lin_fns(
    (item, l, sig, tape): (&syn::ItemFn, &Lowered, &Sig, &Tape),
    (fwd_body, map_name, lin_name, lin_doc): (
        &(TokenStream, Option<usize>),
        &syn::Ident,
        &syn::Ident,
        &str,
    ),
    (len_inits, measure): (Vec<TokenStream>, Vec<TokenStream>),
    names: &mut Names,
) -> TokenStream {
    let (ys, tape_var) = (Results::new("__y", &l.ret), hidden("__tape"));
    let y_out = ys.value(names, primal_from_ir);
    let bound = pattern(&ys.names.iter().chain([&tape_var]).collect::<Vec<_>>());
    let (fwd_body, grouped) = fwd_body;
    // The tape's elements: fields of the tuple, or, where the forward pass
    // returns it in groups, locals bound from them (`codegen::forward_body`).
    let by_group = matches!(grouped, Some(n) if *n == tape.fields.len()) && tape.aligned();
    let (elems, unpack) = match grouped {
        // Group by group, where the struct's groups are the tape's.
        Some(_) if by_group => (Vec::new(), quote!()),
        // One element per field, as the struct was laid out.
        Some(n) if *n == tape.fields.len() => {
            let ids: Vec<syn::Ident> = (0..*n)
                .map(|k| format_ident!("__t{}", k, span = Span::mixed_site()))
                .collect();
            let pats: Vec<TokenStream> = ids
                .iter()
                .enumerate()
                .map(|(k, id)| {
                    if tape.reads_element(k) {
                        quote!(#id)
                    } else {
                        quote!(_)
                    }
                })
                .collect();
            let unpack = crate::codegen::let_wide(&pats, quote!(#tape_var), names);
            (ids.iter().map(|id| quote!(#id)).collect(), unpack)
        }
        Some(_) => {
            let msg = "linear-ad internal error: the forward pass's tape does not match the linearization's fields";
            let elems = vec![quote!(::core::compile_error!(#msg)); tape.fields.len()];
            (elems, quote!())
        }
        None => {
            let elems = (0..tape.fields.len()).map(|k| {
                let i = syn::Index::from(k);
                quote!(#tape_var.#i)
            });
            (elems.collect::<Vec<_>>(), quote!())
        }
    };
    let mut read = if by_group {
        tape.group_inits(&tape_var, len_inits)
    } else {
        tape.field_inits(&elems, len_inits)
    };
    read.extend(sig.float.marker().map(|(_, init)| init));
    let generics = sig.float.decl(tape.lifetime());
    let body = quote! {
        let #bound = #fwd_body;
        #unpack
        #(#measure)*
        (#y_out, #map_name { #(#read,)* })
    };
    let ret_ty = &sig.ret_ty;
    let ret = quote!((#ret_ty, #map_name #generics));
    let forward = sig.forward_helper(&forward_name(item), tape.lifetime(), ret.clone(), body);
    let passing = if tape.borrows() {
        &sig.passing_borrowed
    } else {
        &sig.passing
    };
    let lin_fn = sig.emit(
        (quote!(#[doc = #lin_doc] #[inline]), sig.vis),
        lin_name,
        (tape.lifetime(), passing, &[]),
        ret,
        sig.call_forward(&forward_name(item)),
    );
    quote!(#forward #lin_fn)
}

/// The bodies of the linearization's derivative and its transpose, with
/// the cotangent's length check `transpose` runs first.
struct MapBodies {
    apply: TokenStream,
    /// With `lanes`: the body of `apply_lanes`, or the error saying why
    /// there is none.
    lanes: Option<Result<TokenStream, TokenStream>>,
    ct_check: TokenStream,
    transpose: TokenStream,
    /// For a detached linearization, the zeroed cotangent buffers
    /// `__reverse` starts `__reverse_into` from (see [`Detached`]).
    zeros: Vec<TokenStream>,
}

impl MapBodies {
    /// The `LinearMap` impl, and the inherent `__tangent` and `__reverse`
    /// that hold the bodies, which `apply` and `f_jvp`, and `transpose`
    /// and `f_vjp`, share (inlined as [`Sig::forward_helper`] says).
    fn impls(
        self,
        sig: &Sig,
        (map_name, generics): (&syn::Ident, &TokenStream),
        (tangent, cotangent): (&syn::Ident, &syn::Ident),
        detached: Option<&Detached>,
    ) -> TokenStream {
        let MapBodies {
            apply,
            lanes,
            ct_check,
            transpose,
            zeros,
        } = self;
        let (ins, own) = match detached {
            Some(d) => (d.params(), d.own_args(quote!(self))),
            None => (Vec::new(), Vec::new()),
        };
        let lanes = match lanes {
            Some(Ok(body)) => lanes::method(sig, (map_name, generics), tangent, body, (&ins, &own)),
            Some(Err(refusal)) => refusal,
            None => quote!(),
        };
        let (in_ty, ret_tan, allow) = (&sig.in_ty, &sig.ret_tan, &sig.allow);
        let where_clause = &sig.float.where_clause;
        let (shown_tangent, shown_cotangent) = (readable("tangent"), readable("cotangent"));
        let inline = inline_always_optimised();
        let reverse = match detached {
            // The body once, in `__reverse_into`, which callers' transposes
            // call with their accumulators.
            Some(d) if !zeros.is_empty() => {
                let (accs, acc_tys): (Vec<_>, Vec<_>) = d.accs.iter().cloned().unzip();
                let args: Vec<syn::Ident> = d.ins.iter().map(|(id, _)| id.clone()).collect();
                quote! {
                    #inline
                    fn __reverse(&self, #(#ins,)* #cotangent: #ret_tan) -> #in_ty {
                        self.__reverse_into(#(#args,)* #cotangent, #(#zeros,)*)
                    }
                    #inline
                    fn __reverse_into(&self, #(#ins,)* #cotangent: #ret_tan, #(#accs: #acc_tys,)*) -> #in_ty {
                        #transpose
                    }
                }
            }
            _ => quote! {
                #inline
                fn __reverse(&self, #(#ins,)* #cotangent: #ret_tan) -> #in_ty {
                    #transpose
                }
            },
        };
        quote! {
            #allow
            impl #generics ::linear_ad::LinearMap<#in_ty, #ret_tan> for #map_name #generics #where_clause {
                #[inline]
                fn apply(&self, #shown_tangent: #in_ty) -> #ret_tan {
                    self.__tangent(#(#own,)* #shown_tangent)
                }
                #[inline]
                fn transpose(&self, #shown_cotangent: #ret_tan) -> #in_ty {
                    let #cotangent = #shown_cotangent;
                    #ct_check
                    self.__reverse(#(#own,)* #cotangent)
                }
            }

            #allow
            impl #generics #map_name #generics #where_clause {
                #inline
                fn __tangent(&self, #(#ins,)* #tangent: #in_ty) -> #ret_tan {
                    #apply
                }
                #reverse
            }

            #lanes
        }
    }
}

/// How a linearization whose inputs include arrays crosses a call
/// (`expand::calls`): its tape does not hold those arrays, which the
/// caller may own (a local array cannot be borrowed by a tape that
/// outlives it), so the caller keeps them as residuals of its own and
/// passes them back to `apply` and `transpose`. The bodies of `__tangent`
/// and `__reverse` read the arrays from parameters (`__in0`, ..., one per
/// array parameter of `f`, in order), which the linearization's own
/// `apply`, `transpose` and `f_vjp` fill from its fields; the callee's
/// `__lin` hands callers the linearization with those fields emptied
/// (`__detach`), which then borrows nothing.
pub(super) struct Detached {
    /// Per array parameter: the name its array goes by in the bodies, and
    /// its element type.
    ins: Vec<(syn::Ident, TokenStream)>,
    /// Per tape field holding an array parameter: the field, and which
    /// parameter (an index into `ins`).
    fields: Vec<(usize, usize)>,
    /// The tape's field names, for [`Detached::own_args`].
    names: Vec<syn::Ident>,
    /// Per differentiable array parameter, in order: the cotangent buffer
    /// `__reverse_into` starts from (a caller's accumulator), and its type.
    accs: Vec<(syn::Ident, TokenStream)>,
}

impl Detached {
    /// The plan for `f`'s linearization, if callers can pass it arrays:
    /// every differentiable array parameter a slice of floats
    /// ([`crate::lower::array_param`]), and every array the tape borrows
    /// one of those or a `#[nondiff]` one.
    fn plan(l: &Lowered, sig: &Sig, tape: &Tape) -> Option<Detached> {
        let float = sig.float.param.as_ref();
        let mut keys = Vec::new();
        let mut ins = Vec::new();
        for p in &l.params {
            if !crate::lower::array_param(&p.ty, float) {
                continue;
            }
            let key = match (&p.active, data_param(l, &p.pat)) {
                (Some((Shape::Slice(e, _), v)), _) => Some((v.clone(), e.rust())),
                (Some(_), _) => return None,
                (None, Some((v, _, Shape::Slice(e, _)))) => Some((v.clone(), e.rust())),
                (None, _) => None,
            };
            let j = ins.len();
            let elem = match &key {
                Some((_, e)) => e.clone(),
                None => array_elem(&p.ty),
            };
            keys.push(key.map(|(v, _)| v));
            ins.push((format_ident!("__in{}", j, span = Span::mixed_site()), elem));
        }
        // Every array the derivative reads must be one a caller passes
        // back; an array parameter of another kind (rows, fixed length,
        // by value) keeps the linearization from crossing calls.
        let covered = |v: &Var| keys.iter().any(|k| k.as_ref() == Some(v));
        let active_arrays = sig
            .inputs
            .iter()
            .filter(|(_, _, s)| matches!(s, Shape::Slice(..)));
        // Without a differentiable array, `#[nondiff]` arrays cross as
        // constants, as they did before arrays crossed calls.
        if active_arrays.clone().next().is_none()
            || !active_arrays.clone().all(|(v, _, _)| covered(v))
        {
            return None;
        }
        let mut fields = Vec::new();
        for (k, v) in tape.input_vars.iter().enumerate() {
            let Some(v) = v else { continue };
            fields.push((k, keys.iter().position(|key| key.as_ref() == Some(v))?));
        }
        let accs = active_arrays
            .enumerate()
            .map(|(k, (_, _, s))| {
                let e = match s {
                    Shape::Slice(e, _) => e.rust(),
                    other => other.rust(),
                };
                (
                    format_ident!("__acc{}", k, span = Span::mixed_site()),
                    quote!(::linear_ad::__private::Vec<#e>),
                )
            })
            .collect();
        Some(Detached {
            ins,
            fields,
            names: tape.fields.clone(),
            accs,
        })
    }

    /// The name the bodies read tape field `k` by, if it holds an array
    /// parameter.
    fn input_of(&self, k: usize) -> Option<&syn::Ident> {
        let (_, j) = self.fields.iter().find(|(f, _)| *f == k)?;
        Some(&self.ins[*j].0)
    }

    /// `__tangent`'s and `__reverse`'s parameters for the arrays.
    fn params(&self) -> Vec<TokenStream> {
        self.ins.iter().map(|(id, e)| quote!(#id: &[#e])).collect()
    }

    /// The arrays as the linearization `map` holds them: its fields, or an
    /// empty slice for a parameter its tape does not hold.
    pub(super) fn own_args(&self, map: TokenStream) -> Vec<TokenStream> {
        (0..self.ins.len())
            .map(|j| match self.fields.iter().find(|(_, i)| *i == j) {
                Some((k, _)) => {
                    let f = &self.names[*k];
                    quote!(&#map.#f)
                }
                None => quote!(&[]),
            })
            .collect()
    }

    /// Makes the transposed body start from the accumulators (`__acc0`,
    /// ...) instead of the zeroed cotangent buffers of `t_args` (the
    /// transposed residual's arguments after the tape and the result's
    /// cotangent), which it returns: `__reverse` passes them to
    /// `__reverse_into`.
    fn start_from_accumulators(
        &self,
        t_args: &mut [(TokenStream, Hold)],
        results: usize,
    ) -> Vec<TokenStream> {
        match t_args.get_mut(1 + results..) {
            Some(bufs) if bufs.len() == self.accs.len() => bufs
                .iter_mut()
                .zip(&self.accs)
                .map(|((buf, _), (acc, _))| std::mem::replace(buf, quote!(#acc)))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// `__detach(self)`, the linearization with its array fields emptied:
    /// it borrows nothing (`'static`), and is what a caller's tape holds.
    fn detach_fn(
        &self,
        tape: &Tape,
        sig: &Sig,
        (map_name, generics): (&syn::Ident, &TokenStream),
    ) -> TokenStream {
        let float = &sig.float;
        let detached = float.decl(
            tape.lifetime()
                .map(|_| syn::Lifetime::new("'static", Span::call_site())),
        );
        let own = tape
            .fields
            .iter()
            .enumerate()
            .filter_map(|(k, f)| match tape.slots[k] {
                _ if self.input_of(k).is_some() => Some(quote!(#f: &[])),
                Slot::Own => Some(quote!(#f: self.#f)),
                Slot::Group(..) => None,
            });
        let groups = (0..tape.groups().len()).map(group_field);
        let inits = own.chain(groups.map(|g| quote!(#g: self.#g)));
        let lens = tape.lens.iter().map(|f| quote!(#f: self.#f));
        let marker = float.marker().map(|(_, init)| init);
        let (allow, where_clause) = (&sig.allow, &float.where_clause);
        quote! {
            #allow
            impl #generics #map_name #generics #where_clause {
                #[doc(hidden)]
                #[inline]
                pub fn __detach(self) -> #map_name #detached {
                    #map_name { #(#inits,)* #(#lens,)* #marker }
                }
            }
        }
    }
}

/// The element type of an array parameter's type (`&[E]`, `&Vec<E>`).
fn array_elem(t: &syn::Type) -> TokenStream {
    match t {
        syn::Type::Reference(r) => array_elem(&r.elem),
        syn::Type::Slice(s) => {
            let e = &s.elem;
            quote!(#e)
        }
        syn::Type::Path(p) => match p.path.segments.last().map(|s| &s.arguments) {
            Some(syn::PathArguments::AngleBracketed(a)) => {
                let e = &a.args;
                quote!(#e)
            }
            _ => quote!(#t),
        },
        other => quote!(#other),
    }
}

/// What [`lin_items`] generates: the linearization's items, `f_lin` with
/// the forward pass it shares, and whether `f_jvp` may share them too.
struct Lin {
    items: TokenStream,
    fns: TokenStream,
    /// Whether the linearization has `apply_lanes`.
    lanes: bool,
    shares_jvp: bool,
    /// How its array inputs are passed back, if other differentiable
    /// functions can pass it arrays.
    detached: Option<Detached>,
    /// Whether the linearization borrows its inputs (has a lifetime).
    borrows: bool,
}

/// The name of the forward pass `f_lin` and `f_vjp` share
/// ([`Sig::forward_helper`]).
fn forward_name(item: &syn::ItemFn) -> syn::Ident {
    hidden(&format!("__{}_forward", item.sig.ident))
}

/// `f_vjp(params.., cotangent: R) -> (R, In)`: the forward pass `f_lin`
/// runs, then the transposed residual `transpose` runs, each the same
/// code as theirs, inlined (see [`inline_always_optimised`]).
fn vjp_item(
    item: &syn::ItemFn,
    l: &Lowered,
    sig: &Sig,
    detached: Option<&Detached>,
) -> TokenStream {
    let (y, map, cotangent) = (hidden("__y"), hidden("__map"), hidden("__cotangent"));
    let name = &item.sig.ident;
    let link = sig.owner.doc_path(name, true);
    let doc = format!("Reverse mode of [`{link}`]: its value and the cotangents of its differentiable parameters for the given output cotangent (the gradient, for an output cotangent of 1). Generated by linear-ad.");
    let (ret_ty, ret_tan, in_ty) = (&sig.ret_ty, &sig.ret_tan, &sig.in_ty);
    let vjp_name = format_ident!("{}_vjp", name);
    let places = super::results::places(&quote!(#cotangent), &l.ret);
    let ct_check: Vec<TokenStream> = len_outs(&l.ret)
        .into_iter()
        .map(|(field, i)| {
            let msg = format!(
                "`{vjp_name}`: the cotangent must have the length of `{name}`'s result{}",
                which_result(&l.ret, i)
            );
            length_check(&places[i].0, &quote!(#map.#field), &msg)
        })
        .collect();
    let shown = readable("cotangent");
    let forward = sig.call_forward(&forward_name(item));
    let own = detached.map_or_else(Vec::new, |d| d.own_args(quote!(#map)));
    sig.emit(
        (quote!(#[doc = #doc] #[inline]), sig.vis),
        &vjp_name,
        (None, &sig.passing, &[quote!(#shown: #ret_tan)]),
        quote!((#ret_ty, #in_ty)),
        quote! {
            let #cotangent = #shown;
            let (#y, #map) = #forward;
            #(#ct_check)*
            (#y, #map.__reverse(#(#own,)* #cotangent))
        },
    )
}
