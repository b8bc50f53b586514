//! The proc-macro crate of linear-ad: one-line entry points into
//! `linear_core::expand`, where the logic lives and is tested. Use the
//! macros through the `linear-ad` crate, which re-exports them.

use proc_macro::TokenStream;

/// Generates forward mode (`f_jvp`), a reusable linearization (`f_lin`) and
/// reverse mode (`f_vjp`) for a numeric function. On an inherent `impl`
/// block, does so for each method in it marked `#[differentiable]`. See
/// the `linear-ad` crate documentation.
///
/// Arguments, all optional:
///
/// * `checkpoint = "save" | "state" | "binomial"`: what loops keep for the
///   reverse sweep. `"save"` (the default) keeps every intermediate the
///   derivative reads, per iteration; `"state"` keeps each iteration's loop
///   state and recomputes the rest; `"binomial"` keeps the initial state
///   only and recomputes states from at most `snapshots` stored ones
///   (Griewank's Revolve schedule), so memory does not grow with the trip
///   count.
/// * `snapshots = N`: with `checkpoint = "binomial"`, the states each
///   loop's reverse sweep may hold at once (default 64).
/// * `jvp = path`: take the derivative from a `#[linear]` function instead.
/// * `dump`: print the Linear A program of every stage at compile time.
#[proc_macro_attribute]
pub fn differentiable(attr: TokenStream, item: TokenStream) -> TokenStream {
    linear_core::expand::differentiable(attr.into(), item.into()).into()
}

/// Proves a function linear in its `#[linear]` parameters and generates its
/// transpose `g_transpose`. See the `linear-ad` crate documentation.
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
