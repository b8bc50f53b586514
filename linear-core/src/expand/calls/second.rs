//! The caller side of second derivatives through calls (`order = 2`):
//! Rust for the IR's `g.jvp.jvp` (J of a call of the callee's `_jvp`,
//! unzipped and transposed), through the callee's `SecondOrder`
//! companions (`companions::jvp_companions`). Slices cross as at first
//! order, detached: the arrays and their directions passed back after the
//! tape, an accumulator for each after the cotangents.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};

use super::{arg_cotangent, arg_shape, primal_args, tangent_slots, zeros_like};
use crate::codegen::Names;
use crate::expand::{arg_from_ir, result_to_ir};
use crate::lower::{CallArg, CallSite, Shape};

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
pub(super) fn call(
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
        tangent_slots(self.site, (vals, &self.values, &[]), names)
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
