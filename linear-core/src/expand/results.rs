//! A function's result as its IR results, and back: a tuple holding arrays
//! (`-> (f64, Vec<f64>)`) is several IR results, one per component
//! ([`Shape::results`], `lower/results.rs`), which the generated bodies
//! bind one by one and the generated functions group into the Rust tuple
//! again. Every other result is one IR result, and everything here is
//! then the identity, so that the code generated for it is unchanged.
//!
//! Conversions between Rust and IR values ([`super::from_ir`] and its
//! kin) apply to each result by itself: a `Vec` of rows, say, is
//! converted where it is a result, not inside the tuple.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

use crate::codegen::Names;
use crate::lower::Shape;

/// The results of a value of shape `s`: a name for each (`base` if there
/// is one, else `base0`, `base1`, ..) and its shape.
pub(super) struct Results<'s> {
    pub(super) names: Vec<syn::Ident>,
    pub(super) shapes: Vec<&'s Shape>,
    whole: &'s Shape,
}

impl<'s> Results<'s> {
    pub(super) fn new(base: &str, s: &'s Shape) -> Results<'s> {
        let shapes = s.results();
        let names = match shapes.len() {
            1 => vec![syn::Ident::new(base, Span::mixed_site())],
            _ => (0..shapes.len())
                .map(|i| format_ident!("{}{}", base, i, span = Span::mixed_site()))
                .collect(),
        };
        Results {
            names,
            shapes,
            whole: s,
        }
    }

    /// The Rust value, each result converted from the IR by `conv` and
    /// the results grouped as the shape's tuples are.
    pub(super) fn value(
        &self,
        names: &mut Names,
        conv: fn(TokenStream, &Shape, &mut Names) -> TokenStream,
    ) -> TokenStream {
        let mut leaves = self
            .names
            .iter()
            .zip(&self.shapes)
            .map(|(n, s)| conv(quote!(#n), s, names));
        group(self.whole, &mut leaves)
    }
}

/// The value of shape `s` from its results, in order.
fn group(s: &Shape, leaves: &mut dyn Iterator<Item = TokenStream>) -> TokenStream {
    match s {
        Shape::Tuple(ss) if s.grouped() => {
            let parts: Vec<TokenStream> = ss.iter().map(|s| group(s, leaves)).collect();
            quote!((#(#parts,)*))
        }
        _ => leaves.next().unwrap_or_default(),
    }
}

/// The place of each result of `e`, a Rust value of shape `s` (a local
/// variable, moved out of part by part): `e` itself, or its fields
/// (`e.0`, `e.1.0`, ..), with their shapes.
pub(super) fn places<'s>(e: &TokenStream, s: &'s Shape) -> Vec<(TokenStream, &'s Shape)> {
    match s {
        Shape::Tuple(ss) if s.grouped() => ss
            .iter()
            .enumerate()
            .flat_map(|(i, s)| {
                let i = syn::Index::from(i);
                places(&quote!(#e.#i), s)
            })
            .collect(),
        _ => vec![(e.clone(), s)],
    }
}

/// A pattern binding `names` in order to the tuple a generated body
/// returns (its results, then its linear results or its tape; a lone
/// name is the body's value itself).
pub(super) fn pattern(names: &[&syn::Ident]) -> TokenStream {
    match names {
        [one] => quote!(#one),
        many => quote!((#(#many),*)),
    }
}

/// The IR values of the results of `e`, a Rust value of shape `s` held in
/// a local variable: each result's place converted by `conv`.
pub(super) fn ir_parts(
    e: &TokenStream,
    s: &Shape,
    names: &mut Names,
    conv: fn(TokenStream, &Shape, &mut Names) -> TokenStream,
) -> Vec<TokenStream> {
    places(e, s)
        .into_iter()
        .map(|(place, s)| conv(place, s, names))
        .collect()
}

/// The Rust value of shape `s` from its results' IR values `parts`, each
/// converted by `conv`.
pub(super) fn from_parts(
    parts: &[syn::Ident],
    s: &Shape,
    names: &mut Names,
    conv: fn(TokenStream, &Shape, &mut Names) -> TokenStream,
) -> TokenStream {
    let converted: Vec<TokenStream> = parts
        .iter()
        .zip(s.results())
        .map(|(p, s)| conv(quote!(#p), s, names))
        .collect();
    group(s, &mut converted.into_iter())
}

/// A tuple of `parts`, or the one part itself.
pub(super) fn tuple(parts: &[TokenStream]) -> TokenStream {
    match parts {
        [one] => one.clone(),
        many => quote!((#(#many),*)),
    }
}
