//! How a caller learns the signature of a function defined elsewhere.
//!
//! `let p = geo::project(cam, x); p[0]` needs the shape of `project`'s
//! result before the caller can be lowered (is `p` a float, a tuple, an
//! array, a struct?), and a proc macro sees only its own item. The
//! mechanism is the one [`crate::layout`] uses for struct fields:
//!
//! * **Callee side.** `#[differentiable] fn project` (and `#[linear]`)
//!   also defines a hidden `macro_rules!` macro named `project` that
//!   holds its *signature* ([`Sig`]): the `fn` line as written, whether it
//!   is differentiable or linear, and the layouts of the structs the
//!   signature names (resolved where the function is, so a caller never
//!   resolves the callee's types in its own scope). Functions and macros
//!   live in different namespaces, so `use geo::project;` imports both,
//!   and the macro resolves wherever the function does. The callee also
//!   defines a type alias of the same name for its linearization type
//!   (types are a third namespace): callers reach the callee's generated
//!   code through `<geo::project>::__jvp(..)`, by the path they wrote, so
//!   a `use` of the function is all a caller needs.
//! * **Caller side.** Lowering records each call with a differentiable
//!   argument whose result shape no annotation gives and whose signature
//!   is not known yet ([`lookup`] says which paths can have one). If there
//!   are any, the expansion does not generate yet: it becomes a
//!   [`crate::layout::Job`] with the paths pending, which calls the first
//!   path's macro (`geo::project! { @__linear_ad_sig job }`); the macro
//!   expands to `linear_ad::__private::__resume! { sig (signature) job }`
//!   and [`crate::layout::resume`] records it and takes the next step.
//!   With every signature known the function is lowered again.
//!
//! Calls are still compiled as calls: the signature only types the
//! result. The alternative the issue offered, typing results through
//! associated types of the callee's items and emitting shape-generic code,
//! cannot work here: lowering must know a result's structure to index it.
//!
//! The macro is as visible as the function ([`crate::namesake`]): a `pub`
//! function's is exported, so `dep::geo::project(x)` in another crate
//! finds it by the same path.
//!
//! A callee generic in its float type (`fn cube<T: Float>`) has a generic
//! alias (`type cube<T> = CubeLinearization<T>;`): a caller names it at
//! the float type of the call's first float argument (or its own), and
//! reads the signature's result type with `T` replaced by that type.
//!
//! What has no signature macro, so a call to it needs a `let` annotation
//! when its result is not a float (see [`lookup`]): methods and
//! associated functions (a macro cannot live in an `impl`
//! block; callers name their linearizations through a trait instead, and
//! the methods of one block know each other's signatures: see
//! `expand::methods`), and functions named after a standard macro
//! (`line`, `write`, ..., which the macro would shadow).

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::parse::{Parse, ParseStream};

use crate::layout::{ByPath, Structs};

/// What a callee is to its callers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `#[differentiable]`, with the companions callers call.
    Differentiable,
    /// `#[linear]`.
    Linear,
    /// `#[differentiable]`, but the calling convention cannot pass its
    /// parameters yet (arrays read by index, structs), or it is generic
    /// in its float type: no companions and no alias.
    Closed,
    /// A method of a `#[differentiable] impl` block not marked
    /// `#[differentiable]`: the block's other methods learn that they
    /// cannot call it.
    Unmarked,
    /// The `f_vjp` of an `order = 2` function whose reverse pass reads
    /// what J cannot differentiate yet, such as the tape of a call with no
    /// path through its callee's own VJP (`expand::items::derived`):
    /// callers learn that they cannot call it.
    Tape,
    /// The `f_jvp` or `f_vjp` of a function differentiable at order 1
    /// only: callers learn to ask for `order = 2`.
    FirstOrder,
    /// A function whose own expansion failed, with its errors reported
    /// there (or a derivative of it): callers stop without a message of
    /// their own, where they would otherwise fail to find its signature
    /// macro, a cascade of errors away from the cause.
    Failed,
    /// The `f_jvp_jvp`, `f_jvp_vjp`, `f_vjp_jvp` or `f_vjp_vjp` of an
    /// `order = 2` function: a derivative of a derived function, which is
    /// differentiable once only. Callers learn that third derivatives
    /// are not generated.
    ThirdOrder,
}

