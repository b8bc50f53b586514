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
//!
//! Parts of arrays. `f(&a[lo..hi])` (`CallArg::Part`) passes the whole
//! array in the IR, as any array, and the range's bounds as constant
//! integers of the extern, so J, U and T apply their rules for arrays
//! unchanged: the tangent lent is `ȧ`'s, U passes `a` back. Here each
//! stage slices what the IR passes: `&a[lo..hi]`, `&ȧ[lo..hi]`. The
//! residual and the transpose are not passed the bounds again, so the
//! caller's tape holds them beside the callee's linearization
//! (`linear_ad::__private::Ranged`). The callee's reverse pass adds into
//! a scratch buffer as long as the part, added into the accumulator's
//! range after the call: the callee's accumulators are owned `Vec`s.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use rustc_hash::FxHashMap as HashMap;

use super::results::{from_parts, ir_parts, tuple};
use super::{arg_from_ir, from_ir, result_to_ir, to_ir};
use crate::codegen::{CallGen, Names};
use crate::ir::{Ty, Var};
use crate::lower::{CallArg, CallSite, Shape};

mod second;

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
                    let map = quote!(<#p as ::linear_ad::__private::SecondOrder>::JvpLin);
                    match site.parts().len() {
                        0 => map,
                        n => quote!(::linear_ad::__private::Ranged<#map, #n>),
                    }
                }
                // Beside the ranges of the parts of arrays it was passed.
                Some((site, _)) if !site.parts().is_empty() => {
                    let (p, n) = (&site.callee, site.parts().len());
                    quote!(::linear_ad::__private::Ranged<#p, #n>)
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
            return second::call(site, &stage, (nl, lin), span, names);
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
        let slots = |vals: &[syn::Ident], passed: &Passed, names: &mut Names| {
            tangent_slots(site, (vals, &passed.arrays, &passed.ranges), names)
        };
        let r = syn::Ident::new("__r", Span::mixed_site());
        let dr = syn::Ident::new("__dr", Span::mixed_site());
        let l = syn::Ident::new("__l", Span::mixed_site());
        // A result is owned by the caller: an array result is its own IR
        // value, not a borrow as an array parameter is.
        let r_ir = ir_parts(&quote!(#r), &site.ret, names, result_to_ir);
        Some(match stage.as_str() {
            "jvp" | "jvp.nl" => {
                let (args, unread) = primal_args(site, nl, names)?;
                let unread = quote!(#(let _ = &#unread;)*);
                if stage == "jvp" {
                    let passed = Passed::of(site, nl, None);
                    let slots = slots(lin, &passed, names)?;
                    let dr_ir = ir_parts(&quote!(#dr), &site.ret, names, result_to_ir);
                    let out = tuple(&[r_ir, dr_ir].concat());
                    quote!({ #unread let (#r, #dr) = #c_jvp(#(#args,)* #(#slots,)*); #out })
                } else {
                    let held = ranged(site, nl, &l)?;
                    let out = tuple(&[r_ir, vec![held]].concat());
                    quote!({ #unread let (#r, #l) = #c_lin(#(#args,)*); #out })
                }
            }
            // After the tape, the array arguments, passed back (see
            // `passes::unzip` and `items::Detached`).
            "jvp.lin" => {
                let (tape, arrays) = nl.split_first()?;
                let passed = Passed::of(site, arrays, Some(tape));
                let slots = slots(lin, &passed, names)?;
                let (map, views) = (passed.map(tape), passed.views());
                let out = tuple(&r_ir);
                quote!({ let #r = #c_apply(#map, #(#views,)* #(#slots,)*); #out })
            }
            "jvp.lin.t" => {
                let k = site.ret.results().len();
                let ((tape, arrays), (ct, accs)) = (nl.split_first()?, lin.split_at_checked(k)?);
                let passed = Passed::of(site, arrays, Some(tape));
                transpose_call(site, &c_transpose, (tape, &passed, ct, accs), names)?
            }
            _ => return None,
        })
    }
}

/// The linearization `l` a call's forward pass returns, as the caller's
/// tape holds it: beside the ranges of the parts of arrays it was passed
/// (read from the IR's arguments `nl`), if any.
fn ranged(site: &CallSite, nl: &[syn::Ident], l: &syn::Ident) -> Option<TokenStream> {
    if site.parts().is_empty() {
        return Some(quote!(#l));
    }
    let ranges: Vec<TokenStream> = site
        .ranges()
        .into_iter()
        .flatten()
        .map(|(lo, hi)| {
            let (lo, hi) = (nl.get(lo)?, nl.get(hi)?);
            Some(quote!((#lo, #hi)))
        })
        .collect::<Option<_>>()?;
    Some(quote!(::linear_ad::__private::Ranged { map: #l, ranges: [#(#ranges,)*] }))
}

/// The arrays a call passes, per argument: the IR array (the whole array
/// for a part of one) and, for a part, its range as the caller's code
/// reads it (`lo..hi`), from the IR's bounds or from the tape.
struct Passed {
    arrays: Vec<Option<syn::Ident>>,
    ranges: Vec<Option<TokenStream>>,
    /// Whether the callee's linearization is held in a `Ranged`.
    ranged: bool,
}

impl Passed {
    /// From the call's non-linear arguments `nl`, or, where the residual
    /// passes the arrays back after the `tape` (`nl` the arrays only),
    /// with the ranges the tape holds.
    fn of(site: &CallSite, nl: &[syn::Ident], tape: Option<&syn::Ident>) -> Passed {
        let arrays = array_args(site, nl, tape.is_some());
        let mut k = 0usize;
        let ranges = site
            .ranges()
            .into_iter()
            .map(|r| {
                let (lo, hi) = r?;
                Some(match tape {
                    Some(t) => {
                        k += 1;
                        let k = k - 1;
                        quote!(#t.ranges[#k].0..#t.ranges[#k].1)
                    }
                    None => {
                        let (lo, hi) = (nl.get(lo)?, nl.get(hi)?);
                        quote!(#lo..#hi)
                    }
                })
            })
            .collect();
        Passed {
            arrays,
            ranges,
            ranged: !site.parts().is_empty(),
        }
    }

    /// The array argument `i` passes as the callee sees it: `&a`, or
    /// `&a[lo..hi]` for a part.
    fn view(&self, i: usize) -> Option<TokenStream> {
        let a = self.arrays.get(i)?.as_ref()?;
        Some(match self.range(i) {
            Some(r) => quote!(&#a[#r]),
            None => quote!(&#a),
        })
    }

    fn range(&self, i: usize) -> Option<&TokenStream> {
        self.ranges.get(i)?.as_ref()
    }

    /// The arrays passed back to the callee's detached linearization, one
    /// per slice parameter, in order.
    fn views(&self) -> Vec<TokenStream> {
        (0..self.arrays.len())
            .filter_map(|i| self.view(i))
            .collect()
    }

    /// The callee's linearization in the `tape`.
    fn map(&self, tape: &syn::Ident) -> TokenStream {
        match self.ranged {
            true => quote!(&#tape.map),
            false => quote!(&#tape),
        }
    }
}

/// The call of a callee's `__transpose` (`c_transpose`) on its `tape`,
/// the arrays passed back (`passed`) and the cotangent `ct` of its result,
/// with the accumulators of the arrays it borrows (`accs`, the IR's): the
/// cotangents of the active arguments, as IR values. An array passed
/// whole gets its accumulator; a part of one, an array passed again, or a
/// constant array, a scratch buffer, added into the accumulator (in the
/// part's range) after the call, or dropped.
fn transpose_call(
    site: &CallSite,
    c_transpose: &TokenStream,
    (tape, passed, ct, accs): (&syn::Ident, &Passed, &[syn::Ident], &[syn::Ident]),
    names: &mut Names,
) -> Option<TokenStream> {
    let ct_rust = from_parts(ct, &site.ret, names, arg_from_ir);
    let (mut pats, mut outs, mut merges) = (Vec::new(), Vec::new(), Vec::new());
    let mut acc_args = Vec::new();
    let mut accs = accs.iter();
    // Each argument's accumulator after the call, for an array passed
    // again or a part of it.
    let mut summed: Vec<Option<syn::Ident>> = Vec::new();
    for (i, a) in site.args.iter().enumerate() {
        let (c, out) = arg_cotangent(a, names);
        let scratch = |n: TokenStream, s: &Shape| zeros_of(n, s);
        let mut sum = None;
        match a {
            CallArg::Active(Shape::Slice(..), _) => {
                let acc = accs.next()?;
                acc_args.push(quote!(#acc));
                sum = c.clone();
            }
            CallArg::Again { first, .. } => {
                let (arr, s) = (passed.arrays.get(i)?.as_ref()?, arg_shape(site, *first)?);
                acc_args.push(zeros_like(arr, s));
                let (into, from) = (summed.get(*first)?.as_ref()?, c.as_ref()?);
                merges.push(quote!(::linear_ad::__private::add_into(&mut #into, &#from);));
            }
            CallArg::Part {
                first,
                shape,
                lent,
                active,
                ..
            } => {
                let r = passed.range(i)?;
                if *active {
                    acc_args.push(scratch(quote!((#r).len()), shape));
                }
                match (first, lent) {
                    (None, true) => {
                        let (acc, m) = (accs.next()?, names.temp("acc"));
                        let from = c.as_ref()?;
                        merges.push(quote! {
                            let mut #m = #acc;
                            ::linear_ad::__private::add_into(&mut #m[#r], &#from);
                        });
                        outs.push(quote!(#m));
                        sum = Some(m);
                    }
                    (Some(j), true) => {
                        let (into, from) = (summed.get(*j)?.as_ref()?, c.as_ref()?);
                        merges.push(
                            quote!(::linear_ad::__private::add_into(&mut #into[#r], &#from);),
                        );
                    }
                    (_, false) => {}
                }
            }
            CallArg::Data {
                shape,
                active: true,
                ..
            } => acc_args.push(zeros_like(passed.arrays.get(i)?.as_ref()?, shape)),
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
        summed.push(sum);
    }
    let out = if outs.len() == 1 {
        outs[0].clone()
    } else {
        quote!((#(#outs,)*))
    };
    let (map, views) = (passed.map(tape), passed.views());
    Some(quote!({
        #[allow(unused_mut)]
        let (#(#pats,)*) = #c_transpose(#map, #(#views,)* #ct_rust, #(#acc_args,)*);
        #(#merges)*
        #out
    }))
}

/// A zeroed `Vec` as long as the IR array `arr`, of shape `s` (in lanes
/// in `apply_lanes`).
fn zeros_like(arr: &syn::Ident, s: &Shape) -> TokenStream {
    zeros_of(quote!(#arr.len()), s)
}

/// A zeroed `Vec` of `n` elements of the array shape `s` (in lanes in
/// `apply_lanes`).
fn zeros_of(n: TokenStream, s: &Shape) -> TokenStream {
    let e = match s {
        Shape::Slice(e, _) => e.rust(),
        other => other.rust(),
    };
    let e = match crate::codegen::LinearLanes::get() {
        Some(k) => crate::codegen::in_lanes(&e, &k),
        None => e,
    };
    quote!(::linear_ad::__private::zeros::<#e>(#n))
}

/// The shape of the `i`-th argument of a call, if it is differentiable.
fn arg_shape(site: &CallSite, i: usize) -> Option<&Shape> {
    match site.args.get(i)? {
        CallArg::Active(s, _)
        | CallArg::Origin(s, _, _)
        | CallArg::Data { shape: s, .. }
        | CallArg::Part { shape: s, .. } => Some(s),
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
            CallArg::Active(Shape::Slice(..), _)
            | CallArg::Data { .. }
            | CallArg::Part { first: None, .. } => {
                rank += 1;
                match compact {
                    true => nl.get(rank - 1).cloned(),
                    false => positions[i].0.and_then(|k| nl.get(k)).cloned(),
                }
            }
            CallArg::Again { first, .. }
            | CallArg::Part {
                first: Some(first), ..
            } => out.get(*first).cloned().flatten(),
            CallArg::Active(..)
            | CallArg::Origin(..)
            | CallArg::Discrete(_)
            | CallArg::Inactive(..) => None,
        };
        out.push(id);
    }
    out
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
        // Scratch buffers, added into the accumulator after the call (see
        // `transpose_call`).
        CallArg::Again { .. } | CallArg::Part { lent: true, .. } => (Some(names.temp("c")), None),
        CallArg::Active(s, span) | CallArg::Origin(s, _, span) => {
            let c = names.temp("c");
            let t = s.rust();
            let got =
                quote_spanned!(*span=> <_ as ::linear_ad::__private::Tangent<#t>>::tangent(#c));
            (Some(c), Some(to_ir(got, s, names)))
        }
        CallArg::Discrete(_) => (None, Some(quote!(()))),
        CallArg::Data { .. } | CallArg::Inactive(..) | CallArg::Part { .. } => (None, None),
    }
}

/// One tangent slot per parameter of the callee, in its order: the IR
/// passes the active arguments' (`vals`) only, the other slots are
/// `Inactive`; each slot carries its argument's span, so a type error
/// about it points at the argument. The arrays passed (`arrays`, per
/// argument) give a constant array's zero tangent its length, and the
/// parts' `ranges` (per argument) the part of a tangent array passed.
fn tangent_slots(
    site: &CallSite,
    (vals, arrays, ranges): (&[syn::Ident], &[Option<syn::Ident>], &[Option<TokenStream>]),
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
            // The part of the tangent array, or zero for a constant one.
            CallArg::Part {
                first,
                shape,
                lent,
                active,
                span,
            } => {
                let r = ranges.get(i)?.as_ref()?;
                let slot = match (lent, active) {
                    (true, _) => {
                        let v = val(first.unwrap_or(i))?;
                        quote_spanned!(*span=> &#v[#r])
                    }
                    (false, true) => {
                        let z = zeros_of(quote!((#r).len()), shape);
                        quote!(&#z)
                    }
                    (false, false) => quote!(::linear_ad::__private::Inactive),
                };
                out.push(slot);
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
    let (positions, ranges) = (site.positions(), site.ranges());
    let (mut args, mut unread) = (Vec::new(), Vec::new());
    for (i, a) in site.args.iter().enumerate() {
        let val = |j: usize| positions[j].0.and_then(|k| vals.get(k));
        match a {
            // A part of an array: of the array this argument or the one
            // that lends it passes.
            CallArg::Part { first, .. } => {
                let v = val(first.unwrap_or(i))?;
                let (lo, hi) = ranges[i]?;
                let (lo, hi) = (vals.get(lo)?, vals.get(hi)?);
                args.push(quote!(&#v[#lo..#hi]));
            }
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
