//! `#[differentiable(order = 2)]` makes `f_jvp` and `f_vjp` differentiable
//! functions in their turn: other `#[differentiable]` code can call them
//! (nested derivatives: a gradient through an inner gradient descent),
//! and they have their own `_jvp`, `_lin` and `_vjp`.
//!
//! Each is a function of the IR already (paper, section 4.5: L erases
//! linearity so that a derivative can be differentiated again):
//!
//! * `f_jvp` is [`crate::passes::hvp::directional`], L of J(f);
//! * `f_vjp` is [`crate::passes::hvp::first_vjp`], L of U(J(f))'s forward
//!   pass composed with T of its residual;
//!
//! their results grouped as their Rust results are
//! ([`crate::passes::hvp::tupled`]). Each is then handed to
//! [`super::generate`] as if the user had written it, with `f`'s
//! parameters followed by the tangents (or the cotangent) as its
//! parameters: the first-order pipeline (J, U, T) runs on it, and it gets
//! the linearization, companions, signature macro and alias any callee
//! has. No derivative is written here.
//!
//! `f`'s calls of other functions stay calls in `f_jvp`, of their `_jvp`s
//! (J's externs, linearity erased, at `f`'s call sites); its pipeline
//! differentiates them into calls of those callees' own second-order
//! companions (`companions::jvp_companions`, which `f` gets here too, so
//! that second derivatives of its callers can go through it).
//!
//! A function of slices crosses calls detached from them
//! (`items::Detached`), and so does its `f_jvp`, whose slices are `f`'s
//! and their directions: `f_jvp`'s second-order companions pass both back
//! to its linearization, and take an accumulator for each.
//!
//! `f_vjp`'s calls go through the callees' own `_vjp`s, which `order = 2`
//! makes differentiable (their signatures say so: `Order::TwiceVjp`,
//! which also says whether their linearizations have `__apply_lanes`):
//! its forward pass calls `g` and keeps `g`'s arguments, its reverse pass
//! calls `g_vjp` on them ([`crate::passes::through`]; [`through_calls`]
//! makes the call sites). Where this composed VJP cannot be
//! differentiated (a call with no such path, such as one of a method of
//! another block, which the caller cannot know to have a differentiable
//! `_vjp`; or records J cannot carry: see
//! [`crate::passes::hvp::first_vjp`]), `f_vjp`'s derivatives are those of
//! the VJP by forward mode ([`crate::passes::forward_vjp`]: `f_jvp`'s
//! program run once per input float, for inputs of a fixed size of at
//! most [`crate::passes::forward_vjp::MAX_DIRECTIONS`] floats). `f_vjp`
//! itself stays the composed VJP; the gradient `f_vjp_jvp` and `f_vjp_lin`
//! return beside their derivatives is the forward-mode one, equal to
//! `f_vjp`'s up to rounding; `f_hessian` makes HVPs, which cost less than
//! linearizing it. Where that is refused too (slices, more floats),
//! `f_vjp` gets a signature of kind [`Kind::Tape`], so a caller gets an
//! error at its call that says so.
//!
//! A function of slices' `f_vjp` returns their cotangents, a tuple
//! holding arrays (`(R, (Vec<T>, ..))`), whose parts are results of their
//! own through the pipeline (`lower/results.rs`). Functions other
//! differentiable code cannot call (arrays other than slices of floats,
//! structs holding arrays) get neither.
//!
//! A struct's direction in `f_jvp` and its cotangent in `f_vjp` are its
//! tangent struct (`<S as Differentiable>::Tangent`, which has no constant
//! fields, so it crosses calls flat); the derived signatures carry the
//! layouts `f` knows, so that callers read it by field.
//!
//! A method's derived functions are methods too ([`Emitted::fns`], inside
//! the `impl` of its type), with no signature macro: callers in its block
//! know it has `order = 2` from the block, callers elsewhere through the
//! `SecondOrder` impl of its linearization (rustc's error at the call if
//! it has none). `f_vjp`'s calls of methods of its own block go through
//! their `_vjp`s (by their `Method` impls), which the block knows to be
//! differentiable: it takes every method with `order = 2` to have a
//! differentiable `_vjp`, and expands again without the claims its
//! expansion disproves (`expand::methods`). Callers outside the block
//! have no signature to tell by: where the arguments tell the cotangents
//! (all differentiable, at most `MAX_DIRECTIONS` floats, so that an
//! `order = 2` method's `_vjp` is differentiable, by forward mode at
//! worst: `Lowerer::method_cotangents`), they go through the `_vjp` its
//! linearization names (`SecondOrder::VjpLin`); else their `f_vjp`'s
//! derivatives are by forward mode.
//!
//! `#[nondiff]` slices are data in the derived functions too ([`data_in`]):
//! their tapes borrow them as `f`'s do, and callers pass them back.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use rustc_hash::FxHashMap as HashMap;

