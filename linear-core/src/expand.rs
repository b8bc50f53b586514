//! The `#[differentiable]` attribute, as a function from tokens to tokens
//! (the proc-macro crate only forwards to it).
//!
//! For `fn f(..) -> R` it keeps `f` and adds, with `f`'s visibility:
//!
//! * `f_jvp(params.., tangents..) -> (R, R)`: J(f), simplified;
//! * `f_lin(params..) -> (R, __FLinearization)`: the forward pass of
//!   U(J(f)); the returned value holds the tape and implements
//!   `linear_ad::LinearMap<In, R>` with `apply` = the residual of
//!   U(J(f)) and `transpose` = T of that residual;
//! * `f_vjp(params.., cotangent: R) -> (R, In)`: the forward pass followed
//!   by the transposed residual, in one function.
//!
//! Every stage's output is type-checked again before code is generated
//! (Linear A after J, Linear B after U and T). `#[differentiable(dump)]`,
//! or `LINEAR_AD_DUMP=f` (a comma-separated list of names, or `*`) in the
//! environment of the compiler, prints each stage's IR at compile time.
//!
//! On any error the output is the errors plus the original function, with
//! `#[nondiff]` markers removed, so the user sees no cascade.

use rustc_hash::FxHashMap as HashMap;

use darling::ast::NestedMeta;
use darling::FromMeta;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

use crate::check::{check, check_linear_b};
use crate::codegen::{body, body_holding, CallGen, Hold, Names};
use crate::ir::{Extern, Func, Program, Ty, Var};
use crate::lower::{lower_fn, CallArg, CallSite, Errors, Lowered, Shape};
use crate::passes::{jvp::jvp, simplify::simplify, transpose::transpose, unzip};

#[derive(Debug, Default, FromMeta)]
struct Args {
    /// Print every stage's IR at compile time.
    #[darling(default)]
    dump: bool,
    /// A user-supplied derivative: a `#[linear]` function taking the
    /// primal parameters, then one `#[linear]` tangent per differentiable
    /// parameter, and returning the output tangent.
    #[darling(default)]
    jvp: Option<syn::Path>,
    /// What loops keep for the reverse sweep: `"save"` (default: every
    /// intermediate the derivative reads, per iteration), `"state"` (the
    /// loop state per iteration; the reverse sweep recomputes the rest) or
    /// `"binomial"` (the initial state only; the reverse sweep recomputes
    /// states from at most `snapshots` stored ones).
    #[darling(default)]
    checkpoint: Option<syn::LitStr>,
    /// With `checkpoint = "binomial"`: how many loop states the reverse
    /// sweep of each loop may hold at once (default
    /// [`DEFAULT_SNAPSHOTS`]).
    #[darling(default)]
    snapshots: Option<syn::LitInt>,
}

/// Snapshots per loop under `checkpoint = "binomial"` when the attribute
/// gives none: 10⁶ iterations then evaluate each step at most 5 times.
pub const DEFAULT_SNAPSHOTS: u32 = 64;

/// The checkpoint policy an attribute asks for.
fn policy(args: &Args, errs: &mut Errors) -> unzip::Checkpoint {
    let policy = match args.checkpoint.as_ref().map(|l| (l.value(), l)) {
        None => unzip::Checkpoint::SaveAll,
        Some((v, _)) if v == "save" => unzip::Checkpoint::SaveAll,
        Some((v, _)) if v == "state" => unzip::Checkpoint::LoopState,
        Some((v, _)) if v == "binomial" => unzip::Checkpoint::Binomial {
            snapshots: DEFAULT_SNAPSHOTS,
        },
        Some((v, lit)) => {
            errs.spanned(lit, format!("unknown checkpoint policy \"{v}\": use \"save\" (keep every intermediate the derivative needs, the default), \"state\" (keep each loop iteration's state and recompute the rest in the reverse sweep) or \"binomial\" (keep a few loop states and recompute the others by Griewank's Revolve schedule; set how many with `snapshots = N`)"));
            unzip::Checkpoint::SaveAll
        }
    };
    let Some(lit) = &args.snapshots else {
        return policy;
    };
    match (policy, lit.base10_parse::<u32>()) {
        (unzip::Checkpoint::Binomial { .. }, Ok(n)) if n >= 1 => {
            unzip::Checkpoint::Binomial { snapshots: n }
        }
        (unzip::Checkpoint::Binomial { .. }, _) => {
            errs.spanned(lit, "`snapshots` is the number of loop states the reverse sweep may hold: an integer from 1 to 4294967295");
            policy
        }
        (
            unzip::Checkpoint::SaveAll
            | unzip::Checkpoint::LoopState
            | unzip::Checkpoint::RecomputeCheap,
            _,
        ) => {
            errs.spanned(
                lit,
                "`snapshots` applies to binomial checkpointing: add `checkpoint = \"binomial\"`",
            );
            policy
        }
    }
}

