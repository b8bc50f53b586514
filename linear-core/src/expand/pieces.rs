//! The IR parameters a differentiable parameter is passed as, its
//! *pieces*.
//!
//! Most parameters are one IR parameter. A struct with `Vec` fields is
//! several (see `lower::structs`): its flat value (the tuple of its other
//! differentiable fields), then one array per `Vec` field, read in place,
//! since the IR puts no array in a tuple (invariant 11 of
//! [`crate::check`]). Its value and tangent are split into pieces
//! (`ToFlat`, `ArrayField`) on the way in, and its cotangent joined from
//! the pieces' cotangents (`FromParts`) on the way out; the arrays'
//! cotangents are buffers of their own, as a `&Vec<T>` parameter's is.

use proc_macro2::TokenStream;
use quote::quote;

use super::{convert, from_ir, Dir};
use crate::codegen::Names;
use crate::ir::Var;
use crate::lower::{Lowered, Shape};

/// Which part of its parameter a piece is.
#[derive(Clone, PartialEq, Eq)]
pub(super) enum Part {
    /// The whole parameter.
    Whole,
    /// A struct's flat value, without its `Vec` fields.
    Flat,
    /// A struct's `j`-th `Vec` field, and its name.
    Array(usize, String),
}

/// One IR parameter of a differentiable parameter.
pub(super) struct Piece<'a> {
    /// The parameter's position among the differentiable ones.
    pub(super) param: usize,
    pub(super) part: Part,
    /// The shape the piece's value converts to the IR by (a struct's
    /// shape for its flat value, which `ToFlat` reads).
    pub(super) shape: Shape,
    pub(super) var: &'a Var,
}

impl Piece<'_> {
    /// The piece of `e`, a value of the parameter or of its tangent;
    /// `by_ref` when `e` is a reference.
    pub(super) fn of(&self, e: &TokenStream, by_ref: bool) -> TokenStream {
        match &self.part {
            Part::Whole | Part::Flat => e.clone(),
            Part::Array(j, _) => {
                let r = if by_ref { quote!(#e) } else { quote!(&#e) };
                quote!(::linear_ad::__private::ArrayField::<#j>::array(#r))
            }
        }
    }

    /// How messages name the piece of `e`: `e.xs` for a `Vec` field.
    pub(super) fn label(&self, e: &str) -> String {
        match &self.part {
            Part::Whole | Part::Flat => e.to_string(),
            Part::Array(_, field) => format!("{e}.{field}"),
        }
    }

    /// How messages name the piece of parameter `i` (from 1).
    pub(super) fn describe(&self, i: usize) -> String {
        match &self.part {
            Part::Whole | Part::Flat => format!("parameter {i}"),
            Part::Array(_, field) => format!("field `{field}` of parameter {i}"),
        }
    }

    /// Whether the piece is an array read by index (T gives it a
    /// cotangent buffer).
    pub(super) fn is_array(&self) -> bool {
        matches!(self.shape, Shape::Slice(..))
    }
}

/// The pieces of `l`'s differentiable parameters, in the order of the IR
/// function's parameters.
pub(super) fn pieces(l: &Lowered) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let active = l
        .params
        .iter()
        .filter_map(|p| Some((p.active.as_ref()?, p)));
    for (k, ((shape, var), p)) in active.enumerate() {
        let part = if p.arrays.is_empty() {
            Part::Whole
        } else {
            Part::Flat
        };
        out.push(Piece {
            param: k,
            part,
            shape: shape.clone(),
            var,
        });
        let Shape::Struct(st) = shape else {
            continue;
        };
        for (j, ((path, s), a)) in st.arrays().into_iter().zip(&p.arrays).enumerate() {
            out.push(Piece {
                param: k,
                part: Part::Array(j, path),
                shape: s.clone(),
                var: a,
            });
        }
    }
    out
}

/// The cotangent of a parameter of shape `shape` from its pieces' IR
/// cotangents `parts` (in order): a struct with `Vec` fields is rebuilt
/// from its flat value and its arrays' buffers.
pub(super) fn join(shape: &Shape, parts: &[TokenStream], names: &mut Names) -> TokenStream {
    let Some((first, arrays)) = parts.split_first() else {
        return quote!(());
    };
    match shape {
        Shape::Struct(st) if !arrays.is_empty() => {
            let flat = convert(
                first.clone(),
                &crate::lower::flat_shape(shape),
                names,
                Dir::Tangent,
            );
            let arrays = st
                .arrays()
                .into_iter()
                .zip(arrays)
                .map(|((_, s), a)| from_ir(a.clone(), s, names));
            let t = st.tangent();
            quote!(<#t as ::linear_ad::__private::FromParts>::from_parts(#flat, (#(#arrays,)*)))
        }
        _ => from_ir(first.clone(), shape, names),
    }
}