use super::{generate, map_name, Owner, Sig};
use crate::expand::{LanesAsk, Passes, Stages};
use crate::ir::{Extern, Func, Var};
use crate::layout::Structs;
use crate::lower::{CallArg, CallSite, Lowered, Param, Shape};
use crate::passes::forward_vjp::forward_vjp;
use crate::passes::hvp::{directional_externs, first_vjp, tupled};
use crate::passes::through::{CotangentOf, Through};
use crate::signature::{callee_items, Kind, Order};

/// The derived callees `f_jvp` and `f_vjp`, from `d` (the directional
/// derivative [`crate::passes::hvp::directional`] made, `None` at order 1
/// or where `order = 2` was refused) and the first-order pipeline's
/// `stages`. Where they cannot be differentiated, their signatures only,
/// so that a caller's error says why (`f` at order 1, `f` not callable).
pub(super) fn callees(
    item: &syn::ItemFn,
    l: &Lowered,
    sig: &Sig,
    (d, stages, passes): (Option<&Func>, &Stages, Passes),
    (callable, detached): (bool, Detachment),
) -> Callees {
    let none = |items| Callees {
        code: Emitted {
            fns: quote!(),
            items,
        },
        vjp_lin: false,
        vjp_callable: false,
        vjp_lanes: false,
        twice: false,
    };
    let refused = |kind: Kind| -> TokenStream {
        [Which::Jvp, Which::Vjp]
            .into_iter()
            .filter_map(|w| derived_item(item, l, sig, w))
            .map(|(d_item, _)| signature((sig, &l.structs), &d_item, (kind, false), false))
            .collect()
    };
    let d = match (d, passes.second_order) {
        (_, None) if passes.derived => return none(refused(Kind::ThirdOrder)),
        (_, None) if !callable => return none(refused(Kind::Closed)),
        (_, None) => return none(refused(Kind::FirstOrder)),
        (None, Some(_)) => return none(quote!()),
        (Some(_), Some(_)) if !callable => return none(refused(Kind::Closed)),
        (Some(d), Some(_)) => d,
    };
    let passes = Passes {
        second_order: None,
        derived: true,
        lanes: LanesAsk::No,
        ..passes
    };
    // `f_jvp` calls what `f` calls, through their `_jvp`s: its externs
    // are J's, linearity erased, at `f`'s call sites.
    let jvp = tupled(d, &[1, 1])
        .and_then(|f| Ok((f, directional_externs(&stages.jvp)?)))
        .map_err(|e| e.msg)
        .and_then(|(f, externs)| {
            let (d_item, mut d_l) = derived(item, l, sig, &f, Which::Jvp)?;
            d_l.externs = externs;
            d_l.calls = l.calls.clone();
            Ok((d_item, d_l))
        });
    let d_item = jvp.as_ref().ok().map(|(d_item, _)| d_item.clone());
    let (mut code, _, jvp_static) = emit(jvp, passes, (sig, item.sig.ident.span()));
    // A function of slices: `f_vjp` returns the cotangents of its arrays,
    // a tuple holding arrays, whose parts stay results of their own
    // (`lower/results.rs`); `f_hessian` does not use it.
    let slices = !sig.arrays().is_empty();
    // Arrays calls cannot pass (rows, `Vec<T>` by value): callers could
    // not call `f_vjp` (nor `f`), which would go through the pipeline for
    // nothing.
    let vjp = (!slices || detached.arrays).then(|| vjp_items(item, l, sig, (d, stages, passes)));
    let vjp_map = match &vjp {
        Some((_, _, true, _)) if !slices => {
            let vjp_ident = format_ident!("{}_vjp", item.sig.ident);
            Some((sig.owner.map_name(&vjp_ident), sig.float.decl(None)))
        }
        _ => None,
    };
    let second = match d_item {
        Some(d_item) if !l.ret.has_struct() => {
            jvp_companions(item, l, sig, (&d_item, jvp_static, vjp_map), detached)
        }
        _ => None,
    };
    let twice = second.is_some();
    code.items.extend(second);
    let Some((vjp, vjp_lanes, vjp_callable, composed)) = vjp else {
        let vjp = derived_item(item, l, sig, Which::Vjp).map(|(vjp_item, _)| {
            signature((sig, &l.structs), &vjp_item, (Kind::Closed, false), false)
        });
        code.items.extend(vjp);
        return Callees {
            code,
            vjp_lin: false,
            vjp_callable: false,
            vjp_lanes: false,
            twice,
        };
    };
    // `f_hessian` linearizes the composed VJP once; the forward-mode VJP
    // runs `f_jvp` once per input already, so it makes HVPs instead.
    let differentiable = vjp_callable && !slices && composed;
    code.fns.extend(vjp.fns);
    code.items.extend(vjp.items);
    Callees {
        code,
        vjp_lin: differentiable,
        vjp_callable,
        vjp_lanes,
        twice,
    }
}

