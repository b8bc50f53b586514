//! The `#[differentiable]` attribute, as a function from tokens to tokens
//! (the proc-macro crate only forwards to it).
//!
//! For `fn f(..) -> R` it keeps `f` and adds, with `f`'s visibility:
//!
//! * `f_jvp(params.., tangents..) -> (R, R)`: J(f), simplified;
//! * `f_lin(params..) -> (R, FLinearization)`: the forward pass of
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
//!
//! This module holds the entry point, the attribute's arguments, the
//! pipeline and the conversions between Rust values and IR values; the
//! items generated for `f` are in [`items`], the calling convention
//! between differentiable functions in [`companions`] (callee side) and
//! [`calls`] (caller side), custom derivatives in [`custom`], and
//! `#[linear]` in [`linear`].

mod calls;
mod companions;
mod custom;
mod items;
mod linear;
mod methods;
mod pieces;
pub(super) mod results;

pub(crate) use items::method_key;
pub use linear::{linear, linear_with};
pub use methods::methods_with;

use darling::ast::NestedMeta;
use darling::FromMeta;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::check::{check, check_linear_b};
use crate::codegen::{FloatParam, Names};
use crate::ir::{Extern, Func, Program};
use crate::layout::{struct_paths, Job, Kind, Structs};
use crate::lower::{lower_fn_with, Errors, Lowered, Missing, Mode, Shape};
use crate::passes::{fold::fold, jvp::jvp, simplify::simplify, transpose::transpose, unzip};
use crate::signature::{self, Sigs};

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
    /// What loops keep for the reverse sweep: `"auto"` (default: as
    /// `"save"`, except that a loop whose reverse sweep needs nothing per
    /// iteration but its index, a reduction over arrays, keeps nothing but
    /// the results of math-library calls and reads the arrays again, a
    /// value that costs one operation to compute
    /// again from what the loop keeps anyway is computed again, and a
    /// value the same in every iteration is kept once), `"save"` (every intermediate the derivative
    /// reads, per iteration), `"state"` (the loop state per iteration; the
    /// reverse sweep recomputes the rest) or `"binomial"` (the initial
    /// state only; the reverse sweep recomputes states from at most
    /// `snapshots` stored ones).
    #[darling(default)]
    checkpoint: Option<syn::LitStr>,
    /// With `checkpoint = "binomial"`: how many loop states the reverse
    /// sweep of each loop may hold at once (default
    /// [`DEFAULT_SNAPSHOTS`]).
    #[darling(default)]
    snapshots: Option<syn::LitInt>,
    /// Whether chains of scalings in the derivative are folded into one
    /// coefficient each ([`crate::passes::fold`]; default `true`); `fold =
    /// false` keeps the operation-by-operation chain rule's rounding.
    #[darling(default)]
    fold: Option<bool>,
    /// The highest order of derivative generated: 1 (the default) or 2,
    /// which adds `f_hvp` and `f_hessian` ([`crate::passes::hvp`]).
    #[darling(default)]
    order: Option<syn::LitInt>,
    /// Adds `apply_lanes` to the linearization: the residual applied to
    /// `K` tangents at once, in `linear_ad::Lanes` ([`crate::codegen::LinearLanes`]).
    #[darling(default)]
    lanes: darling::util::Flag,
}

/// How the pipeline runs for one function, as its attribute asks.
#[derive(Clone, Copy, Debug)]
pub struct Passes {
    /// What loops keep for the reverse sweep.
    pub checkpoint: unzip::Checkpoint,
    /// Whether J's output is folded ([`crate::passes::fold`]).
    pub fold: bool,
    /// Where `order = 2` was asked for, if it was: second derivatives are
    /// generated too, and a refusal is reported there.
    pub second_order: Option<Span>,
    /// Whether the function is itself a derivative (`f_jvp` or `f_vjp`
    /// generated under `order = 2`): differentiable once, so the
    /// derivatives of its own derivatives are refused as third order.
    pub derived: bool,
    /// Whether the linearization gets `apply_lanes`.
    pub lanes: LanesAsk,
}

