//! How a macro learns the fields of a struct defined elsewhere.
//!
//! A proc macro sees only the item it is on: `#[differentiable] fn f(p:
//! Particle)` cannot read `Particle`'s fields, and neither can
//! `#[derive(Differentiable)]` on a struct with a `Particle` field. So
//! `#[derive(Differentiable)] struct Particle` also defines a
//! `macro_rules!` macro named `Particle` (macros and types live in
//! different namespaces, so `use physics::Particle;` imports both, and
//! the macro resolves wherever the type does, in a dependent crate too
//! for a `pub` struct: [`crate::namesake`]). The macro holds the
//! struct's *layout*: its definition, with the layouts of the structs its
//! fields name embedded, so a layout is complete on its own.
//!
//! A macro that needs layouts builds a [`Job`]: what it will expand (the
//! function, or the struct being derived), the layouts known so far and
//! the struct paths still pending. While one is pending it expands to a
//! call of that struct's layout macro, at the path as the user wrote it,
//! passing the job along; the layout macro expands to
//! `linear_ad::__private::__resume! { (layout) job }`, and [`resume`]
//! records the layout and asks for the next. With none pending, the job
//! runs. A path that names no derived struct fails to resolve as a
//! macro, and rustc reports it at the user's type.
//!
//! Invariant: every layout's fields name structs only through its
//! `nested` layouts (resolved at the struct's definition, where its
//! field types are in scope), never through the function's scope.

use std::rc::Rc;

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;

use crate::signature::{Sig, Sigs};

/// A struct's definition and the layouts of the structs its fields name.
#[derive(Debug)]
pub struct Layout {
    pub item: syn::ItemStruct,
    pub nested: Structs,
}

/// Layouts by the path that names them (as a function or an enclosing
/// struct writes it).
pub type Structs = ByPath<Layout>;

/// What macros delivered, by the path the user wrote (layouts of structs,
/// signatures of functions), each path once; `(path) (value)` in tokens.
#[derive(Debug)]
pub struct ByPath<T>(Vec<(syn::Path, Rc<T>)>);

impl<T> Default for ByPath<T> {
    fn default() -> Self {
        ByPath(Vec::new())
    }
}

impl<T> Clone for ByPath<T> {
    fn clone(&self) -> Self {
        ByPath(self.0.clone())
    }
}

/// A path's text without spaces or generic arguments: `physics ::
/// Particle` is `physics::Particle`, and so is `physics::Particle<T>`
/// (one layout serves every float type of a generic struct).
pub(crate) fn key(p: &syn::Path) -> String {
    bare(p).to_token_stream().to_string().replace(' ', "")
}

/// `p` without generic arguments: `geo::Point<f64>` is `geo::Point`, the
/// path by which its layout macro is called.
pub(crate) fn bare(p: &syn::Path) -> syn::Path {
    let mut p = p.clone();
    for s in p.segments.iter_mut() {
        s.arguments = syn::PathArguments::None;
    }
    p
}