/// `f_jvp`'s second-order companions, by which callers differentiate `f`
/// twice (`companions::jvp_companions`), given `f_jvp`'s item, whether its
/// linearization is `'static`, and `f_vjp`'s linearization type where it
/// is differentiable (`SecondOrder::VjpLin`).
fn jvp_companions(
    item: &syn::ItemFn,
    l: &Lowered,
    sig: &Sig,
    (d_item, jvp_static, vjp): (&syn::ItemFn, bool, Option<(syn::Ident, TokenStream)>),
    detached: Detachment,
) -> Option<TokenStream> {
    let statically = |on: bool| on.then(|| syn::Lifetime::new("'static", Span::call_site()));
    let (f_map, jvp_map) = (
        sig.owner.map_name(&item.sig.ident),
        sig.owner.map_name(&d_item.sig.ident),
    );
    let maps = crate::expand::companions::JvpMaps {
        map: (&f_map, sig.float.decl(statically(detached.statically))),
        jvp: (&jvp_map, sig.float.decl(statically(jvp_static))),
        vjp,
        generics: (sig.float.decl(None), &sig.float.where_clause),
        float: sig.float.param.as_ref(),
        arrays: detached.arrays,
    };
    crate::expand::companions::jvp_companions(
        &l.params,
        &maps,
        (&sig.ret_ty, &sig.ret_tan),
        &sig.allow,
    )
}

/// The derived `f_vjp` (its items, whether its linearization has
/// `apply_lanes`, whether it is differentiable, and whether it is the
/// composed VJP), or its signature of kind [`Kind::Tape`] where it cannot
/// be differentiated. Its calls go through their callees' own VJPs
/// ([`through_calls`]); where the composed VJP cannot be differentiated,
/// it is the VJP by forward mode from `d`
/// ([`crate::passes::forward_vjp`]), for inputs of a fixed size.
fn vjp_items(
    item: &syn::ItemFn,
    l: &Lowered,
    sig: &Sig,
    (d, stages, passes): (&Func, &Stages, Passes),
) -> (Emitted, bool, bool, bool) {
    let name = item.sig.ident.to_string();
    let slices = !sig.arrays().is_empty();
    let groups = [1, sig.active.len()];
    let (through, sites) = through_calls(l);
    let with_calls = |(d_item, mut d_l): (syn::ItemFn, Lowered), externs: Vec<Extern>| {
        d_l.externs = externs;
        d_l.calls = sites.clone();
        (d_item, d_l)
    };
    let span = item.sig.ident.span();
    match first_vjp(&stages.transposed, &name, &through) {
        Ok(Some((f, externs))) if slices => {
            let (items, _, _) = emit(
                derived(item, l, sig, &f, Which::Vjp).map(|d| with_calls(d, externs)),
                Passes {
                    lanes: LanesAsk::No,
                    ..passes
                },
                (sig, span),
            );
            (items, false, true, true)
        }
        Ok(Some((f, externs))) => {
            let (items, lanes, _) = emit(
                tupled(&f, &groups)
                    .map_err(|e| e.msg)
                    .and_then(|f| derived(item, l, sig, &f, Which::Vjp))
                    .map(|d| with_calls(d, externs)),
                hessian_lanes(sig, passes),
                (sig, span),
            );
            (items, lanes, true, true)
        }
        Ok(None) => match forward_mode(d, &stages.jvp, &name) {
            // Its calls are `f_jvp`'s: of the callees' `_jvp`s.
            Ok(Some((f, externs))) if !slices => {
                let derived = tupled(&f, &groups)
                    .map_err(|e| e.msg)
                    .and_then(|f| derived(item, l, sig, &f, Which::Vjp))
                    .map(|(d_item, mut d_l)| {
                        d_l.externs = externs;
                        d_l.calls = l.calls.clone();
                        (d_item, d_l)
                    });
                let no_lanes = Passes {
                    lanes: LanesAsk::No,
                    ..passes
                };
                let (items, _, _) = emit(derived, no_lanes, (sig, span));
                (items, false, true, false)
            }
            // Not differentiable: callers learn why at their call.
            Ok(_) => (tape_signature(item, l, sig), false, false, false),
            Err(e) => {
                let (items, lanes, _) = emit(Err(e.msg), passes, (sig, span));
                (items, lanes, false, false)
            }
        },
        Err(e) => {
            let (items, lanes, _) = emit(Err(e.msg), passes, (sig, span));
            (items, lanes, false, false)
        }
    }
}