/// Whether a linearization gets `apply_lanes`
/// ([`crate::codegen::LinearLanes`]).
#[derive(Clone, Copy, Debug)]
pub enum LanesAsk {
    No,
    /// The user's `lanes`: where the function cannot have it, an error
    /// there says why.
    Asked(Span),
    /// For generated code that uses it where it exists (`f_hessian`
    /// through `f_vjp_lin`): no error where it cannot be had.
    Quiet,
}

impl Passes {
    /// The default for a checkpoint policy: folding on.
    pub fn with(checkpoint: unzip::Checkpoint) -> Passes {
        Passes {
            checkpoint,
            fold: true,
            second_order: None,
            derived: false,
            lanes: LanesAsk::No,
        }
    }
}

/// The passes an attribute asks for.
fn passes(args: &Args, errs: &mut Errors) -> Passes {
    Passes {
        checkpoint: policy(args, errs),
        fold: args.fold.unwrap_or(true),
        second_order: second_order(args, errs),
        derived: false,
        lanes: match args.lanes.is_present() {
            true => LanesAsk::Asked(args.lanes.span()),
            false => LanesAsk::No,
        },
    }
}

/// The span of `order = 2`, if the attribute asks for second derivatives.
fn second_order(args: &Args, errs: &mut Errors) -> Option<Span> {
    let lit = args.order.as_ref()?;
    match lit.base10_parse::<u32>() {
        Ok(1) => None,
        Ok(2) => Some(lit.span()),
        _ => {
            errs.spanned(lit, "`order` is the highest order of derivative generated: 1 (the default: `f_jvp`, `f_lin`, `f_vjp`) or 2 (also `f_hvp` and `f_hessian`)");
            None
        }
    }
}

/// Snapshots per loop under `checkpoint = "binomial"` when the attribute
/// gives none: 10⁶ iterations then evaluate each step at most 5 times.
pub const DEFAULT_SNAPSHOTS: u32 = 64;