impl Kind {
    /// A `#[differentiable]` function's kind: whether its linearization
    /// has the companions callers call.
    pub fn differentiable(callable: bool) -> Kind {
        if callable {
            Kind::Differentiable
        } else {
            Kind::Closed
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Differentiable => "differentiable",
            Kind::Linear => "linear",
            Kind::Closed => "closed",
            Kind::Unmarked => "unmarked",
            Kind::Tape => "tape",
            Kind::FirstOrder => "first_order",
            Kind::ThirdOrder => "third_order",
            Kind::Failed => "failed",
        }
    }
}

/// How many times callers can differentiate their calls of a callee
/// (those with `order = 2` differentiate them twice, through the
/// callee's `SecondOrder` impl, and refuse a call that cannot be, once, at
/// the call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Once: `order = 1`, or no `#[differentiable]` attribute of its own.
    Once,
    /// Twice: `order = 2`, and its linearization implements
    /// `SecondOrder`.
    Twice,
    /// Twice, and its `f_vjp` is differentiable too: a caller's own
    /// differentiable `f_vjp` calls it there (`passes::through`), in
    /// lanes where `f_vjp`'s linearization has them (`lanes`).
    TwiceVjp { lanes: bool },
    /// `order = 2` for its own `f_hvp`, but not through calls: its
    /// parameters hold structs inside tuples or arrays.
    OwnOnly,
    /// `f_jvp` or `f_vjp` of an `order = 2` function: differentiable once,
    /// so a caller with `order = 2` would take third derivatives.
    Derived,
}

impl Order {
    fn name(self) -> &'static str {
        match self {
            Order::Once => "once",
            Order::Twice => "twice",
            Order::TwiceVjp { lanes: false } => "twice_vjp",
            Order::TwiceVjp { lanes: true } => "twice_vjp_lanes",
            Order::OwnOnly => "own_only",
            Order::Derived => "derived",
        }
    }
}

/// What a caller knows of a callee: its `fn` line, its kind, and the
/// layouts of the structs the line names.
#[derive(Clone, Debug)]
pub struct Sig {
    pub kind: Kind,
    /// The callee's order, as callers see it.
    pub order: Order,
    /// Whether its linearization has `apply_lanes` (`lanes`), which a
    /// caller's `apply_lanes` calls.
    pub lanes: bool,
    /// The signature as written, parameter markers (`#[nondiff]`,
    /// `#[linear]`) included.
    pub sig: syn::Signature,
    pub structs: Structs,
}

/// Signatures by the path a caller calls them by.
pub type Sigs = ByPath<Sig>;

