//! Lowering: a Rust function (as parsed by syn) to a non-linear Linear A
//! function, the input of J.
//!
//! Activity analysis comes first: an expression that reads no active
//! variable (a float parameter not marked `#[nondiff]`, or a local computed
//! from one) is *inactive*. Inactive code is kept as Rust, verbatim, in a
//! prelude that every generated function runs first; where an active
//! expression reads an inactive value, the value enters the IR as a
//! [`Expr::Const`] naming a prelude variable (or as a literal). Inactive
//! locals are renamed to fresh hygienic names (`Span::mixed_site`) in the
//! prelude, one per binding, so Rust shadowing and reassignment keep their
//! meaning.
//!
//! Active code is lowered to A-normal form, one IR binding per operation,
//! with `let mut` and compound assignment turned into fresh bindings (SSA).
//! Tuple fields and constant array indices unpack the tuple once and reuse
//! the components.
//!
//! The supported subset is straight-line code; every other construct is
//! reported at its span, all errors at once (the [`Errors`] collector), and
//! lowering carries on past an error with a placeholder value so later
//! errors are found too.
//!
//! Output invariants: the function type-checks in Linear A (unused values
//! are dropped explicitly) and has no linear parameters or results.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use proc_macro2::{Literal, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

use crate::ir::{Binder, Bit, Cmp, Expr, Extern, Float, Func, Prim, Stmt, Ty, Var};
use crate::visit::Fresh;

mod array;
mod call;
mod closure;
mod control;
mod exits;
mod generic;
mod inactive;
mod iter;
mod lifetimes;
mod methods;
mod ops;
mod pattern;
mod place;
mod results;
mod structs;
mod sugar;
mod view;

use crate::layout::Structs;
use crate::signature::Sigs;
pub(crate) use call::method_type;
pub use call::{array_param, CallArg, CallSite};
pub use lifetimes::erase_lifetimes;
pub use structs::{flat as flat_shape, StructShape};

/// Inactive Rust code kept in place inside control flow: `code` reads the
/// IR variables of its `const` expression's arguments through `params`.
#[derive(Clone, Debug)]
pub struct Opaque {
    pub params: Vec<syn::Ident>,
    pub code: TokenStream,
}

/// Collects every error of one macro invocation, serde_derive style; the
/// caller must check it.
#[derive(Default)]
pub struct Errors {
    errors: Vec<syn::Error>,
    silent: bool,
    /// Set while a `#[linear]` function is lowered: the lowering's shared
    /// messages say "in differentiable functions", which there would name
    /// the wrong attribute.
    linear: bool,
}

impl Errors {
    pub fn push(&mut self, span: Span, msg: impl std::fmt::Display) {
        let msg = self.worded(msg);
        self.errors.push(syn::Error::new(span, msg));
    }
    /// A message, named after the attribute being expanded.
    fn worded(&self, msg: impl std::fmt::Display) -> String {
        let msg = msg.to_string();
        if self.linear {
            msg.replace("in differentiable functions", "in `#[linear]` functions")
        } else {
            msg
        }
    }
    /// [`Errors::push`], unless the same message was reported already:
    /// for a mismatch the desugaring of exits meets again at every join
    /// it adds (where its spans are the macro's, not the user's).
    pub fn push_once(&mut self, span: Span, msg: impl std::fmt::Display) {
        let msg = msg.to_string();
        if !self.errors.iter().any(|e| e.to_string() == msg) {
            self.push(span, msg);
        }
    }
    /// An error covering all of `node`'s tokens (stable Rust cannot join
    /// spans; `new_spanned` marks the first and last token).
    pub fn spanned(&mut self, node: impl ToTokens, msg: impl std::fmt::Display) {
        let msg = self.worded(msg);
        self.errors.push(syn::Error::new_spanned(node, msg));
    }
    /// A problem rustc reports itself on the original function: stop
    /// generating code without adding a second message.
    pub fn rustc_reports(&mut self) {
        self.silent = true;
    }
    pub fn push_err(&mut self, e: syn::Error) {
        self.errors.push(e);
    }
    /// Where the errors stand, to [`Errors::roll_back`] to after lowering
    /// something speculatively.
    fn mark(&self) -> (usize, bool) {
        (self.errors.len(), self.silent)
    }
    /// Forgets the errors reported since `mark`.
    fn roll_back(&mut self, (len, silent): (usize, bool)) {
        self.errors.truncate(len);
        self.silent = silent;
    }
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty() && !self.silent
    }
    /// All errors as `compile_error!` invocations.
    pub fn into_compile_errors(self) -> TokenStream {
        self.errors
            .iter()
            .map(syn::Error::to_compile_error)
            .collect()
    }
}

/// The Rust type of a differentiable value.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    Float(Float),
    Tuple(Vec<Shape>),
    Array(Box<Shape>, usize),
    /// A parameter holding an array of floats or tuples of floats, read by
    /// index, or a result the function built as a local array: an IR array
    /// (`array(τ)`, `array(τ; n)` for `&[T; n]` and `[T; n]`).
    ///
    /// A parameter's elements may be rows, fixed-size arrays `[T; m]`
    /// (`&[[f64; 3]]`, points or matrix rows): the IR array is then the
    /// flattened one, `array(τ)` of `m` times the length, element `j` of
    /// row `i` at `i * m + j` ([`Shape::row`]). Generated code views the
    /// rows as flat in place (`as_flattened`) and copies a flat cotangent
    /// into rows once, at the end.
    Slice(Box<Shape>, SliceKind),
    /// A struct with `#[derive(Differentiable)]`, by value or by reference:
    /// in the IR the tuple of its differentiable fields
    /// ([`structs::StructShape`]).
    Struct(std::rc::Rc<StructShape>),
}

impl SliceKind {
    /// Whether the length is known only at run time (not in the type).
    pub fn runtime_length(self) -> bool {
        match self {
            SliceKind::Slice | SliceKind::VecRef | SliceKind::Vec => true,
            SliceKind::ArrayRef(_) | SliceKind::Array(_) => false,
        }
    }
}

/// How a [`Shape::Slice`] parameter holds its elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceKind {
    /// `&[T]`.
    Slice,
    /// `&[T; n]`.
    ArrayRef(usize),
    /// `&Vec<T>`.
    VecRef,
    /// `Vec<T>`, by value.
    Vec,
    /// `[T; n]`, by value: a result the function builds in a local array
    /// (`let mut y = [0.0; n]; ..; y`), an IR array of fixed length.
    Array(usize),
}

impl Shape {
    /// The IR type: arrays are tuples of their elements, slices arrays.
    pub fn ty(&self) -> Ty {
        match self {
            Shape::Float(f) => Ty::Real(*f),
            Shape::Tuple(s) => Ty::Tuple(s.iter().map(Shape::ty).collect()),
            Shape::Array(s, n) => Ty::Tuple(vec![s.ty(); *n]),
            Shape::Struct(st) => Ty::Tuple(st.active().map(|(_, s)| s.ty()).collect()),
            Shape::Slice(s, kind) => match (&**s, kind) {
                // A result built in a local array of rows.
                (Shape::Array(e, m), SliceKind::Array(n)) => {
                    Ty::Array(Box::new(e.ty()), Some((n * m) as u64))
                }
                (Shape::Array(e, _), _) => Ty::Array(Box::new(e.ty()), None),
                (_, SliceKind::ArrayRef(n) | SliceKind::Array(n)) => {
                    Ty::Array(Box::new(s.ty()), Some(*n as u64))
                }
                _ => Ty::Array(Box::new(s.ty()), None),
            },
        }
    }

