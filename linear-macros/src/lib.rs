//! The proc-macro crate of linear-ad: one-line entry points into
//! `linear_core::expand`, where the logic lives and is tested. Use the
//! macros through the `linear-ad` crate, which re-exports them.

use proc_macro::TokenStream;

/// Generates forward mode (`f_jvp`), a reusable linearization (`f_lin`) and
/// reverse mode (`f_vjp`) for a numeric function. See the `linear-ad` crate
/// documentation.
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