/// The attribute's arguments (errors collected) and the function it is on;
/// for anything but a function, the item unchanged and an error.
fn parse_input(
    attr: TokenStream,
    item: TokenStream,
    macro_name: &str,
) -> Result<(Args, syn::ItemFn, Errors), TokenStream> {
    let mut errs = Errors::default();
    let args = match NestedMeta::parse_meta_list(attr) {
        Ok(list) => Args::from_list(&list).unwrap_or_else(|e| {
            errs.push_err(e.into());
            Args::default()
        }),
        Err(e) => {
            errs.push_err(e);
            Args::default()
        }
    };
    match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(f) => Ok((args, f, errs)),
        Err(_) => {
            let msg =
                format!("`#[{macro_name}]` applies to functions (`fn name(..) -> f64 {{ .. }}`)");
            let e = syn::Error::new(Span::call_site(), msg).to_compile_error();
            Err(quote!(#item #e))
        }
    }
}

/// Expands `#[differentiable(attr)] item`.
pub fn differentiable(attr: TokenStream, item: TokenStream) -> TokenStream {
    let (args, item_fn, mut errs) = match parse_input(attr, item, "differentiable") {
        Ok(parsed) => parsed,
        Err(out) => return out,
    };
    let clean = without_markers(&item_fn);
    if let Some(path) = &args.jvp {
        return custom_derivative(&item_fn, &clean, path, errs);
    }
    let policy = policy(&args, &mut errs);
    let lowered = lower_fn(&item_fn, &mut errs);
    finish(&item_fn, &clean, lowered, errs, |l| {
        generate(&item_fn, l, args.dump, policy)
    })
}

/// The output of either attribute: the function as written (so the user
/// sees no cascade), then the errors if lowering found any, else the
/// generated items, else an internal error at the function's name.
fn finish(
    item_fn: &syn::ItemFn,
    clean: &syn::ItemFn,
    lowered: Option<Lowered>,
    errs: Errors,
    generate: impl FnOnce(&Lowered) -> Result<TokenStream, String>,
) -> TokenStream {
    let lowered = match lowered {
        Some(l) if errs.is_empty() => l,
        _ => {
            let e = errs.into_compile_errors();
            return quote!(#clean #e);
        }
    };
    match generate(&lowered) {
        Ok(generated) => quote!(#clean #generated),
        Err(msg) => {
            let e = syn::Error::new(
                item_fn.sig.ident.span(),
                format!("linear-ad internal error (please report it): {msg}"),
            )
            .to_compile_error();
            quote!(#clean #e)
        }
    }
}

/// The function as written, minus the `#[nondiff]` and `#[linear]`
/// parameter markers rustc does not know.
fn without_markers(f: &syn::ItemFn) -> syn::ItemFn {
    let mut f = f.clone();
    for input in f.sig.inputs.iter_mut() {
        if let syn::FnArg::Typed(pt) = input {
            pt.attrs
                .retain(|a| !a.path().is_ident("nondiff") && !a.path().is_ident("linear"));
        }
    }
    f
}

fn wants_dump(name: &str, attr: bool) -> bool {
    attr || std::env::var("LINEAR_AD_DUMP")
        .map(|v| v.split(',').any(|n| n.trim() == "*" || n.trim() == name))
        .unwrap_or(false)
}

/// The pipeline's stages for one function.
pub struct Stages {
    pub source: Program,
    pub jvp: Program,
    pub unzipped: Program,
    pub transposed: Program,
}

/// The type check of a stage's output: the paper's invariants, verified
/// again after every pass in tests and in debug builds of the macro (how
/// `cargo build` compiles it by default); release builds of the macro skip
/// it for speed.
fn recheck(
    r: impl FnOnce() -> Result<(), crate::check::TypeError>,
    stage: &str,
) -> Result<(), String> {
    if cfg!(debug_assertions) {
        r().map_err(|e| format!("{stage} {e}"))
    } else {
        Ok(())
    }
}

/// Runs J, U and T with simplification in between, checking every output.
pub fn pipeline(f: &Func, externs: &[Extern], policy: unzip::Checkpoint) -> Result<Stages, String> {
    let source = Program {
        externs: externs.to_vec(),
        funcs: vec![f.clone()],
    };
    recheck(|| check(&source), "lowered function:")?;
    let j = simplify(&jvp(&source).map_err(|e| e.to_string())?);
    recheck(|| check(&j), "after J:")?;
    let u = simplify(&unzip::unzip(&j, policy).map_err(|e| e.to_string())?);
    recheck(|| check_linear_b(&u), "after U:")?;
    let t = simplify(&transpose(&u).map_err(|e| e.to_string())?);
    recheck(|| check_linear_b(&t), "after T:")?;
    Ok(Stages {
        source,
        jvp: j,
        unzipped: u,
        transposed: t,
    })
}

fn find<'a>(p: &'a Program, name: &str) -> Result<&'a Func, String> {
    p.func(name)
        .ok_or_else(|| format!("no function `{name}` after the pipeline"))
}

fn has_array(s: &Shape) -> bool {
    match s {
        Shape::Float(_) => false,
        Shape::Tuple(ss) => ss.iter().any(has_array),
        Shape::Array(..) => true,
    }
}

/// Rust value of shape `s` to its IR representation (arrays to tuples).
fn to_ir(e: TokenStream, s: &Shape, names: &mut Names) -> TokenStream {
    convert(e, s, names, true)
}

/// IR representation to the Rust value of shape `s`.
fn from_ir(e: TokenStream, s: &Shape, names: &mut Names) -> TokenStream {
    convert(e, s, names, false)
}

/// Destructures `e` and rebuilds it with every array of `s` as a tuple
/// (`into_ir`) or every such tuple as an array again.
fn convert(e: TokenStream, s: &Shape, names: &mut Names, into_ir: bool) -> TokenStream {
    if !has_array(s) {
        return e;
    }
    let (parts, shapes): (Vec<syn::Ident>, Vec<&Shape>) = match s {
        Shape::Float(_) => return e,
        Shape::Tuple(ss) => (
            ss.iter().map(|_| names_temp(names)).collect(),
            ss.iter().collect(),
        ),
        Shape::Array(inner, n) => (
            (0..*n).map(|_| names_temp(names)).collect(),
            vec![&**inner; *n],
        ),
    };
    let conv: Vec<TokenStream> = parts
        .iter()
        .zip(&shapes)
        .map(|(p, s)| convert(quote!(#p), s, names, into_ir))
        .collect();
    let array = matches!(s, Shape::Array(..));
    let pat = if array && into_ir {
        quote!([#(#parts),*])
    } else {
        quote!((#(#parts,)*))
    };
    let built = if array && !into_ir {
        quote!([#(#conv),*])
    } else {
        quote!((#(#conv,)*))
    };
    quote!({ let #pat = #e; #built })
}

fn names_temp(names: &mut Names) -> syn::Ident {
    names.temp("x")
}

fn pascal(s: &str) -> String {
    s.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// Idents of a pattern, for `let _ = &x;` markers that keep nondiff
/// parameters used in every generated function.
fn pattern_idents(p: &syn::Pat, out: &mut Vec<syn::Ident>) {
    match p {
        syn::Pat::Ident(i) => out.push(i.ident.clone()),
        syn::Pat::Tuple(t) => t.elems.iter().for_each(|e| pattern_idents(e, out)),
        syn::Pat::Slice(t) => t.elems.iter().for_each(|e| pattern_idents(e, out)),
        syn::Pat::Paren(t) => pattern_idents(&t.pat, out),
        syn::Pat::Type(t) => pattern_idents(&t.pat, out),
        _ => {}
    }
}

fn generate(
    item: &syn::ItemFn,
    l: &Lowered,
    dump: bool,
    policy: unzip::Checkpoint,
) -> Result<TokenStream, String> {
    let name = item.sig.ident.to_string();
    let stages = pipeline(&l.func, &l.externs, policy)?;
    let calls = Calls {
        sites: &l.calls,
        opaques: &l.opaques,
    };
    if wants_dump(&name, dump) {
        eprintln!(
            "== linear-ad: `{name}` lowered ==\n{}\n== J (simplified) ==\n{}\n== U (simplified) ==\n{}\n== T of the residual (simplified) ==\n{}",
            stages.source,
            stages.jvp,
            stages.unzipped,
            stages.transposed.funcs.iter().filter(|f| f.name.as_str().ends_with(".t")).map(ToString::to_string).collect::<String>()
        );
    }
    let fj = find(&stages.jvp, &format!("{name}.jvp"))?;
    let fnl = find(&stages.unzipped, &format!("{name}.jvp.nl"))?;
    let flin = find(&stages.unzipped, &format!("{name}.jvp.lin"))?;
    let ft = find(&stages.transposed, &format!("{name}.jvp.lin.t"))?;

    let vis = &item.vis;
    let span = item.sig.ident.span();
    let fname = &item.sig.ident;
    let jvp_name = format_ident!("{}_jvp", fname);
    let lin_name = format_ident!("{}_lin", fname);
    let vjp_name = format_ident!("{}_vjp", fname);
    let map_name = syn::Ident::new(&format!("__{}Linearization", pascal(&name)), span);

    let active: Vec<(usize, &Shape)> = l
        .params
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.active.as_ref().map(|(s, _)| (i, s)))
        .collect();
    if active.is_empty() {
        return Err("no differentiable parameter".into());
    }
    let mut names = Names::default();
    // Parameter identifiers of the generated functions: the user's own for
    // a plain name, else a hidden one.
    let mut sig_params = Vec::new();
    let mut primal_idents = Vec::new();
    let mut used_markers = Vec::new();
    for (i, p) in l.params.iter().enumerate() {
        let ty = &p.ty;
        match &p.active {
            Some(_) => {
                let id = match &p.pat {
                    syn::Pat::Ident(pi) if pi.subpat.is_none() => pi.ident.clone(),
                    _ => syn::Ident::new(&format!("__p{i}"), Span::mixed_site()),
                };
                sig_params.push(quote!(#id: #ty));
                primal_idents.push(Some(id));
            }
            None => {
                let pat = &p.pat;
                sig_params.push(quote!(#pat: #ty));
                let mut ids = Vec::new();
                pattern_idents(pat, &mut ids);
                used_markers.extend(ids.into_iter().map(|id| quote!(let _ = &#id;)));
                primal_idents.push(None);
            }
        }
    }
    let tangent_idents: Vec<syn::Ident> = active
        .iter()
        .map(|(i, _)| match primal_idents[*i].as_ref() {
            Some(id) if !id.to_string().starts_with("__") => {
                syn::Ident::new(&format!("{id}_tangent"), Span::mixed_site())
            }
            _ => syn::Ident::new(&format!("__t{i}"), Span::mixed_site()),
        })
        .collect();
    let tangent_params: Vec<TokenStream> = active
        .iter()
        .zip(&tangent_idents)
        .map(|((_, s), id)| {
            let t = s.rust();
            quote!(#id: #t)
        })
        .collect();
    let primal_ir: Vec<TokenStream> = active
        .iter()
        .map(|(i, s)| {
            let id = primal_idents[*i]
                .as_ref()
                .map(|id| quote!(#id))
                .unwrap_or_default();
            to_ir(id, s, &mut names)
        })
        .collect();
    let tangent_ir: Vec<TokenStream> = active
        .iter()
        .zip(&tangent_idents)
        .map(|((_, s), id)| to_ir(quote!(#id), s, &mut names))
        .collect();
    let ret_ty = l.ret.rust();
    let in_ty = if active.len() == 1 {
        active[0].1.rust()
    } else {
        let ts = active.iter().map(|(_, s)| s.rust());
        quote!((#(#ts,)*))
    };
    let prelude = &l.prelude;
    let y = syn::Ident::new("__y", Span::mixed_site());
    let dy = syn::Ident::new("__dy", Span::mixed_site());
    let tape = syn::Ident::new("__tape", Span::mixed_site());
    let y_out = from_ir(quote!(#y), &l.ret, &mut names);
    let dy_out = from_ir(quote!(#dy), &l.ret, &mut names);

    // f_jvp
    let jvp_args: Vec<TokenStream> = primal_ir.iter().chain(&tangent_ir).cloned().collect();
    let jvp_body = body(fj, &jvp_args, &calls);
    // `f_jvp` takes a tangent per parameter: twice the arguments, by design.
    let user_allows = item.attrs.iter().filter(|a| a.path().is_ident("allow"));
    let allow = quote!(#[allow(clippy::too_many_arguments)] #(#user_allows)*);
    let jvp_doc = format!("Forward mode of [`{name}`]: its value and its directional derivative along the given tangents (one per differentiable parameter). Generated by `#[differentiable]`.");
    let jvp_fn = quote! {
        #[doc = #jvp_doc]
        #allow
        #[inline]
        #vis fn #jvp_name(#(#sig_params,)* #(#tangent_params,)*) -> (#ret_ty, #ret_ty) {
            #(#used_markers)*
            #(#prelude)*
            let (#y, #dy) = #jvp_body;
            (#y_out, #dy_out)
        }
    };

    // f_lin and its linearization type.
    // The tape as a struct: one field per saved value, named after its IR
    // variable (as printed by `dump`).
    let tape_tys = match fnl.nl_rets.last() {
        Some(crate::ir::Ty::Tuple(ts)) => ts.clone(),
        _ => return Err("the forward pass returns no tape".into()),
    };
    let tape_vars: Vec<crate::ir::Var> = match &flin.body {
        crate::ir::Expr::Block { stmts, .. } => match stmts.first() {
            Some(crate::ir::Stmt::Unpack { vars, .. }) => {
                vars.iter().map(|b| b.var.clone()).collect()
            }
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    let mut field_names = Names::default();
    let fields: Vec<syn::Ident> = (0..tape_tys.len())
        .map(|k| match tape_vars.get(k) {
            Some(v) => field_names.ident(v),
            None => format_ident!("t{}", k),
        })
        .map(|id| syn::Ident::new(&id.to_string(), Span::call_site()))
        .collect();
    let field_tys: Vec<TokenStream> = tape_tys.iter().map(|t| calls.rust_ty(t)).collect();
    let field_index: Vec<syn::Index> = (0..tape_tys.len()).map(syn::Index::from).collect();
    // `apply` and `transpose` read the tape in place: its non-`Copy` parts
    // (lists, sums holding them, callees' tapes) by reference.
    let field_reads: Vec<TokenStream> = fields
        .iter()
        .zip(&tape_tys)
        .map(|(f, t)| {
            if crate::codegen::is_copy(t) {
                quote!(self.#f)
            } else {
                quote!(&self.#f)
            }
        })
        .collect();
    // `Debug` by hand: per-iteration records may be tuples longer than
    // the standard library's `Debug` impls.
    let derive_copy = if tape_tys.iter().all(crate::codegen::is_copy) {
        quote!(#[derive(Clone, Copy)])
    } else {
        quote!(#[derive(Clone)])
    };
    let map_str = map_name.to_string();
    // Only the parts that own heap memory, summed over a flat array: a
    // chain of `+` as long as the tape nests as deep in rustc's parser.
    let heap: Vec<TokenStream> = fields
        .iter()
        .zip(&tape_tys)
        .map(|(f, t)| calls.heap_bytes(quote!(self.#f), t))
        .filter(|h| h.to_string() != "0usize")
        .collect();
    let heap_len = heap.len();
    let fwd_body = body(fnl, &primal_ir, &calls);
    let lin_doc = format!("Linearizes [`{name}`] once: its value, and a [`LinearMap`](::linear_ad::LinearMap) that applies the derivative at this point (`apply`, forward mode) and its transpose (`transpose`, reverse mode) from one saved tape. Generated by `#[differentiable]`.");
    let map_doc = format!("The linearization of [`{name}`] at a point, returned by [`{lin_name}`]: the tape of values its derivative needs. Generated by `#[differentiable]`.");
    let tangent = syn::Ident::new("__tangent", Span::mixed_site());
    let cotangent = syn::Ident::new("__cotangent", Span::mixed_site());
    let self_tape = quote!((#(#field_reads,)*));
    // For several parameters, destructure once, then convert each part.
    let r = syn::Ident::new("__r", Span::mixed_site());
    let apply_body = if active.len() == 1 {
        let arg = to_ir(quote!(#tangent), active[0].1, &mut names);
        let b = body_holding(
            flin,
            &[(self_tape.clone(), Hold::Shallow), (arg, Hold::Owned)],
            &calls,
        );
        let conv = from_ir(quote!(#r), &l.ret, &mut names);
        quote!({ let #r = #b; #conv })
    } else {
        let parts: Vec<syn::Ident> = (0..active.len())
            .map(|k| format_ident!("__d{}", k, span = Span::mixed_site()))
            .collect();
        let convs: Vec<TokenStream> = parts
            .iter()
            .zip(&active)
            .map(|(p, (_, s))| to_ir(quote!(#p), s, &mut names))
            .collect();
        let mut args = vec![(self_tape.clone(), Hold::Shallow)];
        args.extend(convs.into_iter().map(|c| (c, Hold::Owned)));
        let b = body_holding(flin, &args, &calls);
        let conv = from_ir(quote!(#r), &l.ret, &mut names);
        quote!({ let (#(#parts,)*) = #tangent; let #r = #b; #conv })
    };
    let ct_ir = to_ir(quote!(#cotangent), &l.ret, &mut names);
    let transpose_pack = |names: &mut Names, value: TokenStream| -> TokenStream {
        if active.len() == 1 {
            from_ir(value, active[0].1, names)
        } else {
            let parts: Vec<syn::Ident> = (0..active.len())
                .map(|k| format_ident!("__c{}", k, span = Span::mixed_site()))
                .collect();
            let outs: Vec<TokenStream> = parts
                .iter()
                .zip(&active)
                .map(|(p, (_, s))| from_ir(quote!(#p), s, names))
                .collect();
            quote!({ let (#(#parts,)*) = #value; (#(#outs,)*) })
        }
    };
    let t_body = body_holding(
        ft,
        &[
            (self_tape.clone(), Hold::Shallow),
            (ct_ir.clone(), Hold::Owned),
        ],
        &calls,
    );
    let transpose_out = transpose_pack(&mut names, t_body);
    let lin_fn = quote! {
        #[doc = #map_doc]
        #derive_copy
        #allow
        #vis struct #map_name {
            #(#fields: #field_tys,)*
        }

        #allow
        impl ::linear_ad::TapeSize for #map_name {
            fn tape_bytes(&self) -> usize {
                let __heap: [usize; #heap_len] = [#(#heap),*];
                ::core::mem::size_of::<Self>() + __heap.iter().sum::<usize>()
            }
        }

        #allow
        impl ::core::fmt::Debug for #map_name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(#map_str)
                    .field("tape_bytes", &::linear_ad::TapeSize::tape_bytes(self))
                    .finish_non_exhaustive()
            }
        }

        #allow
        impl ::linear_ad::LinearMap<#in_ty, #ret_ty> for #map_name {
            #[inline]
            fn apply(&self, #tangent: #in_ty) -> #ret_ty {
                #apply_body
            }
            #[inline]
            fn transpose(&self, #cotangent: #ret_ty) -> #in_ty {
                #transpose_out
            }
        }

        #[doc = #lin_doc]
        #allow
        #[inline]
        #vis fn #lin_name(#(#sig_params,)*) -> (#ret_ty, #map_name) {
            #(#used_markers)*
            #(#prelude)*
            let (#y, #tape) = #fwd_body;
            (#y_out, #map_name { #(#fields: #tape.#field_index,)* })
        }
    };

    // f_vjp: the forward pass, then the transposed residual, fused.
    let t_body2 = body(ft, &[quote!(#tape), ct_ir], &calls);
    let vjp_out = transpose_pack(&mut names, t_body2);
    let vjp_doc = format!("Reverse mode of [`{name}`]: its value and the cotangents of its differentiable parameters for the given output cotangent (the gradient, for an output cotangent of 1). Generated by `#[differentiable]`.");
    let vjp_fn = quote! {
        #[doc = #vjp_doc]
        #allow
        #[inline]
        #vis fn #vjp_name(#(#sig_params,)* #cotangent: #ret_ty) -> (#ret_ty, #in_ty) {
            #(#used_markers)*
            #(#prelude)*
            let (#y, #tape) = #fwd_body;
            (#y_out, #vjp_out)
        }
    };
    let companions = companions(item, &l.params, &map_name, &ret_ty, &active, &allow);
    Ok(quote!(#jvp_fn #lin_fn #vjp_fn #companions))
}

/// The callee-side half of the calling convention between differentiable
/// functions, as associated functions of `f`'s linearization type, the one
/// name a caller refers to: `__jvp`, `__lin`, `__apply` and `__transpose`
/// take one tangent (or cotangent) slot per parameter, constant ones
/// included, so a caller needs no knowledge of which of `f`'s parameters
/// are differentiable. A differentiable slot takes a tangent of its type or
/// `Inactive` (zero); a constant slot of `__jvp` takes only `Inactive`, so a
/// differentiable value passed to a constant parameter is reported there,
/// once.
fn companions(
    item: &syn::ItemFn,
    params: &[crate::lower::Param],
    map_name: &syn::Ident,
    ret_ty: &TokenStream,
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
            pub fn __jvp(#(#a: #tys,)* #(#d: #jvp_slots,)*) -> (#ret_ty, #ret_ty) {
                #(let _ = #constants;)*
                #jvp_name(#(#a,)* #(#tangents,)*)
            }

            #[inline]
            pub fn __lin(#(#a: #tys,)*) -> (#ret_ty, Self) {
                #lin_name(#(#a,)*)
            }

            #[inline]
            pub fn __apply(&self, #(#d: #apply_slots,)*) -> #ret_ty {
                #(let _ = #constants;)*
                ::linear_ad::LinearMap::apply(self, #packed)
            }

            #[inline]
            pub fn __transpose(&self, #ct: #ret_ty) -> (#(#per_param_ty,)*) {
                #unpack
                (#(#per_param,)*)
            }
        }
    }
}

/// The caller-side half: Rust for the IR's calls to `call.N` and its
/// derived externs, from the call sites recorded by lowering.
struct Calls<'a> {
    sites: &'a HashMap<Var, CallSite>,
    opaques: &'a HashMap<Var, crate::lower::Opaque>,
}

impl Calls<'_> {
    fn site(&self, func: &Var) -> Option<(&CallSite, String)> {
        let mut parts = func.as_str().splitn(3, '.');
        let (call, n) = (parts.next()?, parts.next()?);
        let rest = parts.next().unwrap_or("").to_string();
        let site = self.sites.get(&Var::new(&format!("{call}.{n}")))?;
        Some((site, rest))
    }

    /// The callee's path with its last segment renamed, keeping the span of
    /// the name the user wrote so errors point at the call.
    fn sibling(path: &syn::Path, name: String) -> syn::Path {
        let mut p = path.clone();
        if let Some(last) = p.segments.last_mut() {
            last.ident = syn::Ident::new(&name, last.ident.span());
        }
        p
    }

    fn callee_name(site: &CallSite) -> String {
        Self::callee_name_of(&site.path)
    }

    fn callee_name_of(path: &syn::Path) -> String {
        path.segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default()
    }

    /// Heap bytes a tape part of type `t` owns, beyond its inline size.
    fn heap_bytes(&self, e: TokenStream, t: &Ty) -> TokenStream {
        let zero = quote!(0usize);
        match t {
            Ty::Real(_) | Ty::Int | Ty::Bool => zero,
            Ty::Tuple(ts) => {
                let parts: Vec<TokenStream> = ts
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        let i = syn::Index::from(i);
                        self.heap_bytes(quote!((#e).#i), t)
                    })
                    .filter(|p| p.to_string() != "0usize")
                    .collect();
                if parts.is_empty() {
                    zero
                } else {
                    quote!((#(#parts)+*))
                }
            }
            Ty::Sum(ts) => {
                let alts: Vec<(TokenStream, TokenStream)> = ts
                    .iter()
                    .map(|t| {
                        let x = syn::Ident::new("__x", Span::mixed_site());
                        (quote!(#x), self.heap_bytes(quote!(#x), t))
                    })
                    .collect();
                if alts.iter().all(|(_, h)| h.to_string() == "0usize") {
                    return zero;
                }
                let arms: Vec<(TokenStream, TokenStream)> = alts
                    .into_iter()
                    .map(|(p, h)| (quote!(ref #p), quote!({ #h })))
                    .collect();
                let mut names = Names::default();
                crate::codegen::match_sum_tokens(quote!(#e), &arms, &mut names)
            }
            Ty::List(..) if crate::codegen::inline_len(t).is_some() => zero,
            Ty::List(inner, _) => {
                let elem = self.rust_ty(inner);
                let x = syn::Ident::new("__x", Span::mixed_site());
                let h = self.heap_bytes(quote!((*#x)), inner);
                let own = quote!((#e).capacity() * ::core::mem::size_of::<#elem>());
                if h.to_string() == "0usize" {
                    own
                } else {
                    quote!((#own + (#e).iter().map(|#x| #h).sum::<usize>()))
                }
            }
            Ty::Tape(_) => {
                quote!((::linear_ad::TapeSize::tape_bytes(&#e) - ::core::mem::size_of_val(&#e)))
            }
        }
    }

    /// The Rust type of an IR type, with callee tapes as the callees'
    /// linearization types.
    fn rust_ty(&self, t: &Ty) -> TokenStream {
        match t {
            Ty::Tape(name) => match self.site(name) {
                Some((site, _)) => {
                    let g = Self::callee_name(site);
                    let p = Self::sibling(&site.path, format!("__{}Linearization", pascal(&g)));
                    quote!(#p)
                }
                None => quote!(()),
            },
            Ty::Tuple(ts) => {
                let ts = ts.iter().map(|t| self.rust_ty(t));
                quote!((#(#ts,)*))
            }
            Ty::Sum(ts) => {
                crate::codegen::sum_type(&ts.iter().map(|t| self.rust_ty(t)).collect::<Vec<_>>())
            }
            Ty::List(e, _) => crate::codegen::list_type(t, self.rust_ty(e)),
            // The only integer on a tape is a replay's trip count, which U
            // counts from literals: `i64`, the type `Replay::new` takes.
            // (Recomputing policies keep the user's integers off tapes.)
            Ty::Int => quote!(i64),
            Ty::Real(_) | Ty::Bool => crate::lower::ty_rust(t),
        }
    }
}

impl CallGen for Calls<'_> {
    fn opaque(&self, name: &Var, args: &[syn::Ident]) -> Option<TokenStream> {
        let o = self.opaques.get(name)?;
        let (params, code) = (&o.params, &o.code);
        Some(quote!({ let (#(#params,)*) = (#(#args,)*); #code }))
    }

    fn call(
        &self,
        func: &Var,
        nl: &[syn::Ident],
        lin: &[syn::Ident],
        names: &mut Names,
    ) -> Option<TokenStream> {
        let (site, stage) = self.site(func)?;
        let g = Self::callee_name(site);
        // Every reference goes through the callee's linearization type, so a
        // callee that is not `#[differentiable]` is one missing name.
        let ty = Self::sibling(&site.path, format!("__{}Linearization", pascal(&g)));
        let inactive = quote!(::linear_ad::__private::Inactive);
        // Tangent slots in the callee's parameter order: the IR passes the
        // active arguments only; each slot carries its argument's span, so a
        // type error about it points at the argument.
        let slots = |vals: &[syn::Ident], names: &mut Names| -> Option<Vec<TokenStream>> {
            let mut out = Vec::new();
            let mut k = 0;
            for a in &site.args {
                match a {
                    CallArg::Active(s, span) => {
                        let v = vals.get(k)?;
                        let conv = from_ir(quote!(#v), s, names);
                        out.push(quote_spanned!(*span=> ::core::convert::identity(#conv)));
                        k += 1;
                    }
                    CallArg::Inactive(..) => out.push(inactive.clone()),
                }
            }
            Some(out)
        };
        let r = syn::Ident::new("__r", Span::mixed_site());
        let dr = syn::Ident::new("__dr", Span::mixed_site());
        let l = syn::Ident::new("__l", Span::mixed_site());
        let r_ir = to_ir(quote!(#r), &site.ret, names);
        Some(match stage.as_str() {
            "jvp" | "jvp.nl" => {
                let mut args = Vec::new();
                let mut k = 0;
                for a in &site.args {
                    match a {
                        CallArg::Active(s, _) => {
                            let v = nl.get(k)?;
                            args.push(from_ir(quote!(#v), s, names));
                            k += 1;
                        }
                        CallArg::Inactive(id, _) => args.push(quote!(#id)),
                    }
                }
                if stage == "jvp" {
                    let slots = slots(lin, names)?;
                    let dr_ir = to_ir(quote!(#dr), &site.ret, names);
                    quote!({ let (#r, #dr) = <#ty>::__jvp(#(#args,)* #(#slots,)*); (#r_ir, #dr_ir) })
                } else {
                    quote!({ let (#r, #l) = <#ty>::__lin(#(#args,)*); (#r_ir, #l) })
                }
            }
            "jvp.lin" => {
                let tape = nl.first()?;
                let slots = slots(lin, names)?;
                quote!({ let #r = <#ty>::__apply(&#tape, #(#slots,)*); #r_ir })
            }
            "jvp.lin.t" => {
                let tape = nl.first()?;
                let ct = lin.first()?;
                let ct_rust = from_ir(quote!(#ct), &site.ret, names);
                let mut pats = Vec::new();
                let mut outs = Vec::new();
                for a in &site.args {
                    match a {
                        CallArg::Active(s, span) => {
                            let c = names.temp("c");
                            let t = s.rust();
                            let got = quote_spanned!(*span=> <_ as ::linear_ad::__private::Tangent<#t>>::tangent(#c));
                            outs.push(to_ir(got, s, names));
                            pats.push(quote!(#c));
                        }
                        CallArg::Inactive(..) => pats.push(quote!(_)),
                    }
                }
                let out = if outs.len() == 1 {
                    outs[0].clone()
                } else {
                    quote!((#(#outs,)*))
                };
                quote!({ let (#(#pats,)*) = <#ty>::__transpose(&#tape, #ct_rust); #out })
            }
            _ => return None,
        })
    }
}

/// `#[differentiable(jvp = d)]`: the derivative is the user's `#[linear]`
/// function `d`, so `f`'s body need not be in the supported subset. The
/// linearization saves `f`'s arguments; `apply` calls `d`, and `transpose`
/// calls `d_transpose`, which `#[linear]` derived by transposition (reverse
/// mode is never written by hand). `d`'s linearity was proved by
/// `#[linear]`; its signature is checked by rustc at the calls below, whose
/// tokens carry the span of `d`'s path.
fn custom_derivative(
    item: &syn::ItemFn,
    clean: &syn::ItemFn,
    path: &syn::Path,
    mut errs: Errors,
) -> TokenStream {
    let sig = &item.sig;
    let ret = match &sig.output {
        syn::ReturnType::Type(_, t) => Shape::from_type(t),
        syn::ReturnType::Default => None,
    };
    let Some(ret) = ret else {
        errs.spanned(&sig.output, "a function with a custom derivative must return f32, f64, or tuples and fixed-size arrays of them");
        let e = errs.into_compile_errors();
        return quote!(#clean #e);
    };
    if !sig.generics.params.is_empty() {
        errs.spanned(
            &sig.generics,
            "generic functions are not supported yet: write the function for f64 or f32",
        );
    }
    let mut params = Vec::new();
    for (i, input) in sig.inputs.iter().enumerate() {
        let syn::FnArg::Typed(pt) = input else {
            errs.spanned(
                input,
                "`self` parameters are not supported: differentiable functions are free functions",
            );
            continue;
        };
        let nondiff = pt.attrs.iter().any(|a| a.path().is_ident("nondiff"));
        let ty = (*pt.ty).clone();
        let shape = Shape::from_type(&ty);
        let plain = shape.is_some() || crate::lower::is_constant_type(&ty);
        if !plain {
            errs.spanned(&ty, "with a custom derivative, the linearization stores every argument, so parameters must be floats, tuples and arrays of them, integers or bools");
            continue;
        }
        let id = format_ident!("__a{}", i);
        let pat: syn::Pat = syn::parse_quote!(#id);
        let active = match shape {
            Some(s) if !nondiff => Some((s, Var::new(&format!("a{i}")))),
            _ => None,
        };
        params.push(crate::lower::Param { pat, ty, active });
    }
    let active: Vec<(usize, &Shape)> = params
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.active.as_ref().map(|(s, _)| (i, s)))
        .collect();
    if active.is_empty() && errs.is_empty() {
        errs.spanned(&sig.ident, "a differentiable function needs a differentiable parameter (a float, tuple or array not marked `#[nondiff]`)");
    }
    if !errs.is_empty() {
        let e = errs.into_compile_errors();
        return quote!(#clean #e);
    }

    let vis = &item.vis;
    let fname = &sig.ident;
    let name = fname.to_string();
    let span = fname.span();
    let (jvp_name, lin_name, vjp_name) = (
        format_ident!("{}_jvp", fname),
        format_ident!("{}_lin", fname),
        format_ident!("{}_vjp", fname),
    );
    let map_name = syn::Ident::new(&format!("__{}Linearization", pascal(&name)), span);
    let d = path;
    let dt = Calls::sibling(path, format!("{}_transpose", Calls::callee_name_of(path)));
    let a: Vec<syn::Ident> = (0..params.len())
        .map(|i| format_ident!("__a{}", i))
        .collect();
    let tys: Vec<&syn::Type> = params.iter().map(|p| &p.ty).collect();
    let t: Vec<syn::Ident> = active
        .iter()
        .map(|(i, _)| format_ident!("__t{}", i, span = Span::mixed_site()))
        .collect();
    let t_tys: Vec<TokenStream> = active.iter().map(|(_, s)| s.rust()).collect();
    let fields: Vec<syn::Ident> = (0..params.len()).map(|i| format_ident!("a{}", i)).collect();
    let ret_ty = ret.rust();
    let in_ty = if active.len() == 1 {
        t_tys[0].clone()
    } else {
        quote!((#(#t_tys,)*))
    };
    let tangent = syn::Ident::new("__tangent", Span::mixed_site());
    let cotangent = syn::Ident::new("__cotangent", Span::mixed_site());
    let unpack_tangent = if active.len() == 1 {
        let t0 = &t[0];
        quote!(let #t0 = #tangent;)
    } else {
        quote!(let (#(#t,)*) = #tangent;)
    };
    let user_allows = item.attrs.iter().filter(|a| a.path().is_ident("allow"));
    let allow = quote!(#[allow(clippy::too_many_arguments)] #(#user_allows)*);
    let docs = (
        format!("Forward mode of [`{name}`], by its custom derivative. Generated by `#[differentiable]`."),
        format!("The linearization of [`{name}`] at a point (its arguments), returned by [`{lin_name}`]. Generated by `#[differentiable]`."),
        format!("Linearizes [`{name}`] once; `apply` calls its custom derivative and `transpose` that derivative's transpose. Generated by `#[differentiable]`."),
        format!("Reverse mode of [`{name}`], by the transpose of its custom derivative. Generated by `#[differentiable]`."),
    );
    let (jd, md, ld, vd) = (&docs.0, &docs.1, &docs.2, &docs.3);
    let companions = companions(item, &params, &map_name, &ret_ty, &active, &allow);
    quote! {
        #clean

        #[doc = #jd]
        #allow
        #[inline]
        #vis fn #jvp_name(#(#a: #tys,)* #(#t: #t_tys,)*) -> (#ret_ty, #ret_ty) {
            (#fname(#(#a,)*), #d(#(#a,)* #(#t,)*))
        }

        #[doc = #md]
        #[derive(Clone, Copy, Debug)]
        #allow
        #vis struct #map_name {
            #(#fields: #tys,)*
        }

        #allow
        impl ::linear_ad::TapeSize for #map_name {
            fn tape_bytes(&self) -> usize {
                ::core::mem::size_of::<Self>()
            }
        }

        #allow
        impl ::linear_ad::LinearMap<#in_ty, #ret_ty> for #map_name {
            #[inline]
            fn apply(&self, #tangent: #in_ty) -> #ret_ty {
                #unpack_tangent
                #d(#(self.#fields,)* #(#t,)*)
            }
            #[inline]
            fn transpose(&self, #cotangent: #ret_ty) -> #in_ty {
                #dt(#(self.#fields,)* #cotangent)
            }
        }

        #[doc = #ld]
        #allow
        #[inline]
        #vis fn #lin_name(#(#a: #tys,)*) -> (#ret_ty, #map_name) {
            (#fname(#(#a,)*), #map_name { #(#fields: #a,)* })
        }

        #[doc = #vd]
        #allow
        #[inline]
        #vis fn #vjp_name(#(#a: #tys,)* #cotangent: #ret_ty) -> (#ret_ty, #in_ty) {
            (#fname(#(#a,)*), #dt(#(#a,)* #cotangent))
        }

        #companions
    }
}

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
///   functions).
pub fn linear(attr: TokenStream, item: TokenStream) -> TokenStream {
    let (args, item_fn, mut errs) = match parse_input(attr, item, "linear") {
        Ok(parsed) => parsed,
        Err(out) => return out,
    };
    if let Some(path) = &args.jvp {
        errs.spanned(path, "`jvp = ..` belongs on `#[differentiable]`: a `#[linear]` function's derivative is itself");
    }
    let clean = without_markers(&item_fn);
    let lowered = crate::lower::lower_fn_mode(&item_fn, &mut errs, crate::lower::Mode::Linear);
    finish(&item_fn, &clean, lowered, errs, |l| {
        generate_linear(&item_fn, &clean, l, args.dump)
    })
}

fn generate_linear(
    item: &syn::ItemFn,
    clean: &syn::ItemFn,
    l: &Lowered,
    dump: bool,
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

    // The differentiable triple, with float coefficients differentiable if
    // that lowers without calls, else held constant.
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
    let map_name = syn::Ident::new(
        &format!("__{}Linearization", pascal(&name)),
        item.sig.ident.span(),
    );
    let differentiable = match &diff {
        Some((f, d)) => generate(f, d, false, unzip::Checkpoint::SaveAll)?,
        // Not expressible as a differentiable function: only the transpose,
        // and the type callers refer to.
        None => quote!(#[doc(hidden)] #vis struct #map_name;),
    };

    let mut names = Names::default();
    let calls = LinearCalls { sites: &l.calls };
    let lin: Vec<(&crate::lower::Param, &Shape)> = l
        .params
        .iter()
        .filter_map(|p| p.active.as_ref().map(|(s, _)| (p, s)))
        .collect();
    let coefficients: Vec<&crate::lower::Param> =
        l.params.iter().filter(|p| p.active.is_none()).collect();
    let sig_params: Vec<TokenStream> = coefficients
        .iter()
        .map(|p| {
            let (pat, ty) = (&p.pat, &p.ty);
            quote!(#pat: #ty)
        })
        .collect();
    let mut used = Vec::new();
    for p in &coefficients {
        let mut ids = Vec::new();
        pattern_idents(&p.pat, &mut ids);
        used.extend(ids.into_iter().map(|id| quote!(let _ = &#id;)));
    }
    let prelude = &l.prelude;
    let ret_ty = l.ret.rust();
    let ct = syn::Ident::new("out_cotangent", Span::mixed_site());
    let ct_ir = to_ir(quote!(#ct), &l.ret, &mut names);
    let b = body(gt, &[ct_ir], &calls);
    let in_ty = if lin.len() == 1 {
        lin[0].1.rust()
    } else {
        let ts = lin.iter().map(|(_, s)| s.rust());
        quote!((#(#ts,)*))
    };
    let out = if lin.len() == 1 {
        from_ir(b, lin[0].1, &mut names)
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
    let t_name = format_ident!("{}_transpose", item.sig.ident);
    let doc = format!(
        "The transpose (adjoint) of [`{name}`] in its `#[linear]` parameters: for every output cotangent ȳ and input x, ⟨x, {name}_transpose(ȳ)⟩ = ⟨{name}(x), ȳ⟩. Generated by `#[linear]`."
    );
    let user_allows = item.attrs.iter().filter(|a| a.path().is_ident("allow"));
    let allow = quote!(#[allow(clippy::too_many_arguments)] #(#user_allows)*);

    // The callee-side half of calls from other `#[linear]` functions: one
    // slot per parameter; a coefficient slot takes `Coef(value)`, a linear
    // slot `LinSlot`, so a mismatch is a type error at that argument.
    let d: Vec<syn::Ident> = (0..l.params.len())
        .map(|i| format_ident!("__d{}", i, span = Span::mixed_site()))
        .collect();
    let mut slot_tys = Vec::new();
    let mut coef_args = Vec::new();
    let mut per_ty = Vec::new();
    let mut per = Vec::new();
    let c: Vec<syn::Ident> = (0..lin.len())
        .map(|k| format_ident!("__c{}", k, span = Span::mixed_site()))
        .collect();
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
    let linear_slots: Vec<&syn::Ident> = l
        .params
        .iter()
        .zip(&d)
        .filter(|(p, _)| p.active.is_some())
        .map(|(_, di)| di)
        .collect();
    let unpack = if lin.len() == 1 {
        let c0 = &c[0];
        quote!(let #c0 = #t_name(#(#coef_args,)* #ct);)
    } else {
        quote!(let (#(#c,)*) = #t_name(#(#coef_args,)* #ct);)
    };
    Ok(quote! {
        #[doc = #doc]
        #allow
        #[inline]
        #vis fn #t_name(#(#sig_params,)* #ct: #ret_ty) -> #in_ty {
            #(#used)*
            #(#prelude)*
            #out
        }

        #differentiable

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
    })
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
        let g = Calls::callee_name(site);
        let ty = Calls::sibling(&site.path, format!("__{}Linearization", pascal(&g)));
        let ct = lin.first()?;
        let ct_rust = from_ir(quote!(#ct), &site.ret, names);
        let (mut slots, mut pats, mut outs) = (Vec::new(), Vec::new(), Vec::new());
        for a in &site.args {
            match a {
                CallArg::Active(s, span) => {
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