/// The checkpoint policy an attribute asks for.
fn policy(args: &Args, errs: &mut Errors) -> unzip::Checkpoint {
    let policy = match args.checkpoint.as_ref().map(|l| (l.value(), l)) {
        None => unzip::Checkpoint::Adjoint,
        Some((v, _)) if v == "auto" => unzip::Checkpoint::Adjoint,
        Some((v, _)) if v == "save" => unzip::Checkpoint::SaveAll,
        Some((v, _)) if v == "state" => unzip::Checkpoint::LoopState,
        Some((v, _)) if v == "binomial" => unzip::Checkpoint::Binomial {
            snapshots: DEFAULT_SNAPSHOTS,
        },
        Some((v, lit)) => {
            errs.spanned(lit, format!("unknown checkpoint policy \"{v}\": use \"auto\" (the default: as \"save\", except that reductions over arrays read them again), \"save\" (keep every intermediate the derivative needs), \"state\" (keep each loop iteration's state and recompute the rest in the reverse sweep) or \"binomial\" (keep a few loop states and recompute the others by Griewank's Revolve schedule; set how many with `snapshots = N`)"));
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
            | unzip::Checkpoint::RecomputeCheap
            | unzip::Checkpoint::Adjoint,
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

/// The attribute's arguments, errors collected.
fn parse_args(attr: TokenStream, errs: &mut Errors) -> Args {
    match NestedMeta::parse_meta_list(attr) {
        Ok(list) => Args::from_list(&list).unwrap_or_else(|e| {
            errs.push_err(e.into());
            Args::default()
        }),
        Err(e) => {
            errs.push_err(e);
            Args::default()
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
    let args = parse_args(attr, &mut errs);
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
    if let Ok(block) = syn::parse2::<syn::ItemImpl>(item.clone()) {
        return methods::differentiable_impl(attr, block);
    }
    let (args, item_fn, errs) = match parse_input(attr.clone(), item.clone(), "differentiable") {
        Ok(parsed) => parsed,
        Err(out) => return out,
    };
    let clean = without_markers(&item_fn);
    if let Some(path) = &args.jvp {
        return custom::custom_derivative(&item_fn, &clean, path, errs);
    }
    let pending = fn_struct_paths(&item_fn);
    if pending.is_empty() {
        let known = (&Structs::default(), &Sigs::default());
        return expand_fn(&args, attr, &item_fn, errs, known, Some(&clean));
    }
    // The function stands on its own now, whatever becomes of the lookups
    // (see `layout`); the generated items follow once the layouts arrive.
    let start = start_job(Kind::Differentiable, attr, item, pending);
    quote!(#clean #start)
}

/// A new job waiting for the layouts of `pending`: its first step, after
/// the checks that each path names a derived struct.
fn start_job(
    kind: Kind,
    attr: TokenStream,
    item: TokenStream,
    pending: Vec<syn::Path>,
) -> TokenStream {
    let checks = derive_checks(&pending);
    let next = Job::awaiting_layouts(kind, attr, item, pending).next();
    quote!(#checks #next)
}

/// For each path a job will look up, a check that it names a type with
/// the derive: a struct without it has no layout macro, which rustc
/// reports, and this bound's message says what to do. A struct generic in
/// its float type is checked at `f64` (the check is outside the function,
/// where its `T` is not in scope).
fn derive_checks(pending: &[syn::Path]) -> TokenStream {
    pending
        .iter()
        .map(|p| {
            let generic = p.segments.last().is_some_and(|s| !s.arguments.is_none());
            let p = if generic {
                crate::layout::at_arg(p, &quote!(f64))
            } else {
                p.clone()
            };
            quote_spanned! {p.span()=>
                const _: fn() = || {
                    fn is_differentiable<T: ::linear_ad::Differentiable>() {}
                    is_differentiable::<#p>();
                };
            }
        })
        .collect()
}

/// The generated items of `#[differentiable(attr)] item` (without the
/// function itself, emitted before), given the layouts of the structs it
/// names and the signatures of the functions it calls.
pub fn differentiable_with(
    attr: TokenStream,
    item: TokenStream,
    structs: &Structs,
    sigs: &Sigs,
) -> TokenStream {
    match parse_input(attr.clone(), item, "differentiable") {
        Ok((args, item_fn, errs)) => expand_fn(&args, attr, &item_fn, errs, (structs, sigs), None),
        Err(out) => out,
    }
}

/// Lowers and generates; `clean` is the function as the user sees it, if
/// it is still to be emitted. If the function calls functions whose
/// signatures it does not know yet, the output is instead the next step
/// of a job that fetches them and comes back (see [`crate::signature`]).
fn expand_fn(
    args: &Args,
    attr: TokenStream,
    item_fn: &syn::ItemFn,
    mut errs: Errors,
    (structs, sigs): (&Structs, &Sigs),
    clean: Option<&syn::ItemFn>,
) -> TokenStream {
    let erased = crate::lower::erase_lifetimes(item_fn);
    let item_fn: &syn::ItemFn = &erased;
    let passes = passes(args, &mut errs);
    let _float = FloatParam::set(crate::lower::float_param(&item_fn.sig.generics));
    let mut missing = Missing::default();
    let lowered = lower_fn_with(
        item_fn,
        &mut errs,
        Mode::Differentiable,
        structs,
        sigs,
        &mut missing,
    );
    if !missing.is_empty() {
        let item = quote!(#item_fn);
        let checks = derive_checks(&missing.layouts);
        let job = Job::awaiting(Kind::Differentiable, attr, item, (structs, sigs), missing);
        let next = job.next();
        return quote!(#clean #checks #next);
    }
    finish(item_fn, clean, lowered, errs, |l| {
        let g = items::generate(item_fn, l, args.dump, passes, items::Owner::Free)?;
        let kind = (
            signature::Kind::differentiable(g.callable),
            g.order,
            g.lanes,
        );
        let map = (&items::map_name(item_fn), g.detached_static);
        let callee = signature::callee_items(item_fn, kind, structs, map);
        Ok(quote!(#g #callee))
    })
}

/// The paths that may name derived structs in `f`'s differentiable
/// parameters and result. Struct literals and patterns in the body are
/// resolved against these and the structs they nest (see
/// [`Structs::with_nested`]); a struct literal with differentiable fields
/// that names another struct is fetched when lowering meets it
/// (`Lowerer::struct_expr`). Looking up every path in the body would
/// fail on structs of constant code that have no derive.
fn fn_struct_paths(f: &syn::ItemFn) -> Vec<syn::Path> {
    let mut paths = Vec::new();
    let float = crate::lower::float_param(&f.sig.generics);
    if !f.sig.generics.params.is_empty() && float.is_none() {
        // Refused by lowering; its type parameters are no structs.
        return paths;
    }
    let _float = FloatParam::set(float);
    for input in &f.sig.inputs {
        if let syn::FnArg::Typed(pt) = input {
            let nondiff = pt.attrs.iter().any(|a| a.path().is_ident("nondiff"));
            if !nondiff && !crate::lower::is_constant_type(&pt.ty) {
                struct_paths(&pt.ty, &mut paths);
            }
        }
    }
    if let syn::ReturnType::Type(_, t) = &f.sig.output {
        struct_paths(t, &mut paths);
    }
    paths
}

/// The output of either attribute: the function as written (so the user
/// sees no cascade), then the errors if lowering found any, else the
/// generated items, else an internal error at the function's name.
fn finish(
    item_fn: &syn::ItemFn,
    clean: Option<&syn::ItemFn>,
    lowered: Option<Lowered>,
    errs: Errors,
    generate: impl FnOnce(&Lowered) -> Result<TokenStream, String>,
) -> TokenStream {
    match generated(item_fn, lowered, errs, generate) {
        Ok(g) => quote!(#clean #g),
        Err(errors) => {
            let failed = failed_signatures(item_fn);
            quote!(#clean #errors #failed)
        }
    }
}

/// The signature macros of a function whose expansion failed, and of its
/// `_jvp` and `_vjp`, of kind [`signature::Kind::Failed`]: its callers
/// stop quietly, its own errors saying why, where they would otherwise
/// each report that the macro does not exist. None for a method (its
/// `impl` block may not hold macros; methods find each other's
/// signatures there).
fn failed_signatures(item_fn: &syn::ItemFn) -> TokenStream {
    if item_fn.sig.receiver().is_some() {
        return TokenStream::new();
    }
    ["", "_jvp", "_vjp"]
        .into_iter()
        .map(|suffix| {
            let mut f = item_fn.clone();
            f.sig.ident = quote::format_ident!("{}{}", item_fn.sig.ident, suffix);
            let kind = (signature::Kind::Failed, signature::Order::Once, false);
            let map = (&items::map_name(&f), false);
            signature::callee_items(&f, kind, &Structs::default(), map)
        })
        .collect()
}

/// What `generate` makes of the lowered function, or the compile errors
/// that stand in its place: lowering's, or an internal error at the
/// function's name.
fn generated<T>(
    item_fn: &syn::ItemFn,
    lowered: Option<Lowered>,
    errs: Errors,
    generate: impl FnOnce(&Lowered) -> Result<T, String>,
) -> Result<T, TokenStream> {
    let lowered = match lowered {
        Some(l) if errs.is_empty() => l,
        _ => return Err(errs.into_compile_errors()),
    };
    generate(&lowered).map_err(|msg| {
        syn::Error::new(
            item_fn.sig.ident.span(),
            format!("linear-ad internal error (please report it): {msg}"),
        )
        .to_compile_error()
    })
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
pub fn pipeline(f: &Func, externs: &[Extern], passes: Passes) -> Result<Stages, String> {
    let source = Program {
        externs: externs.to_vec(),
        funcs: vec![f.clone()],
    };
    recheck(|| check(&source), "lowered function:")?;
    // The source simplified first: a value read twice (`x[i] * x[i]`) is
    // differentiated once.
    let j = simplify(&jvp(&simplify(&source)).map_err(|e| e.to_string())?);
    recheck(|| check(&j), "after J:")?;
    // Folded after simplification, which flattens the blocks J nests; the
    // folds leave copies and dead literals for a second simplification.
    let j = if passes.fold {
        let folded = simplify(&fold(&j));
        recheck(|| check(&folded), "after folding:")?;
        folded
    } else {
        j
    };
    let u = simplify(&unzip::unzip(&j, passes.checkpoint).map_err(|e| e.to_string())?);
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
        Shape::Array(..) | Shape::Struct(_) => true,
        // Passed as it is: the IR indexes it in place.
        Shape::Slice(..) => false,
    }
}

/// Rust value of shape `s` to its IR representation (arrays to tuples; an
/// array read by index is borrowed, so that a `Vec` passed by value stays
/// where it is for its length to be read after the forward pass).
fn to_ir(e: TokenStream, s: &Shape, names: &mut Names) -> TokenStream {
    if s.row().is_some() {
        // Rows are viewed as their flat array, in place.
        return quote!(#e.as_flattened());
    }
    if s.owned_input() {
        // A `Vec` by value, or the `Vec` of an array of structs' flat
        // values that the function made first (`Sig::own_elements`).
        return quote!(&#e);
    }
    convert(e, s, names, Dir::Into)
}

/// The `Vec` of the IR values of the elements of `xs`, an array of
/// structs of shape `s` (or of their tangents): their flat values, with
/// fixed-size arrays as tuples.
pub(super) fn elements_to_ir(xs: &TokenStream, s: &Shape, names: &mut Names) -> TokenStream {
    let Shape::Slice(elem, _) = s else {
        return xs.clone();
    };
    if !elem.has_fixed_array() {
        return quote!(::linear_ad::__private::flat_elements(&#xs[..]));
    }
    let e = quote::format_ident!("__linear_ad_e", span = Span::mixed_site());
    let conv = convert(quote!(#e), elem, names, Dir::Into);
    quote!(#xs.iter().map(|#e| #conv).collect::<::linear_ad::__private::Vec<_>>())
}

/// `f`'s parameter declarations with the input lifetime on the references
/// to arrays read by index, for an `f_lin` whose linearization borrows
/// them.
/// Which way [`convert`] goes; out of the IR, a struct is rebuilt as its
/// primal type or as its tangent, or as the type its place expects
/// (`Inferred`: an argument of a callee whose struct types the caller's
/// scope may not name).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Dir {
    Into,
    Tangent,
    Primal,
    Inferred,
}

/// A result's Rust value, tangent or cotangent of shape `s` to its IR
/// representation: an array the function builds is its own IR value,
/// owned, and the transposed residual consumes a cotangent array as its
/// buffer.
fn result_to_ir(e: TokenStream, s: &Shape, names: &mut Names) -> TokenStream {
    match (s.row(), s) {
        (Some((_, m)), Shape::Slice(_, crate::lower::SliceKind::Array(n))) => {
            let l = m * n;
            return quote!(::linear_ad::__private::flat_array::<_, #m, #n, #l>(#e));
        }
        // A `Vec` of rows is its flat array without a copy.
        (Some(_), _) => return quote!(#e.into_flattened()),
        (None, _) if s.elements().is_some() => return elements_to_ir(&e, s, names),
        (None, _) => {}
    }
    convert(e, s, names, Dir::Into)
}

/// The Rust length of a result of shape `s` (an array of run-time length)
/// from its IR value `y`: rows count `m` elements of the flat array each.
fn result_len(y: &TokenStream, s: &Shape) -> TokenStream {
    match s.row() {
        Some((_, m)) => quote!((#y.len() / #m)),
        None => quote!(#y.len()),
    }
}

/// IR representation to the primal Rust value of shape `s` (a struct as
/// the struct itself, see [`from_ir`]).
fn primal_from_ir(e: TokenStream, s: &Shape, names: &mut Names) -> TokenStream {
    match (s, s.elements()) {
        // A `Vec` of structs the function built, rebuilt from their flat
        // values (structs without constant fields: see
        // `Shape::from_result_type`).
        (Shape::Slice(elem, _), Some(st)) => {
            let p = &st.path;
            elements_from_ir(e, elem, quote!(#p), names, Dir::Primal)
        }
        (Shape::Slice(..), _) => from_ir(e, s, names),
        _ => convert(e, s, names, Dir::Primal),
    }
}

/// The `Vec<ty>` of structs (primal or tangent, by `dir`) of shape `elem`
/// from the IR's `Vec` of their flat values `e`: [`elements_to_ir`]
/// backwards, element by element where arrays are tuples in the IR.
fn elements_from_ir(
    e: TokenStream,
    elem: &Shape,
    ty: TokenStream,
    names: &mut Names,
    dir: Dir,
) -> TokenStream {
    if !elem.has_fixed_array() {
        return quote!(::linear_ad::__private::elements_from_flat::<#ty>(#e));
    }
    let x = quote::format_ident!("__linear_ad_t", span = Span::mixed_site());
    let conv = convert(quote!(#x), elem, names, dir);
    quote!(#e.into_iter().map(|#x| -> #ty { #conv }).collect::<::linear_ad::__private::Vec<#ty>>())
}

/// IR representation to the Rust value of a tangent or cotangent of shape
/// `s`; the flat cotangent of an array of rows is copied into rows.
fn from_ir(e: TokenStream, s: &Shape, names: &mut Names) -> TokenStream {
    match s {
        Shape::Slice(_, kind) => match (s.row(), kind) {
            (
                Some((_, m)),
                crate::lower::SliceKind::ArrayRef(n) | crate::lower::SliceKind::Array(n),
            ) => {
                quote!(::linear_ad::__private::rows_array::<_, #m, #n>(#e))
            }
            (Some((_, m)), _) => quote!(::linear_ad::__private::rows::<_, #m>(#e)),
            (None, _) => match (s.elements(), s) {
                (Some(st), Shape::Slice(elem, _)) => {
                    elements_from_ir(e, elem, st.tangent(), names, Dir::Tangent)
                }
                _ => e,
            },
        },
        _ => convert(e, s, names, Dir::Tangent),
    }
}

/// [`from_ir`] for an argument of another function's generated code:
/// structs are rebuilt as the parameter's type, which the caller's scope
/// may not name.
fn arg_from_ir(e: TokenStream, s: &Shape, names: &mut Names) -> TokenStream {
    match s {
        Shape::Slice(..) => from_ir(e, s, names),
        _ => convert(e, s, names, Dir::Inferred),
    }
}

/// Destructures `e` and rebuilds it with every array of `s` as a tuple
/// and every struct as the tuple of its flat value (`Dir::Into`), or
/// every such tuple as an array or struct again.
pub(super) fn convert(e: TokenStream, s: &Shape, names: &mut Names, dir: Dir) -> TokenStream {
    if !has_array(s) {
        return e;
    }
    let into_ir = dir == Dir::Into;
    let (parts, shapes): (Vec<syn::Ident>, Vec<&Shape>) = match s {
        Shape::Float(_) | Shape::Slice(..) => return e,
        Shape::Struct(st) => {
            let flat = crate::lower::flat_shape(s);
            if into_ir {
                let e = quote!(::linear_ad::__private::ToFlat::flat(&#e));
                return convert(e, &flat, names, dir);
            }
            let inner = convert(e, &flat, names, dir);
            let ty = match dir {
                Dir::Primal => s.primal(),
                Dir::Inferred => return quote!(::linear_ad::__private::FromFlat::from_flat(#inner)),
                Dir::Into | Dir::Tangent => st.tangent(),
            };
            return quote!(<#ty as ::linear_ad::__private::FromFlat>::from_flat(#inner));
        }
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
        .map(|(p, s)| convert(quote!(#p), s, names, dir))
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
