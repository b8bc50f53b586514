//! The caller side of the calling convention: Rust for the IR's calls to
//! other differentiable functions (`call.N` and its derived externs), the
//! Rust types of tape fields, and the heap bytes a tape owns.
//!
//! Slices. An array crosses a call borrowed (`&x`), whether the caller owns
//! it or borrows it itself; so does its tangent (the extern borrows it:
//! [`crate::ir::Extern`]). The callee's linearization is held detached
//! from its arrays (`items::Detached`): the residual's call passes the
//! arrays again after the callee's tape (U saved them on the caller's own
//! tape, borrowing a parameter), and the transposed call passes the
//! caller's accumulators, which the callee's reverse pass adds into and
//! returns. An array passed twice (`dot(x, x)`) is lent once in the IR;
//! here its second parameter's cotangent comes back in a scratch buffer,
//! added into the first's. A constant array (`CallArg::Data`) passed to a
//! differentiable parameter gets a zero tangent and a scratch accumulator
//! whose sum is dropped.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use rustc_hash::FxHashMap as HashMap;

use super::{arg_from_ir, from_ir, result_to_ir, to_ir};
use crate::codegen::{CallGen, Names};
use crate::ir::{Ty, Var};
use crate::lower::{CallArg, CallSite, Shape};

/// The caller-side half: Rust for the IR's calls to `call.N` and its
/// derived externs, from the call sites recorded by lowering.
pub(super) struct Calls<'a> {
    pub(super) sites: &'a HashMap<Var, CallSite>,
    pub(super) opaques: &'a HashMap<Var, crate::lower::Opaque>,
}

