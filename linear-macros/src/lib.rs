//! The proc-macro crate of linear-ad: one-line entry points into
//! `linear_core::expand`, where the logic lives and is tested. Use the
//! macros through the `linear-ad` crate, which re-exports them.

use proc_macro::TokenStream;

// The reference documentation of `differentiable` and `linear` is on
// their re-exports in `linear-ad` (`docs/*.md`), where its examples can
// run as doctests; rustdoc shows it on the attribute pages.
#[proc_macro_attribute]
pub fn differentiable(attr: TokenStream, item: TokenStream) -> TokenStream {
    linear_core::expand::differentiable(attr.into(), item.into()).into()
}

#[proc_macro_attribute]
pub fn linear(attr: TokenStream, item: TokenStream) -> TokenStream {
    linear_core::expand::linear(attr.into(), item.into()).into()
}

/// Derives `linear_ad::Differentiable` for a struct: a `<Name>Tangent`
/// struct of its differentiable fields, the vector-space operations on
/// it, and what `#[differentiable]` functions need to read the struct's
/// fields. See the `linear-ad` crate documentation.
#[proc_macro_derive(Differentiable, attributes(nondiff))]
pub fn derive_differentiable(item: TokenStream) -> TokenStream {
    linear_core::derive::derive(item.into()).into()
}

/// Resumes a `#[derive(Differentiable)]` or `#[differentiable]` expansion
/// once a struct's layout macro has delivered the struct's fields. Not a
/// public API.
#[doc(hidden)]
#[proc_macro]
pub fn __resume(input: TokenStream) -> TokenStream {
    linear_core::layout::resume(input.into()).into()
}

/// Rust the `#[differentiable]` expansion wrote with its names resolved
/// where it wrote them: the tokens themselves (see
/// `linear_core::lower::pattern`). Not part of the public API.
#[doc(hidden)]
#[proc_macro]
pub fn __resolved(input: TokenStream) -> TokenStream {
    input
}
