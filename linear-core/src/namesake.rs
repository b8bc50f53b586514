//! The hidden `macro_rules!` macro that shares an item's name.
//!
//! [`crate::layout`] (a derived struct's fields) and [`crate::signature`]
//! (a function's signature) both hand data to other macros through a
//! macro named like the item, so it resolves by every path the item does:
//! `use geo::project;` imports the function, its linearization alias and
//! this macro at once. This module makes that macro visible exactly as far
//! as the item is.
//!
//! * **Not `pub`** (private, `pub(crate)`, `pub(super)`, ...): a
//!   `macro_rules!` in a hidden module, re-exported with `pub(crate) use`.
//!   The module keeps its textual scope (a `macro_rules!` applies to the
//!   code after it) from shadowing a user macro of the same name.
//! * **`pub`**: a `macro_rules!` is public outside its crate only with
//!   `#[macro_export]`, which puts it at the crate's root. So the macro is
//!   exported at the root under a name no other item has
//!   (`__linear_ad_<tag>_<name>_<hash>`), and re-exported beside the item
//!   with `pub use __linear_ad_..._hash as name;`. That path has one
//!   segment, so it resolves through the macro's textual scope, whose
//!   binding is public: the longer `crate::__linear_ad_..` would be refused
//!   (lint `macro_expanded_macro_exports_accessed_by_absolute_paths`, a
//!   future hard error), and no path in any crate ever names the hidden
//!   name. Other crates reach the macro as `dep::geo::project!`.
//!
//! Invariant: two expansions in one compilation never export the same
//! name. The hash is of the item's tokens; an identical item expanded
//! again (a `macro_rules!` stamping the same function into two modules)
//! gets a counter, and expansion order within a crate is deterministic.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The exported names this process has emitted.
static EXPORTED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// A name for an exported macro that this compilation has not used yet.
fn fresh(tag: &str, name: &syn::Ident, item: &TokenStream) -> syn::Ident {
    let mut hasher = DefaultHasher::new();
    item.to_string().hash(&mut hasher);
    let base = format!("__linear_ad_{tag}_{name}_{:016x}", hasher.finish());
    // A poisoned lock only means another expansion panicked; the set is
    // still a set.
    let mut guard = EXPORTED.lock().unwrap_or_else(|e| e.into_inner());
    let used = guard.get_or_insert_with(HashSet::new);
    let mut candidate = base.clone();
    let mut n = 0usize;
    while !used.insert(candidate.clone()) {
        n += 1;
        candidate = format!("{base}_{n}");
    }
    syn::Ident::new(&candidate, name.span())
}

/// `macro_rules! name { rules }`, visible as far as `vis` makes the item
/// it is named after. `tag` says what the macro carries (`sig`,
/// `layout`); `item` is the item's tokens, hashed for the exported name.
pub fn namesake(
    tag: &str,
    name: &syn::Ident,
    vis: &syn::Visibility,
    item: &TokenStream,
    rules: TokenStream,
) -> TokenStream {
    if let syn::Visibility::Public(_) = vis {
        let hidden = fresh(tag, name, item);
        return quote! {
            #[doc(hidden)]
            #[macro_export]
            macro_rules! #hidden { #rules }
            #[doc(hidden)]
            #[allow(unused_imports)]
            pub use #hidden as #name;
        };
    }
    let module = format_ident!("__linear_ad_{}_{}", tag, name);
    quote! {
        #[doc(hidden)]
        #[allow(non_snake_case)]
        mod #module {
            #[allow(unused_macros)]
            macro_rules! #name { #rules }
            #[allow(unused_imports)]
            pub(crate) use #name;
        }
        #[doc(hidden)]
        #[allow(unused_imports)]
        pub(crate) use #module::#name;
    }
}