impl Calls<'_> {
    pub(super) fn site(&self, func: &Var) -> Option<(&CallSite, String)> {
        let mut parts = func.as_str().splitn(3, '.');
        let (call, n) = (parts.next()?, parts.next()?);
        let rest = parts.next().unwrap_or("").to_string();
        let site = self.sites.get(&Var::new(&format!("{call}.{n}")))?;
        Some((site, rest))
    }

    /// The callee's path with its last segment renamed, keeping the span of
    /// the name the user wrote so errors point at the call.
    pub(super) fn sibling(path: &syn::Path, name: String) -> syn::Path {
        let mut p = path.clone();
        if let Some(last) = p.segments.last_mut() {
            last.ident = syn::Ident::new(&name, last.ident.span());
        }
        p
    }

    pub(super) fn callee_name_of(path: &syn::Path) -> String {
        path.segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default()
    }

    /// Heap bytes a tape part of type `t` owns, beyond its inline size.
    pub(super) fn heap_bytes(&self, e: TokenStream, t: &Ty) -> TokenStream {
        let zero = quote!(0usize);
        match t {
            Ty::Real(_) | Ty::Int | Ty::Bool | Ty::Array(..) => zero,
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
    pub(super) fn rust_ty(&self, t: &Ty) -> TokenStream {
        self.rust_ty_in(t, false)
    }

    /// [`Self::rust_ty`] of a type that a list's elements hold or not
    /// (`in_list`): a list is a recycled tape only if none holds it
    /// (`codegen::pooled`).
    fn rust_ty_in(&self, t: &Ty, in_list: bool) -> TokenStream {
        match t {
            Ty::Tape(name) => match self.site(name) {
                // The tape of a call of the callee's `_jvp`, in a second
                // derivative (`order = 2`).
                Some((site, rest)) if rest == "jvp.jvp" => {
                    let p = &site.callee;
                    quote!(<#p as ::linear_ad::__private::SecondOrder>::JvpLin)
                }
                Some((site, _)) => {
                    let p = &site.callee;
                    quote!(#p)
                }
                None => quote!(()),
            },
            Ty::Tuple(ts) => {
                let ts = ts.iter().map(|t| self.rust_ty_in(t, in_list));
                quote!((#(#ts,)*))
            }
            Ty::Sum(ts) => crate::codegen::sum_type(
                &ts.iter()
                    .map(|t| self.rust_ty_in(t, in_list))
                    .collect::<Vec<_>>(),
            ),
            Ty::List(e, _) => crate::codegen::list_type(t, self.rust_ty_in(e, true), in_list),
            // Integers on a tape are array indices read by the residual
            // (`lindex`), so `usize`, and replay trip counts, which U
            // counts from literals and `Replay::new` takes as `usize`.
            // (Recomputing policies keep the user's other integers off
            // tapes.)
            Ty::Int => quote!(usize),
            // Arrays never go on tapes (their elements are saved as read).
            Ty::Array(..) => crate::lower::ty_rust(t),
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
        // Every reference goes through the callee's linearization type,
        // under the alias that shares the function's name and path (see
        // `crate::signature`), or a method's `Method` impl. The callee's
        // functions spanned at its name in the call, so that
        // rustc's errors about them (a method with no companions) point
        // there rather than at whatever expansion resumed this one.
        let span = site
            .path
            .segments
            .last()
            .map_or_else(Span::call_site, |s| s.ident.span());
        if stage.starts_with("jvp.jvp") {
            return second_order_call(site, &stage, (nl, lin), span, names);
        }
        let ty = &site.callee;
        let f = |name: &str| {
            let name = syn::Ident::new(name, span);
            quote_spanned!(span=> <#ty>::#name)
        };
        // In `f_jvp_lanes` and `apply_lanes`, the callee's own
        // (`items::lanes::refusal` checked that its signature has them).
        let lanes = |name: &str, plain: &str| match crate::codegen::LinearLanes::get() {
            Some(k) => {
                let name = syn::Ident::new(name, span);
                quote_spanned!(span=> <#ty>::#name::<#k>)
            }
            None => f(plain),
        };
        let (c_jvp, c_lin) = (lanes("__jvp_lanes", "__jvp"), f("__lin"));
        let (c_apply, c_transpose) = (lanes("__apply_lanes", "__apply"), f("__transpose"));
        let slots = |vals: &[syn::Ident], arrays: &[Option<syn::Ident>], names: &mut Names| {
            tangent_slots(site, (vals, arrays), names)
        };
        let r = syn::Ident::new("__r", Span::mixed_site());
        let dr = syn::Ident::new("__dr", Span::mixed_site());
        let l = syn::Ident::new("__l", Span::mixed_site());
        // A result is owned by the caller: an array result is its own IR
        // value, not a borrow as an array parameter is.
        let r_ir = result_to_ir(quote!(#r), &site.ret, names);
        Some(match stage.as_str() {
            "jvp" | "jvp.nl" => {
                let (args, unread) = primal_args(site, nl, names)?;
                let unread = quote!(#(let _ = &#unread;)*);
                if stage == "jvp" {
                    let arrays = array_args(site, nl, false);
                    let slots = slots(lin, &arrays, names)?;
                    let dr_ir = result_to_ir(quote!(#dr), &site.ret, names);
                    quote!({ #unread let (#r, #dr) = #c_jvp(#(#args,)* #(#slots,)*); (#r_ir, #dr_ir) })
                } else {
                    quote!({ #unread let (#r, #l) = #c_lin(#(#args,)*); (#r_ir, #l) })
                }
            }
            // After the tape, the array arguments, passed back (see
            // `passes::unzip` and `items::Detached`).
            "jvp.lin" => {
                let (tape, arrays) = nl.split_first()?;
                let arrays = array_args(site, arrays, true);
                let slots = slots(lin, &arrays, names)?;
                let passed = arrays.iter().flatten();
                quote!({ let #r = #c_apply(&#tape, #(&#passed,)* #(#slots,)*); #r_ir })
            }
            "jvp.lin.t" => {
                let ((tape, arrays), (ct, accs)) = (nl.split_first()?, lin.split_first()?);
                let arrays = array_args(site, arrays, true);
                transpose_call(site, &c_transpose, (tape, &arrays, ct, accs), names)?
            }
            _ => return None,
        })
    }
}

/// The call of a callee's `__transpose` (`c_transpose`) on its `tape`,
/// the arrays passed back (`arrays`, per argument) and the cotangent `ct`
/// of its result, with the accumulators of the arrays it borrows (`accs`,
/// the IR's): the cotangents of the active arguments, as IR values.
fn transpose_call(
    site: &CallSite,
    c_transpose: &TokenStream,
    (tape, arrays, ct, accs): (
        &syn::Ident,
        &[Option<syn::Ident>],
        &syn::Ident,
        &[syn::Ident],
    ),
    names: &mut Names,
) -> Option<TokenStream> {
    let ct_rust = arg_from_ir(quote!(#ct), &site.ret, names);
    let (mut pats, mut outs, mut merges) = (Vec::new(), Vec::new(), Vec::new());
    let mut acc_args = Vec::new();
    let mut accs = accs.iter();
    // Each argument's cotangent variable, for an array passed again.
    let mut cts: Vec<Option<syn::Ident>> = Vec::new();
    for (i, a) in site.args.iter().enumerate() {
        let (c, out) = arg_cotangent(a, names);
        // The accumulators of the callee's differentiable arrays: the IR's,
        // or a scratch buffer for an array passed again (added into the
        // first's after the call) or constant here (whose sum is dropped).
        match a {
            CallArg::Active(Shape::Slice(..), _) => {
                let acc = accs.next()?;
                acc_args.push(quote!(#acc));
            }
            CallArg::Again { first, .. } => {
                let (arr, s) = (arrays.get(i)?.as_ref()?, arg_shape(site, *first)?);
                acc_args.push(zeros_like(arr, s));
                let (into, from) = (cts.get(*first)?.as_ref()?, c.as_ref()?);
                merges.push(quote!(::linear_ad::__private::add_into(&mut #into, &#from);));
            }
            CallArg::Data {
                shape,
                active: true,
                ..
            } => acc_args.push(zeros_like(arrays.get(i)?.as_ref()?, shape)),
            CallArg::Active(..)
            | CallArg::Origin(..)
            | CallArg::Discrete(_)
            | CallArg::Data { .. }
            | CallArg::Inactive(..) => {}
        }
        pats.push(match &c {
            Some(c) if matches!(a, CallArg::Active(Shape::Slice(..), _)) => quote!(mut #c),
            Some(c) => quote!(#c),
            None => quote!(_),
        });
        outs.extend(out);
        cts.push(c);
    }
    let out = if outs.len() == 1 {
        outs[0].clone()
    } else {
        quote!((#(#outs,)*))
    };
    let passed = arrays.iter().flatten();
    Some(quote!({
        #[allow(unused_mut)]
        let (#(#pats,)*) = #c_transpose(&#tape, #(&#passed,)* #ct_rust, #(#acc_args,)*);
        #(#merges)*
        #out
    }))
}

/// A zeroed `Vec` as long as the IR array `arr`, of shape `s` (in lanes
/// in `apply_lanes`).
fn zeros_like(arr: &syn::Ident, s: &Shape) -> TokenStream {
    let e = match s {
        Shape::Slice(e, _) => e.rust(),
        other => other.rust(),
    };
    let e = match crate::codegen::LinearLanes::get() {
        Some(k) => crate::codegen::in_lanes(&e, &k),
        None => e,
    };
    quote!(::linear_ad::__private::zeros::<#e>(#arr.len()))
}

/// The shape of the `i`-th argument of a call, if it is differentiable.
fn arg_shape(site: &CallSite, i: usize) -> Option<&Shape> {
    match site.args.get(i)? {
        CallArg::Active(s, _) | CallArg::Origin(s, _, _) | CallArg::Data { shape: s, .. } => {
            Some(s)
        }
        CallArg::Discrete(_) | CallArg::Inactive(..) | CallArg::Again { .. } => None,
    }
}

/// Per argument of a call, the IR array it passes (or passes again), if
/// it is an array: from the call's non-linear arguments `nl` (`compact`:
/// `nl` holds the arrays only, as the residual passes them back).
fn array_args(site: &CallSite, nl: &[syn::Ident], compact: bool) -> Vec<Option<syn::Ident>> {
    let positions = site.positions();
    let mut rank = 0;
    let mut out: Vec<Option<syn::Ident>> = Vec::with_capacity(site.args.len());
    for (i, a) in site.args.iter().enumerate() {
        let id = match a {
            CallArg::Active(Shape::Slice(..), _) | CallArg::Data { .. } => {
                rank += 1;
                match compact {
                    true => nl.get(rank - 1).cloned(),
                    false => positions[i].0.and_then(|k| nl.get(k)).cloned(),
                }
            }
            CallArg::Again { first, .. } => out.get(*first).cloned().flatten(),
            CallArg::Active(..)
            | CallArg::Origin(..)
            | CallArg::Discrete(_)
            | CallArg::Inactive(..) => None,
        };
        out.push(id);
    }
    out
}

/// A call of the callee's `_jvp` differentiated again, in a second
/// derivative (`order = 2`): the IR's `g.jvp.jvp`'s forward pass, residual
/// or transpose (`stage`), through the callee's `_jvp` linearization's
/// functions in the callee's own calling convention (see
/// `companions::jvp_companions`). The IR passes the active arguments, then
/// their directions (`g.jvp`'s parameters, linearity erased); `f.hvp` is
/// erased too (its calls pass every argument as non-linear), so the
/// arguments are read in order whatever their linearity. The residual and
/// the transpose take the array arguments again after the tape (the
/// arguments' arrays, then their directions', as `g.jvp`'s linearization
/// is detached: [`SecondArrays`]), and the transpose takes their
/// accumulators after the cotangents.
fn second_order_call(
    site: &CallSite,
    stage: &str,
    (nl, lin): (&[syn::Ident], &[syn::Ident]),
    span: Span,
    names: &mut Names,
) -> Option<TokenStream> {
    let ty = &site.callee;
    let f = |name: &str| {
        let name = syn::Ident::new(name, span);
        quote_spanned!(span=> <<#ty as ::linear_ad::__private::SecondOrder>::JvpLin>::#name)
    };
    let active = site
        .args
        .iter()
        .filter(|a| matches!(a, CallArg::Active(..) | CallArg::Discrete(_)))
        .count();
    let (r, dr, l) = (
        syn::Ident::new("__r", Span::mixed_site()),
        syn::Ident::new("__dr", Span::mixed_site()),
        syn::Ident::new("__l", Span::mixed_site()),
    );
    let r_ir = result_to_ir(quote!(#r), &site.ret, names);
    let dr_ir = result_to_ir(quote!(#dr), &site.ret, names);
    let all: Vec<syn::Ident> = nl.iter().chain(lin).cloned().collect();
    let (tape, rest) = match stage {
        "jvp.jvp" | "jvp.jvp.nl" => (None, &all[..]),
        _ => (Some(all.first()?), all.get(1..)?),
    };
    let (n_values, n_directions) = SecondArrays::counts(site);
    Some(match (stage, tape) {
        ("jvp.jvp" | "jvp.jvp.nl", _) => {
            // J's own call (`g_jvp`'s forward mode) passes the tangents
            // of the arguments and directions after them.
            let n = 2 * active + n_data(site);
            let (point, tangents) = match stage {
                "jvp.jvp" => rest.split_at_checked(n)?,
                _ => (rest, &[][..]),
            };
            let (xs, dxs) = point.split_at_checked(active + n_data(site))?;
            let arrays = SecondArrays::at(site, xs, dxs);
            // Structs are refused at `order = 2`: no origins here.
            let (args, _) = primal_args(site, xs, names)?;
            let d_slots = arrays.slots(dxs, names)?;
            let c = f("__jvp_lin");
            let lin_call = quote!(let ((#r, #dr), #l) = #c(#(#args,)* #(#d_slots,)*););
            if stage == "jvp.jvp.nl" {
                quote!({ #lin_call (#r_ir, #dr_ir, #l) })
            } else {
                // Forward mode as the linearization applied once: the
                // callee generates no forward mode of its `_jvp` in its
                // own calling convention.
                let ins = arrays.passed()?;
                let (txs, tdxs) = tangents.split_at_checked(active)?;
                let (e, g) = (arrays.slots(txs, names)?, arrays.slots(tdxs, names)?);
                let (tr, tdr) = (
                    syn::Ident::new("__tr", Span::mixed_site()),
                    syn::Ident::new("__tdr", Span::mixed_site()),
                );
                let tr_ir = result_to_ir(quote!(#tr), &site.ret, names);
                let tdr_ir = result_to_ir(quote!(#tdr), &site.ret, names);
                let apply = f("__jvp_apply");
                quote!({
                    #lin_call
                    let (#tr, #tdr) = #apply(&#l, #(#ins,)* #(#e,)* #(#g,)*);
                    (#r_ir, #dr_ir, #tr_ir, #tdr_ir)
                })
            }
        }
        ("jvp.jvp.lin", Some(tape)) => {
            let (values, rest) = rest.split_at_checked(n_values)?;
            let (directions, rest) = rest.split_at_checked(n_directions)?;
            let arrays = SecondArrays::passed_back(site, values, directions);
            let (xs, dxs) = rest.split_at_checked(active)?;
            let (e, g) = (arrays.slots(xs, names)?, arrays.slots(dxs, names)?);
            let ins = arrays.passed()?;
            let c = f("__jvp_apply");
            quote!({ let (#r, #dr) = #c(&#tape, #(#ins,)* #(#e,)* #(#g,)*); (#r_ir, #dr_ir) })
        }
        ("jvp.jvp.lin.t", Some(tape)) => {
            let (values, rest) = rest.split_at_checked(n_values)?;
            let (directions, rest) = rest.split_at_checked(n_directions)?;
            let arrays = SecondArrays::passed_back(site, values, directions);
            let (cts, accs) = rest.split_at_checked(2)?;
            let call = f("__jvp_transpose");
            second_order_transpose(
                site,
                (&call, tape, &arrays),
                (&cts[0], &cts[1], accs),
                names,
            )?
        }
        _ => return None,
    })
}

/// The constant arrays a call passes to its callee (`#[nondiff]` slices of
/// the caller): non-linear arguments with no tangent and no direction.
fn n_data(site: &CallSite) -> usize {
    site.args
        .iter()
        .filter(|a| matches!(a, CallArg::Data { .. }))
        .count()
}

/// The arrays of a call of `g.jvp` in a second derivative, per argument
/// of the call: the IR's array (a slice the call lends, or a constant
/// one), and its direction's (a constant array has none: its direction is
/// zero). `g.jvp`'s detached linearization takes them back in its own
/// order, every slice parameter's array and then their directions'
/// ([`SecondArrays::passed`]).
struct SecondArrays<'a> {
    site: &'a CallSite,
    values: Vec<Option<syn::Ident>>,
    directions: Vec<Option<syn::Ident>>,
}

impl<'a> SecondArrays<'a> {
    /// How many arrays the IR passes back: the arguments' (slices lent
    /// and constant arrays), then the lent slices' directions.
    fn counts(site: &CallSite) -> (usize, usize) {
        let lent = site
            .args
            .iter()
            .filter(|a| matches!(a, CallArg::Active(Shape::Slice(..), _)))
            .count();
        (lent + n_data(site), lent)
    }

    /// From the IR's arguments of `g.jvp` (`xs`) and directions (`dxs`).
    fn at(site: &'a CallSite, xs: &[syn::Ident], dxs: &[syn::Ident]) -> SecondArrays<'a> {
        let positions = site.positions();
        let get = |vals: &[syn::Ident], k: Option<usize>| k.and_then(|k| vals.get(k)).cloned();
        let values = (0..site.args.len())
            .map(|i| match &site.args[i] {
                CallArg::Active(Shape::Slice(..), _) | CallArg::Data { .. } => {
                    get(xs, positions[i].0)
                }
                _ => None,
            })
            .collect();
        let directions = (0..site.args.len())
            .map(|i| match &site.args[i] {
                CallArg::Active(Shape::Slice(..), _) => get(dxs, positions[i].1),
                _ => None,
            })
            .collect();
        SecondArrays::resolved(site, values, directions)
    }

    /// From the arrays the IR passes back, in order ([`Self::counts`]).
    fn passed_back(
        site: &'a CallSite,
        values: &[syn::Ident],
        directions: &[syn::Ident],
    ) -> SecondArrays<'a> {
        let (mut vs, mut ds) = (values.iter(), directions.iter());
        let (mut out_v, mut out_d) = (Vec::new(), Vec::new());
        for a in &site.args {
            let (v, d) = match a {
                CallArg::Active(Shape::Slice(..), _) => (vs.next().cloned(), ds.next().cloned()),
                CallArg::Data { .. } => (vs.next().cloned(), None),
                _ => (None, None),
            };
            out_v.push(v);
            out_d.push(d);
        }
        SecondArrays::resolved(site, out_v, out_d)
    }

    /// An array passed again is its first's.
    fn resolved(
        site: &'a CallSite,
        mut values: Vec<Option<syn::Ident>>,
        mut directions: Vec<Option<syn::Ident>>,
    ) -> SecondArrays<'a> {
        for (i, a) in site.args.iter().enumerate() {
            if let CallArg::Again { first, .. } = a {
                values[i] = values.get(*first).cloned().flatten();
                directions[i] = directions.get(*first).cloned().flatten();
            }
        }
        SecondArrays {
            site,
            values,
            directions,
        }
    }

    /// The callee's slice parameters: an array passed to each, lent again
    /// or constant (`#[nondiff]` slices are refused at `order = 2`).
    fn slices(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.site.args.len()).filter(|&i| {
            matches!(
                self.site.args[i],
                CallArg::Active(Shape::Slice(..), _) | CallArg::Again { .. } | CallArg::Data { .. }
            )
        })
    }

    /// What `g.jvp`'s linearization takes back: every slice parameter's
    /// array, then their directions' (a constant array's a zeroed one).
    fn passed(&self) -> Option<Vec<TokenStream>> {
        let values = self.slices().map(|i| {
            let v = self.values.get(i)?.as_ref()?;
            Some(quote!(&#v))
        });
        let directions = self.slices().map(|i| match self.directions.get(i)? {
            Some(d) => Some(quote!(&#d)),
            None => {
                let z = zeros_like(self.values.get(i)?.as_ref()?, arg_shape_of(self.site, i)?);
                Some(quote!(&#z))
            }
        });
        values.chain(directions).collect()
    }

    /// One tangent slot per parameter of the callee, from the IR's values
    /// `vals` (a constant array's tangent zero, as long as the array).
    fn slots(&self, vals: &[syn::Ident], names: &mut Names) -> Option<Vec<TokenStream>> {
        tangent_slots(self.site, (vals, &self.values), names)
    }
}

/// The shape of the `i`-th argument of a call, the first's for an array
/// passed again.
fn arg_shape_of(site: &CallSite, i: usize) -> Option<&Shape> {
    match site.args.get(i)? {
        CallArg::Again { first, .. } => arg_shape(site, *first),
        _ => arg_shape(site, i),
    }
}

/// `g.jvp.jvp`'s transpose (`call`, the callee's `__jvp_transpose`) on its
/// `tape`, the arrays passed back and the cotangents of its two results,
/// with the accumulators of the slices the call lends (`accs`, theirs
/// then their directions'): the cotangents of the active arguments, then
/// of their directions, as IR values (an array's is its accumulator,
/// returned). An array passed again, or a constant one, gets a scratch
/// accumulator, added into its first's or dropped.
fn second_order_transpose(
    site: &CallSite,
    (call, tape, arrays): (&TokenStream, &syn::Ident, &SecondArrays),
    (ct, dct, accs): (&syn::Ident, &syn::Ident, &[syn::Ident]),
    names: &mut Names,
) -> Option<TokenStream> {
    let ct = arg_from_ir(quote!(#ct), &site.ret, names);
    let dct = arg_from_ir(quote!(#dct), &site.ret, names);
    let ins = arrays.passed()?;
    let (acc_xs, acc_dxs) = accs.split_at_checked(accs.len() / 2)?;
    let mut pats = (Vec::new(), Vec::new());
    let mut outs = (Vec::new(), Vec::new());
    let (mut acc_args, mut merges) = ((Vec::new(), Vec::new()), Vec::new());
    let mut cts: (Vec<Option<syn::Ident>>, Vec<Option<syn::Ident>>) = (Vec::new(), Vec::new());
    let (mut ix, mut idx) = (acc_xs.iter(), acc_dxs.iter());
    for (i, a) in site.args.iter().enumerate() {
        if matches!(a, CallArg::Origin(..)) {
            return None;
        }
        let halves = [
            (
                &mut pats.0,
                &mut outs.0,
                &mut acc_args.0,
                &mut cts.0,
                &mut ix,
            ),
            (
                &mut pats.1,
                &mut outs.1,
                &mut acc_args.1,
                &mut cts.1,
                &mut idx,
            ),
        ];
        for (pats, outs, acc_args, cts, accs) in halves {
            let (c, out) = arg_cotangent(a, names);
            match a {
                CallArg::Active(Shape::Slice(..), _) => {
                    let acc = accs.next()?;
                    acc_args.push(quote!(#acc));
                }
                CallArg::Again { first, .. } => {
                    let arr = arrays.values.get(i)?.as_ref()?;
                    acc_args.push(zeros_like(arr, arg_shape(site, *first)?));
                    let (into, from) = (cts.get(*first)?.as_ref()?, c.as_ref()?);
                    merges.push(quote!(::linear_ad::__private::add_into(&mut #into, &#from);));
                }
                CallArg::Data {
                    shape,
                    active: true,
                    ..
                } => {
                    acc_args.push(zeros_like(arrays.values.get(i)?.as_ref()?, shape));
                }
                _ => {}
            }
            pats.push(match &c {
                Some(c) if matches!(a, CallArg::Active(Shape::Slice(..), _)) => quote!(mut #c),
                Some(c) => quote!(#c),
                None => quote!(_),
            });
            outs.extend(out);
            cts.push(c);
        }
    }
    let (p0, p1) = pats;
    let all: Vec<TokenStream> = outs.0.into_iter().chain(outs.1).collect();
    let out = match all.as_slice() {
        [one] => one.clone(),
        many => quote!((#(#many,)*)),
    };
    let accs = acc_args.0.into_iter().chain(acc_args.1);
    Some(quote!({
        #[allow(unused_mut)]
        let ((#(#p0,)*), (#(#p1,)*)) = #call(&#tape, #(#ins,)* (#ct, #dct), #(#accs,)*);
        #(#merges)*
        #out
    }))
}

/// What a callee's transpose returns for the argument `a`: the variable
/// that binds it (none for a constant) and, unless `a` is a constant or an
/// array passed again, its cotangent as an IR value (the empty tuple for
/// a [`CallArg::Discrete`]).
fn arg_cotangent(a: &CallArg, names: &mut Names) -> (Option<syn::Ident>, Option<TokenStream>) {
    match a {
        // An array's cotangent comes back as the accumulator passed in.
        CallArg::Active(Shape::Slice(..), _) => {
            let c = names.temp("c");
            (Some(c.clone()), Some(quote!(#c)))
        }
        CallArg::Again { .. } => (Some(names.temp("c")), None),
        CallArg::Active(s, span) | CallArg::Origin(s, _, span) => {
            let c = names.temp("c");
            let t = s.rust();
            let got =
                quote_spanned!(*span=> <_ as ::linear_ad::__private::Tangent<#t>>::tangent(#c));
            (Some(c), Some(to_ir(got, s, names)))
        }
        CallArg::Discrete(_) => (None, Some(quote!(()))),
        CallArg::Data { .. } | CallArg::Inactive(..) => (None, None),
    }
}

/// One tangent slot per parameter of the callee, in its order: the IR
/// passes the active arguments' (`vals`) only, the other slots are
/// `Inactive`; each slot carries its argument's span, so a type error
/// about it points at the argument.
fn tangent_slots(
    site: &CallSite,
    (vals, arrays): (&[syn::Ident], &[Option<syn::Ident>]),
    names: &mut Names,
) -> Option<Vec<TokenStream>> {
    let positions = site.positions();
    let mut out = Vec::new();
    for (i, a) in site.args.iter().enumerate() {
        let val = |j: usize| positions[j].1.and_then(|t| vals.get(t));
        match a {
            // A tangent array, lent to the callee.
            CallArg::Active(Shape::Slice(..), span) => {
                let v = val(i)?;
                out.push(quote_spanned!(*span=> &#v));
            }
            CallArg::Again { first, span } => {
                let v = val(*first)?;
                out.push(quote_spanned!(*span=> &#v));
            }
            CallArg::Active(s, span) | CallArg::Origin(s, _, span) => {
                let v = val(i)?;
                let conv = from_ir(quote!(#v), s, names);
                out.push(quote_spanned!(*span=> ::core::convert::identity(#conv)));
            }
            // A constant array: zero, as the callee's tangent array if its
            // parameter is differentiable (as long as the array).
            CallArg::Data {
                shape,
                active: true,
                ..
            } => {
                let z = zeros_like(arrays.get(i)?.as_ref()?, shape);
                out.push(quote!(&#z));
            }
            // The IR passes its tangent, the empty tuple; the callee's
            // parameter is a constant.
            CallArg::Discrete(_) => {
                let v = val(i)?;
                out.push(quote!({ let () = #v; ::linear_ad::__private::Inactive }));
            }
            CallArg::Data { .. } | CallArg::Inactive(..) => {
                out.push(quote!(::linear_ad::__private::Inactive))
            }
        }
    }
    Some(out)
}

/// The callee's arguments in its order, the active ones from their IR
/// values (`vals`), the constants from their prelude variables; and the
/// IR values of structs passed as their origins, which are equal to them
/// (see `lower::structs`) and only to be marked used.
fn primal_args<'v>(
    site: &CallSite,
    vals: &'v [syn::Ident],
    names: &mut Names,
) -> Option<(Vec<TokenStream>, Vec<&'v syn::Ident>)> {
    let positions = site.positions();
    let (mut args, mut unread) = (Vec::new(), Vec::new());
    for (i, a) in site.args.iter().enumerate() {
        let val = |j: usize| positions[j].0.and_then(|k| vals.get(k));
        match a {
            // An array crosses borrowed, whether the caller owns it or
            // borrows it itself.
            CallArg::Active(Shape::Slice(..), _) | CallArg::Data { .. } => {
                let v = val(i)?;
                args.push(quote!(&#v));
            }
            CallArg::Again { first, .. } => {
                let v = val(*first)?;
                args.push(quote!(&#v));
            }
            CallArg::Active(s, _) => {
                let v = val(i)?;
                args.push(from_ir(quote!(#v), s, names));
            }
            CallArg::Origin(_, id, _) => {
                unread.push(val(i)?);
                args.push(quote!(#id));
            }
            CallArg::Discrete(_) => {
                let v = val(i)?;
                args.push(quote!(#v));
            }
            CallArg::Inactive(id, _) => args.push(quote!(#id)),
        }
    }
    Some((args, unread))
}