    /// The Rust type of a tangent, as a parameter declares it (a tangent
    /// parameter of `f_jvp` has the same type as its primal, but for a
    /// struct, whose tangent is its derived tangent struct).
    pub fn rust(&self) -> TokenStream {
        match self {
            Shape::Struct(st) => {
                let t = st.tangent();
                if st.by_ref {
                    quote!(&#t)
                } else {
                    t
                }
            }
            Shape::Float(f) => crate::codegen::float_ty(*f),
            Shape::Tuple(s) => {
                let s = s.iter().map(Shape::rust);
                quote!((#(#s,)*))
            }
            Shape::Array(s, n) => {
                let s = s.rust();
                quote!([#s; #n])
            }
            Shape::Slice(s, kind) => {
                let s = s.rust();
                match kind {
                    SliceKind::Slice => quote!(&[#s]),
                    SliceKind::ArrayRef(n) => quote!(&[#s; #n]),
                    SliceKind::Array(n) => quote!([#s; #n]),
                    SliceKind::VecRef => quote!(&::linear_ad::__private::Vec<#s>),
                    SliceKind::Vec => quote!(::linear_ad::__private::Vec<#s>),
                }
            }
        }
    }

    /// The owned Rust type of a tangent or cotangent of this shape: the
    /// `In` and `Out` of `LinearMap` and what `f_vjp` returns (`Vec<T>`
    /// for `&[T]`, `&Vec<T>` and `Vec<T>`; `[T; n]` for `&[T; n]`).
    pub fn owned(&self) -> TokenStream {
        match self {
            Shape::Slice(s, SliceKind::ArrayRef(n) | SliceKind::Array(n)) => {
                let s = s.rust();
                quote!([#s; #n])
            }
            Shape::Slice(s, _) => {
                let s = s.rust();
                quote!(::linear_ad::__private::Vec<#s>)
            }
            Shape::Tuple(ss) => {
                let ss = ss.iter().map(Shape::owned);
                quote!((#(#ss,)*))
            }
            Shape::Struct(st) => st.tangent(),
            Shape::Float(_) | Shape::Array(..) => self.rust(),
        }
    }

    /// The Rust type of a primal result of this shape.
    pub fn primal(&self) -> TokenStream {
        if let Some(st) = self.elements() {
            // A `Vec` of structs the function built.
            let p = &st.path;
            return quote!(::linear_ad::__private::Vec<#p>);
        }
        match self {
            Shape::Struct(st) if st.of_tangent => st.tangent(),
            Shape::Struct(st) => {
                let p = &st.path;
                quote!(#p)
            }
            Shape::Tuple(ss) => {
                let ss = ss.iter().map(Shape::primal);
                quote!((#(#ss,)*))
            }
            _ => self.rust(),
        }
    }

    /// Whether this is an array parameter the generated code holds as
    /// its own `Vec`: one taken by value (`Vec<T>`), or an array of
    /// structs, which each generated function that runs the IR first
    /// copies into a `Vec` of their flat values ([`Shape::elements`]).
    pub fn owned_input(&self) -> bool {
        match self {
            Shape::Slice(_, SliceKind::Vec) => true,
            s => s.elements().is_some(),
        }
    }

    /// For an array of structs (`&[Body]`), the structs' shape: the IR
    /// holds each element as the struct's flat value.
    pub fn elements(&self) -> Option<&StructShape> {
        match self {
            Shape::Slice(e, _) => match &**e {
                Shape::Struct(st) => Some(st),
                _ => None,
            },
            _ => None,
        }
    }

    /// For an array of rows (`&[[T; m]]`), the rows' element and `m`.
    pub fn row(&self) -> Option<(&Shape, usize)> {
        match self {
            Shape::Slice(s, _) => match &**s {
                Shape::Array(e, m) => Some((e, *m)),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether this is an array read by index (or holds one).
    pub fn has_slice(&self) -> bool {
        match self {
            Shape::Float(_) => false,
            Shape::Struct(st) => st.has_arrays(),
            Shape::Tuple(ss) => ss.iter().any(Shape::has_slice),
            Shape::Array(s, _) => s.has_slice(),
            Shape::Slice(..) => true,
        }
    }

    /// Whether a derived struct is part of this shape.
    pub fn has_struct(&self) -> bool {
        match self {
            Shape::Float(_) => false,
            Shape::Struct(_) => true,
            Shape::Tuple(ss) => ss.iter().any(Shape::has_struct),
            Shape::Array(s, _) | Shape::Slice(s, _) => s.has_struct(),
        }
    }

    fn float(&self) -> Option<Float> {
        match self {
            Shape::Float(f) => Some(*f),
            Shape::Tuple(s) => s.iter().find_map(Shape::float),
            Shape::Struct(st) => st
                .active()
                .map(|(_, s)| s)
                .chain(st.arrays().into_iter().map(|(_, s)| s))
                .find_map(Shape::float),
            Shape::Array(s, _) | Shape::Slice(s, _) => s.float(),
        }
    }

    /// Reads a shape from a Rust type; `None` if it is not a float, tuple
    /// or array of them.
    pub fn from_type(t: &syn::Type) -> Option<Shape> {
        Shape::from_type_in(t, &Structs::default())
    }

    /// [`Shape::from_type`], a path naming a struct of `structs` included.
    pub fn from_type_in(t: &syn::Type, structs: &Structs) -> Option<Shape> {
        match t {
            syn::Type::Path(p) if p.qself.is_none() => {
                if p.path.is_ident("f64") {
                    Some(Shape::Float(Float::F64))
                } else if p.path.is_ident("f32") {
                    Some(Shape::Float(Float::F32))
                } else if is_float_param(&p.path) {
                    Some(Shape::Float(Float::Generic))
                } else {
                    // A struct with `Vec` fields is a parameter only
                    // ([`Shape::from_param_type_in`]).
                    StructShape::resolve(&p.path, false, structs)
                        .ok()
                        .filter(|st| !st.has_arrays())
                        .map(|st| Shape::Struct(std::rc::Rc::new(st)))
                }
            }
            syn::Type::Tuple(t) => t
                .elems
                .iter()
                .map(|e| Shape::from_type_in(e, structs))
                .collect::<Option<_>>()
                .map(Shape::Tuple),
            syn::Type::Array(a) => {
                let n = match &a.len {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(i),
                        ..
                    }) => i.base10_parse::<usize>().ok()?,
                    _ => return None,
                };
                Some(Shape::Array(
                    Box::new(Shape::from_type_in(&a.elem, structs)?),
                    n,
                ))
            }
            // `<S as linear_ad::Differentiable>::Tangent`, as derived
            // functions name a struct's cotangent.
            syn::Type::Path(p) => {
                let q = p.qself.as_ref()?;
                let names = |path: &syn::Path, ids: &[&str]| {
                    path.segments.len() == ids.len()
                        && path.segments.iter().zip(ids).all(|(s, id)| s.ident == id)
                };
                let tangent = names(&p.path, &["linear_ad", "Differentiable", "Tangent"])
                    || names(&p.path, &["Differentiable", "Tangent"]);
                let syn::Type::Path(of) = &*q.ty else {
                    return None;
                };
                let st = StructShape::resolve(&of.path, false, structs).ok()?;
                (tangent && q.position + 1 == p.path.segments.len() && !st.has_arrays())
                    .then(|| Shape::Struct(std::rc::Rc::new(st.tangent_shape())))
            }
            syn::Type::Paren(p) => Shape::from_type_in(&p.elem, structs),
            syn::Type::Group(g) => Shape::from_type_in(&g.elem, structs),
            _ => None,
        }
    }

    /// Reads the shape of a parameter type: [`Shape::from_type`], or an
    /// array read by index: `&[T]`, `&[T; n]`, `&Vec<T>` or `Vec<T>` with
    /// `T` a float or a tuple of floats.
    pub fn from_param_type(t: &syn::Type) -> Option<Shape> {
        Shape::from_param_type_in(t, &Structs::default())
    }

    /// [`Shape::from_param_type`], structs of `structs` (by value or by
    /// reference) included.
    pub fn from_param_type_in(t: &syn::Type, structs: &Structs) -> Option<Shape> {
        if let Some(s) = Shape::from_type_in(t, structs) {
            return Some(s);
        }
        if let syn::Type::Path(p) = t {
            if let Ok(st) = StructShape::resolve(&p.path, false, structs) {
                return Some(Shape::Struct(std::rc::Rc::new(st)));
            }
        }
        if let syn::Type::Reference(r) = t {
            if let (None, syn::Type::Path(p)) = (r.mutability, &*r.elem) {
                if let Ok(st) = StructShape::resolve(&p.path, true, structs) {
                    return Some(Shape::Struct(std::rc::Rc::new(st)));
                }
            }
        }
        // A float, a tuple of floats, or a row of them (`[T; m]`, m > 0);
        // or a derived struct of float fields (`&[Body]`), whose elements
        // the IR holds as their flat values.
        let element = |t: &syn::Type| {
            Shape::from_type(t)
                .filter(|s| match s {
                    Shape::Array(e, m) => *m > 0 && !e.has_array(),
                    other => !other.has_array(),
                })
                .or_else(|| struct_element(t, structs))
        };
        let (inner, by_ref) = match t {
            syn::Type::Reference(r) if r.mutability.is_none() => (&*r.elem, true),
            other => (other, false),
        };
        match inner {
            syn::Type::Slice(s) if by_ref => {
                Some(Shape::Slice(Box::new(element(&s.elem)?), SliceKind::Slice))
            }
            syn::Type::Array(a) if by_ref => match Shape::from_type(inner)? {
                Shape::Array(_, n) => Some(Shape::Slice(
                    Box::new(element(&a.elem).filter(|e| !matches!(e, Shape::Struct(_)))?),
                    SliceKind::ArrayRef(n),
                )),
                _ => None,
            },
            syn::Type::Path(p) if p.qself.is_none() => {
                let last = p.path.segments.last()?;
                if last.ident != "Vec" {
                    return None;
                }
                let syn::PathArguments::AngleBracketed(a) = &last.arguments else {
                    return None;
                };
                let [syn::GenericArgument::Type(e)] = a.args.iter().collect::<Vec<_>>()[..] else {
                    return None;
                };
                let kind = if by_ref {
                    SliceKind::VecRef
                } else {
                    SliceKind::Vec
                };
                Some(Shape::Slice(Box::new(element(e)?), kind))
            }
            _ => None,
        }
    }

    /// Reads the shape of a result type: [`Shape::from_type`], or an array
    /// the function builds, `Vec<T>`. A `[T; n]` result is a tuple here,
    /// until [`Shape::built`] sees the body build it in a local array.
    /// Arrays are whole results only: a tuple of a linear array has no
    /// place in the IR's types (invariant 11 of [`crate::check`]).
    pub fn from_result_type(t: &syn::Type, structs: &Structs) -> Option<Shape> {
        match t {
            // A `Vec` of structs is rebuilt from its elements' flat values
            // (structs with constant fields are refused at the signature).
            syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Vec") => {
                Shape::from_param_type_in(t, structs)
            }
            syn::Type::Paren(p) => Shape::from_result_type(&p.elem, structs),
            syn::Type::Group(g) => Shape::from_result_type(&g.elem, structs),
            // A tuple holding a `Vec`: several IR results (`results.rs`).
            syn::Type::Tuple(tt) if holds_vec(t) => tt
                .elems
                .iter()
                .map(|e| Shape::from_result_type(e, structs))
                .collect::<Option<_>>()
                .map(Shape::Tuple),
            _ => Shape::from_type_in(t, structs),
        }
    }

    /// The result shape for a body whose value has IR type `t`: a `[T; n]`
    /// result built in a local array is that array (`[T; n]` in Rust, an IR
    /// array of length n), not a tuple of n elements; anything else keeps
    /// its shape (a mismatch is the body's type error).
    pub fn built(self, t: &Ty) -> Shape {
        match self {
            // `[[T; m]; n]` built in a local array of rows: its flat array.
            Shape::Array(row, n)
                if matches!(&*row, Shape::Array(e, m)
                    if !e.has_array()
                        && *t == Ty::Array(Box::new(e.ty()), Some((n * m) as u64))) =>
            {
                Shape::Slice(row, SliceKind::Array(n))
            }
            Shape::Array(e, n)
                if !e.has_array() && *t == Ty::Array(Box::new(e.ty()), Some(n as u64)) =>
            {
                Shape::Slice(e, SliceKind::Array(n))
            }
            other => other,
        }
    }

    /// Whether this is an array whose length is known only at run time
    /// (`&[T]`, `&Vec<T>`, `Vec<T>`), which tangents must match.
    pub fn runtime_array(&self) -> bool {
        matches!(self, Shape::Slice(_, kind) if kind.runtime_length())
    }

    /// Whether a fixed-size array is part of this shape (which the IR
    /// holds as a tuple, so a value of it is converted on its way in and
    /// out).
    pub fn has_fixed_array(&self) -> bool {
        self.has_array()
    }

    /// Whether a fixed-size array is part of this shape.
    fn has_array(&self) -> bool {
        match self {
            Shape::Float(_) => false,
            Shape::Struct(st) => st.active().any(|(_, s)| s.has_array()),
            Shape::Tuple(ss) => ss.iter().any(Shape::has_array),
            Shape::Array(..) => true,
            Shape::Slice(s, _) => s.has_array(),
        }
    }
}

/// Whether `f` is `stop_gradient`, by its name or through `linear_ad`.
fn is_stop_gradient(f: &syn::Expr) -> bool {
    let syn::Expr::Path(p) = f else { return false };
    let segs: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    match segs.as_slice() {
        [one] => one == "stop_gradient",
        [krate, one] => krate == "linear_ad" && one == "stop_gradient",
        _ => false,
    }
}

/// The reductions over arrays differentiable code runs (`array.rs`).
const REDUCTIONS: &str = "reductions in differentiable functions run over arrays, parts of them or ranges: `a.iter().sum::<f64>()`, `product`, `a.iter().map(|v| ..).sum::<f64>()`, `a.iter().fold(init, |acc, v| ..)` or `fold(init, f64::max)`, with `.copied()`, `.enumerate()`, `.zip(..)`, `.rev()`, `.skip(s)`, `.take(t)`, `.step_by(k)`, `.chain(..)`, `.filter(|v| ..)`, over `a[1..]`, `a.chunks(k)` or `a.windows(k)`, or `(0..n).map(|i| ..).sum::<f64>()`";

/// Tokens as the user wrote them, without most of the printer's spaces.
fn show_tokens(t: &TokenStream) -> String {
    let s = t.to_string();
    s.replace(" . ", ".")
        .replace(" (", "(")
        .replace("( ", "(")
        .replace(" )", ")")
        .replace(" ,", ",")
        .replace(" [", "[")
        .replace("[ ", "[")
        .replace(" ]", "]")
}

/// A type as the user wrote it, without the token printer's spaces.
fn show_type(t: &syn::Type) -> String {
    let s = t.to_token_stream().to_string();
    s.replace(" < ", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
        .replace("& ", "&")
        .replace(" ;", ";")
}

pub fn is_constant_type(t: &syn::Type) -> bool {
    const INTS: [&str; 13] = [
        "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize",
        "bool",
    ];
    matches!(t, syn::Type::Path(p) if p.qself.is_none() && INTS.iter().any(|i| p.path.is_ident(i)))
}

/// A parameter of the user's function.
pub struct Param {
    /// The pattern as written (its identifiers keep the user's spans, so
    /// inactive code in the prelude refers to them).
    pub pat: syn::Pat,
    pub ty: syn::Type,
    /// `Some` for a differentiable parameter: its shape and IR variable.
    pub active: Option<(Shape, Var)>,
    /// For a struct with `Vec` fields, the IR parameters that follow
    /// `active`'s, one array per `Vec` field ([`StructShape::arrays`]).
    pub arrays: Vec<Var>,
}

/// A lowered function and what code generation needs to rebuild its Rust
/// interface.
pub struct Lowered {
    pub func: Func,
    pub params: Vec<Param>,
    pub ret: Shape,
    /// Inactive statements, in order, run first by every generated function
    /// that computes primal values.
    pub prelude: Vec<TokenStream>,
    /// One extern per call to another function, named `call.N`.
    pub externs: Vec<Extern>,
    /// What code generation needs to emit each call, by extern name.
    pub calls: HashMap<Var, CallSite>,
    /// Inactive code kept in place, by the name of its `const`.
    pub opaques: HashMap<Var, Opaque>,
    /// The `#[nondiff]` parameters read as data arrays
    /// ([`crate::visit::is_data`]): the array's IR variable, the
    /// parameter's name, and the shape of the reference it is read through
    /// (a tape borrows it).
    pub data: Vec<(Var, String, Shape)>,
    /// The layouts of the structs its signature names, which the
    /// signatures of its derived functions carry to their callers.
    pub structs: Structs,
}

impl Shape {
    /// The Rust shape an IR type has when nothing says it is an array.
    pub fn of_ty(t: &Ty) -> Shape {
        match t {
            Ty::Real(f) => Shape::Float(*f),
            Ty::Tuple(ts) => Shape::Tuple(ts.iter().map(Shape::of_ty).collect()),
            // Not values of differentiable Rust types.
            Ty::Tape(_) | Ty::Int | Ty::Bool | Ty::Sum(_) | Ty::List(..) | Ty::Array(..) => {
                Shape::Tuple(vec![])
            }
        }
    }
}

/// What the lowered function is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `#[differentiable]`: float parameters are differentiable inputs and
    /// the function is non-linear, the input of J.
    Differentiable,
    /// `#[linear]`: parameters marked `#[linear]` are the linear inputs,
    /// every other parameter is a coefficient (a constant of the Rust
    /// prelude), and the function must be linear in the linear inputs; the
    /// lowered function has linear parameters and result, the input of T.
    Linear,
}

/// Lowers `item` for `#[differentiable]`; on failure the errors are in
/// `errs` and the result is `None`.
pub fn lower_fn(item: &syn::ItemFn, errs: &mut Errors) -> Option<Lowered> {
    lower_fn_mode(item, errs, Mode::Differentiable)
}

/// Lowers `item` in the given mode.
pub fn lower_fn_mode(item: &syn::ItemFn, errs: &mut Errors, mode: Mode) -> Option<Lowered> {
    lower_fn_with(
        item,
        errs,
        mode,
        &Structs::default(),
        &Sigs::default(),
        &mut Missing::default(),
    )
}

/// What lowering found it needs and does not know yet: signatures of
/// called functions, and layouts of structs that `let` annotations give
/// call results (`let q: Particle = p.moved(dt);`), which the function's
/// signature does not name. The expansion fetches them and lowers again.
#[derive(Debug, Default)]
pub struct Missing {
    pub sigs: Vec<syn::Path>,
    pub layouts: Vec<syn::Path>,
}

impl Missing {
    pub fn is_empty(&self) -> bool {
        self.sigs.is_empty() && self.layouts.is_empty()
    }
}

/// Why a parameter of type `ty` cannot be differentiable, and what to do.
fn unsupported_param(ty: &syn::Type) -> String {
    let shown = show_type(ty);
    match ty {
        syn::Type::Reference(r) if r.mutability.is_some() => format!("`&mut` parameters cannot be differentiable (`{shown}`): a differentiable function returns what it computes; take `&[T]` (or the value) and return the new values, or mark the parameter `#[nondiff]` if it is an output buffer of constants"),
        syn::Type::Reference(r) if matches!(&*r.elem, syn::Type::TraitObject(_)) => format!("trait objects cannot be differentiable parameters (`{shown}`): their code, and so their derivative, is unknown at compile time; call a `#[differentiable]` function instead, or mark the parameter `#[nondiff]` if it computes constants"),
        syn::Type::TraitObject(_) | syn::Type::ImplTrait(_) => format!("`{shown}` cannot be a differentiable parameter: its code, and so its derivative, is unknown at compile time; call a `#[differentiable]` function instead, or mark the parameter `#[nondiff]` if it computes constants"),
        _ if vec_elements(ty) => format!("`{shown}`: an array of `Vec`s (a matrix as rows of `Vec`s) is not a differentiable parameter, since its rows may differ in length; pass the matrix flat (`m: &[f64]`, read as `m[i * cols + j]`) or as rows of a fixed width (`&[[f64; 3]]`), or mark the parameter `#[nondiff]` to read it as constant data"),
        _ if struct_elements(ty) => format!("`{shown}`: an array of structs is a differentiable parameter when the struct derives `Differentiable` and its fields are floats, fixed-size arrays, constants (`#[nondiff]`, integers, `bool`) or structs of them, not yet with `Vec` fields; hold such values as arrays of floats, in a struct of `Vec` fields taken by reference (`struct Bodies {{ pos: Vec<[f64; 3]>, vel: Vec<[f64; 3]> }}`, read as `b.pos[i][k]`) or as rows (`&[[f64; 3]]`), or mark the parameter `#[nondiff]` to read its elements as constants"),
        _ if named_length(ty).is_some() => {
            let n = named_length(ty).unwrap_or_default();
            format!("the length `{n}` of an array in `{shown}` is not a literal: the macro builds a fixed-size array's derivatives from its length, and cannot see the value of a constant or a const generic; write the number (`[f64; 3]`), or take a slice (`&[f64]`), read by index")
        }
        _ => format!("unsupported parameter type `{shown}`: differentiable parameters are f32, f64, tuples and fixed-size arrays of them, arrays read by index (`&[T]`, `&[T; N]`, `&Vec<T>`, `Vec<T>` with `T` a float, a tuple of floats, a fixed-size array of them or a derived struct) and structs with `#[derive(Differentiable)]`; integers and bools are constants; mark any other parameter `#[nondiff]` to use it as a constant"),
    }
}

/// The shape of a derived struct as an element of an array parameter:
/// one of float, fixed-size array and constant fields (nested structs of
/// them too), without `Vec` fields; the IR holds each element as its flat
/// value ([`ToFlat`](../../linear_ad/__private/trait.ToFlat.html)), its
/// arrays as tuples.
fn struct_element(t: &syn::Type, structs: &Structs) -> Option<Shape> {
    let syn::Type::Path(p) = t else {
        return None;
    };
    let st = StructShape::resolve(&p.path, false, structs).ok()?;
    (!st.has_arrays()).then(|| Shape::Struct(std::rc::Rc::new(st)))
}

/// Whether `ty` is an array (a slice, `Vec` or fixed-size array, by
/// reference or not) of `Vec`s.
fn vec_elements(ty: &syn::Type) -> bool {
    matches!(array_element(ty), Some(syn::Type::Path(p))
        if p.path.segments.last().is_some_and(|s| s.ident == "Vec"))
}

/// Whether `ty` is an array (a slice, `Vec` or fixed-size array, by
/// reference or not) of elements of a named type other than a float,
/// which is a struct or an enum.
fn struct_elements(ty: &syn::Type) -> bool {
    match array_element(ty) {
        Some(syn::Type::Path(p)) => p.path.segments.last().is_some_and(|s| {
            let name = s.ident.to_string();
            name != "Vec" && name.starts_with(|c: char| c.is_ascii_uppercase())
        }),
        _ => false,
    }
}

/// The element type of an array type (a slice, `Vec` or fixed-size
/// array, through references).
fn array_element(ty: &syn::Type) -> Option<&syn::Type> {
    let elem = match ty {
        syn::Type::Reference(r) => return array_element(&r.elem),
        syn::Type::Slice(s) => &*s.elem,
        syn::Type::Array(a) => &*a.elem,
        syn::Type::Path(p) => match p.path.segments.last() {
            Some(last) if last.ident == "Vec" => match &last.arguments {
                syn::PathArguments::AngleBracketed(a) => match a.args.first() {
                    Some(syn::GenericArgument::Type(t)) => t,
                    _ => return None,
                },
                _ => return None,
            },
            _ => return None,
        },
        _ => return None,
    };
    Some(elem)
}

/// Whether `e` is a plain name (`i`).
fn is_name(e: &syn::Expr) -> bool {
    matches!(e, syn::Expr::Path(p) if p.path.get_ident().is_some())
}

/// The length of a fixed-size array in `ty` that is not an integer
/// literal (`N` in `[f64; N]`), as written.
fn named_length(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Array(a) if int_literal(&a.len).is_none() => {
            Some(a.len.to_token_stream().to_string())
        }
        syn::Type::Array(a) => named_length(&a.elem),
        syn::Type::Reference(r) => named_length(&r.elem),
        syn::Type::Slice(s) => named_length(&s.elem),
        syn::Type::Paren(p) => named_length(&p.elem),
        syn::Type::Tuple(t) => t.elems.iter().find_map(named_length),
        _ => None,
    }
}

/// The float type parameter of a function generic in its float type:
/// the one type parameter of `generics` if it is bounded by `Float`
/// (`num_traits::Float` under any path), inline or in the `where`
/// clause, and `generics` has no other parameter. Its name stands for
/// [`Float::Generic`] while the function is expanded
/// ([`crate::codegen::FloatParam`]).
pub fn float_param(generics: &syn::Generics) -> Option<syn::Ident> {
    let mut params = generics.params.iter();
    let (Some(syn::GenericParam::Type(tp)), None) = (params.next(), params.next()) else {
        return None;
    };
    let is_float = |b: &syn::TypeParamBound| match b {
        syn::TypeParamBound::Trait(t) => t.path.segments.last().is_some_and(|s| s.ident == "Float"),
        _ => false,
    };
    let inline = tp.bounds.iter().any(is_float);
    let in_where = generics
        .where_clause
        .iter()
        .flat_map(|w| &w.predicates)
        .any(|p| match p {
            syn::WherePredicate::Type(pt) => {
                matches!(&pt.bounded_ty, syn::Type::Path(b) if b.path.is_ident(&tp.ident))
                    && pt.bounds.iter().any(is_float)
            }
            _ => false,
        });
    (inline || in_where).then(|| tp.ident.clone())
}

/// Whether `p` names the float type parameter of the function being
/// expanded.
pub(crate) fn is_float_param(p: &syn::Path) -> bool {
    crate::codegen::FloatParam::get().is_some_and(|t| p.is_ident(&t))
}

/// `let y: T;`, a float (or a tuple or array of floats) assigned later,
/// as `let mut y: T = 0.0;`: Rust assigns it on every path before it is
/// read, so the zero is never read, and its tangent is never used.
/// `None` for an unannotated `let` or another type.
fn deferred(local: &syn::Local) -> Option<syn::Local> {
    let syn::Pat::Type(t) = &local.pat else {
        return None;
    };
    let syn::Pat::Ident(id) = &*t.pat else {
        return None;
    };
    if id.by_ref.is_some() || id.subpat.is_some() {
        return None;
    }
    let zero = zero_of(&t.ty)?;
    let (name, ty, attrs) = (&id.ident, &t.ty, &local.attrs);
    let span = local.let_token.span;
    let stmt: syn::Stmt = syn::parse_quote_spanned! {span=>
        #(#attrs)*
        #[allow(unused_assignments)]
        let mut #name: #ty = #zero;
    };
    match stmt {
        syn::Stmt::Local(l) => Some(l),
        _ => None,
    }
}

/// Zero of a float type, or of a tuple or array of them.
fn zero_of(t: &syn::Type) -> Option<syn::Expr> {
    match t {
        syn::Type::Path(p) if p.qself.is_none() => {
            if p.path.is_ident("f64") || p.path.is_ident("f32") {
                Some(syn::parse_quote!(0.0))
            } else if is_float_param(&p.path) {
                let path = &p.path;
                Some(syn::parse_quote!(#path::zero()))
            } else {
                None
            }
        }
        syn::Type::Tuple(tt) if !tt.elems.is_empty() => {
            let parts: Vec<syn::Expr> = tt.elems.iter().map(zero_of).collect::<Option<_>>()?;
            Some(syn::parse_quote!((#(#parts,)*)))
        }
        // Its elements listed, as an array assigned whole is written
        // (`p = [x, y]`), not a local array (`[0.0; N]`).
        syn::Type::Array(a) => {
            let n = usize::try_from(int_literal(&a.len)?).ok()?;
            let e = zero_of(&a.elem)?;
            let zeros = std::iter::repeat_n(e, n);
            Some(syn::parse_quote!([#(#zeros),*]))
        }
        syn::Type::Paren(p) => zero_of(&p.elem),
        _ => None,
    }
}

/// Lowers `item` in the given mode, knowing the layouts of the derived
/// structs it names and the signatures `sigs` of functions it calls; the
/// called paths whose signatures may be fetched and are not in `sigs`, and
/// the struct paths whose layouts annotations need, are pushed onto
/// `missing`, errors or not (see [`crate::signature`]).
pub fn lower_fn_with(
    item: &syn::ItemFn,
    errs: &mut Errors,
    mode: Mode,
    structs: &Structs,
    sigs: &Sigs,
    missing: &mut Missing,
) -> Option<Lowered> {
    let sig = &item.sig;
    signature_checks(sig, errs);
    if !sig.generics.params.is_empty() && float_param(&sig.generics).is_none() {
        // The parameter and return types name the generics: reporting them
        // too would only repeat this error.
        return None;
    }
    let was_linear = std::mem::replace(&mut errs.linear, mode == Mode::Linear);
    let ret = result_shape(sig, mode, structs, errs);
    let mut l = Lowerer::new(mode, errs, sig.ident.to_string());
    l.structs = structs.with_nested();
    l.sigs = sigs.clone();
    let lowered = lower_body(&mut l, item, mode, ret);
    missing.sigs.extend(std::mem::take(&mut l.missing_sigs));
    missing
        .layouts
        .extend(std::mem::take(&mut l.missing_layouts));
    errs.linear = was_linear;
    lowered
}

/// The rest of [`lower_fn_with`], with the lowerer set up.
fn lower_body(
    l: &mut Lowerer,
    item: &syn::ItemFn,
    mode: Mode,
    ret: Option<Shape>,
) -> Option<Lowered> {
    let sig = &item.sig;
    l.index_written = control::index_written(&item.block).into_iter().collect();
    l.pushed_structs = control::pushed_structs(&item.block).into_iter().collect();
    let (params, nl_params) = l.params(sig);
    if mode == Mode::Linear && l.linear_params.is_empty() && l.errs.is_empty() {
        l.errs.spanned(
            &sig.ident,
            "a `#[linear]` function needs at least one `#[linear]` parameter: mark the parameters it is linear in (`#[linear] x: f64`); the others are coefficients",
        );
        // Everything in the body would be a coefficient: nothing more to say.
        return None;
    }
    let ret = ret?;
    if l.float.is_none() {
        l.float = ret.float();
    }
    l.fn_ret = Some(ret.clone());
    l.data_ok = array_interface(&ret, &params);
    let (ret, rets) = if ret.grouped() {
        l.grouped_body(&item.block, &ret)?
    } else {
        single_result(l, item, mode, ret)
    };
    let (hoisted, out) = (std::mem::take(&mut l.hoisted), std::mem::take(&mut l.out));
    l.check_grouped_uses(&[&hoisted, &out]);
    if !l.errs.is_empty() {
        return None;
    }
    let mut body = hoisted;
    body.extend(out);
    let ret_tys = ret.results().into_iter().map(Shape::ty).collect();
    let mut func = assemble(mode, &sig.ident, nl_params, ret_tys, body, rets);
    crate::visit::insert_dups_and_drops(&mut func);
    crate::passes::transpose::drop_unused(&mut func);
    Some(Lowered {
        func,
        params,
        ret,
        prelude: std::mem::take(&mut l.prelude),
        externs: std::mem::take(&mut l.externs),
        calls: std::mem::take(&mut l.calls),
        opaques: std::mem::take(&mut l.opaques),
        data: {
            let mut d: Vec<_> = std::mem::take(&mut l.data_arrays)
                .into_iter()
                .map(|(name, (v, shape))| (v, name, shape))
                .collect();
            d.sort_by(|a, b| a.1.cmp(&b.1));
            d
        },
        structs: l.structs.clone(),
    })
}

/// The function's result of one IR value, from its last expression (or
/// final `return`), early exits desugared first: the shape, an array
/// built in a local array as such ([`Shape::built`]), and the variable
/// (none if it failed to lower, reported).
fn single_result(l: &mut Lowerer, item: &syn::ItemFn, mode: Mode, ret: Shape) -> (Shape, Vec<Var>) {
    let sig = &item.sig;
    // Early exits become structured control flow first (a `Vec` result
    // starting as an empty local array, see `exits.rs`).
    let block = sugar::desugar(&iter::split_chains(&item.block));
    let block = match (&sig.output, exits::needed(&block)) {
        (syn::ReturnType::Type(_, t), true) => exits::desugar(&block, t),
        _ => block,
    };
    let result = l.block_body(&block.stmts, true);
    let ret = match &result {
        Some((Val::Active(v, t @ Ty::Array(..)), span)) if l.linear_params.contains(v) => {
            l.errs.push(*span, "returning an array parameter itself is not supported: build the result in a local array (`let mut y = vec![0.0; x.len()];`, then write its elements)");
            ret.built(t)
        }
        Some((Val::Active(_, t), _)) => ret.built(t),
        _ => ret,
    };
    let ret_ty = ret.ty();
    let mut rets = Vec::new();
    if let Some((v, span)) = result {
        let var = match mode {
            Mode::Differentiable => l.materialize(v, &ret_ty, span),
            Mode::Linear => {
                let node = l.tail.clone().unwrap_or_default();
                l.linear_value(v, &ret_ty, &node, "the result")
            }
        };
        rets.push(var);
    }
    (ret, rets)
}

/// The lowered function: its parameters, results and body are non-linear
/// for `#[differentiable]`, linear for `#[linear]`.
fn assemble(
    mode: Mode,
    name: &syn::Ident,
    params: Vec<Binder>,
    ret_tys: Vec<Ty>,
    body: Vec<Stmt>,
    rets: Vec<Var>,
) -> Func {
    let (nl_params, lin_params, nl_rets, lin_rets, nl, lin) = match mode {
        Mode::Differentiable => (params, vec![], ret_tys, vec![], rets, vec![]),
        Mode::Linear => (vec![], params, vec![], ret_tys, vec![], rets),
    };
    Func {
        name: Var::new(&name.to_string()),
        nl_params,
        lin_params,
        nl_rets,
        lin_rets,
        body: Expr::block(body, Expr::Ret { nl, lin }),
    }
}

/// Whether a function has an array parameter or result. Such a function
/// is never called by another differentiable function (the calling
/// convention has no arrays yet), so its linearization may borrow
/// `#[nondiff]` data: a caller's tape could not name a lifetime it does
/// not know of.
fn array_interface(ret: &Shape, params: &[Param]) -> bool {
    ret.has_slice()
        || params
            .iter()
            .any(|p| matches!(p.active, Some((Shape::Slice(..), _))))
}

/// The shape of `sig`'s result, or `None` with the error reported.
fn result_shape(
    sig: &syn::Signature,
    mode: Mode,
    structs: &Structs,
    errs: &mut Errors,
) -> Option<Shape> {
    let syn::ReturnType::Type(_, t) = &sig.output else {
        errs.spanned(
            &sig.ident,
            "a differentiable function must return a value: f32, f64, or tuples and arrays of them",
        );
        return None;
    };
    match Shape::from_result_type(t, structs) {
        None if struct_problem(t, structs).is_some() => {
            errs.spanned(t, struct_problem(t, structs).unwrap_or_default());
            None
        }
        Some(s) if has_constants(&s) => {
            errs.spanned(t, "a struct with constant fields (integers, `bool`s, `#[nondiff]`) cannot be a result yet: its tangent could not rebuild them; return the differentiable fields in a struct of their own");
            None
        }
        None if holds_vec(t) => {
            errs.spanned(t, "an array of `Vec`s, or a tuple holding an array of another kind, is not supported as a result: return a tuple of `Vec<T>`s and floats (`-> (f64, Vec<f64>, Vec<f64>)`)");
            None
        }
        None => {
            errs.spanned(t, format!("unsupported return type `{}`: differentiable functions return f32, f64, tuples and fixed-size arrays of them, and arrays they build (`Vec<T>`, `[T; N]` with `T` a float or a tuple of floats)", show_type(t)));
            None
        }
        Some(s) if s.has_slice() && mode == Mode::Linear => {
            // The body's errors would follow from this one.
            errs.spanned(t, "arrays read by index are not supported in `#[linear]` functions yet: return a fixed-size array (`[f64; N]`) of its elements");
            None
        }
        s => s,
    }
}

/// Why the struct a type names is not a differentiable value, if it
/// names a derived struct that has a field no function holds yet.
fn struct_problem(t: &syn::Type, structs: &Structs) -> Option<String> {
    let path = match t {
        syn::Type::Path(p) => &p.path,
        syn::Type::Reference(r) => match &*r.elem {
            syn::Type::Path(p) => &p.path,
            _ => return None,
        },
        _ => return None,
    };
    structs.get(path)?;
    StructShape::resolve(path, false, structs).err()
}

/// Whether a struct in `s` has constant fields.
pub(super) fn has_constants(s: &Shape) -> bool {
    match s {
        Shape::Struct(st) => st.has_constants(),
        Shape::Tuple(ss) => ss.iter().any(has_constants),
        Shape::Array(e, _) | Shape::Slice(e, _) => has_constants(e),
        Shape::Float(_) => false,
    }
}

/// A constant array literal (`[1.0, 0.0, 0.0]`, `[0.0; 3]`) where the IR
/// holds the array by value, as a tuple (a branch arm beside a computed
/// array): the tuple of its elements, which is what the generated code
/// binds. Anything else is left as it is.
fn array_as_tuple(tokens: TokenStream, ty: &Ty) -> TokenStream {
    let Ty::Tuple(ts) = ty else { return tokens };
    let elems: Vec<syn::Expr> = match syn::parse2::<syn::Expr>(tokens.clone()) {
        Ok(syn::Expr::Array(a)) => a.elems.into_iter().collect(),
        Ok(syn::Expr::Repeat(r)) => match &*r.len {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(n),
                ..
            }) if n.base10_parse::<usize>().ok() == Some(ts.len()) => {
                vec![(*r.expr).clone(); ts.len()]
            }
            _ => return tokens,
        },
        _ => return tokens,
    };
    if elems.len() != ts.len() {
        return tokens;
    }
    quote!((#(#elems,)*))
}

/// Whether `e` is a name or a chain of field reads of one (`p.a.n`).
fn name_or_field(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Path(p) => p.qself.is_none() && p.path.get_ident().is_some(),
        syn::Expr::Field(f) => name_or_field(&f.base),
        syn::Expr::Paren(p) => name_or_field(&p.expr),
        syn::Expr::Group(g) => name_or_field(&g.expr),
        _ => false,
    }
}

/// Whether a `Vec` is part of the type `t`.
fn holds_vec(t: &syn::Type) -> bool {
    match t {
        syn::Type::Tuple(t) => t.elems.iter().any(holds_vec),
        syn::Type::Array(a) => holds_vec(&a.elem),
        syn::Type::Paren(p) => holds_vec(&p.elem),
        syn::Type::Group(g) => holds_vec(&g.elem),
        syn::Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == "Vec"),
        _ => false,
    }
}

impl Lowerer<'_> {
    /// Lowers `sig`'s parameters: each constant one goes to the prelude,
    /// each differentiable one becomes a non-linear IR parameter (returned
    /// beside the parameters as code generation sees them).
    fn params(&mut self, sig: &syn::Signature) -> (Vec<Param>, Vec<Binder>) {
        let mut params = Vec::new();
        let mut nl_params = Vec::new();
        for input in &sig.inputs {
            let syn::FnArg::Typed(pt) = input else {
                self.errs.spanned(
                    input,
                    "a method's derivatives need `#[differentiable]` on its `impl` block, which knows the type of `self`: `#[differentiable] impl Type { #[differentiable] fn m(&self, ..) -> f64 { .. } }`",
                );
                continue;
            };
            let nondiff = pt.attrs.iter().any(|a| a.path().is_ident("nondiff"));
            let marked_linear = pt.attrs.iter().any(|a| a.path().is_ident("linear"));
            let mut pat = (*pt.pat).clone();
            let ty = (*pt.ty).clone();
            // Constants: integers, bools, and anything marked `#[nondiff]`
            // (data slices, strings, floats held fixed) pass through unchanged;
            // in a `#[linear]` function, every parameter not marked `#[linear]`
            // (a coefficient).
            let constant = match self.mode {
                Mode::Differentiable => nondiff || is_constant_type(&ty),
                Mode::Linear => !marked_linear,
            };
            if constant {
                if let syn::Pat::Ident(i) = &pat {
                    self.param_types.insert(i.ident.to_string(), ty.clone());
                }
                self.bind_pattern_inactive(&pat);
                params.push(Param {
                    pat,
                    ty,
                    active: None,
                    arrays: Vec::new(),
                });
                continue;
            }
            if let Some(msg) = struct_problem(&ty, &self.structs) {
                self.errs.spanned(&ty, msg);
                let p = self.placeholder();
                self.bind_pattern(&pat, p);
                continue;
            }
            let Some(shape) = Shape::from_param_type_in(&ty, &self.structs) else {
                self.errs.spanned(&ty, unsupported_param(&ty));
                // Poisoned: what reads or writes it reports nothing more.
                let p = self.placeholder();
                self.bind_pattern(&pat, p);
                continue;
            };
            if let Some(msg) = self.param_problem(&shape) {
                self.errs.spanned(&ty, msg);
                // Poisoned: what reads it reports nothing more.
                let p = self.placeholder();
                self.bind_pattern(&pat, p);
                continue;
            }
            if self.float.is_none() {
                self.float = shape.float();
            }
            let hint = match &pat {
                syn::Pat::Ident(i) => i.ident.to_string(),
                _ => "p".to_string(),
            };
            let v = self.fresh.named(&hint);
            let ty_ir = shape.ty();
            self.types.insert(v.clone(), ty_ir.clone());
            self.shapes.insert(v.clone(), shape.clone());
            nl_params.push(Binder::new(v.clone(), ty_ir.clone()));
            self.linear_params.push(v.clone());
            let arrays = match &shape {
                Shape::Struct(st) => self.array_params((&v, &hint), st, &mut nl_params),
                _ => Vec::new(),
            };
            // A `mut` array parameter is the function's own to write and
            // push: a local copy of the caller's array (Rust moved it in).
            let own = matches!(&pat, syn::Pat::Ident(i) if i.mutability.is_some())
                && (matches!(ty_ir, Ty::Array(..))
                    || (self.index_written.contains(&hint)
                        && self.fixed_floats(&v, &ty_ir).is_some()));
            let value = if own {
                self.array_copy(v.clone(), &ty_ir)
            } else {
                Val::Active(v.clone(), ty_ir)
            };
            if let Shape::Struct(st) = &shape {
                self.struct_param(&v, &pat, st);
            }
            if let (Some(_), syn::Pat::Ident(i)) = (shape.elements(), &pat) {
                self.element_params.insert(v.clone(), i.ident.to_string());
            }
            self.bind_pattern(&pat, value);
            strip_mut(&mut pat);
            params.push(Param {
                pat,
                ty,
                active: Some((shape, v)),
                arrays,
            });
        }
        (params, nl_params)
    }

    /// Why a parameter of this shape cannot be differentiated here, if it
    /// cannot.
    fn param_problem(&self, shape: &Shape) -> Option<String> {
        if let Shape::Struct(st) = shape {
            if st.has_arrays() && !st.by_ref {
                let name = structs::show(&st.path);
                return Some(format!("a differentiable function takes a struct with `Vec` fields by reference only, since its linearization borrows the `Vec`s rather than copy them: take `&{name}` (`&self` for a receiver)"));
            }
        }
        (self.mode == Mode::Linear && shape.has_slice()).then(|| "arrays read by index are not supported in `#[linear]` functions yet: use fixed-size arrays (`[f64; N]`)".to_string())
    }

    /// The IR parameters of the `Vec` fields of the struct parameter `v`,
    /// after its own: each an array read in place, as a `&Vec<T>`
    /// parameter is.
    fn array_params(
        &mut self,
        (v, hint): (&Var, &str),
        st: &StructShape,
        nl_params: &mut Vec<Binder>,
    ) -> Vec<Var> {
        let mut vars = Vec::new();
        for (path, s) in st.arrays() {
            let name = format!("{hint}_{}", path.replace('.', "_"));
            let a = self.fresh.named(&name);
            let t = s.ty();
            self.types.insert(a.clone(), t.clone());
            self.shapes.insert(a.clone(), s.clone());
            nl_params.push(Binder::new(a.clone(), t));
            self.linear_params.push(a.clone());
            vars.push(a);
        }
        if !vars.is_empty() {
            self.arrays.insert(v.clone(), vars.clone());
        }
        vars
    }
}

fn strip_mut(p: &mut syn::Pat) {
    struct StripMut;
    impl VisitMut for StripMut {
        fn visit_pat_ident_mut(&mut self, i: &mut syn::PatIdent) {
            i.mutability = None;
            syn::visit_mut::visit_pat_ident_mut(self, i);
        }
    }
    StripMut.visit_pat_mut(p);
}

/// Errors for what a differentiable or linear function's signature may not
/// have (its generated functions could not honour it).
pub(crate) fn signature_checks(sig: &syn::Signature, errs: &mut Errors) {
    if let Some(c) = &sig.constness {
        errs.spanned(
            c,
            "`const fn` cannot be differentiable: the generated functions are not const",
        );
    }
    if let Some(a) = &sig.asyncness {
        errs.spanned(a, "`async fn` cannot be differentiable");
    }
    if !sig.generics.params.is_empty() && float_param(&sig.generics).is_none() {
        errs.spanned(
            &sig.generics,
            "a differentiable function may be generic in its float type only: one type parameter bounded by `Float` (`fn f<T: num_traits::Float>(x: T) -> T`); lifetimes, const parameters and other type parameters are not supported yet",
        );
    }
    if let Some(v) = &sig.variadic {
        errs.spanned(v, "variadic functions are not supported");
    }
    // The generated functions would be safe to call (or, marked `unsafe`,
    // would not say what their callers must uphold); and their own ABI
    // is Rust's (a tape is a Rust type).
    if let syn::Safety::Unsafe(u) = &sig.safety {
        errs.spanned(u, "an `unsafe fn` cannot be differentiable: its generated functions would be safe to call, dropping its safety contract; make it safe (an `unsafe` block inside, on constant values), or differentiate a safe function that wraps it");
    }
    if let Some(abi) = &sig.abi {
        errs.spanned(abi, "an `extern` function cannot be differentiable: the generated functions take and return Rust types (tangents, tapes) that have no foreign ABI; differentiate a Rust function and export a wrapper that calls it");
    }
}

/// What a Rust expression lowered to.
#[derive(Clone, Debug)]
enum Val {
    /// An IR variable of the given type.
    Active(Var, Ty),
    /// Rust code computing a constant (identifiers already renamed).
    Inactive(TokenStream),
}

#[derive(Clone, Debug)]
enum Binding {
    Active(Var, Ty, bool),
    /// A prelude variable (renamed) and whether it is mutable.
    Inactive(syn::Ident, bool),
    /// A nondiff parameter: referred to by its own name.
    Param,
    /// Bound to the placeholder of an earlier error: anything reading it is
    /// not lowered and not reported again.
    Poisoned,
    /// A closure (`let f = |v| ..;`), the index of its definition
    /// ([`closure::Closure`]): a call of it is its body, in place.
    Closure(usize),
    /// A name a pattern binds from a constant scrutinee: the Rust that
    /// extracts it, read in place of the name, and the scrutinee it reads
    /// ([`pattern`]).
    Extract {
        code: TokenStream,
        /// Whether the scrutinee reads a value the IR computes (a loop
        /// index), decided where the pattern binds: a name the pattern
        /// binds may shadow one the scrutinee reads (`Some(w) => w[i]` of
        /// a parameter `w`), so the scrutinee is not looked up again.
        reads_ir: bool,
    },
}

struct Lowerer<'a> {
    mode: Mode,
    errs: &'a mut Errors,
    fresh: Fresh,
    scopes: Vec<HashMap<String, Binding>>,
    /// The closures bound by `let` so far ([`Binding::Closure`]).
    closures: Vec<closure::Closure>,
    out: Vec<Stmt>,
    prelude: Vec<TokenStream>,
    float: Option<Float>,
    unpacked: HashMap<Var, Vec<Var>>,
    /// The tuples of grouped calls' results, which no statement binds
    /// (`results.rs`), and the calls' spans and callees.
    unbound: Vec<(Var, Span, String)>,
    /// Arrays held by value (IR tuples) indexed at run time: the local
    /// array each is copied into (see [`view`]).
    views: HashMap<Var, Var>,
    types: HashMap<Var, Ty>,
    next_const: usize,
    /// Placeholder variables standing for values that failed to lower.
    poison: HashSet<Var>,
    /// Names [`Lowerer::set_existing`] keeps poisoned.
    poisoned_names: HashSet<String>,
    /// The differentiable (or, in linear mode, linear) parameters.
    linear_params: Vec<Var>,
    /// The function's result expression, for messages about it.
    tail: Option<TokenStream>,
    /// Rust shapes of IR variables where they are not the IR type's
    /// default (arrays).
    shapes: HashMap<Var, Shape>,
    /// The names whose elements the body writes at a run-time index
    /// (`a[i] = ..`, see [`control::index_written`]): a `[T; N]`
    /// by value bound `mut` to one of them is copied into a local array
    /// ([`Lowerer::fixed_floats`]); others stay values, passed and
    /// assigned whole.
    index_written: HashSet<String>,
    /// The struct each name is first pushed (`out.push(Body { .. })`, see
    /// [`control::pushed_structs`]): the element type of a `Vec` made
    /// without an annotation.
    pushed_structs: HashMap<String, syn::Path>,
    /// The scalar type a `let` annotation gives the value being lowered
    /// (`let w: f64 = match .. { .. }`): the type of an arm's constant
    /// value that reads a loop's index (`Some(w) => w[i]`).
    value_type: Option<Ty>,
    /// The result shape expected of the call being lowered (from a `let`
    /// annotation or the function's return type).
    ret_hint: Option<Shape>,
    /// The float type the context of the expression being lowered gives
    /// it: the other operand of an arithmetic operator, the variable a
    /// (compound) assignment writes. Only code kept as Rust in place reads
    /// it (`Lowerer::in_place`), to type a call that reads a loop variable
    /// (`x * weight(k)`), whose signature it cannot see.
    context: Option<Ty>,
    fn_ret: Option<Shape>,
    externs: Vec<Extern>,
    calls: HashMap<Var, CallSite>,
    /// Nesting of case arms and loop bodies: inactive code runs in place
    /// when it is positive, in the prelude at 0.
    depth: usize,
    /// IR variables that carry no derivative (integers, booleans, inactive
    /// values computed in place): Rust code may read them.
    nondiff: HashSet<Var>,
    opaques: HashMap<Var, Opaque>,
    /// IR types of prelude variables, where known (to carry them through
    /// loops and branches that assign them).
    inactive_types: HashMap<String, Ty>,
    /// Declared types of constant parameters.
    param_types: HashMap<String, syn::Type>,
    /// Whether the `match` being lowered has a value.
    match_value: bool,
    /// The type a `let` annotation gives the pattern being bound, and its
    /// Rust shape (an array is a tuple in the IR, but not to a callee).
    annotated: Option<Ty>,
    annotated_shape: Option<Shape>,
    /// The annotated shapes of prelude variables, by name, given to their
    /// IR variables when a loop or branch makes them state.
    inactive_shapes: HashMap<String, Shape>,
    /// The function's own name (recursion is refused).
    fn_name: String,
    /// Bindings of prelude constants, placed at the top of the body (each
    /// bound once, by its tokens and type).
    hoisted: Vec<Stmt>,
    hoisted_consts: HashMap<(String, Ty), Var>,
    /// The extractions of names constant patterns bind, as read
    /// ([`Binding::Extract`]): taken by value where they become floats.
    extractions: rustc_hash::FxHashSet<String>,
    /// `#[nondiff]` parameters read as data arrays, by name: the array
    /// and the shape of the reference the prelude binds it to.
    data_arrays: HashMap<String, (Var, Shape)>,
    /// Whether `#[nondiff]` data may be read as data arrays (see
    /// `lower_fn_mode`).
    data_ok: bool,
    /// The layouts of the derived structs the function names.
    structs: Structs,
    /// Struct values that are a parameter read by its own name or a field
    /// of one (a struct nested in it), by IR variable: the Rust expression
    /// the prelude reads their constant fields from, and a call passes in
    /// their place (see [`structs`]).
    origins: HashMap<Var, structs::Origin>,
    /// The origins of a tuple's struct components, which its unpacking
    /// gives back (`let (a, b) = (ps[i], ps[j]); a.m`).
    tuple_origins: HashMap<Var, Vec<Option<structs::Origin>>>,
    /// The array-of-structs parameters by IR variable, and their names:
    /// an element's constant fields are read from the parameter itself
    /// ([`structs::element_origin`]).
    element_params: HashMap<Var, String>,
    /// The IR arrays holding a struct value's `Vec` fields, in order: a
    /// struct parameter's, and those of the values written from it.
    arrays: HashMap<Var, Vec<Var>>,
    /// The signatures of the functions it calls, where known.
    sigs: Sigs,
    /// Called paths whose signatures are not known and may be.
    missing_sigs: Vec<syn::Path>,
    /// Struct paths of `let` annotations on call results whose layouts
    /// are not known yet (see [`Missing`]).
    missing_layouts: Vec<syn::Path>,
    /// Call results taken to be floats, for want of a signature or an
    /// annotation, and the callee: an error that meets one says why.
    assumed: HashMap<Var, syn::Path>,
    /// Whether any name was ever bound as [`Binding::Poisoned`] (set by
    /// `set` and `set_existing`, the only ways one is made): until one is,
    /// no expression can mention one, and none is scanned for it.
    any_poisoned: bool,
}

impl<'e> Lowerer<'e> {
    /// A lowerer for the function `fn_name`, reporting into `errs`.
    fn new(mode: Mode, errs: &'e mut Errors, fn_name: String) -> Self {
        Lowerer {
            mode,
            errs,
            fresh: Fresh::default(),
            scopes: vec![HashMap::default()],
            closures: Vec::new(),
            out: Vec::new(),
            prelude: Vec::new(),
            float: None,
            unpacked: HashMap::default(),
            unbound: Vec::new(),
            views: HashMap::default(),
            types: HashMap::default(),
            next_const: 0,
            poison: Default::default(),
            poisoned_names: Default::default(),
            any_poisoned: false,
            linear_params: Vec::new(),
            tail: None,
            shapes: HashMap::default(),
            index_written: HashSet::default(),
            pushed_structs: HashMap::default(),
            value_type: None,
            ret_hint: None,
            context: None,
            fn_ret: None,
            externs: Vec::new(),
            calls: HashMap::default(),
            depth: 0,
            nondiff: HashSet::default(),
            opaques: HashMap::default(),
            inactive_types: HashMap::default(),
            param_types: HashMap::default(),
            match_value: false,
            annotated: None,
            annotated_shape: None,
            inactive_shapes: HashMap::default(),
            fn_name,
            hoisted: Vec::new(),
            hoisted_consts: HashMap::default(),
            extractions: Default::default(),
            data_arrays: HashMap::default(),
            data_ok: false,
            structs: Structs::default(),
            origins: HashMap::default(),
            tuple_origins: HashMap::default(),
            element_params: HashMap::default(),
            arrays: HashMap::default(),
            sigs: Sigs::default(),
            missing_sigs: Vec::new(),
            missing_layouts: Vec::new(),
            assumed: HashMap::default(),
        }
    }
}

fn describe(e: &syn::Expr) -> &'static str {
    match e {
        syn::Expr::If(_) => "`if` expressions",
        syn::Expr::Match(_) => "`match` expressions",
        syn::Expr::ForLoop(_) | syn::Expr::While(_) | syn::Expr::Loop(_) => "loops",
        syn::Expr::Closure(_) => "closures other than those bound by `let` and called by name (`let f = |v: f64| ..; f(x)`)",
        syn::Expr::Reference(_) => "references",
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => "dereferences",
        syn::Expr::Struct(_) => "struct expressions",
        syn::Expr::Macro(_) => "macro invocations on differentiable values",
        syn::Expr::Assign(_) => "assignments inside expressions",
        syn::Expr::Return(_) => "`return` before the end of the function",
        syn::Expr::Break(_) | syn::Expr::Continue(_) => "`break` and `continue`",
        syn::Expr::Range(_) => "ranges",
        syn::Expr::Try(_) => "the `?` operator",
        syn::Expr::Repeat(_) => "array repeat expressions `[x; N]` of differentiable values",
        syn::Expr::Unsafe(_) => "`unsafe` blocks",
        syn::Expr::Let(_) => "`let` expressions",
        syn::Expr::Async(_) | syn::Expr::Await(_) => "async code",
        _ => "expressions of this kind",
    }
}

const METHODS: &str = "sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, tanh, asinh, acosh, atanh, exp, exp2, exp_m1, ln, ln_1p, log, log2, log10, sqrt, cbrt, powi, powf, recip, abs, hypot, min, max, clamp, copysign, rem_euclid, signum, floor, ceil, round, trunc, fract, to_radians, to_degrees, sin_cos, mul_add, and the tests is_nan, is_finite, is_infinite, is_sign_negative, is_sign_positive";

impl Lowerer<'_> {
    fn float(&self) -> Float {
        self.float.unwrap_or(Float::F64)
    }

    fn active_names(&self) -> impl Iterator<Item = &String> + '_ {
        self.scopes
            .iter()
            .flat_map(|s| s.iter())
            .filter(|(_, b)| matches!(b, Binding::Active(..) | Binding::Poisoned))
            .map(|(n, _)| n)
    }

    fn mentions_poisoned(&self, tokens: TokenStream) -> bool {
        tokens.into_iter().any(|tt| match tt {
            TokenTree::Ident(i) => matches!(self.lookup(&i.to_string()), Some(Binding::Poisoned)),
            TokenTree::Group(g) => self.mentions_poisoned(g.stream()),
            _ => false,
        })
    }

    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    fn set(&mut self, name: String, b: Binding) {
        self.any_poisoned |= matches!(b, Binding::Poisoned);
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name, b);
        }
    }

    fn emit_lin(&mut self, hint: &str, ty: Ty, rhs: Expr) -> Var {
        let v = self.fresh.var(hint);
        self.types.insert(v.clone(), ty.clone());
        self.out.push(Stmt::Let {
            nl: vec![],
            lin: vec![Binder::new(v.clone(), ty)],
            rhs,
        });
        v
    }

    /// The linear variables `tokens` mentions, for messages: "`x` and `y`".
    fn linear_names(&self, tokens: TokenStream) -> String {
        let mut names: Vec<String> = Vec::new();
        fn walk(l: &Lowerer, t: TokenStream, names: &mut Vec<String>) {
            for tt in t {
                match tt {
                    TokenTree::Ident(i) => {
                        let n = i.to_string();
                        if matches!(l.lookup(&n), Some(Binding::Active(..))) && !names.contains(&n)
                        {
                            names.push(n);
                        }
                    }
                    TokenTree::Group(g) => walk(l, g.stream(), names),
                    _ => {}
                }
            }
        }
        walk(self, tokens, &mut names);
        let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        match quoted.len() {
            0 => "a linear value".to_string(),
            1 => quoted[0].clone(),
            _ => {
                let (last, rest) = quoted.split_last().unwrap_or((&quoted[0], &[]));
                format!("{} and {last}", rest.join(", "))
            }
        }
    }

    /// A value required to be linear (a function result, a tuple
    /// component): a linear value, or the literal `0.0` (the linear zero).
    fn linear_value(&mut self, v: Val, ty: &Ty, node: &TokenStream, what: &str) -> Var {
        match v {
            Val::Active(var, _) => var,
            Val::Inactive(tokens) => {
                if float_literal(&tokens) == Some(0.0) || (ty.scalars() == 0 && tokens.is_empty()) {
                    return self.emit_lin("zero", ty.clone(), Expr::LinZero(ty.clone()));
                }
                let params = self.linear_param_names();
                self.errs.spanned(
                    node,
                    format!(
                        "{what} `{}` does not depend on the linear parameters ({params}): a `#[linear]` function must be linear in them, and a constant other than 0.0 makes it affine",
                        show_tokens(node)
                    ),
                );
                self.placeholder_var()
            }
        }
    }

    fn linear_param_names(&self) -> String {
        let names: Vec<String> = self
            .scopes
            .first()
            .map(|s| {
                let mut v: Vec<String> = s
                    .iter()
                    .filter(|(_, b)| matches!(b, Binding::Active(..)))
                    .map(|(n, _)| format!("`{n}`"))
                    .collect();
                v.sort();
                v
            })
            .unwrap_or_default();
        names.join(", ")
    }

    /// `a op b` in a `#[linear]` function: sums and differences of linear
    /// values, linear values scaled by or divided by coefficients.
    fn linear_binary(&mut self, op: Prim, a: Val, b: Val, whole: &TokenStream, hint: &str) -> Val {
        let f = self.float();
        let text = show_tokens(whole);
        match (op, a, b) {
            (_, Val::Inactive(x), Val::Inactive(y)) => {
                let o = match op {
                    Prim::Add => quote!(+),
                    Prim::Sub => quote!(-),
                    Prim::Mul => quote!(*),
                    Prim::IRem => quote!(%),
                    Prim::IBit(b) => b.symbol().parse().unwrap_or_default(),
                    _ => quote!(/),
                };
                Val::Inactive(quote!((#x #o #y)))
            }
            (Prim::Add, Val::Active(x, t), Val::Active(y, _)) => {
                Val::Active(self.emit_lin(hint, t.clone(), Expr::LinAdd(x, y)), t)
            }
            (Prim::Sub, Val::Active(x, t), Val::Active(y, _)) => {
                let n = self.emit_lin(hint, t.clone(), Expr::LinNeg(y));
                Val::Active(self.emit_lin(hint, t.clone(), Expr::LinAdd(x, n)), t)
            }
            (Prim::Add | Prim::Sub, Val::Active(x, t), Val::Inactive(c))
                if float_literal(&c) == Some(0.0) =>
            {
                Val::Active(x, t)
            }
            (Prim::Add, Val::Inactive(c), Val::Active(x, t)) if float_literal(&c) == Some(0.0) => {
                Val::Active(x, t)
            }
            (Prim::Sub, Val::Inactive(c), Val::Active(x, t)) if float_literal(&c) == Some(0.0) => {
                Val::Active(self.emit_lin(hint, t.clone(), Expr::LinNeg(x)), t)
            }
            (Prim::Add | Prim::Sub, Val::Active(..), Val::Inactive(c))
            | (Prim::Add | Prim::Sub, Val::Inactive(c), Val::Active(..)) => {
                let names = self.linear_names(whole.clone());
                self.errs.spanned(
                    whole,
                    format!(
                        "`{text}` adds `{}`, which does not depend on the linear parameters, to the linear value {names}: the result is affine, not linear",
                        show_tokens(&c)
                    ),
                );
                self.placeholder()
            }
            (Prim::Mul, Val::Active(..), Val::Active(..)) => {
                let names = self.linear_names(whole.clone());
                self.errs.spanned(
                    whole,
                    format!("`{text}` multiplies two linear values ({names}): a product of linear values is not linear; one factor must be a coefficient"),
                );
                self.placeholder()
            }
            (Prim::Mul, Val::Active(x, t), Val::Inactive(c))
            | (Prim::Mul, Val::Inactive(c), Val::Active(x, t)) => {
                let k = self.materialize(Val::Inactive(c), &Ty::Real(f), Span::call_site());
                Val::Active(self.emit_lin(hint, t.clone(), Expr::LinScale(k, x)), t)
            }
            (Prim::Div, Val::Active(x, t), Val::Inactive(c)) => {
                let one = crate::codegen::float_lit(1.0, f);
                let k = self.materialize(
                    Val::Inactive(quote!((#one / (#c)))),
                    &Ty::Real(f),
                    Span::call_site(),
                );
                Val::Active(self.emit_lin(hint, t.clone(), Expr::LinScale(k, x)), t)
            }
            _ => {
                let names = self.linear_names(whole.clone());
                self.errs.spanned(
                    whole,
                    format!("`{text}` divides by the linear value {names}: the result is not linear in it"),
                );
                self.placeholder()
            }
        }
    }

    fn emit(&mut self, hint: &str, ty: Ty, rhs: Expr) -> Var {
        let v = self.fresh.var(hint);
        self.types.insert(v.clone(), ty.clone());
        self.out.push(Stmt::Let {
            nl: vec![Binder::new(v.clone(), ty)],
            lin: vec![],
            rhs,
        });
        v
    }

    fn placeholder(&mut self) -> Val {
        let f = self.float();
        if self.mode == Mode::Linear {
            let v = self.emit_lin("err", Ty::Real(f), Expr::LinZero(Ty::Real(f)));
            self.poison.insert(v.clone());
            return Val::Active(v, Ty::Real(f));
        }
        let v = self.emit(
            "err",
            Ty::Real(f),
            Expr::Lit {
                value: 0.0,
                float: f,
            },
        );
        self.poison.insert(v.clone());
        Val::Active(v, Ty::Real(f))
    }

    /// The struct type of a `#[nondiff]` parameter that `receiver` names
    /// (behind any `&`, `*` or parentheses), if the parameter's declared
    /// type names one (not the function's float type parameter).
    pub(super) fn constant_receiver(&self, receiver: &syn::Expr) -> Option<syn::Path> {
        let syn::Expr::Path(p) = constant_param(receiver) else {
            return None;
        };
        let id = p.path.get_ident()?.to_string();
        if !matches!(self.lookup(&id), Some(Binding::Param)) {
            return None;
        }
        let mut ty = self.param_types.get(&id)?;
        while let syn::Type::Reference(r) = ty {
            ty = &r.elem;
        }
        let syn::Type::Path(tp) = ty else {
            return None;
        };
        let last = tp.path.segments.last()?;
        let named = tp.qself.is_none()
            && crate::signature::names_type(&last.ident)
            && !is_float_param(&tp.path);
        named.then(|| tp.path.clone())
    }

    /// [`Lowerer::mentions_active`] of `e`'s tokens. The arithmetic that
    /// long expressions are made of (operators, parentheses, calls, method
    /// calls, fields, indexing, casts) is walked rather than printed: each
    /// of its parts is read as its tokens would be read in place, since
    /// the punctuation and delimiters between them reset what the scan
    /// remembers. Printing every node of `a + b + c + …` again for each of
    /// its ancestors took time quadratic in the chain's length (800 terms:
    /// 642 ms to expand, 86 ms walked; `macro_cost_expression`). The rest,
    /// and anything with attributes, is read from its tokens.
    fn expr_mentions_active(&self, e: &syn::Expr) -> bool {
        use syn::Expr as E;
        match e {
            E::Binary(b) if b.attrs.is_empty() => {
                self.expr_mentions_active(&b.left) || self.expr_mentions_active(&b.right)
            }
            E::Unary(u) if u.attrs.is_empty() => self.expr_mentions_active(&u.expr),
            E::Paren(p) if p.attrs.is_empty() => self.expr_mentions_active(&p.expr),
            // `r.m(args)`: the method's name follows a `.`, so it is not read.
            E::MethodCall(m) if m.attrs.is_empty() && m.turbofish.is_none() => {
                self.expr_mentions_active(&m.receiver)
                    || m.args.iter().any(|a| self.expr_mentions_active(a))
            }
            E::Call(c) if c.attrs.is_empty() => {
                self.expr_mentions_active(&c.func)
                    || c.args.iter().any(|a| self.expr_mentions_active(a))
            }
            // `b.f`: the field follows a `.`.
            E::Field(f) if f.attrs.is_empty() => self.expr_mentions_active(&f.base),
            E::Index(i) if i.attrs.is_empty() => {
                self.expr_mentions_active(&i.expr) || self.expr_mentions_active(&i.index)
            }
            E::Cast(c) if c.attrs.is_empty() => {
                let (as_token, ty) = (&c.as_token, &c.ty);
                self.expr_mentions_active(&c.expr) || self.mentions_active(quote!(#as_token #ty))
            }
            _ => self.mentions_active(e.to_token_stream()),
        }
    }

    /// Does `tokens` mention an active local (not as a field or method
    /// name, nor as a later path segment)?
    fn mentions_active(&self, tokens: TokenStream) -> bool {
        let mut prev_dot = false;
        // After `::` an identifier is a path segment; after a single `:`
        // (a field initialiser `x: p.x`) it is an expression.
        let mut prev_colon = false;
        let mut colons = 0;
        for tt in tokens {
            match &tt {
                TokenTree::Ident(i) => {
                    if !prev_dot && !prev_colon {
                        // A closure's call is its body, lowered in place.
                        match self.lookup(&i.to_string()) {
                            Some(Binding::Active(..) | Binding::Poisoned | Binding::Closure(_)) => {
                                return true
                            }
                            Some(Binding::Extract { reads_ir: true, .. }) => return true,
                            _ => {}
                        }
                    }
                    prev_dot = false;
                    prev_colon = false;
                    colons = 0;
                }
                TokenTree::Punct(p) => {
                    prev_dot = p.as_char() == '.';
                    colons = if p.as_char() == ':' { colons + 1 } else { 0 };
                    prev_colon = colons >= 2;
                }
                TokenTree::Group(g) => {
                    if self.mentions_active(g.stream()) {
                        return true;
                    }
                    prev_dot = false;
                    prev_colon = false;
                }
                TokenTree::Literal(lit) => {
                    // Inline format arguments: `println!("{x}")` reads `x`.
                    let text = lit.to_string();
                    if text.starts_with('"')
                        && self
                            .active_names()
                            .any(|n| text.contains(&format!("{{{n}")))
                    {
                        return true;
                    }
                    prev_dot = false;
                    prev_colon = false;
                    colons = 0;
                }
            }
        }
        false
    }

    /// `let k = kinds[i];` inside a loop or an arm, of constant data of a
    /// type the IR has no value of (an enum, a struct of data): `k` names
    /// the place, read again where `k` is read ([`Binding::Extract`]), as a
    /// `match` on it reads its scrutinee ([`pattern`]). Only a place (a
    /// name, a field, an element, not a call) is read again, so each read
    /// gives the value the `let` would have bound.
    fn constant_alias(&mut self, pat: &syn::Pat, init: &syn::Expr) -> bool {
        fn place(e: &syn::Expr) -> bool {
            match e {
                syn::Expr::Path(_) => true,
                syn::Expr::Field(f) => place(&f.base),
                syn::Expr::Index(i) => place(&i.expr),
                syn::Expr::Paren(p) => place(&p.expr),
                syn::Expr::Reference(r) => r.mutability.is_none() && place(&r.expr),
                _ => false,
            }
        }
        let syn::Pat::Ident(i) = pat else {
            return false;
        };
        let plain = i.mutability.is_none() && i.by_ref.is_none() && i.subpat.is_none();
        let tokens = init.to_token_stream();
        if !plain
            || self.depth == 0
            || self.mode != Mode::Differentiable
            || !place(init)
            || self.mentions_diff(tokens.clone())
            || self.infer(init).is_some()
            || self.data_row_shape(init).is_some()
        {
            return false;
        }
        let code = rename_tokens(self, tokens);
        let reads_ir = self.mentions_active(code.clone());
        let binding = Binding::Extract { code, reads_ir };
        self.set(i.ident.to_string(), binding);
        true
    }

    /// The expression with inactive locals renamed to their prelude names,
    /// and the names constant patterns bind replaced by their extractions.
    fn rename_inactive(&self, e: &syn::Expr) -> TokenStream {
        struct Rename<'b, 'c>(&'b Lowerer<'c>);
        impl VisitMut for Rename<'_, '_> {
            fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
                if let syn::Expr::Path(p) = e {
                    let name = p.path.get_ident().map(|i| i.to_string());
                    if let Some(Binding::Extract { code: t, .. }) =
                        name.and_then(|n| self.0.lookup(&n))
                    {
                        *e = syn::Expr::Verbatim(pattern::read_form(t));
                        return;
                    }
                }
                syn::visit_mut::visit_expr_mut(self, e);
            }
            fn visit_expr_path_mut(&mut self, p: &mut syn::ExprPath) {
                if p.qself.is_none() && p.path.segments.len() == 1 && p.path.leading_colon.is_none()
                {
                    let name = p.path.segments[0].ident.to_string();
                    if let Some(Binding::Inactive(id, _)) = self.0.lookup(&name) {
                        p.path.segments[0].ident = id.clone();
                    }
                }
            }
            fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
                if !pattern::is_resolved(m) {
                    m.tokens = rename_tokens(self.0, m.tokens.clone());
                }
            }
        }
        let mut e = e.clone();
        Rename(self).visit_expr_mut(&mut e);
        e.to_token_stream()
    }

    /// A variable bound once, at the top of the function, to the prelude
    /// local `local` of IR type `ty`.
    fn hoist_const(&mut self, hint: &str, local: &syn::Ident, ty: Ty) -> Var {
        let v = self.fresh.var(hint);
        self.types.insert(v.clone(), ty.clone());
        self.nondiff.insert(v.clone());
        self.hoisted.push(Stmt::Let {
            nl: vec![Binder::new(v.clone(), ty.clone())],
            lin: vec![],
            rhs: Expr::Const {
                name: Var::new(&local.to_string()),
                args: vec![],
                ty,
            },
        });
        v
    }

    fn new_inactive_name(&mut self, base: &str) -> syn::Ident {
        self.next_const += 1;
        syn::Ident::new(&format!("__{base}_{}", self.next_const), Span::mixed_site())
    }

    /// An IR variable holding an inactive value, of IR type `ty`.
    fn materialize(&mut self, v: Val, ty: &Ty, span: Span) -> Var {
        match v {
            Val::Active(var, t) => {
                // A placeholder stands for a value already reported.
                if &t != ty && !self.poison.contains(&var) {
                    self.errs.push(
                        span,
                        format!("type mismatch: this value has type {t} where {ty} is expected"),
                    );
                }
                var
            }
            Val::Inactive(tokens) => {
                let tokens = array_as_tuple(tokens, ty);
                let tokens = match ty {
                    Ty::Real(_) if self.extractions.contains(&tokens.to_string()) => {
                        pattern::by_value(tokens)
                    }
                    _ => tokens,
                };
                if let (Ty::Real(f), Some(x)) = (ty, float_literal(&tokens)) {
                    return self.emit_nd(
                        "k",
                        ty.clone(),
                        Expr::Lit {
                            value: x,
                            float: *f,
                        },
                    );
                }
                let lit: Option<syn::Lit> = syn::parse2(tokens.clone()).ok();
                match (ty, &lit) {
                    (Ty::Int, Some(syn::Lit::Int(i))) if i.suffix().is_empty() => {
                        if let Ok(n) = i.base10_parse::<i64>() {
                            return self.emit_nd("k", Ty::Int, Expr::Int(n));
                        }
                    }
                    (Ty::Bool, Some(syn::Lit::Bool(b))) => {
                        return self.emit_nd("k", Ty::Bool, Expr::Bool(b.value));
                    }
                    _ => {}
                }
                let parsed = syn::parse2::<syn::Expr>(tokens.clone());
                // A float that cannot panic, or a name (a parameter, a
                // prelude local) or a field of one (a struct parameter's
                // constant field, `p.cols`): an index offset read in a loop
                // is then loop-invariant, saved once rather than per
                // iteration, and the index recomputed from it.
                let hoistable = match (ty, &parsed) {
                    (Ty::Real(_), Ok(e)) => inactive::cannot_panic(e),
                    (Ty::Int | Ty::Bool, Ok(e)) => name_or_field(e),
                    _ => false,
                };
                if self.depth > 0 && !hoistable {
                    return match parsed {
                        Ok(e) => self.opaque(&e, ty.clone()),
                        Err(_) => self.placeholder_var(),
                    };
                }
                // A loop-invariant constant: computed once in the prelude
                // and bound once at the top of the function, so that loops
                // read it from outside (saved once, no tangent carried).
                let key = (tokens.to_string(), ty.clone());
                if let Some(v) = self.hoisted_consts.get(&key) {
                    return v.clone();
                }
                let id = self.new_inactive_name("c");
                let rust_ty = ty_rust(ty);
                let tokens = unparen(tokens);
                self.prelude
                    .push(quote_spanned!(span=> let #id: #rust_ty = #tokens;));
                let v = self.hoist_const("c", &id, ty.clone());
                self.hoisted_consts.insert(key, v.clone());
                v
            }
        }
    }

    fn scalar(&mut self, v: Val, span: Span) -> Var {
        let f = self.float();
        match &v {
            Val::Active(var, _) if self.poison.contains(var) => var.clone(),
            Val::Active(var, Ty::Real(_)) => var.clone(),
            Val::Active(_, t) => {
                self.errs.push(span, format!("arithmetic on a value of type {t}: only scalars (f32, f64) support arithmetic; destructure the tuple or index the array first"));
                self.placeholder_var()
            }
            Val::Inactive(_) => self.materialize(v, &Ty::Real(f), span),
        }
    }

    fn placeholder_var(&mut self) -> Var {
        match self.placeholder() {
            Val::Active(v, _) => v,
            Val::Inactive(_) => Var::new("err"),
        }
    }

    fn prim(&mut self, prim: Prim, args: Vec<Var>, hint: &str) -> Val {
        let f = args
            .first()
            .and_then(|a| self.types.get(a))
            .and_then(Ty::float)
            .unwrap_or(self.float());
        // Arithmetic on a call result taken to be a float is taken to be
        // one too: where the code then uses it as something else, the
        // error names the call (`let m = -r.cross(&f); m.dot(&m)`).
        let assumed = args.iter().find_map(|a| self.assumed.get(a).cloned());
        let v = self.emit(hint, Ty::Real(f), Expr::Prim { prim, args });
        if let Some(path) = assumed {
            self.assumed.insert(v.clone(), path);
        }
        Val::Active(v, Ty::Real(f))
    }

    /// Binds a pattern of nondiff parameters: each identifier refers to
    /// itself in the prelude.
    fn bind_pattern_inactive(&mut self, p: &syn::Pat) {
        struct Idents(Vec<String>);
        impl VisitMut for Idents {
            fn visit_pat_ident_mut(&mut self, i: &mut syn::PatIdent) {
                self.0.push(i.ident.to_string());
            }
        }
        let mut ids = Idents(vec![]);
        ids.visit_pat_mut(&mut p.clone());
        for name in ids.0 {
            self.set(name, Binding::Param);
        }
    }

    /// The components of tuple variable `v`, unpacking it on first use.
    fn is_poison(&self, v: &Val) -> bool {
        matches!(v, Val::Active(var, _) if self.poison.contains(var))
    }

    fn components(&mut self, v: &Var, ty: &Ty, span: Span) -> Option<Vec<(Var, Ty)>> {
        if self.poison.contains(v) {
            return None;
        }
        let Ty::Tuple(ts) = ty else {
            let msg = match self.assumed_float(v) {
                Some(why) => why,
                None => format!("this value has type {ty}, not a tuple or array"),
            };
            self.errs.push(span, msg);
            return None;
        };
        if let Some(cs) = self.unpacked.get(v) {
            return Some(cs.iter().cloned().zip(ts.iter().cloned()).collect());
        }
        let base = v.as_str().split('.').next().unwrap_or("t").to_string();
        let vars: Vec<Var> = ts.iter().map(|_| self.fresh.var(&base)).collect();
        for (c, t) in vars.iter().zip(ts) {
            self.types.insert(c.clone(), t.clone());
        }
        let parts: Vec<Shape> = match self.shapes.get(v) {
            Some(Shape::Array(s, n)) => vec![(**s).clone(); *n],
            Some(Shape::Tuple(ss)) => ss.clone(),
            _ => ts.iter().map(Shape::of_ty).collect(),
        };
        for (c, s) in vars.iter().zip(parts) {
            self.shapes.insert(c.clone(), s);
        }
        let binders: Vec<Binder> = vars
            .iter()
            .cloned()
            .zip(ts.iter().cloned())
            .map(|(v, t)| Binder::new(v, t))
            .collect();
        self.out.push(match self.mode {
            Mode::Differentiable => Stmt::Unpack {
                vars: binders,
                tuple: v.clone(),
            },
            Mode::Linear => Stmt::LinUnpack {
                vars: binders,
                tuple: v.clone(),
            },
        });
        if let Some(origins) = self.tuple_origins.get(v).cloned() {
            for (c, o) in vars.iter().zip(origins) {
                if let Some(o) = o {
                    self.origins.insert(c.clone(), o);
                }
            }
        }
        self.unpacked.insert(v.clone(), vars.clone());
        Some(vars.into_iter().zip(ts.iter().cloned()).collect())
    }

    /// A tuple or array pattern over constant code: the value bound once,
    /// each element pattern to its part (typed as a tuple literal's
    /// element, where it is one).
    fn bind_inactive_elems(
        &mut self,
        p: &syn::Pat,
        elems: &syn::punctuated::Punctuated<syn::Pat, syn::Token![,]>,
        tokens: TokenStream,
    ) {
        let id = self.new_inactive_name("t");
        let tokens = unparen(tokens);
        // The types of a tuple literal's elements, which the
        // elements' names then keep (`let (mut s, mut n) =
        // (0.0, 0u32);` before a loop that updates both).
        let types: Vec<Option<Ty>> = match syn::parse2::<syn::Expr>(tokens.clone()) {
            Ok(syn::Expr::Tuple(t)) if t.elems.len() == elems.len() => {
                t.elems.iter().map(|e| self.infer(e)).collect()
            }
            _ => vec![None; elems.len()],
        };
        self.prelude.push(quote!(let #id = #tokens;));
        for (k, (e, t)) in elems.iter().zip(types).enumerate() {
            self.annotated = t;
            let sel = if matches!(p, syn::Pat::Slice(_)) {
                quote!(#id[#k])
            } else {
                let idx = syn::Index::from(k);
                quote!(#id.#idx)
            };
            self.bind_pattern(e, Val::Inactive(sel));
            self.annotated = None;
        }
    }

    fn bind_pattern(&mut self, p: &syn::Pat, v: Val) {
        match p {
            syn::Pat::Ident(i) if i.subpat.is_none() && i.by_ref.is_none() => {
                let name = i.ident.to_string();
                match v {
                    Val::Active(var, _) if self.poison.contains(&var) => {
                        self.set(name, Binding::Poisoned)
                    }
                    Val::Active(var, ty) => {
                        self.set(name, Binding::Active(var, ty, i.mutability.is_some()))
                    }
                    Val::Inactive(tokens) if self.depth > 0 => {
                        let ann = self.annotated.take();
                        match self.inactive_local(&tokens, ann, i.span()) {
                            Some(var) => {
                                let ty = self.types.get(&var).cloned().unwrap_or(Ty::Int);
                                self.set(name, Binding::Active(var, ty, i.mutability.is_some()));
                            }
                            None => self.set(name, Binding::Poisoned),
                        }
                    }
                    Val::Inactive(tokens) => {
                        let id = self.new_inactive_name(&name);
                        // An array literal of floats is typed as its
                        // annotation would type it (`[0.0, 0.0]` as
                        // `[f64; 2]`, in the function's float type).
                        let (annotated, shape) =
                            match (self.annotated.take(), self.annotated_shape.take()) {
                                (None, None) => match self.array_literal_shape(&tokens) {
                                    Some(s) => (Some(s.ty()), Some(s)),
                                    None => (None, None),
                                },
                                other => other,
                            };
                        if let Some(t) = annotated.or_else(|| self.infer_tokens(&tokens)) {
                            self.inactive_types.insert(id.to_string(), t);
                        }
                        if let Some(shape) = shape {
                            self.inactive_shapes.insert(id.to_string(), shape);
                        }
                        let tokens = unparen(tokens);
                        // Mutable: the prelude may assign it again (an `if`
                        // on constants assigning it in each branch). The
                        // user's own function is linted for what it does.
                        if i.mutability.is_some() {
                            self.prelude.push(quote! {
                                #[allow(unused_mut, unused_assignments)]
                                let mut #id = #tokens;
                            });
                        } else {
                            self.prelude.push(quote!(let #id = #tokens;));
                        }
                        self.set(name, Binding::Inactive(id, i.mutability.is_some()));
                    }
                }
            }
            syn::Pat::Type(t) => {
                self.annotated = inactive::scalar_ty(&t.ty);
                self.annotated_shape = Shape::from_type(&t.ty);
                self.bind_pattern(&t.pat, v);
                self.annotated = None;
                self.annotated_shape = None;
            }
            syn::Pat::Paren(pp) => self.bind_pattern(&pp.pat, v),
            syn::Pat::Struct(ps) => self.bind_struct_pattern(p, &ps.path, v),
            syn::Pat::TupleStruct(ts) => self.bind_struct_pattern(p, &ts.path, v),
            syn::Pat::Wild(_) => {}
            syn::Pat::Tuple(syn::PatTuple { elems, .. })
            | syn::Pat::Slice(syn::PatSlice { elems, .. }) => match v {
                Val::Active(var, ty) => {
                    let Some(cs) = self.components(&var, &ty, p.span()) else {
                        return;
                    };
                    if cs.len() != elems.len()
                        || elems.iter().any(|e| matches!(e, syn::Pat::Rest(_)))
                    {
                        self.errs.spanned(p, format!("this pattern has {} elements but the value has {}; `..` is not supported", elems.len(), cs.len()));
                        return;
                    }
                    for (e, (c, t)) in elems.iter().zip(cs) {
                        self.bind_pattern(e, Val::Active(c, t));
                    }
                }
                Val::Inactive(tokens) => self.bind_inactive_elems(p, elems, tokens),
            },
            _ => self.errs.spanned(
                p,
                "unsupported pattern: use a name, `_`, or tuple and array patterns of them",
            ),
        }
    }

    /// Lowers the statements of a block; returns the value of its tail (or
    /// final `return`).
    fn block_body(&mut self, stmts: &[syn::Stmt], is_fn: bool) -> Option<(Val, Span)> {
        let mut result = None;
        for (i, s) in stmts.iter().enumerate() {
            let last = i + 1 == stmts.len();
            match s {
                syn::Stmt::Expr(syn::Expr::Return(r), _) if last && is_fn => match &r.expr {
                    Some(e) => {
                        self.ret_hint = self.fn_ret.clone();
                        self.tail = Some(e.to_token_stream());
                        result = Some((self.expr(e, "r"), e.span()));
                        self.ret_hint = None;
                    }
                    None => self.errs.spanned(r, "`return` without a value"),
                },
                syn::Stmt::Expr(e, None) if last => {
                    if is_fn {
                        self.ret_hint = self.fn_ret.clone();
                        self.tail = Some(e.to_token_stream());
                    } else {
                        self.context = self.value_type.clone();
                    }
                    result = Some((self.expr(e, "r"), e.span()));
                    self.ret_hint = None;
                }
                other => self.stmt(other),
            }
        }
        if result.is_none() {
            let span = stmts.last().map_or_else(Span::call_site, |s| s.span());
            self.errs.push(span, "the block must end with an expression (its value) or, at the end of the function, `return value;`");
        }
        result
    }

    /// A statement whose value, if any, is not used.
    fn stmt(&mut self, s: &syn::Stmt) {
        match s {
            syn::Stmt::Local(local) => self.local(local),
            syn::Stmt::Item(item) => self.errs.spanned(
                item,
                "items inside a differentiable function are not supported; define them outside it",
            ),
            syn::Stmt::Macro(m) => {
                if self.mentions_diff(m.mac.tokens.clone()) {
                    self.errs.spanned(
                        m,
                        "macro invocations on differentiable values are not supported",
                    );
                } else if self.depth > 0 || self.mentions_active(m.mac.tokens.clone()) {
                    let e = syn::Expr::Macro(syn::ExprMacro {
                        attrs: m.attrs.clone(),
                        mac: m.mac.clone(),
                    });
                    self.opaque_effect(&e);
                } else {
                    let renamed = rename_tokens(self, m.to_token_stream());
                    self.prelude.push(renamed);
                }
            }
            syn::Stmt::Expr(e, _) => self.expr_stmt(e),
        }
    }

    fn local(&mut self, local: &syn::Local) {
        if self.closure_local(local) {
            return;
        }
        let Some(init) = &local.init else {
            match deferred(local) {
                Some(initialised) => self.local(&initialised),
                None => self.errs.spanned(
                    local,
                    "a `let` without a value needs its type here, a float or a tuple or array of floats (`let y: f64;`, assigned in every branch after it); otherwise initialise the variable",
                ),
            }
            return;
        };
        if let Some((_, e)) = &init.diverge {
            self.errs.spanned(e, "`let … else` is not supported");
        }
        if self.constant_alias(&local.pat, &init.expr) {
            return;
        }
        let hint = match &local.pat {
            syn::Pat::Ident(i) => i.ident.to_string(),
            syn::Pat::Type(t) => match &*t.pat {
                syn::Pat::Ident(i) => i.ident.to_string(),
                _ => "v".into(),
            },
            _ => "v".into(),
        };
        if let syn::Pat::Type(t) = &local.pat {
            // `Vec<T>` names the element type of an empty `Vec`; a tuple
            // holding one, a method's result of several arrays.
            self.ret_hint = Shape::from_type_in(&t.ty, &self.structs)
                .or_else(|| Shape::from_param_type(&t.ty))
                .or_else(|| Shape::from_result_type(&t.ty, &self.structs));
            self.want_layout(&t.ty, &init.expr);
        } else if let Some(path) = self.pushed_structs.get(&hint) {
            // No annotation, but pushes of a struct literal name the
            // elements: a `Vec` of that struct.
            let ty: syn::Type = syn::parse_quote!(::std::vec::Vec<#path>);
            self.ret_hint = Shape::from_result_type(&ty, &self.structs);
        }
        let mutable = match &local.pat {
            syn::Pat::Ident(i) => i.mutability.is_some(),
            syn::Pat::Type(t) => matches!(&*t.pat, syn::Pat::Ident(i) if i.mutability.is_some()),
            _ => false,
        };
        let local_array = (mutable && self.mode == Mode::Differentiable)
            .then(|| self.local_array(&init.expr))
            .flatten();
        let is_fill = local_array.is_some();
        let annotated = match &local.pat {
            syn::Pat::Type(t) => inactive::scalar_ty(&t.ty),
            _ => None,
        };
        let outer = std::mem::replace(&mut self.value_type, annotated);
        let v = match local_array {
            Some(v) => v,
            None => self.expr(&init.expr, &hint),
        };
        self.value_type = outer;
        // A mutable array binding is always one the function made, which
        // element writes may then write in place: a copy of another array
        // (`let mut y = x.to_vec();`, `x.clone()`, `let mut y = x;`) is a
        // new local array, its elements copied in a loop.
        let v = match v {
            Val::Active(src, ty @ Ty::Array(..)) if mutable && !is_fill => {
                self.array_copy(src, &ty)
            }
            Val::Active(src, ty @ Ty::Tuple(..))
                if mutable
                    && !is_fill
                    && self.index_written.contains(&hint)
                    && self.fixed_floats(&src, &ty).is_some() =>
            {
                self.array_copy(src, &ty)
            }
            v => v,
        };
        self.ret_hint = None;
        // A type annotation on an active value must describe its IR type.
        if let (syn::Pat::Type(t), Val::Active(_, ty)) = (&local.pat, &v) {
            if let Some(s) = Shape::from_type(&t.ty) {
                if &s.ty() != ty {
                    self.errs.spanned(
                        &t.ty,
                        format!("this value has type {ty}, not `{}`", show_type(&t.ty)),
                    );
                }
            }
        }
        self.bind_pattern(&local.pat, v);
    }

    /// `x = e;`, `x op= e;`, control flow, or an inactive statement.
    fn expr_stmt(&mut self, e: &syn::Expr) {
        if self.mode == Mode::Differentiable && self.mentions_active(e.to_token_stream()) {
            match e {
                syn::Expr::If(i) => {
                    self.if_expr(i, false);
                    return;
                }
                syn::Expr::Match(m) => {
                    self.match_expr(m, false);
                    return;
                }
                syn::Expr::ForLoop(f) => return self.for_loop(f),
                syn::Expr::While(w) => return self.while_loop(w),
                syn::Expr::Block(b) if b.label.is_none() => {
                    self.scopes.push(HashMap::default());
                    self.stmts(&b.block.stmts);
                    self.scopes.pop();
                    return;
                }
                _ => {}
            }
        }
        let (target, value) = match e {
            syn::Expr::Assign(a) if self.part_write(&a.left, None, &a.right) => return,
            syn::Expr::Assign(a) if self.element_write(&a.left, None, &a.right) => return,
            syn::Expr::Assign(a) => (&*a.left, self.assign_rhs(&a.left, None, &a.right)),
            syn::Expr::Binary(b) => {
                let op = match b.op {
                    syn::BinOp::AddAssign(_) => Some(Prim::Add),
                    syn::BinOp::SubAssign(_) => Some(Prim::Sub),
                    syn::BinOp::MulAssign(_) => Some(Prim::Mul),
                    syn::BinOp::DivAssign(_) => Some(Prim::Div),
                    syn::BinOp::RemAssign(_) => Some(Prim::IRem),
                    syn::BinOp::BitAndAssign(_) => Some(Prim::IBit(Bit::And)),
                    syn::BinOp::BitOrAssign(_) => Some(Prim::IBit(Bit::Or)),
                    syn::BinOp::BitXorAssign(_) => Some(Prim::IBit(Bit::Xor)),
                    syn::BinOp::ShlAssign(_) => Some(Prim::IBit(Bit::Shl)),
                    syn::BinOp::ShrAssign(_) => Some(Prim::IBit(Bit::Shr)),
                    _ => None,
                };
                match op {
                    Some(op) if self.part_write(&b.left, Some(op), &b.right) => return,
                    Some(op) if self.element_write(&b.left, Some(op), &b.right) => return,
                    Some(op) => (&*b.left, self.assign_rhs(&b.left, Some(op), &b.right)),
                    None => return self.effect_stmt(e),
                }
            }
            syn::Expr::MethodCall(m) if self.mode == Mode::Differentiable && self.push_stmt(m) => {
                return
            }
            _ => return self.effect_stmt(e),
        };
        let Some(value) = value else { return };
        let syn::Expr::Path(p) = target else { return };
        let Some(id) = p.path.get_ident() else { return };
        let name = id.to_string();
        match self.lookup(&name).cloned() {
            Some(b @ (Binding::Active(_, _, true) | Binding::Inactive(_, true))) => match value {
                Val::Active(var, ty) => self.set_existing(&name, Binding::Active(var, ty, true)),
                // A variable that lives in the IR (or any inside a branch or
                // loop) takes the constant in place, with its own type.
                Val::Inactive(tokens) if self.depth > 0 || matches!(b, Binding::Active(..)) => {
                    let ty = match &b {
                        Binding::Active(_, t, _) => Some(t.clone()),
                        _ => self.infer_tokens(&tokens),
                    };
                    let Some(ty) = ty else {
                        self.errs.spanned(e, format!("cannot tell the type of the value assigned to `{name}` here: annotate its `let`"));
                        return;
                    };
                    let var = self.materialize(Val::Inactive(tokens), &ty, e.span());
                    self.set_existing(&name, Binding::Active(var, ty, true));
                }
                Val::Inactive(tokens) => {
                    let nid = self.new_inactive_name(&name);
                    let tokens = unparen(tokens);
                    self.prelude.push(quote!(let #nid = #tokens;));
                    self.set_existing(&name, Binding::Inactive(nid, true));
                }
            },
            Some(Binding::Param) => self.errs.spanned(
                id,
                "assigning to a parameter is not supported: bind a new `let mut` variable",
            ),
            // rustc reports both on the original function.
            Some(Binding::Poisoned) => {}
            Some(_) | None => self.errs.rustc_reports(),
        }
    }

    /// Rebinds `name` in the scope that declared it.
    fn set_existing(&mut self, name: &str, b: Binding) {
        // A variable an error left without a type stays poisoned through
        // the loops and branches that carry it.
        let b = if self.poisoned_names.contains(name) {
            Binding::Poisoned
        } else {
            b
        };
        self.any_poisoned |= matches!(b, Binding::Poisoned);
        // The same variable, written: an array keeps its rows, a struct
        // its fields.
        if let (Binding::Active(new, new_ty, _), Some(Binding::Active(old, old_ty, _))) =
            (&b, self.lookup(name))
        {
            let keep = match self.shapes.get(old) {
                Some(Shape::Struct(_)) => new_ty == old_ty,
                _ => matches!(new_ty, Ty::Array(..)),
            };
            if let Some(shape) = self.shapes.get(old).cloned().filter(|_| keep) {
                self.shapes.entry(new.clone()).or_insert(shape);
            }
        }
        for s in self.scopes.iter_mut().rev() {
            if let Some(slot) = s.get_mut(name) {
                *slot = b;
                return;
            }
        }
    }

    fn assign_rhs(&mut self, left: &syn::Expr, op: Option<Prim>, right: &syn::Expr) -> Option<Val> {
        let syn::Expr::Path(p) = left else {
            self.errs
                .spanned(left, "only assignments to local variables are supported");
            return None;
        };
        let Some(id) = p.path.get_ident() else {
            self.errs
                .spanned(left, "only assignments to local variables are supported");
            return None;
        };
        let hint = id.to_string();
        let before = self.out.len();
        self.context = self.float_context(left);
        let rhs = self.expr(right, &hint);
        let Some(op) = op else {
            // An array variable is given a new array: one this expression
            // built is moved in; any other (a parameter, another local
            // array) is copied, as arrays are values.
            return Some(match rhs {
                Val::Active(v, ty @ Ty::Array(..))
                    if !self.out[before..]
                        .iter()
                        .any(|s| crate::visit::binds(s, &v)) =>
                {
                    self.array_copy(v, &ty)
                }
                rhs => rhs,
            });
        };
        let cur = self.expr(left, &hint);
        let sym = ops::assign_symbol(op);
        let whole = quote!(#left #sym #right);
        Some(self.binary(op, cur, rhs, left.span(), right.span(), &whole, &hint))
    }

    fn effect_stmt(&mut self, e: &syn::Expr) {
        // Control leaving the function or a loop is never inactive code.
        if let syn::Expr::Return(_)
        | syn::Expr::Break(_)
        | syn::Expr::Continue(_)
        | syn::Expr::Try(_) = e
        {
            if self.depth > 0 || self.mentions_active(e.to_token_stream()) {
                self.errs.spanned(e, format!("{} are not supported in differentiable functions yet: compute the result in a variable and return it at the end", describe(e)));
                return;
            }
        }
        if self.mentions_diff(e.to_token_stream()) {
            self.errs.spanned(
                e,
                format!(
                    "{} are not supported in differentiable functions yet",
                    describe(e)
                ),
            );
            return;
        }
        if self.depth > 0 || self.mentions_active(e.to_token_stream()) {
            return self.opaque_effect(e);
        }
        let renamed = self.rename_inactive(e);
        self.prelude.push(quote!(#renamed;));
    }

    #[allow(clippy::too_many_arguments)]
    fn binary(
        &mut self,
        op: Prim,
        a: Val,
        b: Val,
        sa: Span,
        sb: Span,
        whole: &TokenStream,
        hint: &str,
    ) -> Val {
        if self.mode == Mode::Linear {
            return self.linear_binary(op, a, b, whole, hint);
        }
        if let (Val::Inactive(x), Val::Inactive(y)) = (&a, &b) {
            let o = match op {
                Prim::Add => quote!(+),
                Prim::Sub => quote!(-),
                Prim::Mul => quote!(*),
                Prim::IRem => quote!(%),
                Prim::IBit(b) => b.symbol().parse().unwrap_or_default(),
                _ => quote!(/),
            };
            return Val::Inactive(quote!((#x #o #y)));
        }
        let is_int = |v: &Val| matches!(v, Val::Active(_, Ty::Int));
        if let Prim::IBit(bit) = op {
            if !is_int(&a) && !is_int(&b) {
                self.errs.push(
                    sa,
                    format!("`{}` applies to integers, and this operand is a differentiable real or a tuple: bitwise operators have no derivative", bit.symbol()),
                );
                return self.placeholder();
            }
        }
        if is_int(&a) || is_int(&b) {
            let x = self.materialize(a, &Ty::Int, sa);
            let y = self.materialize(b, &Ty::Int, sb);
            let p = match op {
                Prim::Add => Prim::IAdd,
                Prim::Sub => Prim::ISub,
                Prim::Mul => Prim::IMul,
                Prim::Div => Prim::IDiv,
                Prim::IBit(b) => Prim::IBit(b),
                _ => Prim::IRem,
            };
            let v = self.emit_nd(
                hint,
                Ty::Int,
                Expr::Prim {
                    prim: p,
                    args: vec![x, y],
                },
            );
            return Val::Active(v, Ty::Int);
        }
        // `%` reaches here as the integer remainder; on reals it is `Rem`.
        let op = if op == Prim::IRem { Prim::Rem } else { op };
        let x = self.scalar(a, sa);
        let y = self.scalar(b, sb);
        self.prim(op, vec![x, y], hint)
    }

    /// A comparison of two reals or two integers, as a `bool`.
    fn compare(&mut self, c: Cmp, a: Val, b: Val, sa: Span, sb: Span) -> Val {
        if self.is_poison(&a) || self.is_poison(&b) {
            return self.placeholder();
        }
        // Of two constants (`self.id == 0`, constant fields of an active
        // struct): a constant, whatever their type.
        if let (Val::Inactive(x), Val::Inactive(y)) = (&a, &b) {
            let op = match c {
                Cmp::Lt => quote!(<),
                Cmp::Le => quote!(<=),
                Cmp::Gt => quote!(>),
                Cmp::Ge => quote!(>=),
                Cmp::Eq => quote!(==),
                Cmp::Ne => quote!(!=),
            };
            let group =
                |t: &TokenStream| proc_macro2::Group::new(proc_macro2::Delimiter::None, t.clone());
            let (x, y) = (group(x), group(y));
            return Val::Inactive(quote!(#x #op #y));
        }
        let is = |v: &Val, t: &Ty| matches!(v, Val::Active(_, u) if u == t);
        let (x, y) = if is(&a, &Ty::Int) || is(&b, &Ty::Int) {
            (
                self.materialize(a, &Ty::Int, sa),
                self.materialize(b, &Ty::Int, sb),
            )
        } else {
            (self.scalar(a, sa), self.scalar(b, sb))
        };
        let v = self.emit_nd(
            "c",
            Ty::Bool,
            Expr::Prim {
                prim: Prim::Cmp(c),
                args: vec![x, y],
            },
        );
        Val::Active(v, Ty::Bool)
    }

    /// A method call: not linear in a `#[linear]` function; a `collect`
    /// or a reduction over arrays or ranges, lowered as the loop it
    /// stands for ([`array`]); else a float method or a call through a
    /// method.
    fn method_expr(
        &mut self,
        e: &syn::Expr,
        m: &syn::ExprMethodCall,
        ret_hint: Option<&Shape>,
        hint: &str,
    ) -> Val {
        if self.mode == Mode::Linear {
            let names = self.linear_names(e.to_token_stream());
            self.errs.spanned(
                e,
                format!(
                    "`{}` of the linear value {names} is not linear: a `#[linear]` function may add, subtract and negate linear values and scale or divide them by coefficients",
                    m.method
                ),
            );
            return self.placeholder();
        }
        if let Some(v) = self.generic_from(e, hint) {
            return v;
        }
        if let Some(e) = iter::unwrapped(m) {
            return self.expr(&e, hint);
        }
        let (loop_form, unsupported) = if array::is_collect(m) {
            (
                self.array_collect(m, ret_hint),
                "`collect` in differentiable functions gathers iterations over arrays or ranges into a `Vec`: `a.iter().map(|v| ..).collect::<Vec<f64>>()`, with `.copied()`, `.enumerate()`, `.zip(..)`, `.rev()`, `.skip(s)`, `.take(t)`, `.step_by(k)`, `.chain(..)`, `.filter(|v| ..)`, over `a[1..]`, or `(0..n).map(|i| ..).collect::<Vec<f64>>()`",
            )
        } else if array::is_reduction(m) {
            (self.array_reduction(m), REDUCTIONS)
        } else {
            return self.method_call(m, ret_hint, hint);
        };
        match loop_form {
            Some(block) => self.expr(&block, hint),
            None => {
                self.errs.spanned(e, unsupported);
                self.placeholder()
            }
        }
    }

    fn expr(&mut self, e: &syn::Expr, hint: &str) -> Val {
        // The expected result shape applies to this expression only if it is
        // a call (possibly parenthesised), not to calls nested inside it.
        let ret_hint = self.ret_hint.take();
        let context = self.context.take();
        if self.any_poisoned && self.mentions_poisoned(e.to_token_stream()) {
            return self.placeholder();
        }
        // Exits in statement position were desugared (`exits.rs`); one left
        // here is inside an expression. An IR `if`, `match` or block is
        // lowered arm by arm, which finds it where it is.
        let lowered_in_parts = matches!(
            e,
            syn::Expr::If(_) | syn::Expr::Match(_) | syn::Expr::Block(_)
        ) && self.expr_mentions_active(e);
        if exits::leaves(e) && !lowered_in_parts {
            self.errs.spanned(e, "`return`, `break`, `continue` or `?` inside an expression is not supported in differentiable functions: use them as statements (`if c { return x; }`)");
            return self.placeholder();
        }
        if !self.expr_mentions_active(e) {
            return Val::Inactive(self.rename_inactive(e));
        }
        if let Some(v) = self.in_place(e, ret_hint.as_ref(), context.as_ref()) {
            return v;
        }
        match e {
            syn::Expr::If(i) if self.mode == Mode::Differentiable => {
                self.if_expr(i, true).unwrap_or_else(|| self.placeholder())
            }
            syn::Expr::Match(m) if self.mode == Mode::Differentiable => self
                .match_expr(m, true)
                .unwrap_or_else(|| self.placeholder()),
            syn::Expr::ForLoop(f) if self.mode == Mode::Differentiable => {
                self.for_loop(f);
                Val::Inactive(quote!(()))
            }
            syn::Expr::While(w) if self.mode == Mode::Differentiable => {
                self.while_loop(w);
                Val::Inactive(quote!(()))
            }
            syn::Expr::Loop(l) => {
                self.errs.spanned(l, "a `loop` with a value (`break value`) is not supported: assign the value to a `let mut` variable, then `break`");
                self.placeholder()
            }
            syn::Expr::Path(p) => self.path_expr(e, p, ret_hint, context),
            syn::Expr::Paren(p) => {
                self.ret_hint = ret_hint;
                self.context = context;
                self.expr(&p.expr, hint)
            }
            syn::Expr::Group(g) => {
                self.ret_hint = ret_hint;
                self.context = context;
                self.expr(&g.expr, hint)
            }
            syn::Expr::Binary(b) => self.binary_expr(e, b, hint),
            syn::Expr::Unary(u) => {
                // `*v` has the type `v` has.
                if matches!(u.op, syn::UnOp::Deref(_)) {
                    self.context = context;
                }
                self.unary_expr(e, u, hint)
            }
            syn::Expr::MethodCall(m) => self.method_expr(e, m, ret_hint.as_ref(), hint),
            syn::Expr::Call(c) => self.call_expr(e, c, ret_hint, hint),
            syn::Expr::Tuple(t) => {
                let vals: Vec<(Val, Span, TokenStream)> = t
                    .elems
                    .iter()
                    .map(|x| (self.expr(x, hint), x.span(), x.to_token_stream()))
                    .collect();
                self.aggregate(vals, false, hint)
            }
            syn::Expr::Array(a) => {
                let vals: Vec<(Val, Span, TokenStream)> = a
                    .elems
                    .iter()
                    .map(|x| (self.expr(x, hint), x.span(), x.to_token_stream()))
                    .collect();
                self.aggregate(vals, true, hint)
            }
            syn::Expr::Field(f) => self.field_expr(f, hint),
            syn::Expr::Struct(s) => self.struct_expr(s, hint),
            syn::Expr::Index(ix) => self.index_expr(ix, hint),
            syn::Expr::Block(b) if b.label.is_none() => {
                self.scopes.push(HashMap::default());
                let r = self.block_body(&b.block.stmts, false);
                self.scopes.pop();
                match r {
                    Some((v, _)) => v,
                    None => self.placeholder(),
                }
            }
            syn::Expr::Cast(c) => self.cast_expr(e, c, hint),
            syn::Expr::Macro(_) if self.mode == Mode::Differentiable => match self.local_array(e) {
                Some(v) => v,
                None => {
                    self.errs.spanned(e, "macro invocations on differentiable values are not supported in differentiable functions, other than `vec![a, b, c]` and `vec![v; n]` of floats");
                    self.placeholder()
                }
            },
            syn::Expr::Reference(r) if self.mode == Mode::Differentiable => {
                self.reference_expr(e, r, hint)
            }
            _ => {
                self.errs.spanned(
                    e,
                    format!(
                        "{} are not supported in differentiable functions yet",
                        describe(e)
                    ),
                );
                self.placeholder()
            }
        }
    }

    /// A name: an IR value, a name a constant pattern bound (read in
    /// place, as the type its context gives where it reads the IR's
    /// values), or inactive Rust.
    fn path_expr(
        &mut self,
        e: &syn::Expr,
        p: &syn::ExprPath,
        ret_hint: Option<Shape>,
        context: Option<Ty>,
    ) -> Val {
        let Some(id) = p.path.get_ident() else {
            self.errs.spanned(p, "unsupported path");
            return self.placeholder();
        };
        match self.lookup(&id.to_string()).cloned() {
            Some(Binding::Active(v, t, _)) => Val::Active(v, t),
            Some(Binding::Extract { code: t, .. }) => {
                let ty = ret_hint.as_ref().map(Shape::ty).or(context);
                self.extracted_in_place(&t, ty, e.span())
            }
            Some(Binding::Closure(_)) => {
                self.errs.spanned(e, "a closure is supported called by its name (`f(x)`), where each call is its body; it cannot be used as a value (bound again, passed or returned)");
                self.placeholder()
            }
            _ => Val::Inactive(self.rename_inactive(e)),
        }
    }

    /// `&x`: a shared reference to a value (`let b = &bodies[i];`) reads
    /// the value, since nothing writes it while the reference lives
    /// (rustc checks that on the original) and `*b` reads it again; not a
    /// part of an array (`&x[1..3]`), a `&mut`, nor a call result taken to
    /// be a float.
    fn reference_expr(&mut self, e: &syn::Expr, r: &syn::ExprReference, hint: &str) -> Val {
        if let Some(why) = self.assumed_reference(r) {
            self.errs.spanned(e, why);
            return self.placeholder();
        }
        let part =
            matches!(&*r.expr, syn::Expr::Index(ix) if matches!(&*ix.index, syn::Expr::Range(_)));
        if part {
            self.errs.spanned(e, "a part of an array held in a variable is not supported yet: index the array itself (`x[lo + k]`), iterate over the part (`for v in &x[lo..hi]`), or pass it to a call (`f(&x[lo..hi])`)");
            return self.placeholder();
        }
        if r.mutability.is_some() {
            self.errs.spanned(
                e,
                format!(
                    "{} are not supported in differentiable functions yet",
                    describe(e)
                ),
            );
            return self.placeholder();
        }
        self.expr(&r.expr, hint)
    }

    /// Why `&x` fails, if `x` is a call result taken to be a float (a
    /// struct the code passes on by reference).
    fn assumed_reference(&self, r: &syn::ExprReference) -> Option<String> {
        let syn::Expr::Path(p) = &*r.expr else {
            return None;
        };
        match self.lookup(&p.path.get_ident()?.to_string())? {
            Binding::Active(v, ..) => self.assumed_float(v),
            _ => None,
        }
    }

    /// `f(..)`: a float function by its type's path (`f64::max(a, b)`,
    /// `T::sqrt(x)`), a primitive; any other call, a call of another
    /// function ([`Lowerer::call_function`]).
    fn call_expr(
        &mut self,
        e: &syn::Expr,
        c: &syn::ExprCall,
        ret_hint: Option<Shape>,
        hint: &str,
    ) -> Val {
        if is_stop_gradient(&c.func) {
            return self.stop_gradient(c, hint);
        }
        let name = match &*c.func {
            syn::Expr::Path(p) if p.path.segments.len() == 2 => {
                let ty = p.path.segments[0].ident.to_string();
                let float = ty == "f64" || ty == "f32";
                let float = float || generic::float_type_path(&p.path.segments[0].ident);
                float.then(|| p.path.segments[1].ident.clone())
            }
            _ => None,
        };
        if let (Some(method), Mode::Linear) = (&name, self.mode) {
            let names = self.linear_names(e.to_token_stream());
            self.errs.spanned(
                e,
                format!("`{method}` of the linear value {names} is not linear: a `#[linear]` function may add, subtract and negate linear values and scale or divide them by coefficients"),
            );
            return self.placeholder();
        }
        let Some(method) = name else {
            return self.call_function(c, ret_hint, hint);
        };
        let mut it = c.args.iter();
        let Some(first) = it.next() else {
            self.errs.spanned(c, "missing argument");
            return self.placeholder();
        };
        let recv = (self.expr(first, hint), first.span());
        let rest: Vec<&syn::Expr> = it.collect();
        let args: Vec<(Val, Span)> = rest
            .iter()
            .map(|a| (self.expr(a, hint), a.span()))
            .collect();
        self.call_prim(&method.to_string(), method.span(), recv, args, &rest, hint)
    }

    /// `base[i]`: an element of an array read by index, or a part of a
    /// tuple-like fixed-size array; `a[i][j]` of an array of rows reads one
    /// element of its flat array.
    fn index_expr(&mut self, ix: &syn::ExprIndex, hint: &str) -> Val {
        let base = match &*ix.expr {
            syn::Expr::Index(inner) => {
                let rows = self.expr(&inner.expr, hint);
                if let Some(v) = self.row_element(&rows, &inner.index, &ix.index) {
                    return v;
                }
                self.index_into(rows, inner)
            }
            other => self.expr(other, hint),
        };
        self.index_into(base, ix)
    }

    /// `ix` applied to `base`, already lowered.
    fn index_into(&mut self, base: Val, ix: &syn::ExprIndex) -> Val {
        if let Some(v) = self.array_index(&base, ix) {
            return v;
        }
        let k = match &*ix.index {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => i.base10_parse::<usize>().ok(),
            _ => None,
        };
        let Some(k) = k else {
            if let Some(v) = self
                .view_of(&base)
                .and_then(|view| self.array_index(&view, ix))
            {
                return v;
            }
            // A value an error left without a type: reported already.
            if self.is_poison(&base) {
                return self.placeholder();
            }
            self.errs.spanned(&ix.index, "a fixed-size array held by value (`[f64; N]`) is indexed by a run-time integer only where it is a variable or field holding floats that the loop indexing it does not write (it is copied before the loop); elsewhere index it by integer literals, take it by reference (`&[f64; N]`) or as a slice (`&[f64]`), or index the array it came from (`a[i][j]`)");
            return self.placeholder();
        };
        self.select(base, k, ix.span())
    }

    /// `recv.method(args..)`: a struct's method (a call), an array's
    /// `len()`, a copy of an array only read, or a primitive (`x.sin()`,
    /// `x.powi(n)`, ..).
    fn method_call(
        &mut self,
        m: &syn::ExprMethodCall,
        ret_hint: Option<&Shape>,
        hint: &str,
    ) -> Val {
        let clone = m.method == "clone" && m.args.is_empty();
        if clone {
            // A copy has the type of what it copies.
            self.ret_hint = ret_hint.cloned();
        }
        let recv = self.expr(&m.receiver, hint);
        if let Some(st) = self.struct_of(&recv) {
            // A struct is a value in the IR: its copy is itself.
            if clone {
                return recv;
            }
            let owner = st.path.clone();
            return self.call_method(m, (recv, &owner), ret_hint.cloned(), hint);
        }
        // A method of a `#[nondiff]` struct parameter: a call, the receiver
        // a constant, where the method's signature is known; else, given
        // differentiable arguments, refused (the receiver may or may not be
        // `#[nondiff]`).
        if let (Val::Inactive(_), Some(owner)) = (&recv, self.constant_receiver(&m.receiver)) {
            // A method of this block: its signature says how the receiver
            // crosses (`call::constant_structs`).
            let mut path = owner.clone();
            path.segments.push(m.method.clone().into());
            if self.sigs.get(&path).is_some() {
                return self.call_method(m, (recv, &owner), ret_hint.cloned(), hint);
            }
            if m.args.iter().any(|a| self.expr_mentions_active(a)) {
                let r = &m.receiver;
                let name = quote::quote!(#r).to_string().replace(' ', "");
                let msg = format!("`{name}` is a `#[nondiff]` struct parameter, whose methods differentiable code cannot call yet with differentiable arguments (it cannot see whether the method takes its receiver as `#[nondiff]`): remove `#[nondiff]` from the parameter (its cotangent is then computed too, and can be ignored), or mark the struct's fields `#[nondiff]` instead");
                self.errs.spanned(r, msg);
                return self.placeholder();
            }
        }
        if let Some(why) = match &recv {
            Val::Active(v, _) => self.assumed_float(v),
            Val::Inactive(_) => None,
        } {
            self.errs.spanned(&m.method, why);
            return self.placeholder();
        }
        if m.method == "len" && m.args.is_empty() {
            if let Some(n) = self.array_len(&recv) {
                return n;
            }
            // A fixed-size array held as a tuple: its length is its type's.
            if let Val::Active(v, _) = &recv {
                if let Some(Shape::Array(_, n)) = self.shapes.get(v) {
                    let n = proc_macro2::Literal::usize_suffixed(*n);
                    return Val::Inactive(quote::quote!(#n));
                }
            }
        }
        if m.method == "is_empty" && m.args.is_empty() {
            if let Some(Val::Active(n, _)) = self.array_len(&recv) {
                let zero = self.emit_nd("k", Ty::Int, Expr::Int(0));
                let prim = Prim::Cmp(Cmp::Eq);
                let empty = self.emit_nd(
                    "e",
                    Ty::Bool,
                    Expr::Prim {
                        prim,
                        args: vec![n, zero],
                    },
                );
                return Val::Active(empty, Ty::Bool);
            }
        }
        // Arrays are values in the IR: a copy only read is the
        // array itself (a copy written is made by `local`).
        if (m.method == "to_vec" || m.method == "clone")
            && m.args.is_empty()
            && matches!(recv, Val::Active(_, Ty::Array(..)))
        {
            return recv;
        }
        if let Some(v) = self.constant_method(m, &recv) {
            return v;
        }
        let args: Vec<(Val, Span)> = m
            .args
            .iter()
            .map(|a| (self.expr(a, hint), a.span()))
            .collect();
        self.call_prim(
            &m.method.to_string(),
            m.method.span(),
            (recv, m.receiver.span()),
            args,
            &m.args.iter().collect::<Vec<_>>(),
            hint,
        )
    }

    /// A method of a constant computed in place (a constant field of a
    /// differentiable struct, `ps[i].id.is_multiple_of(2)`) or of an
    /// integer or bool the IR computes (a loop index, `i.pow(2)`), with
    /// constant arguments: Rust's own method, run where it stands. An
    /// integer's method gives an integer, but for the tests `is_*`, which
    /// give a bool.
    fn constant_method(&mut self, m: &syn::ExprMethodCall, recv: &Val) -> Option<Val> {
        if m.args
            .iter()
            .any(|a| self.mentions_diff(a.to_token_stream()))
        {
            return None;
        }
        let (method, turbofish) = (&m.method, &m.turbofish);
        match recv {
            Val::Inactive(r) if !m.args.iter().any(|a| self.expr_mentions_active(a)) => {
                let args = m.args.iter().map(|a| self.rename_inactive(a));
                Some(Val::Inactive(quote!((#r).#method #turbofish (#(#args),*))))
            }
            Val::Active(v, ty @ (Ty::Int | Ty::Bool))
                if self.nondiff.contains(v) && crate::lower::is_name(&m.receiver) =>
            {
                let ty = match (ty, method.to_string().starts_with("is_")) {
                    (Ty::Int, true) => Ty::Bool,
                    (t, _) => t.clone(),
                };
                let e = syn::Expr::MethodCall(m.clone());
                Some(Val::Active(self.opaque(&e, ty.clone()), ty))
            }
            _ => None,
        }
    }

    fn aggregate(&mut self, vals: Vec<(Val, Span, TokenStream)>, array: bool, hint: &str) -> Val {
        if let Some((_, span, _)) = vals
            .iter()
            .find(|(v, _, _)| matches!(v, Val::Active(_, Ty::Array(..))))
        {
            self.errs.push(*span, "a differentiable array inside a tuple or an array is not supported yet: index it where it is used");
            return self.placeholder();
        }
        let f = self.float();
        let mut vars = Vec::new();
        let mut tys = Vec::new();
        for (v, span, node) in vals {
            let ty = match &v {
                Val::Active(_, t) => t.clone(),
                Val::Inactive(_) => Ty::Real(f),
            };
            let var = if self.mode == Mode::Linear {
                self.linear_value(v, &ty, &node, "this tuple component")
            } else {
                self.materialize(v, &ty, span)
            };
            vars.push(var);
            tys.push(ty);
        }
        let shapes: Vec<Shape> = vars.iter().map(|v| self.shape_of(v)).collect();
        if self.mode == Mode::Linear {
            let ty = Ty::Tuple(tys);
            let v = self.emit_lin(hint, ty.clone(), Expr::LinTup(vars));
            self.shapes.insert(v.clone(), Shape::Tuple(shapes));
            return Val::Active(v, ty);
        }
        let shape = match shapes.first() {
            Some(first) if array && shapes.iter().all(|s| s == first) => {
                Shape::Array(Box::new(first.clone()), shapes.len())
            }
            _ => Shape::Tuple(shapes),
        };
        let ty = Ty::Tuple(tys);
        let origins: Vec<Option<structs::Origin>> =
            vars.iter().map(|x| self.origins.get(x).cloned()).collect();
        let v = self.emit(hint, ty.clone(), Expr::Tup(vars));
        self.shapes.insert(v.clone(), shape);
        if origins.iter().any(Option::is_some) {
            self.tuple_origins.insert(v.clone(), origins);
        }
        Val::Active(v, ty)
    }

    fn shape_of(&self, v: &Var) -> Shape {
        self.shapes.get(v).cloned().unwrap_or_else(|| {
            self.types
                .get(v)
                .map_or(Shape::Float(self.float()), Shape::of_ty)
        })
    }

    fn select(&mut self, base: Val, k: usize, span: Span) -> Val {
        match base {
            Val::Active(v, ty) => {
                let Some(cs) = self.components(&v, &ty, span) else {
                    return self.placeholder();
                };
                match cs.get(k) {
                    Some((c, t)) => Val::Active(c.clone(), t.clone()),
                    None => {
                        self.errs.push(
                            span,
                            format!(
                                "index {k} is out of bounds for a value with {} elements",
                                cs.len()
                            ),
                        );
                        self.placeholder()
                    }
                }
            }
            Val::Inactive(t) => {
                let idx = syn::Index::from(k);
                Val::Inactive(quote!(#t.#idx))
            }
        }
    }

    /// Reports `method`, called on `recv`, as no operation differentiable
    /// code has; a method of a value already reported is not reported
    /// again.
    fn unsupported_method(&mut self, method: &str, mspan: Span, recv: &Val) {
        let array = matches!(recv, Val::Active(_, Ty::Array(..)));
        let iteration = matches!(
            method,
            "iter" | "into_iter" | "iter_mut" | "chunks" | "windows"
        );
        let msg = if self.is_poison(recv) {
            return;
        } else if array && iteration {
            format!("this iteration is not one differentiable code runs: {REDUCTIONS}; `for` loops over them, and `collect`")
        } else if array {
            format!("`{method}` of an array is not supported in differentiable code: read its elements by index (`a[0]`, `a[a.len() - 1]`), or reduce it (`a.iter().fold(init, |acc, v| ..)`, `a.iter().copied().fold(f64::NEG_INFINITY, f64::max)`)")
        } else {
            format!("`{method}` is not a differentiable operation; the supported float methods are {METHODS}")
        };
        self.errs.push(mspan, msg);
    }

    fn call_prim(
        &mut self,
        method: &str,
        mspan: Span,
        recv: (Val, Span),
        args: Vec<(Val, Span)>,
        raw_args: &[&syn::Expr],
        hint: &str,
    ) -> Val {
        let unary = match method {
            "sin" => Some(Prim::Sin),
            "cos" => Some(Prim::Cos),
            "tan" => Some(Prim::Tan),
            "asin" => Some(Prim::Asin),
            "acos" => Some(Prim::Acos),
            "atan" => Some(Prim::Atan),
            "sinh" => Some(Prim::Sinh),
            "cosh" => Some(Prim::Cosh),
            "tanh" => Some(Prim::Tanh),
            "exp" => Some(Prim::Exp),
            "exp2" => Some(Prim::Exp2),
            "ln" => Some(Prim::Ln),
            "log2" => Some(Prim::Log2),
            "log10" => Some(Prim::Log10),
            "sqrt" => Some(Prim::Sqrt),
            "cbrt" => Some(Prim::Cbrt),
            "recip" => Some(Prim::Recip),
            "abs" => Some(Prim::Abs),
            "signum" => Some(Prim::Signum),
            "ln_1p" => Some(Prim::Ln1p),
            "exp_m1" => Some(Prim::ExpM1),
            "asinh" => Some(Prim::Asinh),
            "acosh" => Some(Prim::Acosh),
            "atanh" => Some(Prim::Atanh),
            "floor" => Some(Prim::Floor),
            "ceil" => Some(Prim::Ceil),
            "round" => Some(Prim::Round),
            "trunc" => Some(Prim::Trunc),
            _ => None,
        };
        let binary = match method {
            "atan2" => Some(Prim::Atan2),
            "powf" => Some(Prim::Powf),
            "hypot" => Some(Prim::Hypot),
            "min" => Some(Prim::Min),
            "max" => Some(Prim::Max),
            "copysign" => Some(Prim::Copysign),
            "rem_euclid" => Some(Prim::RemEuclid),
            _ => None,
        };
        let want = if let Some(n) = methods::composed(method) {
            n
        } else if unary.is_some() {
            0
        } else if binary.is_some() || method == "powi" {
            1
        } else {
            self.unsupported_method(method, mspan, &recv.0);
            return self.placeholder();
        };
        if args.len() != want {
            self.errs.push(
                mspan,
                format!("`{method}` takes {want} argument(s) besides the receiver"),
            );
            return self.placeholder();
        }
        let x = self.scalar(recv.0, recv.1);
        if methods::composed(method).is_some() {
            let args = args.into_iter().map(|(a, s)| self.scalar(a, s)).collect();
            return self.composed_method(method, x, args, hint);
        }
        if let Some(p) = unary {
            return self.prim(p, vec![x], hint);
        }
        if method == "powi" {
            if let Some(n) = raw_args.first().and_then(|a| int_literal(a)) {
                return self.prim(Prim::Powi(n), vec![x], hint);
            }
            // An exponent computed at run time: `powin(x, n)`.
            let mut it = args.into_iter();
            let (n, sn) = it.next().unwrap_or((Val::Inactive(quote!(0)), mspan));
            if self.mentions_diff_val(&n) {
                self.errs.push(sn, "the exponent of `powi` is an integer: it cannot depend on a differentiable value; use `powf`");
                return self.placeholder();
            }
            let n = self.materialize(n, &Ty::Int, sn);
            return self.prim(Prim::PowiN, vec![x, n], hint);
        }
        let mut it = args.into_iter();
        let (a, sa) = it.next().unwrap_or((Val::Inactive(quote!(0.0)), mspan));
        let y = self.scalar(a, sa);
        match binary {
            Some(p) => self.prim(p, vec![x, y], hint),
            None => self.placeholder(),
        }
    }
}

fn rename_tokens(l: &Lowerer, tokens: TokenStream) -> TokenStream {
    tokens
        .into_iter()
        .map(|tt| match tt {
            TokenTree::Ident(i) => match l.lookup(&i.to_string()) {
                Some(Binding::Inactive(id, _)) => TokenTree::Ident(id.clone()),
                Some(Binding::Extract { code: t, .. }) => TokenTree::Group(
                    proc_macro2::Group::new(proc_macro2::Delimiter::None, pattern::read_form(t)),
                ),
                _ => TokenTree::Ident(i),
            },
            TokenTree::Group(g) => {
                let mut ng = proc_macro2::Group::new(g.delimiter(), rename_tokens(l, g.stream()));
                ng.set_span(g.span());
                TokenTree::Group(ng)
            }
            other => other,
        })
        .collect()
}

fn int_literal(e: &syn::Expr) -> Option<i32> {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse().ok(),
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => {
            int_literal(&u.expr).map(|n| -n)
        }
        syn::Expr::Paren(p) => int_literal(&p.expr),
        syn::Expr::Group(g) => int_literal(&g.expr),
        _ => None,
    }
}

/// The value of a float (or integer-valued) literal, possibly negated or
/// parenthesised.
fn float_literal(tokens: &TokenStream) -> Option<f64> {
    let e: syn::Expr = syn::parse2(tokens.clone()).ok()?;
    fn val(e: &syn::Expr) -> Option<f64> {
        match e {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Float(f),
                ..
            }) => f.base10_parse().ok(),
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => val(&u.expr).map(|x| -x),
            syn::Expr::Paren(p) => val(&p.expr),
            syn::Expr::Group(g) => val(&g.expr),
            _ => generic::generic_constant(e),
        }
    }
    val(&e)
}

/// The Rust spelling of an IR type (tuples for tuples).
pub fn ty_rust(t: &Ty) -> TokenStream {
    match t {
        Ty::Real(f) => crate::codegen::float_ty(*f),
        Ty::Tuple(ts) => {
            let ts = ts.iter().map(ty_rust);
            quote!((#(#ts,)*))
        }
        // A callee's tape: its type is the callee's business; let Rust
        // infer it where it can. Integers take the width of the user's code.
        Ty::Tape(_) | Ty::Int => quote!(_),
        Ty::Bool => quote!(bool),
        Ty::Sum(ts) => crate::codegen::sum_type(&ts.iter().map(ty_rust).collect::<Vec<_>>()),
        // A loop's tape: inline (`ArrayVec`, whose length this says), or
        // a recycled `Tape` or a `Vec` by where the loop is
        // (`codegen::pooled`), which the code that builds it says.
        Ty::List(e, _) if crate::codegen::inline_len(t).is_some() => {
            crate::codegen::list_type(t, ty_rust(e), false)
        }
        Ty::List(..) => quote!(_),
        // A non-linear array is an input, borrowed (on a tape too); a
        // linear one is a cotangent buffer, owned: [`owned_array`].
        Ty::Array(e, Some(n)) => {
            let (e, n) = (ty_rust(e), Literal::usize_unsuffixed(*n as usize));
            quote!(&[#e; #n])
        }
        Ty::Array(e, None) => {
            let e = ty_rust(e);
            quote!(&[#e])
        }
    }
}

/// The Rust type of a linear array, a cotangent buffer: `[τ; n]` when its
/// length is known, else a `Vec`; `ty_rust` for other types.
pub fn owned_array(t: &Ty) -> TokenStream {
    match t {
        Ty::Array(e, Some(n)) => {
            let (e, n) = (ty_rust(e), Literal::usize_unsuffixed(*n as usize));
            quote!([#e; #n])
        }
        Ty::Array(e, None) => {
            let e = ty_rust(e);
            quote!(::linear_ad::__private::Vec<#e>)
        }
        other => ty_rust(other),
    }
}

/// Constant code as a `let`'s value: without the parentheses it had as an
/// operand (`x * (n as f64 + 0.5)`), which rustc's `unused_parens` lint,
/// at the user's span, would call unnecessary there.
pub(super) fn unparen(tokens: TokenStream) -> TokenStream {
    match syn::parse2::<syn::Expr>(tokens.clone()) {
        Ok(syn::Expr::Paren(p)) => unparen(p.expr.to_token_stream()),
        // A block that is only its value (`{ -1.0 }`, an arm of an `if`
        // lowered arm by arm) is linted as unnecessary braces there too.
        Ok(syn::Expr::Block(b)) if b.attrs.is_empty() && b.label.is_none() => {
            match b.block.stmts.as_slice() {
                [syn::Stmt::Expr(e, None)] => unparen(e.to_token_stream()),
                _ => tokens,
            }
        }
        _ => tokens,
    }
}

/// Why a `#[nondiff]` struct parameter (`e`) cannot be passed to a
/// differentiable parameter whose struct's layout the callee's signature
/// does not give, and what to do instead.
pub(super) fn constant_struct_message(e: &syn::Expr) -> String {
    let name = quote::quote!(#e).to_string().replace(' ', "");
    format!("`{name}` is a `#[nondiff]` struct parameter, and the layout of the struct the called function takes here is not known: remove `#[nondiff]` from the parameter (its cotangent is then computed too, and can be ignored)")
}

/// `e` without the `&`, `*` and parentheses around it.
pub(super) fn constant_param(e: &syn::Expr) -> &syn::Expr {
    match exits::strip(e) {
        syn::Expr::Reference(r) => constant_param(&r.expr),
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => constant_param(&u.expr),
        other => other,
    }
}