impl ToTokens for Sig {
    fn to_tokens(&self, out: &mut TokenStream) {
        let kind = syn::Ident::new(self.kind.name(), proc_macro2::Span::call_site());
        let order = syn::Ident::new(self.order.name(), proc_macro2::Span::call_site());
        let lanes = syn::Ident::new(
            if self.lanes { "lanes" } else { "scalar" },
            proc_macro2::Span::call_site(),
        );
        let (sig, structs) = (&self.sig, &self.structs);
        out.extend(quote!(#kind #order #lanes { #sig } [ #structs ]));
    }
}

impl Parse for Sig {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let id: syn::Ident = input.parse()?;
        let kinds: [Kind; 8] = [
            Kind::Differentiable,
            Kind::Linear,
            Kind::Closed,
            Kind::Unmarked,
            Kind::Tape,
            Kind::FirstOrder,
            Kind::ThirdOrder,
            Kind::Failed,
        ];
        let Some(kind) = kinds.into_iter().find(|k| id == k.name()) else {
            return Err(syn::Error::new(id.span(), "unknown signature kind"));
        };
        let id: syn::Ident = input.parse()?;
        let orders = [
            Order::Once,
            Order::Twice,
            Order::TwiceVjp { lanes: false },
            Order::TwiceVjp { lanes: true },
            Order::OwnOnly,
            Order::Derived,
        ];
        let Some(order) = orders.into_iter().find(|o| id == o.name()) else {
            return Err(syn::Error::new(id.span(), "unknown signature order"));
        };
        let id: syn::Ident = input.parse()?;
        let lanes = match id.to_string().as_str() {
            "lanes" => true,
            "scalar" => false,
            _ => return Err(syn::Error::new(id.span(), "unknown signature lanes")),
        };
        let (sig, structs);
        syn::braced!(sig in input);
        syn::bracketed!(structs in input);
        Ok(Sig {
            kind,
            order,
            lanes,
            sig: sig.parse()?,
            structs: structs.parse()?,
        })
    }
}

/// Macros of the standard prelude a function's signature macro would
/// shadow in its module: such functions have none.
const STD_MACROS: [&str; 36] = [
    "assert",
    "assert_eq",
    "assert_ne",
    "cfg",
    "column",
    "compile_error",
    "concat",
    "dbg",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "env",
    "eprint",
    "eprintln",
    "file",
    "format",
    "format_args",
    "include",
    "include_bytes",
    "include_str",
    "line",
    "matches",
    "module_path",
    "option_env",
    "panic",
    "print",
    "println",
    "stringify",
    "todo",
    "unimplemented",
    "unreachable",
    "vec",
    "write",
    "writeln",
    "try",
    "thread_local",
];

/// Rust's built-in attributes, which share the macro namespace: a
/// signature macro named `inline` or `link` makes the name ambiguous
/// (E0659) wherever it is in scope, so such functions have none.
const BUILTIN_ATTRIBUTES: [&str; 54] = [
    "allow",
    "automatically_derived",
    "bench",
    "cfg",
    "cfg_attr",
    "cfg_eval",
    "coverage",
    "cold",
    "collapse_debuginfo",
    "crate_name",
    "crate_type",
    "debugger_visualizer",
    "deny",
    "deprecated",
    "derive",
    "doc",
    "expect",
    "export_name",
    "feature",
    "forbid",
    "global_allocator",
    "ignore",
    "inline",
    "instruction_set",
    "link",
    "link_name",
    "link_ordinal",
    "link_section",
    "macro_export",
    "macro_use",
    "must_use",
    "naked",
    "no_builtins",
    "no_implicit_prelude",
    "no_link",
    "no_main",
    "no_mangle",
    "no_std",
    "non_exhaustive",
    "panic_handler",
    "path",
    "proc_macro",
    "proc_macro_attribute",
    "proc_macro_derive",
    "recursion_limit",
    "repr",
    "should_panic",
    "target_feature",
    "test",
    "test_case",
    "track_caller",
    "type_length_limit",
    "used",
    "warn",
];

/// Whether a function of this name has a signature macro.
fn has_macro(name: &syn::Ident) -> bool {
    !STD_MACROS
        .iter()
        .chain(&BUILTIN_ATTRIBUTES)
        .any(|m| name == m)
}

/// Whether `id` reads as a type's name (starts with a capital, as Rust's
/// naming conventions have it), not a module's or a function's.
pub(crate) fn names_type(id: &syn::Ident) -> bool {
    id.to_string()
        .trim_start_matches("r#")
        .starts_with(|c: char| c.is_ascii_uppercase())
}

/// Whether a call by `path` may reach a signature macro: a function by
/// name or module path. A segment before the last that starts with a
/// capital or is a primitive names a type (`Point::new`, `f64::max`),
/// whose associated functions have none; the standard library has none.
pub fn lookup(path: &syn::Path) -> bool {
    let Some(last) = path.segments.last() else {
        return false;
    };
    let typed =
        path.segments.iter().rev().skip(1).any(|s| {
            names_type(&s.ident) || crate::layout::NOT_STRUCTS.iter().any(|t| s.ident == t)
        });
    let std = path
        .segments
        .first()
        .is_some_and(|s| s.ident == "std" || s.ident == "core" || s.ident == "alloc");
    has_macro(&last.ident) && !typed && !std && path.segments.iter().all(|s| s.arguments.is_none())
}

/// The callee side, emitted with `f`'s generated items: the signature
/// macro and, unless `f` is [`Kind::Closed`], the type alias `f` for `f`'s
/// linearization type `map` (generic as `f` is).
pub fn callee_items(
    f: &syn::ItemFn,
    (kind, order, lanes): (Kind, Order, bool),
    structs: &Structs,
    (map, detached): (&syn::Ident, bool),
) -> TokenStream {
    let name = &f.sig.ident;
    let vis = &f.vis;
    // A function generic in its float type `T`: the alias is generic too,
    // and callers name it at their arguments' float type (`cube<f64>`).
    let param = crate::lower::float_param(&f.sig.generics);
    let t = param.as_ref().map(|t| quote!(<#t>));
    // A linearization that borrows its input arrays is held by callers
    // detached from them, borrowing nothing (`expand::items::Detached`).
    let map_args = match (&param, detached) {
        (Some(t), true) => quote!(<'static, #t>),
        (None, true) => quote!(<'static>),
        (_, false) => quote!(#t),
    };
    let alias = match kind {
        Kind::Closed
        | Kind::Unmarked
        | Kind::Tape
        | Kind::FirstOrder
        | Kind::ThirdOrder
        | Kind::Failed => TokenStream::new(),
        Kind::Differentiable | Kind::Linear => quote! {
            #[doc(hidden)]
            #[allow(non_camel_case_types)]
            #vis type #name #t = #map #map_args;
        },
    };
    if !has_macro(name) {
        return alias;
    }
    let sig = Sig {
        kind,
        order,
        lanes,
        sig: f.sig.clone(),
        structs: structs.clone(),
    };
    let dollar = quote!($);
    let job = quote!(#dollar(#dollar job:tt)*);
    let pass = quote!(#dollar(#dollar job)*);
    let rules = quote! {
        (@__linear_ad_sig #job) => {
            ::linear_ad::__private::__resume! { sig (#sig) #pass }
        };
    };
    // Named after a hash of the signature, not the whole function: the
    // body may be thousands of statements to print.
    let namesake = crate::namesake::namesake("sig", name, vis, &f.sig.to_token_stream(), rules);
    quote!(#alias #namesake)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn signatures_round_trip_with_their_markers() {
        let sig = Sig {
            kind: Kind::Linear,
            order: Order::OwnOnly,
            lanes: true,
            sig: syn::parse_quote!(fn g(#[linear] x: (f64, f64), #[nondiff] c: f64) -> [f64; 2]),
            structs: Structs::default(),
        };
        let mut sigs = Sigs::default();
        sigs.insert(syn::parse_quote!(geo::g), Rc::new(sig));
        let text = sigs.to_token_stream().to_string();
        let back: Sigs = syn::parse2(sigs.to_token_stream()).unwrap();
        assert_eq!(back.to_token_stream().to_string(), text);
        let g = back.get(&syn::parse_quote!(geo::g)).unwrap();
        assert_eq!(g.kind, Kind::Linear);
        assert_eq!(g.order, Order::OwnOnly);
        assert_eq!(g.sig.inputs.len(), 2);
    }

    #[test]
    fn only_functions_by_name_or_module_path_are_looked_up() {
        let yes = |p: &str| lookup(&syn::parse_str(p).unwrap());
        assert!(yes("g"));
        assert!(yes("geo::g"));
        assert!(yes("crate::geo::g"));
        assert!(!yes("Point::new"));
        assert!(!yes("f64::max"));
        assert!(!yes("Self::g"));
        assert!(!yes("line"));
        assert!(!yes("g::<f64>"));
        assert!(!yes("std::cmp::max"));
    }
}