/// `p` at the float type `arg`, a struct or function generic in its
/// float type: its last segment with the one argument (`geo::Point::<T>`,
/// turbofished so that it reads in expressions as in types).
pub(crate) fn at_arg(p: &syn::Path, arg: &TokenStream) -> syn::Path {
    let mut p = bare(p);
    if let Some(last) = p.segments.last_mut() {
        last.arguments = syn::PathArguments::AngleBracketed(syn::parse_quote!(::<#arg>));
    }
    p
}

impl<T> ByPath<T> {
    pub fn get(&self, p: &syn::Path) -> Option<&Rc<T>> {
        let k = key(p);
        self.0.iter().find(|(q, _)| key(q) == k).map(|(_, l)| l)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Records `v` for `p`, unless `p` has a value already.
    pub fn insert(&mut self, p: syn::Path, v: Rc<T>) {
        if self.get(&p).is_none() {
            self.0.push((p, v));
        }
    }

    /// Records `v` for `p`, replacing what `p` had.
    pub fn set(&mut self, p: syn::Path, v: Rc<T>) {
        let k = key(&p);
        self.0.retain(|(q, _)| key(q) != k);
        self.0.push((p, v));
    }

    pub fn iter(&self) -> impl Iterator<Item = (&syn::Path, &Rc<T>)> {
        self.0.iter().map(|(p, v)| (p, v))
    }

    fn contains(&self, p: &syn::Path) -> bool {
        self.get(p).is_some()
    }
}

impl Structs {
    /// These layouts and, under the paths their structs write, the
    /// layouts nested in them (a function builds `Vec3 { .. }` for the
    /// field of a `Particle` it takes).
    pub fn with_nested(&self) -> Structs {
        let mut all = self.clone();
        let mut k = 0;
        while k < all.0.len() {
            let nested = all.0[k].1.nested.clone();
            for (p, l) in nested.0 {
                all.insert(p, l);
            }
            k += 1;
        }
        all
    }
}

impl ToTokens for Layout {
    fn to_tokens(&self, out: &mut TokenStream) {
        let item = &self.item;
        let nested = &self.nested;
        out.extend(quote!({ #item } [ #nested ]));
    }
}

impl<T: ToTokens> ToTokens for ByPath<T> {
    fn to_tokens(&self, out: &mut TokenStream) {
        for (p, v) in &self.0 {
            let v = &**v;
            out.extend(quote!((#p) (#v)));
        }
    }
}

impl Parse for Layout {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let item;
        syn::braced!(item in input);
        let item = item.parse()?;
        let nested;
        syn::bracketed!(nested in input);
        let nested = nested.parse()?;
        Ok(Layout { item, nested })
    }
}

impl<T: Parse> Parse for ByPath<T> {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut out = ByPath::default();
        while !input.is_empty() {
            let (p, v);
            syn::parenthesized!(p in input);
            let p: syn::Path = p.parse()?;
            syn::parenthesized!(v in input);
            out.insert(p, Rc::new(v.parse()?));
        }
        Ok(out)
    }
}

/// Types a function or struct may name that are not structs to look up.
pub(crate) const NOT_STRUCTS: [&str; 24] = [
    "f32", "f64", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128",
    "usize", "bool", "char", "str", "String", "Vec", "Option", "Box", "Self", "Result", "HashMap",
];

/// The paths in `t` that may name derived structs, with their generic
/// arguments (`Point<T>`, a struct generic in its float type; its layout
/// macro is called by the [`bare`] path): paths other than the primitive
/// and standard types above and the float type parameter, inside
/// references, tuples, arrays, slices and `Vec`; each struct once.
pub fn struct_paths(t: &syn::Type, out: &mut Vec<syn::Path>) {
    match t {
        syn::Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return;
            };
            if last.ident == "Vec" {
                if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
                    for arg in &a.args {
                        if let syn::GenericArgument::Type(t) = arg {
                            struct_paths(t, out);
                        }
                    }
                }
                return;
            }
            // Generic arguments on the last segment only: a struct generic
            // in its float type.
            let plain = p
                .path
                .segments
                .iter()
                .rev()
                .skip(1)
                .all(|s| s.arguments.is_none());
            let skip = NOT_STRUCTS.iter().any(|n| last.ident == n)
                || crate::lower::is_float_param(&p.path);
            let k = key(&p.path);
            if plain && !skip && !out.iter().any(|q| key(q) == k) {
                out.push(p.path.clone());
            }
        }
        syn::Type::Reference(r) => struct_paths(&r.elem, out),
        syn::Type::Tuple(t) => t.elems.iter().for_each(|e| struct_paths(e, out)),
        syn::Type::Array(a) => struct_paths(&a.elem, out),
        syn::Type::Slice(s) => struct_paths(&s.elem, out),
        syn::Type::Paren(p) => struct_paths(&p.elem, out),
        syn::Type::Group(g) => struct_paths(&g.elem, out),
        _ => {}
    }
}

/// What a [`Job`] expands once every layout it needs is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `#[differentiable(attr)] item`; the function itself was emitted
    /// when the job started.
    Differentiable,
    /// `#[derive(Differentiable)] item`.
    Derive,
    /// `#[differentiable] impl Type { .. }`; the block itself was emitted
    /// when the job started.
    Methods,
    /// `#[linear(attr)] item`, waiting for signatures only; the function
    /// itself was emitted when the job started.
    Linear,
}

/// An expansion waiting for struct layouts, then for the signatures of
/// the functions it calls ([`crate::signature`]).
pub struct Job {
    pub kind: Kind,
    pub attr: TokenStream,
    pub item: TokenStream,
    pub known: Structs,
    pub pending: Vec<syn::Path>,
    pub sigs: Sigs,
    pub pending_sigs: Vec<syn::Path>,
}

impl ToTokens for Job {
    fn to_tokens(&self, out: &mut TokenStream) {
        let kind = match self.kind {
            Kind::Differentiable => quote!(differentiable),
            Kind::Derive => quote!(derive),
            Kind::Methods => quote!(methods),
            Kind::Linear => quote!(linear),
        };
        let (attr, item, known) = (&self.attr, &self.item, &self.known);
        let (pending, sigs, pending_sigs) = (&self.pending, &self.sigs, &self.pending_sigs);
        out.extend(quote!(#kind (#attr) { #item } [ #known ] [ #((#pending))* ] [ #sigs ] [ #((#pending_sigs))* ]));
    }
}

impl Parse for Job {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let kind: syn::Ident = input.parse()?;
        let kind = match kind.to_string().as_str() {
            "differentiable" => Kind::Differentiable,
            "derive" => Kind::Derive,
            "methods" => Kind::Methods,
            "linear" => Kind::Linear,
            _ => return Err(syn::Error::new(kind.span(), "unknown job")),
        };
        let (attr, item, known, pending, sigs, pending_sigs);
        syn::parenthesized!(attr in input);
        syn::braced!(item in input);
        syn::bracketed!(known in input);
        syn::bracketed!(pending in input);
        syn::bracketed!(sigs in input);
        syn::bracketed!(pending_sigs in input);
        Ok(Job {
            kind,
            attr: attr.parse()?,
            item: item.parse()?,
            known: known.parse()?,
            pending: paths(&pending)?,
            sigs: sigs.parse()?,
            pending_sigs: paths(&pending_sigs)?,
        })
    }
}

/// `(path)*`.
fn paths(input: ParseStream) -> syn::Result<Vec<syn::Path>> {
    let mut out = Vec::new();
    while !input.is_empty() {
        let p;
        syn::parenthesized!(p in input);
        out.push(p.parse()?);
    }
    Ok(out)
}

impl Job {
    /// A new job, waiting for the layouts of the `pending` struct paths.
    pub fn awaiting_layouts(
        kind: Kind,
        attr: TokenStream,
        item: TokenStream,
        pending: Vec<syn::Path>,
    ) -> Job {
        Job {
            kind,
            attr,
            item,
            known: Structs::default(),
            pending,
            sigs: Sigs::default(),
            pending_sigs: Vec::new(),
        }
    }

    /// A job that waits for what lowering found `missing`: signatures of
    /// called functions, layouts of structs that annotations name.
    pub fn awaiting(
        kind: Kind,
        attr: TokenStream,
        item: TokenStream,
        (known, sigs): (&Structs, &Sigs),
        missing: crate::lower::Missing,
    ) -> Job {
        Job {
            kind,
            attr,
            item,
            known: known.clone(),
            pending: missing.layouts,
            sigs: sigs.clone(),
            pending_sigs: missing.sigs,
        }
    }

    /// The next step: a call of the first pending struct's layout macro,
    /// else of the first pending function's signature macro, or, with
    /// none pending, the job's expansion.
    pub fn next(mut self) -> TokenStream {
        self.pending.retain(|p| !self.known.contains(p));
        self.pending_sigs.retain(|p| self.sigs.get(p).is_none());
        // Spanned at the user's path, so that a struct without the derive,
        // or a function without the attribute, is reported there.
        if let Some(first) = self.pending.first().map(bare) {
            let bang = quote_spanned!(first.span()=> !);
            return quote!(#first #bang { @__linear_ad_layout #self });
        }
        if let Some(first) = self.pending_sigs.first() {
            return quote!(#first ! { @__linear_ad_sig #self });
        }
        match self.kind {
            Kind::Differentiable => {
                crate::expand::differentiable_with(self.attr, self.item, &self.known, &self.sigs)
            }
            Kind::Derive => crate::derive::finish(self.item, &self.known),
            Kind::Methods => crate::expand::methods_with(self.item, &self.known, &self.sigs),
            Kind::Linear => crate::expand::linear_with(self.attr, self.item, &self.sigs),
        }
    }
}

/// What a layout or signature macro delivers.
enum Delivered {
    Layout(Layout),
    Sig(Sig),
}

/// `__resume! { (layout) job }` or `__resume! { sig (signature) job }`:
/// records what was delivered for the job's first pending path and takes
/// the next step.
pub fn resume(input: TokenStream) -> TokenStream {
    let parsed = syn::parse::Parser::parse2(
        |input: ParseStream| {
            let sig = input.peek(syn::Ident);
            if sig {
                input.parse::<syn::Ident>()?;
            }
            let d;
            syn::parenthesized!(d in input);
            let d = if sig {
                Delivered::Sig(d.parse()?)
            } else {
                Delivered::Layout(d.parse()?)
            };
            let job: Job = input.parse()?;
            Ok((d, job))
        },
        input,
    );
    match parsed {
        Ok((Delivered::Layout(layout), mut job)) => {
            if job.pending.is_empty() {
                return internal("a layout arrived for no pending struct");
            }
            let path = job.pending.remove(0);
            job.known.insert(path, Rc::new(layout));
            job.next()
        }
        Ok((Delivered::Sig(sig), mut job)) => {
            if job.pending_sigs.is_empty() {
                return internal("a signature arrived for no pending call");
            }
            let path = job.pending_sigs.remove(0);
            job.sigs.insert(path, Rc::new(sig));
            job.next()
        }
        Err(e) => internal(&e.to_string()),
    }
}

fn internal(msg: &str) -> TokenStream {
    let msg = format!("linear-ad internal error (please report it): {msg}");
    syn::Error::new(Span::call_site(), msg).to_compile_error()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths_of(t: &str) -> Vec<String> {
        let t: syn::Type = syn::parse_str(t).unwrap();
        let mut out = Vec::new();
        struct_paths(&t, &mut out);
        out.iter().map(key).collect()
    }

    #[test]
    fn struct_paths_skip_primitives_and_generics() {
        assert_eq!(
            paths_of("(&geo::Point, [Vec3; 2], Vec<Cell>, f64, usize, Option<Foo>)"),
            ["geo::Point", "Vec3", "Cell"]
        );
        assert!(paths_of("&[f64]").is_empty());
    }

    /// A job survives printing and parsing, as it must to pass through a
    /// layout macro, nested layouts included.
    #[test]
    fn jobs_and_layouts_round_trip() {
        let inner: Layout =
            syn::parse2(quote!({ struct Vec3 { x: f64, y: f64, z: f64 } } [])).unwrap();
        let mut nested = Structs::default();
        nested.insert(syn::parse_quote!(Vec3), Rc::new(inner));
        let outer = Layout {
            item: syn::parse_quote!(
                pub struct P {
                    pos: Vec3,
                    #[nondiff]
                    id: usize,
                }
            ),
            nested,
        };
        let mut known = Structs::default();
        known.insert(syn::parse_quote!(geo::P), Rc::new(outer));
        let job = Job {
            kind: Kind::Differentiable,
            attr: quote!(checkpoint = "state"),
            item: quote!(
                fn f(p: geo::P, q: Q) -> f64 {
                    p.pos.x
                }
            ),
            known,
            pending: vec![syn::parse_quote!(Q)],
            sigs: Sigs::default(),
            pending_sigs: vec![syn::parse_quote!(geo::g)],
        };
        let text = job.to_token_stream().to_string();
        let back: Job = syn::parse2(job.to_token_stream()).unwrap();
        assert_eq!(back.to_token_stream().to_string(), text);
        let all = back.known.with_nested();
        let p = all.get(&syn::parse_quote!(geo::P)).unwrap();
        assert_eq!(p.item.fields.len(), 2);
        let v = all.get(&syn::parse_quote!(Vec3)).unwrap();
        assert_eq!(v.item.ident, "Vec3");
        assert_eq!(back.pending.len(), 1);
        assert_eq!(back.pending_sigs.len(), 1);
    }

    /// With every layout known, the next step asks the first pending
    /// function for its signature, by the path the caller wrote.
    #[test]
    fn a_pending_signature_is_asked_of_the_function_path() {
        let job = Job {
            kind: Kind::Linear,
            attr: TokenStream::new(),
            item: quote!(
                fn f(#[linear] x: f64) -> f64 {
                    geo::g(x)
                }
            ),
            known: Structs::default(),
            pending: Vec::new(),
            sigs: Sigs::default(),
            pending_sigs: vec![syn::parse_quote!(geo::g)],
        };
        let out = job.next().to_string().replace(' ', "");
        assert!(out.starts_with("geo::g!{@__linear_ad_siglinear"), "{out}");
    }

    /// The next step of a job with a pending path calls that path's
    /// layout macro, the job inside.
    #[test]
    fn a_pending_path_is_called_as_a_macro() {
        let job = Job {
            kind: Kind::Derive,
            attr: TokenStream::new(),
            item: quote!(
                struct S {
                    v: geo::Vec3,
                }
            ),
            known: Structs::default(),
            pending: vec![syn::parse_quote!(geo::Vec3)],
            sigs: Sigs::default(),
            pending_sigs: Vec::new(),
        };
        let out = job.next().to_string().replace(' ', "");
        assert!(
            out.starts_with("geo::Vec3!{@__linear_ad_layoutderive"),
            "{out}"
        );
    }
}