/// The VJP by forward mode from `d` ([`crate::passes::forward_vjp`]),
/// with the externs it calls (J's, linearity erased: `f_jvp`'s).
fn forward_mode(
    d: &Func,
    jvp: &crate::ir::Program,
    name: &str,
) -> Result<Option<(Func, Vec<Extern>)>, crate::passes::PassError> {
    let externs = directional_externs(jvp)?;
    Ok(forward_vjp(d, &externs, name)?.map(|f| (f, externs)))
}

/// `f_vjp`'s signature of kind [`Kind::Tape`]: callers of it learn that
/// it cannot be differentiated.
fn tape_signature(item: &syn::ItemFn, l: &Lowered, sig: &Sig) -> Emitted {
    let items = derived_item(item, l, sig, Which::Vjp)
        .map(|(vjp_item, _)| signature((sig, &l.structs), &vjp_item, (Kind::Tape, false), false));
    Emitted {
        fns: quote!(),
        items: quote!(#items),
    }
}

/// The calls `f_vjp` can make through their callees' VJPs
/// ([`crate::passes::through`]): calls of functions whose `_vjp` is
/// differentiable (`Order::TwiceVjp`), passing floats, tuples and fixed
/// arrays of them, or integers; with the call sites of `f_vjp`'s own
/// calls: `f`'s, and one of the callee's `_vjp` per such call, numbered
/// after them.
fn through_calls(l: &Lowered) -> (Vec<Through>, HashMap<Var, CallSite>) {
    let mut sites = l.calls.clone();
    let mut calls: Vec<(&Var, &CallSite)> = l.calls.iter().collect();
    calls.sort_by_key(|(v, _)| v.number());
    let mut next = calls.last().map_or(0, |(v, _)| v.number());
    let mut through = Vec::new();
    for (name, site) in calls {
        let Some(call) = l.externs.iter().find(|e| e.name == *name) else {
            continue;
        };
        let Some((vjp_site, cotangents)) = vjp_site(site) else {
            continue;
        };
        next += 1;
        let vjp = Var::new(&format!("call.{next}"));
        sites.insert(vjp.clone(), vjp_site);
        through.push(Through::new(call.clone(), vjp, cotangents));
    }
    (through, sites)
}

/// The call site of the callee's `_vjp` at `site`'s arguments and the
/// cotangent of its result, and the cotangents it returns (see
/// [`Through::new`]); `None` unless the callee's `_vjp` is
/// differentiable (by its signature, or for a method of another block,
/// by its arguments) and every argument a value (a float, a tuple or
/// fixed array of them, an integer, a constant held in the prelude such
/// as a literal), a struct, a slice of floats or a part of one
/// (`&x[a..b]`), not a constant array. A method of another block has no
/// signature here, but cotangents read off its arguments, which say its
/// `_vjp` is differentiable if it has `order = 2`
/// (`Lowerer::method_cotangents`; rustc's error at the call if it has
/// not, as for its `_jvp`); it is reached through its linearization's
/// `SecondOrder::VjpLin`.
fn vjp_site(site: &CallSite) -> Option<(CallSite, Vec<CotangentOf>)> {
    if site.ret.has_slice() || site.ret.has_struct() {
        return None;
    }
    // A method of another block (no signature): see the doc above.
    let (lanes, elsewhere) = match site.order {
        Some((_, Order::TwiceVjp { lanes })) => (lanes, false),
        None if site.cotangents.is_some() => (false, true),
        _ => return None,
    };
    let cts = site
        .cotangents
        .as_ref()
        .filter(|c| c.len() == site.args.len())?;
    let value = |s: &Shape| !s.has_slice() && !s.has_struct();
    let floats = |s: &Shape| matches!(s, Shape::Slice(e, _) if matches!(**e, Shape::Float(_)));
    let same_elements = |s: &Shape, c: &Shape| match (s, c) {
        (Shape::Slice(a, _), Shape::Slice(b, _)) => a == b,
        _ => false,
    };
    // The IR parameter each argument is (a part's: its array's), and the
    // one holding a part's lower bound.
    let (positions, ranges) = (site.positions(), site.ranges());
    let param = |i: usize| match &site.args[i] {
        CallArg::Part { first: Some(j), .. } => positions.get(*j).and_then(|p| p.0),
        _ => positions.get(i).and_then(|p| p.0),
    };
    let (mut cotangents, mut shapes) = (Vec::new(), Vec::new());
    for (i, (a, ct)) in site.args.iter().zip(cts).enumerate() {
        let (ct, k, lo) = match (a, ct) {
            (CallArg::Active(s, _), Some(c)) if value(s) && s == c => (c, param(i), None),
            // A struct, flat in the IR (or passed as its origin, which has
            // constant fields): its cotangent is its tangent struct.
            (CallArg::Active(s, _) | CallArg::Origin(s, _, _), Some(c))
                if matches!(c, Shape::Struct(_)) && crate::lower::flat_shape(c) == *s =>
            {
                (c, param(i), None)
            }
            (CallArg::Active(s, _), Some(c)) if floats(s) && same_elements(s, c) => {
                (c, param(i), None)
            }
            (CallArg::Again { first, .. }, Some(c)) if floats(c) => (c, param(*first), None),
            (
                CallArg::Part {
                    lent: true,
                    active: true,
                    ..
                },
                Some(c),
            ) if floats(c) => (c, param(i), Some(ranges[i]?.0)),
            (CallArg::Inactive(..), Some(c)) if value(c) => (c, None, None),
            (CallArg::Discrete(_) | CallArg::Inactive(..) | CallArg::Data { .. }, None) => continue,
            (
                CallArg::Active(..)
                | CallArg::Origin(..)
                | CallArg::Inactive(..)
                | CallArg::Discrete(_)
                | CallArg::Again { .. }
                | CallArg::Data { .. }
                | CallArg::Part { .. },
                _,
            ) => return None,
        };
        if matches!(
            a,
            CallArg::Active(..) | CallArg::Again { .. } | CallArg::Part { .. }
        ) && k.is_none()
        {
            return None;
        }
        let c = cotangent(ct);
        cotangents.push((c.ty(), k, lo));
        shapes.push(c);
    }
    let shapes = match <[Shape; 1]>::try_from(shapes) {
        Ok([one]) => one,
        Err(many) => Shape::Tuple(many),
    };
    let rename = |id: &mut syn::Ident| *id = format_ident!("{}_vjp", id, span = id.span());
    let mut path = site.path.clone();
    rename(&mut path.segments.last_mut()?.ident);
    let span = path.segments.last()?.ident.span();
    let callee = vjp_callee(&site.callee, &path.segments.last()?.ident, elsewhere)?;
    let mut args = site.args.clone();
    args.push(CallArg::Active(site.ret.clone(), span));
    Some((
        CallSite {
            path,
            callee,
            args,
            ret: Shape::Tuple(vec![site.ret.clone(), shapes]),
            passes_struct: site.passes_struct,
            order: Some((Kind::Differentiable, Order::Derived)),
            lanes,
            cotangents: None,
        },
        cotangents,
    ))
}

/// The type a caller reaches the derived `g_vjp` (named `vjp`) through,
/// given the one it reaches `g` through: `g`'s alias renamed, or for a
/// method, `m_vjp`'s linearization by its own `Method` impl (a method in
/// the caller's block, whose `_vjp` the block knows to be differentiable),
/// or for a method of another block (`elsewhere`), the one `m`'s
/// linearization names (`SecondOrder::VjpLin`).
fn vjp_callee(callee: &syn::Type, vjp: &syn::Ident, elsewhere: bool) -> Option<syn::Type> {
    if elsewhere {
        let span = vjp.span();
        return Some(
            syn::parse_quote_spanned!(span=> <#callee as ::linear_ad::__private::SecondOrder>::VjpLin),
        );
    }
    let syn::Type::Path(p) = callee else {
        return None;
    };
    match &p.qself {
        None => {
            let mut p = p.clone();
            let last = &mut p.path.segments.last_mut()?.ident;
            *last = syn::Ident::new(&vjp.to_string(), last.span());
            Some(syn::Type::Path(p))
        }
        Some(q) => match &*q.ty {
            syn::Type::Path(owner) => Some(crate::lower::method_type(&owner.path, vjp)),
            _ => None,
        },
    }
}

/// The passes of the derived `f_vjp`: `f_hessian` applies `f_vjp_lin`'s
/// map to every unit direction in lanes where it can (a Hessian of a
/// fixed size), and without them where it cannot.
fn hessian_lanes(sig: &Sig, passes: Passes) -> Passes {
    let lanes = match super::second::hessian_size(sig) {
        Some(_) => LanesAsk::Quiet,
        None => LanesAsk::No,
    };
    Passes { lanes, ..passes }
}

/// What [`callees`] generates, and what it says of `f`.
pub(super) struct Callees {
    pub(super) code: Emitted,
    /// Whether `f_vjp` is differentiable (its `f_vjp_lin` exists).
    pub(super) vjp_lin: bool,
    /// Whether `f_vjp` is a differentiable function other differentiable
    /// code can call (of slices too, whose `f_vjp_lin` `f_hessian` does
    /// not use).
    pub(super) vjp_callable: bool,
    /// Whether `f_vjp_lin`'s linearization has `apply_lanes`.
    pub(super) vjp_lanes: bool,
    /// Whether callers can differentiate `f` twice: its linearization
    /// implements `SecondOrder`.
    pub(super) twice: bool,
}

/// The signature macro and alias of the derived function `d_item`, of
/// kind `kind`, as any callee has.
fn signature(
    (sig, structs): (&Sig, &Structs),
    d_item: &syn::ItemFn,
    (kind, lanes): (Kind, bool),
    detached: bool,
) -> TokenStream {
    // A method's callers find its signature through its `impl` block.
    if !matches!(sig.owner, Owner::Free) {
        return quote!();
    }
    callee_items(
        d_item,
        (kind, Order::Derived, lanes),
        structs,
        (&map_name(d_item), detached),
    )
}

/// A derived function's parameter after `f`'s: pattern, type, shape.
type Extra = (syn::Pat, syn::Type, Shape);

#[derive(Clone, Copy, PartialEq)]
enum Which {
    Jvp,
    Vjp,
}

/// Everything `#[differentiable]` generates for a derived function, and
/// its signature macro and alias; an internal error at `span` if the
/// pipeline fails on it. Also whether its linearization has
/// `apply_lanes`, and whether callers name it `'static` (detached from
/// its slices, [`super::Detached`]).
fn emit(
    derived: Result<(syn::ItemFn, Lowered), String>,
    passes: Passes,
    (sig, span): (&Sig, Span),
) -> (Emitted, bool, bool) {
    let generated = derived.and_then(|(d_item, d_l)| {
        let g = generate(&d_item, &d_l, false, passes, sig.owner)?;
        let kind = Kind::differentiable(g.callable);
        let callee = signature(
            (sig, &d_l.structs),
            &d_item,
            (kind, false),
            g.detached_static,
        );
        let items = &g.items;
        let code = Emitted {
            fns: g.fns.clone(),
            items: quote!(#items #callee),
        };
        Ok((code, g.lanes, g.detached_static))
    });
    generated.unwrap_or_else(|msg| {
        let msg = format!("linear-ad internal error (please report it): order = 2: {msg}");
        let code = Emitted {
            fns: quote!(),
            items: quote::quote_spanned!(span=> ::core::compile_error!(#msg);),
        };
        (code, false, false)
    })
}

/// A derived function's generated code: its functions (inside an `impl`
/// of the type for a method's) and the items beside them.
pub(super) struct Emitted {
    pub(super) fns: TokenStream,
    pub(super) items: TokenStream,
}

/// How `f` crosses calls: detached from its slices (`arrays`), and then
/// named `'static` by callers if its linearization borrows them
/// (`statically`); see [`super::Detached`].
#[derive(Clone, Copy)]
pub(super) struct Detachment {
    pub(super) arrays: bool,
    pub(super) statically: bool,
}

/// `f_jvp` or `f_vjp` as a user function: its `fn` line and its lowering,
/// whose IR function is `func` (renamed).
fn derived(
    item: &syn::ItemFn,
    l: &Lowered,
    sig: &Sig,
    func: &Func,
    which: Which,
) -> Result<(syn::ItemFn, Lowered), String> {
    let (d_item, extra) = derived_item(item, l, sig, which)
        .ok_or("a differentiable parameter without a plain Rust type")?;
    let mut func = func.clone();
    func.name = crate::ir::Var::new(&d_item.sig.ident.to_string());
    // The IR parameters: `f`'s differentiable ones, then one per extra.
    let active = l.params.iter().filter(|p| p.active.is_some()).count();
    if func.nl_params.len() != active + extra.len() {
        return Err(format!(
            "`{}` has {} IR parameters, not {}",
            d_item.sig.ident,
            func.nl_params.len(),
            active + extra.len()
        ));
    }
    let mut vars = func.nl_params.iter().map(|b| b.var.clone());
    let mut params: Vec<Param> = l
        .params
        .iter()
        .map(|p| Param {
            pat: p.pat.clone(),
            ty: p.ty.clone(),
            active: p
                .active
                .as_ref()
                .and_then(|(s, _)| Some((s.clone(), vars.next()?))),
            arrays: vec![],
        })
        .collect();
    for (pat, ty, shape) in extra {
        params.push(Param {
            pat,
            ty,
            active: vars.next().map(|v| (shape, v)),
            arrays: vec![],
        });
    }
    let ret = match which {
        Which::Jvp => Shape::Tuple(vec![l.ret.clone(), l.ret.clone()]),
        Which::Vjp => Shape::Tuple(vec![l.ret.clone(), cotangent(&in_shape(sig))]),
    };
    let data = data_in(l, &func);
    let lowered = Lowered {
        func,
        params,
        ret,
        prelude: l.prelude.clone(),
        externs: vec![],
        calls: Default::default(),
        opaques: l.opaques.clone(),
        data,
        structs: l.structs.clone(),
    };
    Ok((d_item, lowered))
}

/// `f`'s `#[nondiff]` data arrays ([`Lowered::data`]) as `func`, a
/// function derived from `f`'s, binds them: to the same Rust constants,
/// under variables of its own.
fn data_in(l: &Lowered, func: &Func) -> Vec<(Var, String, Shape)> {
    let (before, after) = (
        crate::visit::data_bindings(&l.func.body),
        crate::visit::data_bindings(&func.body),
    );
    l.data
        .iter()
        .filter_map(|(v, name, shape)| {
            let (_, c) = before.iter().find(|(b, _)| b == v)?;
            let (w, _) = after.iter().find(|(_, d)| d == c)?;
            Some((w.clone(), name.clone(), shape.clone()))
        })
        .collect()
}

/// The shape of `In`, the differentiable parameters' tangents together.
fn in_shape(sig: &Sig) -> Shape {
    match sig.active.as_slice() {
        [(_, s)] => (*s).clone(),
        many => Shape::Tuple(many.iter().map(|(_, s)| (*s).clone()).collect()),
    }
}

/// The shape of `In` as `f_vjp` returns it, a value of the derived
/// function's: [`owned`], with a struct's cotangent its tangent struct,
/// owned, of its differentiable fields.
fn cotangent(s: &Shape) -> Shape {
    match s {
        Shape::Struct(st) => Shape::Struct(std::rc::Rc::new(st.tangent_shape())),
        Shape::Tuple(ss) => Shape::Tuple(ss.iter().map(cotangent).collect()),
        other => owned(other),
    }
}

/// The shape of a cotangent `f_vjp` returns for a parameter of shape `s`:
/// an owned array for an array parameter (`Vec<T>` for `&[T]`, `[T; n]`
/// for `&[T; n]`), as `In` has it.
fn owned(s: &Shape) -> Shape {
    use crate::lower::SliceKind;
    match s {
        Shape::Slice(e, SliceKind::ArrayRef(n) | SliceKind::Array(n)) => {
            Shape::Slice(e.clone(), SliceKind::Array(*n))
        }
        Shape::Slice(e, _) => Shape::Slice(e.clone(), SliceKind::Vec),
        Shape::Tuple(ss) => Shape::Tuple(ss.iter().map(owned).collect()),
        Shape::Float(_) | Shape::Array(..) | Shape::Struct(_) => s.clone(),
    }
}

/// The derived function's `fn` line (`f`'s, renamed, with the tangent
/// parameters or the cotangent after `f`'s, returning `(R, R)` or `(R,
/// In)`: as generated), and its extra parameters: pattern, type, shape.
fn derived_item(
    item: &syn::ItemFn,
    l: &Lowered,
    sig: &Sig,
    which: Which,
) -> Option<(syn::ItemFn, Vec<Extra>)> {
    let ident = |id: syn::Ident| -> syn::Pat {
        syn::Pat::Ident(syn::PatIdent {
            attrs: vec![],
            by_ref: None,
            mutability: None,
            ident: id,
            subpat: None,
        })
    };
    let ty = |s: &Shape| syn::parse2::<syn::Type>(s.rust()).ok();
    // Named apart from `f`'s parameters and from the names the derived
    // function's own derivatives give its parameters (`x_tangent`,
    // `cotangent`).
    let taken: Vec<String> = l
        .params
        .iter()
        .filter_map(|p| match &p.pat {
            syn::Pat::Ident(pi) => Some(pi.ident.to_string()),
            _ => None,
        })
        .collect();
    let fresh = |base: String| {
        let mut name = base;
        while taken
            .iter()
            .any(|t| *t == name || format!("{t}_tangent") == name)
        {
            name.push('_');
        }
        syn::Ident::new(&name, Span::mixed_site())
    };
    let extra: Vec<Extra> = match which {
        Which::Jvp => sig
            .active
            .iter()
            .map(|(i, s)| {
                let base = match &l.params[*i].pat {
                    syn::Pat::Ident(pi) => format!("{}_direction", pi.ident),
                    _ => format!("direction{i}"),
                };
                // A struct's direction is its tangent struct, which has no
                // constant fields: it crosses calls flat.
                let s = match s {
                    Shape::Struct(st) => {
                        Shape::Struct(std::rc::Rc::new(crate::lower::StructShape {
                            by_ref: st.by_ref,
                            ..st.tangent_shape()
                        }))
                    }
                    other => (*other).clone(),
                };
                Some((ident(fresh(base)), ty(&s)?, s))
            })
            .collect::<Option<_>>()?,
        Which::Vjp => vec![(
            ident(fresh("output_cotangent".into())),
            ty(&l.ret)?,
            l.ret.clone(),
        )],
    };
    // The signature only: the body (thousands of statements, in a long
    // function) is replaced.
    let mut d = syn::ItemFn {
        attrs: item.attrs.clone(),
        vis: item.vis.clone(),
        modifiers: item.modifiers.clone(),
        sig: item.sig.clone(),
        block: Box::new(syn::parse_quote!({ ::core::unreachable!() })),
    };
    let suffix = match which {
        Which::Jvp => "jvp",
        Which::Vjp => "vjp",
    };
    d.sig.ident = format_ident!("{}_{}", item.sig.ident, suffix);
    for (pat, t, _) in &extra {
        d.sig.inputs.push(syn::parse_quote!(#pat: #t));
    }
    let (ret_ty, second) = match which {
        Which::Jvp => (&sig.ret_ty, &sig.ret_tan),
        Which::Vjp => (&sig.ret_ty, &sig.in_ty),
    };
    d.sig.output = syn::parse_quote!(-> (#ret_ty, #second));
    d.attrs.retain(|a| a.path().is_ident("allow"));
    Some((d, extra))
}
