//! The caller side of second derivatives through calls (`order = 2`):
//! Rust for the IR's `g.jvp.jvp` (J of a call of the callee's `_jvp`,
//! unzipped and transposed), through the callee's `SecondOrder`
//! companions (`companions::jvp_companions`). Slices cross as at first
//! order, detached: the arrays and their directions passed back after the
//! tape, an accumulator for each after the cotangents; a part of an
//! array, and its direction's part, as at first order too (the ranges
//! beside the callee's tape, a scratch accumulator added into the range).

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};

use super::{arg_cotangent, arg_shape, primal_args, tangent_slots, zeros_like, zeros_of};
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
    // `g.jvp`'s arguments: `g`'s (non-linear), then their directions
    // (one per tangent of `g`).
    let (n_x, n_dx) = site.counts();
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
            let (point, tangents) = match stage {
                "jvp.jvp" => rest.split_at_checked(n_x + n_dx)?,
                _ => (rest, &[][..]),
            };
            let (xs, dxs) = point.split_at_checked(n_x)?;
            let arrays = SecondArrays::at(site, xs, dxs);
            // A struct with constant fields crosses as its origin, which
            // its IR values equal (see `primal_args`).
            let (args, unread) = primal_args(site, xs, names)?;
            let d_slots = arrays.slots(dxs, names)?;
            let c = f("__jvp_lin");
            let lin_call =
                quote!(#(let _ = &#unread;)* let ((#r, #dr), #l) = #c(#(#args,)* #(#d_slots,)*););
            if stage == "jvp.jvp.nl" {
                let held = super::ranged(site, xs, &l)?;
                quote!({ #lin_call (#r_ir, #dr_ir, #held) })
            } else {
                // Forward mode as the linearization applied once: the
                // callee generates no forward mode of its `_jvp` in its
                // own calling convention.
                let ins = arrays.passed()?;
                let (txs, tdxs) = tangents.split_at_checked(n_dx)?;
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
            let arrays = SecondArrays::passed_back(site, (values, directions), tape);
            let (xs, dxs) = rest.split_at_checked(n_dx)?;
            let (e, g) = (arrays.slots(xs, names)?, arrays.slots(dxs, names)?);
            let (map, ins) = (arrays.map(tape), arrays.passed()?);
            let c = f("__jvp_apply");
            quote!({ let (#r, #dr) = #c(#map, #(#ins,)* #(#e,)* #(#g,)*); (#r_ir, #dr_ir) })
        }
        ("jvp.jvp.lin.t", Some(tape)) => {
            let (values, rest) = rest.split_at_checked(n_values)?;
            let (directions, rest) = rest.split_at_checked(n_directions)?;
            let arrays = SecondArrays::passed_back(site, (values, directions), tape);
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

/// The arrays of a call of `g.jvp` in a second derivative, per argument
/// of the call: the IR's array (a slice the call lends, a constant one,
/// or the array a part is of) and its direction's (a constant array has
/// none: its direction is zero), and a part's range (`lo..hi`, read from
/// the IR's bounds or from the tape, as at first order). `g.jvp`'s
/// detached linearization takes them back in its own order, every slice
/// parameter's array and then their directions' ([`SecondArrays::passed`]).
struct SecondArrays<'a> {
    site: &'a CallSite,
    values: Vec<Option<syn::Ident>>,
    directions: Vec<Option<syn::Ident>>,
    ranges: Vec<Option<TokenStream>>,
}

impl<'a> SecondArrays<'a> {
    /// How many arrays the IR passes back: the arguments' (slices lent,
    /// constant arrays, the arrays parts are of), then the lent ones'
    /// directions.
    fn counts(site: &CallSite) -> (usize, usize) {
        let (mut values, mut directions) = (0, 0);
        for a in &site.args {
            match a {
                CallArg::Active(Shape::Slice(..), _)
                | CallArg::Part {
                    first: None,
                    lent: true,
                    ..
                } => {
                    values += 1;
                    directions += 1;
                }
                CallArg::Data { .. } | CallArg::Part { first: None, .. } => values += 1,
                _ => {}
            }
        }
        (values, directions)
    }

    /// From the IR's arguments of `g.jvp` (`xs`) and directions (`dxs`).
    fn at(site: &'a CallSite, xs: &[syn::Ident], dxs: &[syn::Ident]) -> SecondArrays<'a> {
        let positions = site.positions();
        let get = |vals: &[syn::Ident], k: Option<usize>| k.and_then(|k| vals.get(k)).cloned();
        let values = (0..site.args.len())
            .map(|i| match &site.args[i] {
                CallArg::Active(Shape::Slice(..), _)
                | CallArg::Data { .. }
                | CallArg::Part { first: None, .. } => get(xs, positions[i].0),
                _ => None,
            })
            .collect();
        let directions = (0..site.args.len())
            .map(|i| match &site.args[i] {
                CallArg::Active(Shape::Slice(..), _) | CallArg::Part { first: None, .. } => {
                    get(dxs, positions[i].1)
                }
                _ => None,
            })
            .collect();
        let ranges = site
            .ranges()
            .into_iter()
            .map(|r| {
                let (lo, hi) = r?;
                let (lo, hi) = (xs.get(lo)?, xs.get(hi)?);
                Some(quote!(#lo..#hi))
            })
            .collect();
        SecondArrays::resolved(site, (values, directions), ranges)
    }

    /// From the arrays the IR passes back, in order ([`Self::counts`]),
    /// with the ranges the `tape` holds.
    fn passed_back(
        site: &'a CallSite,
        (values, directions): (&[syn::Ident], &[syn::Ident]),
        tape: &syn::Ident,
    ) -> SecondArrays<'a> {
        let (mut vs, mut ds) = (values.iter(), directions.iter());
        let (mut out_v, mut out_d, mut ranges) = (Vec::new(), Vec::new(), Vec::new());
        let mut k = 0usize;
        for a in &site.args {
            let (v, d) = match a {
                CallArg::Active(Shape::Slice(..), _)
                | CallArg::Part {
                    first: None,
                    lent: true,
                    ..
                } => (vs.next().cloned(), ds.next().cloned()),
                CallArg::Data { .. } | CallArg::Part { first: None, .. } => {
                    (vs.next().cloned(), None)
                }
                _ => (None, None),
            };
            out_v.push(v);
            out_d.push(d);
            ranges.push(matches!(a, CallArg::Part { .. }).then(|| {
                k += 1;
                let k = k - 1;
                quote!(#tape.ranges[#k].0..#tape.ranges[#k].1)
            }));
        }
        SecondArrays::resolved(site, (out_v, out_d), ranges)
    }

    /// An array passed again, or a part of an array the call lends
    /// already, is its first's.
    fn resolved(
        site: &'a CallSite,
        (mut values, mut directions): (Vec<Option<syn::Ident>>, Vec<Option<syn::Ident>>),
        ranges: Vec<Option<TokenStream>>,
    ) -> SecondArrays<'a> {
        for (i, a) in site.args.iter().enumerate() {
            if let CallArg::Again { first, .. }
            | CallArg::Part {
                first: Some(first), ..
            } = a
            {
                values[i] = values.get(*first).cloned().flatten();
                directions[i] = directions.get(*first).cloned().flatten();
            }
        }
        SecondArrays {
            site,
            values,
            directions,
            ranges,
        }
    }

    /// The callee's slice parameters, `#[nondiff]` ones too: an array
    /// passed to each, lent, lent again, constant, or a part of one.
    fn slices(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.site.args.len()).filter(|&i| {
            matches!(
                self.site.args[i],
                CallArg::Active(Shape::Slice(..), _)
                    | CallArg::Again { .. }
                    | CallArg::Data { .. }
                    | CallArg::Part { .. }
            )
        })
    }

    /// `&a`, or `&a[lo..hi]` for a part.
    fn view(&self, a: &syn::Ident, i: usize) -> TokenStream {
        match self.ranges.get(i).and_then(Option::as_ref) {
            Some(r) => quote!(&#a[#r]),
            None => quote!(&#a),
        }
    }

    /// What `g.jvp`'s linearization takes back: every slice parameter's
    /// array, then their directions' (a constant array's a zeroed one,
    /// none for a `#[nondiff]` parameter, whose direction `g.jvp` does not
    /// read).
    fn passed(&self) -> Option<Vec<TokenStream>> {
        let values = self
            .slices()
            .map(|i| Some(self.view(self.values.get(i)?.as_ref()?, i)));
        let directions = self.slices().map(|i| match self.directions.get(i)? {
            Some(d) => Some(self.view(d, i)),
            None if matches!(
                self.site.args[i],
                CallArg::Data { active: false, .. } | CallArg::Part { active: false, .. }
            ) =>
            {
                Some(quote!(&[]))
            }
            None => {
                let n = match self.ranges.get(i).and_then(Option::as_ref) {
                    Some(r) => quote!((#r).len()),
                    None => {
                        let v = self.values.get(i)?.as_ref()?;
                        quote!(#v.len())
                    }
                };
                let z = zeros_of(n, arg_shape_of(self.site, i)?);
                Some(quote!(&#z))
            }
        });
        values.chain(directions).collect()
    }

    /// One tangent slot per parameter of the callee, from the IR's values
    /// `vals` (a constant array's tangent zero, as long as the array).
    fn slots(&self, vals: &[syn::Ident], names: &mut Names) -> Option<Vec<TokenStream>> {
        tangent_slots(self.site, (vals, &self.values, &self.ranges), names)
    }

    /// The callee's linearization in the `tape` (beside the ranges of
    /// the parts passed, if any).
    fn map(&self, tape: &syn::Ident) -> TokenStream {
        match self.site.parts().is_empty() {
            true => quote!(&#tape),
            false => quote!(&#tape.map),
        }
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
/// returned). An array passed again, a part of one, or a constant one,
/// gets a scratch accumulator, added into its array's (in the part's
/// range) or dropped.
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
    let mut halves = [Half::new(acc_xs), Half::new(acc_dxs)];
    for (i, a) in site.args.iter().enumerate() {
        for half in &mut halves {
            half.arg(site, arrays, (i, a), names)?;
        }
    }
    let [h0, h1] = halves;
    let (p0, p1) = (&h0.pats, &h1.pats);
    let all: Vec<&TokenStream> = h0.outs.iter().chain(&h1.outs).collect();
    let out = match all.as_slice() {
        [one] => quote!(#one),
        many => quote!((#(#many,)*)),
    };
    let accs = h0.acc_args.iter().chain(&h1.acc_args);
    let merges = h0.merges.iter().chain(&h1.merges);
    let map = arrays.map(tape);
    Some(quote!({
        #[allow(unused_mut)]
        let ((#(#p0,)*), (#(#p1,)*)) = #call(#map, #(#ins,)* (#ct, #dct), #(#accs,)*);
        #(#merges)*
        #out
    }))
}

/// One half of `g.jvp.jvp`'s transpose's cotangents: of `g`'s arguments,
/// or of their directions. `accs` are the IR's accumulators of the half's
/// lent arrays, in order.
struct Half<'a> {
    accs: std::slice::Iter<'a, syn::Ident>,
    pats: Vec<TokenStream>,
    outs: Vec<TokenStream>,
    acc_args: Vec<TokenStream>,
    merges: Vec<TokenStream>,
    /// Per argument, the variable its array's accumulator is in after
    /// the call (for an array passed again or a part of it).
    summed: Vec<Option<syn::Ident>>,
}

impl<'a> Half<'a> {
    fn new(accs: &'a [syn::Ident]) -> Half<'a> {
        Half {
            accs: accs.iter(),
            pats: Vec::new(),
            outs: Vec::new(),
            acc_args: Vec::new(),
            merges: Vec::new(),
            summed: Vec::new(),
        }
    }

    /// The argument `a` (the `i`-th): its pattern, output, accumulator
    /// and merge.
    fn arg(
        &mut self,
        site: &CallSite,
        arrays: &SecondArrays,
        (i, a): (usize, &CallArg),
        names: &mut Names,
    ) -> Option<()> {
        let (c, out) = arg_cotangent(a, names);
        let mut sum = None;
        match a {
            CallArg::Active(Shape::Slice(..), _) => {
                let acc = self.accs.next()?;
                self.acc_args.push(quote!(#acc));
                sum = c.clone();
            }
            CallArg::Again { first, .. } => {
                let arr = arrays.values.get(i)?.as_ref()?;
                self.acc_args
                    .push(zeros_like(arr, arg_shape(site, *first)?));
                let (into, from) = (self.summed.get(*first)?.as_ref()?, c.as_ref()?);
                self.merges
                    .push(quote!(::linear_ad::__private::add_into(&mut #into, &#from);));
            }
            CallArg::Part {
                first,
                shape,
                lent,
                active,
                ..
            } => {
                let r = arrays.ranges.get(i)?.as_ref()?;
                if *active {
                    self.acc_args.push(zeros_of(quote!((#r).len()), shape));
                }
                match (first, lent) {
                    (None, true) => {
                        let (acc, m) = (self.accs.next()?, names.temp("acc"));
                        let from = c.as_ref()?;
                        self.merges.push(quote! {
                            let mut #m = #acc;
                            ::linear_ad::__private::add_into(&mut #m[#r], &#from);
                        });
                        self.outs.push(quote!(#m));
                        sum = Some(m);
                    }
                    (Some(j), true) => {
                        let (into, from) = (self.summed.get(*j)?.as_ref()?, c.as_ref()?);
                        self.merges.push(
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
            } => self
                .acc_args
                .push(zeros_like(arrays.values.get(i)?.as_ref()?, shape)),
            CallArg::Active(..)
            | CallArg::Origin(..)
            | CallArg::Discrete(_)
            | CallArg::Data { .. }
            | CallArg::Inactive(..) => {}
        }
        self.pats.push(match &c {
            Some(c) if matches!(a, CallArg::Active(Shape::Slice(..), _)) => quote!(mut #c),
            Some(c) => quote!(#c),
            None => quote!(_),
        });
        self.outs.extend(out);
        self.summed.push(sum);
        Some(())
    }
}
