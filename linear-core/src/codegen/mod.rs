//! Code generation: a Linear A function body to Rust.
//!
//! Every IR variable becomes a Rust local with a `Span::mixed_site()`
//! identifier, so generated names can neither capture nor be captured by
//! the user's; names stay close to the IR's (`z.2` prints as `z_2`) for
//! readability in `cargo expand`. Bindings map one to one onto `let`s,
//! but for `dup` of a `Copy` value, whose two results are the original's
//! local under two IR names (a third of the `let`s J writes are `dup`s,
//! and each costs the compiler a scope and a move), and for a real
//! computed by one operation and read once by another in the same block,
//! which is printed inside the expression that reads it, up to
//! [`INLINE`] operations deep ([`mark_inline`]: for a 2,000-statement
//! straight-line function, 61% fewer `let`s and a third fewer bytes; the
//! same operations in the same order, so the same rounding). Straight-line IR
//! becomes straight-line Rust on plain floats and tuples, with no heap, no
//! trait objects and no `unsafe`, which LLVM optimises like hand-written
//! code; a very long body is split into nested functions for rustc's sake
//! (`gen_stmts`). The values a chunk passes on travel in tuples of at most
//! `WIDE` (16), and a wide tape is read from the linearization's fields
//! where a chunk reads it ([`body_holding`]) and returned by the forward
//! pass in groups ([`forward_body`]): rustc checks one tuple, or tuple
//! pattern, of thousands of values in time quadratic in its length. (The
//! linearization's struct holds such a tape in group fields of `WIDE`
//! values too: `expand::items`' `Tape`.)
//!
//! Linear operations on tuples are expanded componentwise in place (no
//! helper trait), so every operation is visible to the optimiser. `drop`
//! becomes `let _ = …;` so no value is left unused.
//!
//! Control flow stays control flow: a case on a bool is an `if`, a case on
//! a sum a `match` on `linear_ad::__private::Branch` (nested for more than
//! two alternatives), a loop a Rust `for` (over a range or a list) or
//! `loop` (`while`), never unrolled. A loop's state is one `let mut` tuple
//! (its components are reals, integers and tangents: `Copy`), its
//! collected outputs `Vec`s allocated once from the iterator's size hint
//! (grown for `while`). A `zeroskip` loop (a reversed loop whose incoming
//! cotangents are reals) runs under `if` one of those reals is nonzero
//! (`linear_ad::__private::is_zero`). The bounds checks of the arrays a range loop
//! indexes by its index are made once before it ([`bounds`]), and the
//! arrays it indexes at its index plus a loop-invariant offset are sliced
//! to the elements it reaches and indexed from the window's start, the
//! loop counting its iterations from 0 ([`window`]), so that LLVM removes
//! the checks from the loop and can vectorise it.
//!
//! Tapes are read, not copied: the forward pass owns the values it builds,
//! but `apply` and `transpose` receive the tape as a tuple of the struct's
//! fields in which every non-`Copy` part (a list, a sum holding one, a
//! callee's tape) is a reference ([`Hold::Shallow`]). Each variable carries
//! how it holds its value ([`Hold`]), so unpacking, matching and iterating
//! borrow where the value is borrowed (`ref` patterns, `.iter()`).
//!
//! Input: a function that type-checks in Linear A. Calls ([`Expr::App`])
//! are not generated here: the driver compiles each function separately.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use proc_macro2::{Delimiter, Group, Literal, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, ToTokens};

use crate::ir::{Arm, Binder, Expr, Float, Func, Iter, Loop, Prim, Stmt, Ty, Var};
use crate::lower::ty_rust;

mod bounds;
mod window;

/// The first loop among the top-level statements of `f`'s body: what the
/// loop analyses' tests ([`bounds`], [`window`]) look at.
#[cfg(test)]
fn first_loop(f: &Func) -> &Loop {
    let Expr::Block { stmts, .. } = &f.body else {
        panic!("a block")
    };
    stmts
        .iter()
        .find_map(|s| match s {
            Stmt::Let {
                rhs: Expr::Loop(l), ..
            } => Some(&**l),
            Stmt::Let { .. } | Stmt::Unpack { .. } | Stmt::LinUnpack { .. } => None,
        })
        .expect("a loop")
}

/// How a generated local holds the value of its IR variable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hold {
    /// The value itself.
    #[default]
    Owned,
    /// A reference to the value (a non-`Copy` value borrowed from a tape).
    Ref,
    /// A tuple whose non-`Copy` components are references (the tape
    /// handed to `apply` and `transpose`).
    Shallow,
}

/// Whether Rust values of this type are `Copy` (lists and callees' tapes
/// are not; a callee's tape may hold lists).
pub fn is_copy(t: &Ty) -> bool {
    match t {
        Ty::Real(_) | Ty::Int | Ty::Bool => true,
        Ty::Tuple(ts) | Ty::Sum(ts) => ts.iter().all(is_copy),
        Ty::List(..) | Ty::Array(..) | Ty::Tape(_) => false,
    }
}

/// The most bytes a loop's tape with a constant trip count may take to be
/// kept inline in the linearization (an `ArrayVec`) rather than in a `Vec`:
/// a linearization is moved by value, so large inline tapes would cost
/// copies and stack.
pub const INLINE_TAPE_BYTES: u64 = 4096;

/// The length of a list type generated Rust keeps inline
/// (`linear_ad::__private::ArrayVec<T, n>`), or `None` for a `Vec`: lists
/// of known length `n` whose elements have no heap part, up to
/// [`INLINE_TAPE_BYTES`].
pub fn inline_len(t: &Ty) -> Option<u64> {
    fn bytes(t: &Ty) -> Option<u64> {
        match t {
            Ty::Real(_) | Ty::Int | Ty::Bool => Some(8),
            Ty::Tuple(ts) => ts.iter().map(bytes).sum(),
            Ty::Sum(ts) => ts.iter().map(bytes).try_fold(8, |m, b| Some(m.max(b? + 8))),
            Ty::List(..) | Ty::Array(..) | Ty::Tape(_) => None,
        }
    }
    match t {
        Ty::List(e, Some(n)) if bytes(e)?.saturating_mul(*n) <= INLINE_TAPE_BYTES => Some(*n),
        Ty::Real(_)
        | Ty::Int
        | Ty::Bool
        | Ty::Tuple(_)
        | Ty::Sum(_)
        | Ty::List(..)
        | Ty::Array(..)
        | Ty::Tape(_) => None,
    }
}

/// Whether a list of `elem`s that no other list holds is a
/// `linear_ad::__private::Tape`, whose buffer is recycled from call to
/// call (`linear_ad::tape_pool`), rather than a `Vec`: the pool is keyed
/// by type, so its element types must be `'static`, which a callee's
/// linearization (it borrows the callee's array inputs) and the user's
/// generic float type are not known to be.
///
/// The tapes of loops inside loops, which the outer loop's records hold,
/// stay `Vec`s where they are still lists (inline, or holding what a flat
/// array cannot: `passes::records::flat_tapes` makes the others one
/// recycled flat array per record type): a buffer that may come from the
/// pool has no known provenance, so LLVM must assume that the reversed
/// inner loop's reads of it alias its writes to the gradient: `llsq`'s
/// reversed inner loop, reading a pooled `Vec` per outer iteration, was
/// no longer vectorised, and its gradient took 1.7 times the
/// instructions.
pub fn pooled(elem: &Ty) -> bool {
    match elem {
        Ty::Real(f) => *f != Float::Generic,
        Ty::Int | Ty::Bool => true,
        Ty::Tuple(ts) | Ty::Sum(ts) => ts.iter().all(pooled),
        Ty::List(e, _) | Ty::Array(e, _) => pooled(e),
        Ty::Tape(_) => false,
    }
}

/// The Rust type of a list of elements of Rust type `elem`, held by
/// another list's elements or not (`in_list`; see [`pooled`]).
pub fn list_type(t: &Ty, elem: TokenStream, in_list: bool) -> TokenStream {
    match (inline_len(t), t) {
        (Some(n), _) => {
            let n = Literal::usize_unsuffixed(n as usize);
            quote!(::linear_ad::__private::ArrayVec<#elem, #n>)
        }
        (None, Ty::List(e, _)) if !in_list && pooled(e) => {
            quote!(::linear_ad::__private::Tape<#elem>)
        }
        (None, _) => quote!(::linear_ad::__private::Vec<#elem>),
    }
}

/// Rust identifiers for the IR variables of one generated function.
#[derive(Default)]
pub struct Names {
    map: HashMap<Var, syn::Ident>,
    taken: HashSet<String>,
    types: HashMap<Var, Ty>,
    holds: HashMap<Var, Hold>,
    next: usize,
    /// How many loops' bodies are being generated: a loop inside one
    /// records into a `Vec`, not a recycled tape ([`pooled`]).
    loops: usize,
    /// Arrays the loops being generated reach through a window or a cell
    /// ([`window`]).
    windows: HashMap<Var, Reach>,
    /// Carried arrays held as a window (a `&mut` slice) or a cell (one
    /// element's value): their `let`s have no type annotation.
    slices: HashSet<Var>,
    /// Carried arrays a loop pushes to once per iteration, with room made
    /// before it ([`pushed_once`]): pushed to by `record`.
    recorded: HashSet<Var>,
    /// Variables bound to the integer 0: the length of an empty array.
    zeros: HashSet<Var>,
    /// Wide tuple parameters given as the expressions of their elements
    /// and only unpacked ([`body_holding`]): the unpacking binds each
    /// element from its expression.
    parts: HashMap<Var, Vec<TokenStream>>,
    /// A forward pass's wide tape and its elements, returned in groups
    /// without being built flat ([`forward_body`]).
    grouped: Option<(Var, Vec<Var>)>,
    /// Reals printed inside the one operand that reads them rather than
    /// bound by a `let` of their own ([`mark_inline`]).
    inlinable: HashSet<Var>,
    /// The expressions of those of them generated and not yet read.
    inline: HashMap<Var, TokenStream>,
}

/// How the loop being generated reaches an array ([`window`]).
#[derive(Clone)]
enum Reach {
    /// Through a slice of it: the slice's local (`None` where the
    /// variable's own local is the slice, as for carried state), and the
    /// slice's first index.
    Window(Option<syn::Ident>, syn::Ident),
    /// The one element the loop accesses, held by value.
    Cell,
}

impl Names {
    /// `v` as an operand of arithmetic: its expression where it is
    /// printed there ([`mark_inline`]), parenthesised unless it is one
    /// token (a literal), else its local.
    fn operand(&mut self, v: &Var) -> TokenStream {
        match self.inline.remove(v) {
            Some(e) if e.clone().into_iter().nth(1).is_none() => e,
            Some(e) => quote!((#e)),
            None => self.ident(v).into_token_stream(),
        }
    }

    pub fn ident(&mut self, v: &Var) -> syn::Ident {
        if let Some(i) = self.map.get(v) {
            return i.clone();
        }
        let base: String = v
            .as_str()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let base = if base.starts_with(|c: char| c.is_ascii_digit()) || is_keyword(&base) {
            format!("v_{base}")
        } else {
            base
        };
        let mut name = base.clone();
        let mut n = 1;
        while !self.taken.insert(name.clone()) {
            n += 1;
            name = format!("{base}_{n}");
        }
        let id = syn::Ident::new(&name, Span::mixed_site());
        self.map.insert(v.clone(), id.clone());
        id
    }

    /// Makes `v` another name for `target`'s local: a copy of a `Copy`
    /// value needs no `let` of its own.
    fn alias(&mut self, v: &Var, target: &Var) {
        let id = self.ident(target);
        let h = self.hold(target);
        self.map.insert(v.clone(), id);
        self.holds.insert(v.clone(), h);
    }

    fn hold(&self, v: &Var) -> Hold {
        self.holds.get(v).copied().unwrap_or_default()
    }

    /// How a component of type `t` of a borrowed value is held.
    fn part_hold(t: &Ty, whole: Hold) -> Hold {
        match whole {
            Hold::Owned => Hold::Owned,
            Hold::Ref | Hold::Shallow if is_copy(t) => Hold::Owned,
            Hold::Ref | Hold::Shallow => Hold::Ref,
        }
    }

    /// A binding pattern for a component of type `t` inside a borrowed
    /// place: `ref x` where the component is not `Copy`.
    fn bind_part(&mut self, b: &Binder, whole: Hold) -> TokenStream {
        let id = self.ident(&b.var);
        let h = Self::part_hold(&b.ty, whole);
        self.holds.insert(b.var.clone(), h);
        if whole == Hold::Ref && h == Hold::Ref {
            quote!(ref #id)
        } else {
            quote!(#id)
        }
    }

    /// The place to destructure a value held as `h`.
    fn place(&mut self, v: &Var) -> TokenStream {
        let id = self.ident(v);
        match self.hold(v) {
            Hold::Ref => quote!(*#id),
            Hold::Owned | Hold::Shallow => quote!(#id),
        }
    }

    /// Keeps `name` from being given to any variable: it names something
    /// else in the same scope (a linearization's group of fields).
    pub fn reserve(&mut self, name: &str) {
        self.taken.insert(name.to_string());
    }

    /// A fresh identifier for a temporary that has no IR variable.
    pub fn temp(&mut self, hint: &str) -> syn::Ident {
        loop {
            self.next += 1;
            let name = format!("__{hint}{}", self.next);
            if self.taken.insert(name.clone()) {
                return syn::Ident::new(&name, Span::mixed_site());
            }
        }
    }
}

fn is_keyword(s: &str) -> bool {
    matches!(
        s,
        "as" | "break"
            | "const"
            | "continue"
            | "crate"
            | "else"
            | "enum"
            | "extern"
            | "false"
            | "fn"
            | "for"
            | "if"
            | "impl"
            | "in"
            | "let"
            | "loop"
            | "match"
            | "mod"
            | "move"
            | "mut"
            | "pub"
            | "ref"
            | "return"
            | "self"
            | "Self"
            | "static"
            | "struct"
            | "super"
            | "trait"
            | "true"
            | "type"
            | "unsafe"
            | "use"
            | "where"
            | "while"
            | "async"
            | "await"
            | "dyn"
            | "abstract"
            | "become"
            | "box"
            | "do"
            | "final"
            | "macro"
            | "override"
            | "priv"
            | "typeof"
            | "unsized"
            | "virtual"
            | "yield"
            | "try"
            | "gen"
            | "_"
    )
}

/// A name in force while one function is printed, held by a thread
/// local: [`Scoped::set`] returns a guard, and the name that was set
/// before comes back when it drops, so the next function the macro
/// expands in this thread starts without one, and a guard set within
/// another's scope (a derive's, a method's) does not clear it.
type Slot = std::thread::LocalKey<std::cell::RefCell<Option<syn::Ident>>>;

/// The guard of a [`Slot`]: the slot, and the name it held before.
pub struct Scoped(&'static Slot, Option<syn::Ident>);

impl Scoped {
    fn set(slot: &'static Slot, name: Option<syn::Ident>) -> Scoped {
        Scoped(
            slot,
            slot.with(|p| std::mem::replace(&mut *p.borrow_mut(), name)),
        )
    }

    fn get(slot: &'static Slot) -> Option<syn::Ident> {
        slot.with(|p| p.borrow().clone())
    }
}

impl Drop for Scoped {
    fn drop(&mut self) {
        let before = self.1.take();
        self.0.with(|p| *p.borrow_mut() = before);
    }
}

thread_local! {
    static FLOAT_PARAM: std::cell::RefCell<Option<syn::Ident>> =
        const { std::cell::RefCell::new(None) };
    static LANES: std::cell::RefCell<Option<syn::Ident>> =
        const { std::cell::RefCell::new(None) };
}

/// The user's name for [`Float::Generic`] (the `T` of `fn f<T: Float>`)
/// while one generic function is lowered and printed: lowering reads `T`
/// as that type, code generation spells it `T`.
pub struct FloatParam;

impl FloatParam {
    pub fn set(name: Option<syn::Ident>) -> Scoped {
        Scoped::set(&FLOAT_PARAM, name)
    }

    /// The name, if a generic function is being expanded.
    pub fn get() -> Option<syn::Ident> {
        Scoped::get(&FLOAT_PARAM)
    }
}

/// While set, linear code is printed in lanes: every linear real of type
/// `f64` or `f32` is a `linear_ad::Lanes<f64, K>` (`K` the named const
/// parameter), so one run of a linear function carries `K` tangents
/// (`apply_lanes`). Non-linear values (the tape, indices) are unchanged,
/// and the linear forms need nothing else: `c * ẋ`, `ẋ + ẏ`, `-ẋ` and
/// `ȧ[i] += ẋ` are `Lanes`' operators.
pub struct LinearLanes;

impl LinearLanes {
    pub fn set(k: Option<syn::Ident>) -> Scoped {
        Scoped::set(&LANES, k)
    }

    /// The lane count's name, while linear code is printed in lanes.
    pub fn get() -> Option<syn::Ident> {
        Scoped::get(&LANES)
    }
}

/// A tangent type with each float type (`f64`, `f32`) replaced by its
/// lanes, `linear_ad::Lanes<f64, K>`.
pub fn in_lanes(t: &TokenStream, k: &impl quote::ToTokens) -> TokenStream {
    t.clone()
        .into_iter()
        .map(|tt| match tt {
            proc_macro2::TokenTree::Ident(i) if i == "f64" || i == "f32" => {
                quote!(::linear_ad::Lanes<#i, #k>)
            }
            proc_macro2::TokenTree::Group(g) => {
                let mut n = proc_macro2::Group::new(g.delimiter(), in_lanes(&g.stream(), k));
                n.set_span(g.span());
                quote!(#n)
            }
            other => quote!(#other),
        })
        .collect()
}

/// The Rust type of a linear value: an owned buffer for an array
/// ([`crate::lower::owned_array`]), its reals in lanes while
/// [`LinearLanes`] is set.
fn lin_ty(t: &Ty) -> TokenStream {
    let owned = crate::lower::owned_array(t);
    match LinearLanes::get() {
        Some(k) => in_lanes(&owned, &k),
        None => owned,
    }
}

/// The Rust type of a real of type `float`.
pub fn float_ty(float: Float) -> TokenStream {
    match float {
        Float::F64 => quote!(f64),
        Float::F32 => quote!(f32),
        Float::Generic => match FloatParam::get() {
            Some(t) => quote!(#t),
            // Only generic functions have generic reals.
            None => quote!(f64),
        },
    }
}

/// `x` (a Rust expression of a primitive number type) converted to the
/// generic float type, which has no `as` cast.
fn to_generic(x: TokenStream) -> TokenStream {
    let t = float_ty(Float::Generic);
    quote!(<#t as ::linear_ad::num_traits::NumCast>::from(#x).unwrap())
}

/// A float literal of the given type; non-finite values by name.
pub fn float_lit(value: f64, float: Float) -> TokenStream {
    if float == Float::Generic {
        let t = float_ty(float);
        return match value {
            0.0 => quote!(<#t as ::linear_ad::num_traits::Zero>::zero()),
            1.0 => quote!(<#t as ::linear_ad::num_traits::One>::one()),
            _ if value.is_nan() => quote!(<#t as ::linear_ad::num_traits::Float>::nan()),
            _ if value == f64::INFINITY => {
                quote!(<#t as ::linear_ad::num_traits::Float>::infinity())
            }
            _ if value == f64::NEG_INFINITY => {
                quote!(<#t as ::linear_ad::num_traits::Float>::neg_infinity())
            }
            _ => to_generic(float_lit(value, Float::F64)),
        };
    }
    let ty = float_ty(float);
    if value.is_nan() {
        return quote!(#ty::NAN);
    }
    if value.is_infinite() {
        return if value > 0.0 {
            quote!(#ty::INFINITY)
        } else {
            quote!(#ty::NEG_INFINITY)
        };
    }
    let lit = match std_constant(value.abs(), float) {
        Some(name) => {
            let name = format_ident!("{}", name);
            quote!(::core::#ty::consts::#name)
        }
        None => match float {
            Float::F64 | Float::Generic => {
                let l = Literal::f64_suffixed(value.abs());
                quote!(#l)
            }
            Float::F32 => {
                let l = Literal::f32_suffixed(value.abs() as f32);
                quote!(#l)
            }
        },
    };
    if value.is_sign_negative() {
        quote!((-#lit))
    } else {
        quote!(#lit)
    }
}

/// The name of the `core::{f32,f64}::consts` constant equal to `v`, so
/// generated code names it rather than spelling its digits (which clippy's
/// `approx_constant` rejects).
fn std_constant(v: f64, float: Float) -> Option<&'static str> {
    use std::f64::consts as c;
    const TABLE: [(&str, f64); 19] = [
        ("E", c::E),
        ("FRAC_1_PI", c::FRAC_1_PI),
        ("FRAC_1_SQRT_2", c::FRAC_1_SQRT_2),
        ("FRAC_2_PI", c::FRAC_2_PI),
        ("FRAC_2_SQRT_PI", c::FRAC_2_SQRT_PI),
        ("FRAC_PI_2", c::FRAC_PI_2),
        ("FRAC_PI_3", c::FRAC_PI_3),
        ("FRAC_PI_4", c::FRAC_PI_4),
        ("FRAC_PI_6", c::FRAC_PI_6),
        ("FRAC_PI_8", c::FRAC_PI_8),
        ("LN_10", c::LN_10),
        ("LN_2", c::LN_2),
        ("LOG10_E", c::LOG10_E),
        ("LOG2_E", c::LOG2_E),
        ("LOG2_10", c::LOG2_10),
        ("LOG10_2", c::LOG10_2),
        ("PI", c::PI),
        ("SQRT_2", c::SQRT_2),
        ("TAU", c::TAU),
    ];
    TABLE.iter().find_map(|(name, k)| {
        let same = match float {
            Float::F64 | Float::Generic => *k == v,
            Float::F32 => (*k as f32) == (v as f32),
        };
        same.then_some(*name)
    })
}

/// The zero of a linear type (in lanes while [`LinearLanes`] is set).
pub fn zero(t: &Ty) -> TokenStream {
    match t {
        Ty::Real(f) => match LinearLanes::get() {
            Some(_) => {
                let l = lin_ty(t);
                quote!(<#l>::zero())
            }
            None => float_lit(0.0, *f),
        },
        Ty::Tuple(ts) => {
            let zs = ts.iter().map(zero);
            quote!((#(#zs,)*))
        }
        // Never linear (the checker forbids it).
        Ty::Tape(_) | Ty::Int | Ty::Bool | Ty::Sum(_) | Ty::List(..) | Ty::Array(..) => quote!(()),
    }
}

/// Emits calls: the IR of one macro invocation calls only externs (other
/// `#[differentiable]` functions), whose Rust form the driver knows.
pub trait CallGen {
    /// Rust code for `func(nl; lin)`, whose arguments are the given local
    /// variables, returning the call's results as the IR does (one value, or
    /// a tuple of the non-linear then linear results).
    fn call(
        &self,
        func: &Var,
        nl: &[syn::Ident],
        lin: &[syn::Ident],
        names: &mut Names,
    ) -> Option<TokenStream>;

    /// Rust code for `const(name(args..))`, inactive code kept in place;
    /// `None` for a prelude value (referred to by its name).
    fn opaque(&self, _name: &Var, _args: &[syn::Ident]) -> Option<TokenStream> {
        None
    }
}

/// For functions without calls.
pub struct NoCalls;

impl CallGen for NoCalls {
    fn call(
        &self,
        _: &Var,
        _: &[syn::Ident],
        _: &[syn::Ident],
        _: &mut Names,
    ) -> Option<TokenStream> {
        None
    }
}

/// `{ stmts.. tail }`, built by moving the token streams in: interpolating
/// a stream with `quote!` copies its tokens, and bodies are the bulk of
/// the expansion.
fn braced(stmts: impl IntoIterator<Item = TokenStream>, tail: TokenStream) -> TokenStream {
    let mut inner = TokenStream::new();
    inner.extend(stmts);
    inner.extend(std::iter::once(tail));
    TokenStream::from(TokenTree::Group(Group::new(Delimiter::Brace, inner)))
}

/// Generates the statements and tail of function `f`'s body, its parameters
/// bound to the given Rust expressions. Returns a block expression.
pub fn body(f: &Func, args: &[TokenStream], calls: &dyn CallGen) -> TokenStream {
    let held: Vec<(TokenStream, Hold)> = args.iter().map(|a| (a.clone(), Hold::Owned)).collect();
    body_holding(f, &held, calls)
}

/// [`body`] for a forward pass, whose body ends by building its tape
/// `let t = (r₀, r₁, …)` and returns `(results…, t)`. Where the tape has
/// more than [`WIDE`] elements and nothing else reads it, the body returns
/// it shaped by [`wide_tuple`], never built flat: a flat tuple of
/// thousands of values costs rustc time quadratic in its length on every
/// access to one of its fields (type privacy and lints visit the
/// accessed value's whole type), and the linearization's struct is built
/// from each of them. Returns the body and, where it did so, the tape's
/// length, for [`let_wide`].
pub fn forward_body(
    f: &Func,
    args: &[TokenStream],
    calls: &dyn CallGen,
) -> (TokenStream, Option<usize>) {
    let grouped = grouped_tape(f);
    let n = grouped.as_ref().map(|(_, es)| es.len());
    let names = Names {
        grouped,
        ..Names::default()
    };
    let held: Vec<(TokenStream, Hold)> = args.iter().map(|a| (a.clone(), Hold::Owned)).collect();
    (body_in(names, f, &held, calls), n)
}

/// The tape `f` builds last and only returns, and its elements, if it has
/// more than [`WIDE`] ([`forward_body`]).
fn grouped_tape(f: &Func) -> Option<(Var, Vec<Var>)> {
    let Expr::Block { stmts, tail } = &f.body else {
        return None;
    };
    let Expr::Ret { nl, lin } = tail.as_ref() else {
        return None;
    };
    let t = nl.last().filter(|_| lin.is_empty())?;
    let elems = stmts.iter().find_map(|s| match s {
        Stmt::Let {
            nl,
            lin,
            rhs: Expr::Tup(es),
        } if lin.is_empty() && nl.len() == 1 && nl[0].var == *t => Some(es.clone()),
        Stmt::Let { .. } | Stmt::Unpack { .. } | Stmt::LinUnpack { .. } => None,
    })?;
    let mut uses = 0;
    crate::visit::for_each_use(&f.body, &mut |v: &Var, _| uses += usize::from(v == t));
    (elems.len() > WIDE && uses == 1).then(|| (t.clone(), elems))
}

/// Whether `s` builds the grouped tape ([`forward_body`]).
fn is_grouped(s: &Stmt, names: &Names) -> bool {
    match (s, &names.grouped) {
        (Stmt::Let { nl, .. }, Some((t, _))) => nl.len() == 1 && nl[0].var == *t,
        _ => false,
    }
}

/// [`body`], with each argument's [`Hold`].
pub fn body_holding(f: &Func, args: &[(TokenStream, Hold)], calls: &dyn CallGen) -> TokenStream {
    body_in(Names::default(), f, args, calls)
}

/// [`body_holding`], generating with `names`.
fn body_in(
    mut names: Names,
    f: &Func,
    args: &[(TokenStream, Hold)],
    calls: &dyn CallGen,
) -> TokenStream {
    names.types = crate::visit::binder_types(f);
    let mut binds = Vec::new();
    for (b, (a, h)) in f.nl_params.iter().chain(&f.lin_params).zip(args) {
        names.holds.insert(b.var.clone(), *h);
        // Only a tape read in place: its elements are `Copy` values or
        // references, which a chunk may read again.
        let parts = (*h == Hold::Shallow)
            .then(|| unpacked_parts(f, b, a))
            .flatten();
        if let Some(parts) = parts {
            names.parts.insert(b.var.clone(), parts);
            continue;
        }
        let id = names.ident(&b.var);
        binds.push(quote!(let #id = #a;));
    }
    let e = gen_inner(&f.body, &mut names, calls);
    braced(binds, e)
}

/// The elements of argument `a`, a tuple expression `(e₀, e₁, …)`, for a
/// parameter `b` of more than [`WIDE`] elements that `f`'s body only
/// unpacks, once, at its top level: a tape, which `apply` and `transpose`
/// receive as the struct's fields. Binding each element from its field
/// (`let x = self.x;`) costs rustc time linear in the tape; building the
/// tuple and destructuring it with one pattern, quadratic (see [`WIDE`]).
fn unpacked_parts(f: &Func, b: &Binder, a: &TokenStream) -> Option<Vec<TokenStream>> {
    let Ty::Tuple(ts) = &b.ty else { return None };
    let Expr::Block { stmts, .. } = &f.body else {
        return None;
    };
    if ts.len() <= WIDE {
        return None;
    }
    let mut uses = 0;
    crate::visit::for_each_use(&f.body, &mut |v: &Var, _| uses += usize::from(*v == b.var));
    let unpacked = stmts.iter().any(|s| {
        matches!(s, Stmt::Unpack { tuple, vars } | Stmt::LinUnpack { tuple, vars }
            if *tuple == b.var && vars.len() == ts.len())
    });
    if uses != 1 || !unpacked {
        return None;
    }
    let mut it = a.clone().into_iter();
    let (Some(TokenTree::Group(g)), None) = (it.next(), it.next()) else {
        return None;
    };
    if g.delimiter() != Delimiter::Parenthesis {
        return None;
    }
    let mut parts = vec![TokenStream::new()];
    for t in g.stream() {
        match &t {
            TokenTree::Punct(p) if p.as_char() == ',' => parts.push(TokenStream::new()),
            _ => parts
                .last_mut()
                .expect("one part at least")
                .extend(std::iter::once(t)),
        }
    }
    if parts.last().is_some_and(TokenStream::is_empty) {
        parts.pop();
    }
    (parts.len() == ts.len()).then_some(parts)
}

/// The statements of a block followed by its tail, without braces.
fn gen_inner(e: &Expr, names: &mut Names, calls: &dyn CallGen) -> TokenStream {
    match e {
        Expr::Block { stmts, tail } => {
            let ss = gen_stmts(stmts, tail, names, calls);
            // A block returning nothing ends with its last statement.
            let t = match &**tail {
                Expr::Ret { nl, lin } if nl.is_empty() && lin.is_empty() => quote!(),
                other => gen_expr(other, names, calls),
            };
            let mut out = TokenStream::new();
            out.extend(ss);
            out.extend(std::iter::once(t));
            out
        }
        other => gen_expr(other, names, calls),
    }
}

/// Statements per chunk (see [`gen_stmts`]).
const CHUNK: usize = 64;

/// Statements in a block above which its first-level chunks become
/// functions of their own (see [`gen_stmts`]).
const FN_CHUNKING: usize = 16 * CHUNK;

/// Statements per nested function (see [`gen_stmts`]).
const FN_CHUNK: usize = 256;

/// The most values a tuple [`wide_tuple`] builds holds at its top level,
/// and a pattern [`let_wide`] writes binds.
///
/// rustc's borrow checker takes time quadratic in the bindings of one
/// tuple pattern, and its type-privacy and lint passes time proportional
/// to an expression's type on every field access: with one pattern for
/// a tuple of 3,500 `f64`s, 0.77 s of borrow checking (7,000: 3.2 s);
/// with one `let` per field, 0.05 s of borrow checking but 0.1 s more of
/// each of the others (quadratic too). Chunks of a long body pass out
/// that many values, so they pass them in groups of `WIDE`.
pub const WIDE: usize = 16;

/// `(x₀, x₁, …)`, or past [`WIDE`] elements a tuple of tuples of at most
/// `WIDE` each (`((x₀, …, x₁₅), (x₁₆, …), …)`): a value, or its type.
fn wide_tuple(xs: &[TokenStream]) -> TokenStream {
    if xs.len() <= WIDE {
        return quote!((#(#xs,)*));
    }
    let groups = xs.chunks(WIDE).map(|g| quote!((#(#g,)*)));
    quote!((#(#groups,)*))
}

/// `let (p₀, p₁, …) = rhs;` for a value shaped by [`wide_tuple`] (as a
/// grouped tape, [`forward_body`]): past [`WIDE`] patterns, the value in a
/// temporary and one pattern per group.
pub fn let_wide(pats: &[TokenStream], rhs: TokenStream, names: &mut Names) -> TokenStream {
    if pats.len() <= WIDE {
        return quote!(let (#(#pats,)*) = #rhs;);
    }
    let t = names.temp("wide");
    let mut out = quote!(let #t = #rhs;);
    for (k, g) in pats.chunks(WIDE).enumerate() {
        let k = Literal::usize_unsuffixed(k);
        out.extend(quote!(let (#(#g,)*) = #t.#k;));
    }
    out
}

/// A run of generated statements: their tokens, the variables they bind
/// (at their top level), the variables they read, and, for a single
/// statement, its free variables if it could move into a function of its
/// own ([`portable`]).
struct Run {
    tokens: TokenStream,
    binds: Vec<Var>,
    reads: Vec<Var>,
    free: Option<Vec<Var>>,
}

impl Run {
    /// A statement generated elsewhere: no tokens, nothing bound or read,
    /// movable into a function.
    fn empty() -> Run {
        Run {
            tokens: TokenStream::new(),
            binds: Vec::new(),
            reads: Vec::new(),
            free: Some(Vec::new()),
        }
    }
}

/// The statements of a block. Every `let` opens a lexical scope nested in
/// the previous one, and the debug information rustc emits recurses once
/// per level: a few thousand `let`s in one function overflow its stack in
/// a debug build (a plain function of 3,000 `let`s does). A long run is
/// therefore grouped into chunks of [`CHUNK`] statements, each a block
/// expression returning, as a tuple, the values it binds that later
/// statements read; chunks of chunks likewise, so the nesting is about
/// `CHUNK` per level and the levels grow with the logarithm of the length.
/// Nothing else changes, and the optimiser sees through the blocks.
///
/// In a block of more than [`FN_CHUNKING`] statements, a first-level chunk
/// whose inputs and outputs are all plain reals and booleans becomes a
/// function nested in the generated one, called once: rustc's type and
/// borrow checkers work per function, in time that grows faster than the
/// function (the dataflow of borrow checking is locals × blocks), so a
/// generated function of tens of thousands of `let`s took seconds in
/// `cargo check`. The nested functions are called once and always
/// inlined in an optimised build ([`inline_always_optimised`]).
fn gen_stmts(
    stmts: &[Stmt],
    tail: &Expr,
    names: &mut Names,
    calls: &dyn CallGen,
) -> Vec<TokenStream> {
    mark_inline(stmts, tail, names);
    if stmts.len() <= 2 * CHUNK {
        return stmts.iter().map(|s| gen_stmt(s, names, calls)).collect();
    }
    // Nested functions cannot name the enclosing item's generics: the
    // float type parameter, or the lane count of `apply_lanes`.
    let as_fns =
        stmts.len() > FN_CHUNKING && FloatParam::get().is_none() && LinearLanes::get().is_none();
    let mut deferred = HashMap::default();
    // What each real printed inside its operand reads ([`mark_inline`]):
    // the statement reading it reads those instead.
    let mut leaves: HashMap<Var, Vec<Var>> = HashMap::default();
    let mut runs: Vec<Run> = stmts
        .iter()
        .map(|s| {
            if is_grouped(s, names) {
                // Read by the tail, where the tape is built.
                return Run::empty();
            }
            let mut reads = Vec::new();
            crate::visit::stmt_uses(s, &mut |v: &Var, _| match leaves.get(v) {
                Some(ls) => reads.extend(ls.iter().cloned()),
                None => reads.push(v.clone()),
            });
            if let Some(v) = inlined(s, names) {
                let _ = gen_stmt(s, names, calls);
                leaves.insert(v, reads);
                return Run::empty();
            }
            if as_fns {
                if let Some(d) = defer_parts(s, names) {
                    deferred = d;
                    return Run::empty();
                }
            }
            let mut binds = Vec::new();
            crate::visit::stmt_binds(s, &mut |v: &Var, _| binds.push(v.clone()));
            let free = (as_fns && portable(s)).then(|| match s {
                // Only right-hand sides that nest expressions (control
                // flow, dropped code: `visit::any_subexpr`'s recursive
                // cases) bind inside themselves.
                Stmt::Let {
                    rhs: Expr::Block { .. } | Expr::Case { .. } | Expr::Loop(_) | Expr::Drop(_),
                    ..
                } => {
                    let f = crate::visit::stmt_free_vars(s);
                    f.nl.into_iter().chain(f.lin).collect()
                }
                Stmt::Let { .. } | Stmt::Unpack { .. } | Stmt::LinUnpack { .. } => reads.clone(),
            });
            Run {
                tokens: gen_stmt(s, names, calls),
                binds,
                reads,
                free,
            }
        })
        .collect();
    let mut tail_reads = HashSet::default();
    crate::visit::for_each_use(tail, &mut |v: &Var, _| {
        tail_reads.insert(v.clone());
    });
    if let Some((t, es)) = &names.grouped {
        if tail_reads.remove(t) {
            tail_reads.extend(es.iter().cloned());
        }
    }
    while runs.len() > 2 * CHUNK {
        // Functions are larger than blocks: each costs a signature.
        let size = if runs.iter().any(|r| r.free.is_some()) {
            FN_CHUNK
        } else {
            CHUNK
        };
        runs = chunk(
            runs,
            size,
            &tail_reads,
            names,
            &std::mem::take(&mut deferred),
        );
    }
    let mut out: Vec<TokenStream> = runs.into_iter().map(|r| r.tokens).collect();
    out.extend(bind_deferred(&tail_reads, &deferred, names));
    out
}

/// For the statement unpacking a wide tuple parameter given as its
/// elements' expressions ([`unpacked_parts`]): each element's expression
/// by the variable it binds, which the first level of chunking binds
/// where it is read ([`chunk`]) rather than all at the top of the body,
/// so the enclosing function does not hold the whole tape in locals
/// across its chunks (borrow checking grows with locals × statements).
fn defer_parts(s: &Stmt, names: &mut Names) -> Option<HashMap<Var, TokenStream>> {
    let (Stmt::Unpack { vars, tuple } | Stmt::LinUnpack { vars, tuple }) = s else {
        return None;
    };
    let parts = names.parts.remove(tuple)?;
    let whole = names.hold(tuple);
    Some(
        vars.iter()
            .zip(parts)
            .map(|(b, p)| {
                names.bind_part(b, whole);
                (b.var.clone(), p)
            })
            .collect(),
    )
}

/// `let x = e;` for each deferred element ([`defer_parts`]) among `reads`,
/// in a stable order.
fn bind_deferred<'a>(
    reads: impl IntoIterator<Item = &'a Var>,
    deferred: &HashMap<Var, TokenStream>,
    names: &mut Names,
) -> Vec<TokenStream> {
    let mut vs: Vec<&Var> = reads
        .into_iter()
        .filter(|v| deferred.contains_key(*v))
        .collect();
    vs.sort();
    vs.dedup();
    vs.into_iter()
        .map(|v| {
            let (id, e) = (names.ident(v), &deferred[v]);
            quote!(let #id = #e;)
        })
        .collect()
}

/// Whether statement `s` may move into a nested function: it calls no
/// other function and reads no constant (whose code may name the
/// enclosing item's generics or `Self`).
fn portable(s: &Stmt) -> bool {
    match s {
        Stmt::Let { rhs, .. } => !crate::visit::any_subexpr(rhs, &mut |e| {
            matches!(e, Expr::App { .. } | Expr::Const { .. })
        }),
        Stmt::Unpack { .. } | Stmt::LinUnpack { .. } => true,
    }
}

/// Whether a value of type `t` can cross a nested function's signature as
/// it is: a real of a concrete float type, a boolean, or a tuple of them
/// (integers take their width from the user's code, which the IR does not
/// record).
fn plain(t: &Ty) -> bool {
    match t {
        Ty::Real(f) => *f != Float::Generic,
        Ty::Bool => true,
        Ty::Tuple(ts) => ts.iter().all(plain),
        Ty::Int | Ty::Sum(_) | Ty::List(..) | Ty::Array(..) | Ty::Tape(_) => false,
    }
}

/// The Rust types of a chunk's inputs and outputs, if every variable it
/// reads from outside and every one it passes out is [`plain`] and held by
/// value (then it can be a function: [`chunk_fn`]).
fn chunk_types(
    inputs: &[Var],
    outputs: &[Var],
    names: &Names,
) -> Option<(Vec<TokenStream>, Vec<TokenStream>)> {
    let typed = |v: &Var| {
        let t = names.types.get(v)?;
        (plain(t) && names.hold(v) == Hold::Owned).then(|| ty_rust(t))
    };
    let ins = inputs.iter().map(typed).collect::<Option<Vec<_>>>()?;
    let outs = outputs.iter().map(typed).collect::<Option<Vec<_>>>()?;
    Some((ins, outs))
}

/// A chunk's statements as a nested function called once, its inputs and
/// outputs of the given types ([`chunk_types`]).
fn chunk_fn(
    body: Vec<TokenStream>,
    inputs: &[Var],
    outputs: &[syn::Ident],
    (in_tys, out_tys): (Vec<TokenStream>, Vec<TokenStream>),
    (names, deferred): (&mut Names, &HashMap<Var, TokenStream>),
) -> TokenStream {
    let mut seen = HashSet::default();
    let mut params = Vec::new();
    let mut args = Vec::new();
    for (v, t) in inputs.iter().zip(in_tys) {
        let id = names.ident(v);
        if seen.insert(id.clone()) {
            params.push(quote!(#id: #t));
            // A deferred tape element is passed from its field.
            args.push(
                deferred
                    .get(v)
                    .cloned()
                    .unwrap_or_else(|| id.into_token_stream()),
            );
        }
    }
    let f = names.temp("chunk");
    let call = quote!(#f(#(#args),*));
    let (ret, tail, bind) = match (outputs, out_tys.as_slice()) {
        ([one], [t]) => (quote!(#t), quote!(#one), quote!(let #one = #call;)),
        _ => {
            let outs: Vec<TokenStream> = outputs.iter().map(ToTokens::to_token_stream).collect();
            (
                wide_tuple(&out_tys),
                wide_tuple(&outs),
                let_wide(&outs, call, names),
            )
        }
    };
    let block = braced(body, tail);
    let inline = inline_always_optimised();
    quote! {
        #inline
        #[allow(clippy::too_many_arguments, clippy::type_complexity, clippy::let_and_return)]
        fn #f(#(#params),*) -> #ret #block
        #bind
    }
}

/// `#[inline(always)]` in an optimised build, `#[inline]` in a debug one
/// (`debug_assertions` is the user's crate's, which compiles the generated
/// code): for code split into functions for rustc's sake and called once
/// (a nested chunk, or the code `f_lin`, `f_vjp` and `transpose` share),
/// which an optimised build must see as one function, as if unsplit (with
/// `#[inline]` alone, LLVM left a 500-value forward pass's chunks out of
/// line and passed their results through memory: 1.5× the time), while
/// forcing it in a debug build would only make LLVM compile it again.
pub fn inline_always_optimised() -> TokenStream {
    quote! {
        #[cfg_attr(debug_assertions, inline)]
        #[cfg_attr(not(debug_assertions), inline(always))]
    }
}

/// One level of chunking: groups of `size` runs become one run each.
fn chunk(
    runs: Vec<Run>,
    size: usize,
    tail_reads: &HashSet<Var>,
    names: &mut Names,
    deferred: &HashMap<Var, TokenStream>,
) -> Vec<Run> {
    let n = runs.len();
    // The last run reading each variable (n for the block's tail).
    let mut last: HashMap<Var, usize> = HashMap::default();
    for (i, r) in runs.iter().enumerate() {
        for v in &r.reads {
            last.insert(v.clone(), i);
        }
    }
    for v in tail_reads {
        last.insert(v.clone(), n);
    }
    let mut out = Vec::new();
    let mut it = runs.into_iter().enumerate().peekable();
    while it.peek().is_some() {
        let group: Vec<(usize, Run)> = it.by_ref().take(size).collect();
        let end = group.last().map_or(n, |(i, _)| i + 1);
        let mut live = Vec::new();
        let mut reads = Vec::new();
        let mut body = Vec::new();
        // What the group reads from outside itself, each once, if every run
        // could move into a function.
        let mut bound = HashSet::default();
        let mut inputs = Some(Vec::new());
        // What the group binds itself.
        let mut own = HashSet::default();
        for (_, r) in group {
            match (&mut inputs, r.free) {
                (Some(ins), Some(free)) => {
                    for v in free {
                        if bound.insert(v.clone()) {
                            ins.push(v);
                        }
                    }
                }
                (ins, _) => *ins = None,
            }
            bound.extend(r.binds.iter().cloned());
            own.extend(r.binds.iter().cloned());
            live.extend(
                r.binds
                    .into_iter()
                    .filter(|v| last.get(v).is_some_and(|&i| i >= end)),
            );
            reads.extend(r.reads);
            body.push(r.tokens);
        }
        // Copies share their original's local (`Names::alias`): each local
        // is passed out once.
        let mut seen = HashSet::default();
        let (ids, id_vars): (Vec<syn::Ident>, Vec<Var>) = live
            .iter()
            .map(|v| (names.ident(v), v.clone()))
            .filter(|(id, _)| seen.insert(id.clone()))
            .unzip();
        let fits = inputs.filter(|_| !ids.is_empty()).and_then(|ins| {
            let tys = chunk_types(&ins, &id_vars, names)?;
            Some((ins, tys))
        });
        if fits.is_none() {
            let mut b = bind_deferred(reads.iter().filter(|v| !own.contains(*v)), deferred, names);
            b.append(&mut body);
            body = b;
        }
        let tokens = match (fits, ids.as_slice()) {
            (Some((ins, tys)), _) => chunk_fn(body, &ins, &ids, tys, (names, deferred)),
            (None, []) => braced(body, quote!()),
            (None, [one]) => {
                let b = braced(body, quote!(#one));
                quote!(let #one = #b;)
            }
            (None, _) => {
                let pats: Vec<TokenStream> = ids.iter().map(ToTokens::to_token_stream).collect();
                let b = braced(body, wide_tuple(&pats));
                let_wide(&pats, b, names)
            }
        };
        out.push(Run {
            tokens,
            binds: live,
            reads,
            free: None,
        });
    }
    out
}

/// Whether `let b = rhs` needs no type annotation: one real of a concrete
/// float type (no lanes) computed by arithmetic on variables, whose type
/// rustc then knows from theirs. Most `let`s of long straight-line bodies
/// are these, and each annotation is two more tokens for the macro to
/// build and rustc to parse and check.
fn inferred(bs: &[Binder], rhs: &Expr) -> bool {
    let concrete = matches!(bs, [b] if matches!(b.ty, Ty::Real(Float::F64 | Float::F32)));
    let arithmetic = match rhs {
        Expr::Prim { .. } => true,
        Expr::LinAdd(..) | Expr::LinNeg(_) | Expr::LinScale(..) => LinearLanes::get().is_none(),
        _ => false,
    };
    concrete && arithmetic
}

/// The pattern binding `bs`, annotated with its type if it is one
/// variable (`linear` if that one is linear: a linear array is an owned
/// buffer, a non-linear one a borrowed input).
fn pattern(bs: &[Binder], linear: bool, names: &mut Names) -> TokenStream {
    let ids: Vec<syn::Ident> = bs.iter().map(|b| names.ident(&b.var)).collect();
    match ids.as_slice() {
        [one] if names.slices.contains(&bs[0].var) => quote!(#one),
        [one] => {
            let t = if linear {
                lin_ty(&bs[0].ty)
            } else if matches!(bs[0].ty, Ty::Array(..)) {
                // A borrowed input or an owned local array (`fill`, `set`):
                // the right-hand side says which.
                return quote!(#one);
            } else if holds_array(&bs[0].ty) {
                // A tape holding the flat arrays of inner loops' records,
                // owned (`passes::records::flat_tapes`).
                annotation(&bs[0].ty)
            } else {
                ty_rust(&bs[0].ty)
            };
            quote!(#one: #t)
        }
        _ => quote!((#(#ids,)*)),
    }
}

/// The type annotation of a value of type `t` whose arrays the
/// right-hand side types (`_`), as [`ty_rust`] for the rest.
fn annotation(t: &Ty) -> TokenStream {
    match t {
        Ty::Array(..) => quote!(_),
        Ty::Tuple(ts) => {
            let ts = ts.iter().map(annotation);
            quote!((#(#ts,)*))
        }
        Ty::Sum(ts) => sum_type(&ts.iter().map(annotation).collect::<Vec<_>>()),
        Ty::List(e, _) if inline_len(t).is_some() => list_type(t, annotation(e), false),
        Ty::Real(_) | Ty::Int | Ty::Bool | Ty::List(..) | Ty::Tape(_) => ty_rust(t),
    }
}

/// Whether a value of type `t` is or holds an array.
fn holds_array(t: &Ty) -> bool {
    match t {
        Ty::Array(..) => true,
        Ty::Tuple(ts) | Ty::Sum(ts) => ts.iter().any(holds_array),
        Ty::List(e, _) => holds_array(e),
        Ty::Real(_) | Ty::Int | Ty::Bool | Ty::Tape(_) => false,
    }
}

/// Marks the statements of a block that bind one real, by a primitive
/// operation, a linear one or a literal, read once, as an operand of such
/// an operation in a later statement of the block: each is printed inside
/// that operand (`let c = (a * b) + d;`, `0.5f64 * x`), not as a `let` of
/// its own. More than half of the `let`s of a straight-line function's
/// forward pass, derivative and transpose are such values; each `let`
/// costs the macro tokens and an identifier, and rustc a local, a scope
/// and a move. The values are `Copy` reals computed by pure operations
/// from values bound before, so computing one where it is read gives the
/// same result, rounding included (Rust neither reorders nor contracts
/// floating-point operations). Only concretely typed reals whose `let`
/// needs no annotation (see [`inferred`]) are moved, and an expression
/// grows to [`INLINE`] operations at most: a chain of values each read
/// once by the next would otherwise nest as deep as the chain is long,
/// and rustc's recursive passes overflow their stack on expressions
/// thousands of levels deep.
fn mark_inline(stmts: &[Stmt], tail: &Expr, names: &mut Names) {
    let mut uses: HashMap<Var, (usize, usize)> = HashMap::default();
    for s in stmts {
        crate::visit::stmt_uses(s, &mut |v: &Var, _| {
            uses.entry(v.clone()).or_default().0 += 1
        });
        // A linear operation on tuples prints its operands once per
        // element: none of them is printed in place there.
        let elementwise = match s {
            Stmt::Let {
                rhs: Expr::LinAdd(_, x) | Expr::LinScale(_, x) | Expr::LinNeg(x),
                ..
            } => !matches!(names.types.get(x), Some(Ty::Real(_))),
            Stmt::Let { .. } | Stmt::Unpack { .. } | Stmt::LinUnpack { .. } => false,
        };
        if let (Stmt::Let { rhs, .. }, false) = (s, elementwise) {
            for v in operands(rhs) {
                uses.entry(v.clone()).or_default().1 += 1;
            }
        }
    }
    crate::visit::for_each_use(tail, &mut |v: &Var, _| {
        uses.entry(v.clone()).or_default().0 += 1
    });
    // The operations each marked value's expression holds.
    let mut size: HashMap<Var, usize> = HashMap::default();
    for s in stmts {
        if let (Some(b), Stmt::Let { rhs, .. }) = (sole_binder(s), s) {
            let movable = match rhs {
                Expr::Lit { float, .. } => *float != Float::Generic,
                _ => inferred(std::slice::from_ref(b), rhs),
            };
            let ops = 1 + operands(rhs)
                .into_iter()
                .map(|v| size.get(v).copied().unwrap_or(0))
                .sum::<usize>();
            if movable
                && ops <= INLINE
                && uses.get(&b.var) == Some(&(1, 1))
                && !is_grouped(s, names)
            {
                names.inlinable.insert(b.var.clone());
                size.insert(b.var.clone(), ops);
            }
        }
    }
}

/// The most operations an expression printed in place holds
/// ([`mark_inline`]).
const INLINE: usize = 8;

/// The variables `e` reads as operands of arithmetic, which it prints
/// through [`Names::operand`].
fn operands(e: &Expr) -> Vec<&Var> {
    match e {
        Expr::Prim { args, .. } => args.iter().collect(),
        Expr::LinAdd(a, b) | Expr::LinScale(a, b) => vec![a, b],
        Expr::LinNeg(a) => vec![a],
        Expr::Block { .. }
        | Expr::Ret { .. }
        | Expr::App { .. }
        | Expr::Lit { .. }
        | Expr::Const { .. }
        | Expr::Tup(_)
        | Expr::LinZero(_)
        | Expr::LinTup(_)
        | Expr::Dup(_)
        | Expr::Drop(_)
        | Expr::Int(_)
        | Expr::Bool(_)
        | Expr::Inj { .. }
        | Expr::Case { .. }
        | Expr::Loop(_)
        | Expr::Index { .. }
        | Expr::Len(_)
        | Expr::LinIndex { .. }
        | Expr::LinAccum { .. }
        | Expr::Fill { .. }
        | Expr::Set { .. }
        | Expr::LinZeros { .. }
        | Expr::LinSet { .. }
        | Expr::LinFree { .. }
        | Expr::Push { .. }
        | Expr::Pop { .. }
        | Expr::LinPush { .. }
        | Expr::LinPop { .. } => Vec::new(),
    }
}

/// The one variable `s` binds by `let`, if it binds one.
fn sole_binder(s: &Stmt) -> Option<&Binder> {
    match s {
        Stmt::Let { nl, lin, .. } => match (nl.as_slice(), lin.as_slice()) {
            ([b], []) | ([], [b]) => Some(b),
            _ => None,
        },
        Stmt::Unpack { .. } | Stmt::LinUnpack { .. } => None,
    }
}

/// The real `s` binds, if it is printed inside its operand ([`mark_inline`]).
fn inlined(s: &Stmt, names: &Names) -> Option<Var> {
    sole_binder(s)
        .filter(|b| names.inlinable.contains(&b.var))
        .map(|b| b.var.clone())
}

fn gen_stmt(s: &Stmt, names: &mut Names, calls: &dyn CallGen) -> TokenStream {
    if is_grouped(s, names) {
        // Built in the tail ([`forward_body`]).
        return TokenStream::new();
    }
    match s {
        Stmt::Let { nl, lin, rhs } => {
            let bs: Vec<Binder> = nl.iter().chain(lin).cloned().collect();
            if bs.is_empty() {
                return match rhs {
                    Expr::Drop(inner) => {
                        let v = gen_expr(inner, names, calls);
                        quote!(let _ = #v;)
                    }
                    Expr::Ret { nl, lin } if nl.is_empty() && lin.is_empty() => quote!(),
                    // Control flow with no results: a statement.
                    Expr::Case { .. } | Expr::Loop(_) => {
                        let v = gen_expr(rhs, names, calls);
                        quote!(#v;)
                    }
                    other => {
                        let v = gen_expr(other, names, calls);
                        quote!(let () = #v;)
                    }
                };
            }
            if let Expr::Dup(x) = rhs {
                if names.hold(x) == Hold::Owned && bs.iter().all(|b| is_copy(&b.ty)) {
                    for b in &bs {
                        names.alias(&b.var, x);
                    }
                    return quote!();
                }
            }
            match (bs.as_slice(), rhs) {
                ([b], Expr::Int(0)) => {
                    names.zeros.insert(b.var.clone());
                }
                // An empty array, to push to, starts from a recycled
                // buffer: the flat arrays of inner loops' records
                // (`passes::records::flat_tapes`) grow to the size of all
                // of them, and the linearization returns them to the pool.
                (
                    [b],
                    Expr::Fill {
                        len, size: None, ..
                    },
                ) if names.zeros.contains(len) => {
                    if let Ty::Array(e, None) = &b.ty {
                        if pooled(e) {
                            let (id, e) = (names.ident(&b.var), ty_rust(e));
                            return quote! {
                                let #id: ::linear_ad::__private::Vec<#e> =
                                    ::linear_ad::__private::Tape::buffer(0);
                            };
                        }
                    }
                }
                _ => {}
            }
            let v = gen_expr(rhs, names, calls);
            if names.inlinable.contains(&bs[0].var) {
                names.inline.insert(bs[0].var.clone(), v);
                return TokenStream::new();
            }
            let mut t = quote!(let);
            let pat = if inferred(&bs, rhs) {
                let id = names.ident(&bs[0].var);
                quote!(#id)
            } else {
                pattern(&bs, nl.is_empty(), names)
            };
            t.extend(std::iter::once(pat));
            // `let p = v;`, moving `v` in (see `braced`).
            t.extend(quote!(=));
            t.extend(std::iter::once(v));
            t.extend(quote!(;));
            t
        }
        Stmt::Unpack { vars, tuple } | Stmt::LinUnpack { vars, tuple } => {
            if let Some(d) = defer_parts(s, names) {
                // Each element from its expression, here (no chunks).
                return bind_deferred(vars.iter().map(|b| &b.var), &d, names)
                    .into_iter()
                    .collect();
            }
            let whole = names.hold(tuple);
            let t = names.place(tuple);
            let pats: Vec<TokenStream> = vars.iter().map(|b| names.bind_part(b, whole)).collect();
            quote!(let (#(#pats,)*) = #t;)
        }
    }
}

fn tuple_of(vs: &[Var], names: &mut Names) -> TokenStream {
    let ids: Vec<syn::Ident> = vs.iter().map(|v| names.ident(v)).collect();
    match ids.as_slice() {
        [one] => quote!(#one),
        _ => quote!((#(#ids,)*)),
    }
}

/// The values a block returns, the grouped tape among them built in
/// groups ([`forward_body`]).
fn gen_ret(vs: &[Var], names: &mut Names) -> TokenStream {
    let Some((t, es)) = names.grouped.clone().filter(|(t, _)| vs.contains(t)) else {
        return tuple_of(vs, names);
    };
    let parts: Vec<TokenStream> = vs
        .iter()
        .map(|v| {
            if *v == t {
                let es: Vec<TokenStream> = es
                    .iter()
                    .map(|e| names.ident(e).into_token_stream())
                    .collect();
                wide_tuple(&es)
            } else {
                names.ident(v).into_token_stream()
            }
        })
        .collect();
    quote!((#(#parts,)*))
}

fn gen_expr(e: &Expr, names: &mut Names, calls: &dyn CallGen) -> TokenStream {
    match e {
        Expr::Block { .. } => braced([], gen_inner(e, names, calls)),
        Expr::Ret { nl, lin } => {
            let vs: Vec<Var> = nl.iter().chain(lin).cloned().collect();
            gen_ret(&vs, names)
        }
        Expr::App { func, nl, lin } => {
            let nl: Vec<syn::Ident> = nl.iter().map(|v| names.ident(v)).collect();
            let lin: Vec<syn::Ident> = lin.iter().map(|v| names.ident(v)).collect();
            calls.call(func, &nl, &lin, names).unwrap_or_else(|| {
                let msg = format!("linear-ad internal error: no code for a call to `{func}`");
                quote!(::core::compile_error!(#msg))
            })
        }
        Expr::Lit { value, float } => float_lit(*value, *float),
        Expr::Const { name, args, .. } => {
            let a: Vec<syn::Ident> = args.iter().map(|v| names.ident(v)).collect();
            calls.opaque(name, &a).unwrap_or_else(|| {
                let id = syn::Ident::new(name.as_str(), Span::mixed_site());
                quote!(#id)
            })
        }
        Expr::Tup(vs) | Expr::LinTup(vs) => {
            let ids: Vec<syn::Ident> = vs.iter().map(|v| names.ident(v)).collect();
            quote!((#(#ids,)*))
        }
        Expr::Prim { prim, args } => {
            let a: Vec<TokenStream> = args.iter().map(|v| names.operand(v)).collect();
            gen_prim(*prim, &a, names, args)
        }
        Expr::LinZero(t) => zero(t),
        Expr::LinAdd(a, b) => {
            let t = names.types.get(a).cloned().unwrap_or(Ty::F64);
            let (x, y) = (names.operand(a), names.operand(b));
            elementwise2(&t, x, y, names, &|p, q| quote!(#p + #q))
        }
        Expr::LinNeg(a) => {
            let t = names.types.get(a).cloned().unwrap_or(Ty::F64);
            let x = names.operand(a);
            elementwise1(&t, x, names, &|p| quote!(-#p))
        }
        Expr::LinScale(s, a) => {
            let t = names.types.get(a).cloned().unwrap_or(Ty::F64);
            let (k, x) = (names.operand(s), names.operand(a));
            elementwise1(&t, x, names, &|p| quote!(#k * #p))
        }
        Expr::Dup(a) => {
            let x = names.ident(a);
            quote!((#x, #x))
        }
        Expr::Drop(inner) => {
            let v = gen_expr(inner, names, calls);
            quote!({ let _ = #v; })
        }
        Expr::Int(n) => {
            let l = Literal::i64_unsuffixed(n.unsigned_abs() as i64);
            if *n < 0 {
                quote!((-#l))
            } else {
                quote!(#l)
            }
        }
        Expr::Bool(b) => quote!(#b),
        Expr::Inj { sum, tag, val } => {
            let v = names.ident(val);
            let n = match sum {
                Ty::Sum(ts) => ts.len(),
                _ => 1,
            };
            inject(quote!(#v), *tag, n)
        }
        Expr::Case { scrut, arms } => gen_case(scrut, arms, names, calls),
        Expr::Loop(l) => gen_loop(l, names, calls),
        Expr::Index { arr, idx } | Expr::LinIndex { arr, idx } => {
            element(arr, idx, window::Op::Read, names)
        }
        Expr::Len(arr) => {
            let a = names.ident(arr);
            quote!(#a.len())
        }
        Expr::LinAccum { arr, idx, val } => element(arr, idx, window::Op::Add(val), names),
        Expr::Fill { len, val, size } => {
            let (n, v) = (names.ident(len), names.ident(val));
            fill(quote!(#v), &n, *size)
        }
        Expr::LinZeros { ty, len } => {
            let n = names.ident(len);
            match ty {
                Ty::Array(elem, size) => fill(zero(elem), &n, *size),
                other => zero(other),
            }
        }
        Expr::Set { arr, idx, val } | Expr::LinSet { arr, idx, val } => {
            element(arr, idx, window::Op::Store(val), names)
        }
        Expr::Push { arr, val } | Expr::LinPush { arr, val } => {
            // The `Vec` is moved, not copied: a push in place.
            let (a, v) = (names.ident(arr), names.ident(val));
            let buf = names.temp("buf");
            if names.recorded.contains(arr) {
                return quote!({
                    let mut #buf = #a;
                    ::linear_ad::__private::record(&mut #buf, #v);
                    #buf
                });
            }
            quote!({ let mut #buf = #a; #buf.push(#v); #buf })
        }
        Expr::Pop { arr } | Expr::LinPop { arr } => {
            let a = names.ident(arr);
            quote!(::linear_ad::__private::pop(#a))
        }
        Expr::LinFree { arr, len } => {
            let (a, n) = (names.ident(arr), names.ident(len));
            quote!({
                ::core::debug_assert_eq!(#a.len(), #n);
            })
        }
    }
}

/// `arr[idx]` read, stored to or added to: through the window or cell
/// the loop being generated reaches `arr` by ([`window`]), else on the
/// array itself, which a store or an addition moves, not copies, and
/// updates in place.
fn element(arr: &Var, idx: &Var, op: window::Op, names: &mut Names) -> TokenStream {
    if let Some(t) = window::access(arr, idx, op, names) {
        return t;
    }
    let (a, i) = (names.ident(arr), names.ident(idx));
    match op {
        window::Op::Read => quote!(#a[#i]),
        window::Op::Store(val) => {
            let (v, buf) = (names.ident(val), names.temp("buf"));
            quote!({ let mut #buf = #a; #buf[#i] = #v; #buf })
        }
        window::Op::Add(val) => {
            let t = names.types.get(val).cloned().unwrap_or(Ty::F64);
            let (v, buf) = (names.ident(val), names.temp("acc"));
            let add = accumulate(&t, quote!(#buf[#i]), quote!(#v));
            quote!({ let mut #buf = #a; #add #buf })
        }
    }
}

/// A fresh array of `n` copies of `v`: inline (`[v; N]`) when its length
/// is the constant `size`, else a `Vec`.
fn fill(v: TokenStream, n: &syn::Ident, size: Option<u64>) -> TokenStream {
    match size {
        Some(k) => {
            let k = Literal::usize_unsuffixed(k as usize);
            quote!({ let _: usize = #n; [#v; #k] })
        }
        None => quote!(::std::vec![#v; #n]),
    }
}

/// `place += value` for a linear value of type `t`, componentwise for a
/// tuple (`place.0 += value.0; …`).
fn accumulate(t: &Ty, place: TokenStream, value: TokenStream) -> TokenStream {
    match t {
        Ty::Tuple(ts) => {
            let parts = ts.iter().enumerate().map(|(k, t)| {
                let k = syn::Index::from(k);
                accumulate(t, quote!(#place.#k), quote!(#value.#k))
            });
            quote!(#(#parts)*)
        }
        // `num_traits::Float` has no `AddAssign`.
        Ty::Real(Float::Generic) => quote!(#place = #place + #value;),
        Ty::Real(_)
        | Ty::Int
        | Ty::Bool
        | Ty::Sum(_)
        | Ty::List(..)
        | Ty::Array(..)
        | Ty::Tape(_) => quote!(#place += #value;),
    }
}

/// `Branch` constructors for alternative `tag` of an `n`-ary sum: the
/// last alternative of a nest is `Else` of the innermost `Branch`.
fn inject(v: TokenStream, tag: usize, n: usize) -> TokenStream {
    let br = quote!(::linear_ad::__private::Branch);
    if n <= 1 {
        v
    } else if tag == 0 {
        quote!(#br::Then(#v))
    } else {
        let inner = inject(v, tag - 1, n - 1);
        quote!(#br::Else(#inner))
    }
}

/// The Rust type of an `n`-ary sum of the given alternatives.
pub fn sum_type(ts: &[TokenStream]) -> TokenStream {
    match ts {
        [] => quote!(()),
        [one] => one.clone(),
        [first, rest @ ..] => {
            let rest = sum_type(rest);
            quote!(::linear_ad::__private::Branch<#first, #rest>)
        }
    }
}

fn gen_case(scrut: &Var, arms: &[Arm], names: &mut Names, calls: &dyn CallGen) -> TokenStream {
    let scrut_ty = names.types.get(scrut).cloned();
    if scrut_ty == Some(Ty::Bool) {
        let c = names.ident(scrut);
        let bodies: Vec<TokenStream> = arms
            .iter()
            .map(|a| {
                let b = gen_inner(&a.body, names, calls);
                quote!({ #b })
            })
            .collect();
        let (t, e) = (&bodies[0], bodies.get(1).cloned().unwrap_or_default());
        return quote!(if #c #t else #e);
    }
    let whole = names.hold(scrut);
    let place = names.place(scrut);
    let mut alts: Vec<(TokenStream, TokenStream)> = Vec::new();
    for a in arms {
        let pat = match &a.bind {
            Some(b) => names.bind_part(b, whole),
            None => quote!(_),
        };
        let b = gen_inner(&a.body, names, calls);
        alts.push((pat, quote!({ #b })));
    }
    match_sum(place, whole, &alts, names)
}

/// A `match` on a borrowed sum value, one (pattern, body) per alternative.
pub fn match_sum_tokens(
    place: TokenStream,
    alts: &[(TokenStream, TokenStream)],
    names: &mut Names,
) -> TokenStream {
    match_sum(place, Hold::Ref, alts, names)
}

/// `match` on a right-nested `Branch` with one arm per alternative; the
/// alternatives after the first are matched in the `Else` value, borrowed
/// if the whole is.
fn match_sum(
    place: TokenStream,
    whole: Hold,
    alts: &[(TokenStream, TokenStream)],
    names: &mut Names,
) -> TokenStream {
    let br = quote!(::linear_ad::__private::Branch);
    match alts {
        [] => quote!(match #place {}),
        [(p, b)] => quote!(match #place { #p => #b }),
        [(p, b), rest @ ..] => {
            let e = names.temp("alt");
            let (bind, inner_place) = if whole == Hold::Ref {
                (quote!(ref #e), quote!(*#e))
            } else {
                (quote!(#e), quote!(#e))
            };
            let inner = match_sum(inner_place, whole, rest, names);
            quote!(match #place { #br::Then(#p) => #b, #br::Else(#bind) => #inner })
        }
    }
}

/// The iterator a range, list or zipped loop runs over, and the statements
/// binding its index or element (or both) from `item` (`while` loops have
/// neither).
fn loop_header(iter: &Iter, item: &syn::Ident, names: &mut Names) -> (TokenStream, TokenStream) {
    match iter {
        Iter::Range {
            index,
            lo,
            hi,
            step,
            rev,
            ..
        } => {
            let range = range_iter((lo, hi, step.as_ref()), *rev, names);
            let i = names.ident(&index.var);
            (range, quote!(let #i = #item;))
        }
        Iter::Each { elem, list, rev } => list_iter(elem, list, *rev, item, names),
        Iter::Zip {
            index,
            lo,
            hi,
            step,
            desc,
            elem,
            list,
            rev,
        } => {
            // Both reversed, then zipped: the same pairs as the reversed
            // zip, without asking the range for its length.
            let range = range_iter((lo, hi, step.as_ref()), *desc != *rev, names);
            let each = names.temp("elem");
            let (src, bind) = list_iter(elem, list, *rev, &each, names);
            let i = names.ident(&index.var);
            (
                quote!(#range.zip(#src)),
                quote!(let (#i, #each) = #item; #bind),
            )
        }
        Iter::While { .. } => (quote!(), quote!()),
        Iter::Replay { state, .. } => {
            let s = names.ident(&state.var);
            (quote!(), quote!(let #s = #item;))
        }
    }
}

/// The iterator over a range's indices.
fn range_iter(
    (lo, hi, step): (&Var, &Var, Option<&Var>),
    rev: bool,
    names: &mut Names,
) -> TokenStream {
    let (lo, hi) = (names.ident(lo), names.ident(hi));
    let mut range = quote!((#lo..#hi));
    if let Some(s) = step {
        let s = names.ident(s);
        range = quote!(#range.step_by(#s));
    }
    if rev {
        range = quote!(#range.rev());
    }
    range
}

/// The iterator over a list's elements, and the statement binding `elem`
/// from `item`. A list held by reference is iterated by reference; its
/// `Copy` elements are copied out.
fn list_iter(
    elem: &Binder,
    list: &Var,
    rev: bool,
    item: &syn::Ident,
    names: &mut Names,
) -> (TokenStream, TokenStream) {
    let whole = names.hold(list);
    let lid = names.ident(list);
    let e = names.ident(&elem.var);
    let h = Names::part_hold(&elem.ty, whole);
    names.holds.insert(elem.var.clone(), h);
    // An owned tape is read last first by popping, which leaves its
    // buffer to be recycled (`linear_ad::tape_pool`).
    let src = match (whole == Hold::Owned, rev) {
        (true, true) => quote!(::linear_ad::__private::IntoRev::into_rev(#lid)),
        (true, false) => quote!(#lid.into_iter()),
        (false, true) => quote!(#lid.iter().rev()),
        (false, false) => quote!(#lid.iter()),
    };
    let bind = if whole != Hold::Owned && h == Hold::Owned {
        quote!(let #e = *#item;)
    } else {
        quote!(let #e = #item;)
    };
    (src, bind)
}

/// A `while` loop over the state `st`, bound to `state` for the
/// condition `c` and the body `step`. The state is moved out to be read:
/// it is put back on leaving, as it may own an array.
///
/// A loop that records (`tapes`, its per-iteration lists) runs its body in
/// an inner loop while every list has room, so that appending never grows
/// a list (`record`, as for loops of known length): growth, a call that
/// returns, would spill the state every iteration (`det`'s forward pass
/// ran at twice its time). The outer loop grows the lists, and only once
/// the condition says another iteration runs, so a loop that runs none
/// allocates nothing; the condition is then evaluated twice, once per
/// growth (a doubling).
fn while_loop(
    c: TokenStream,
    st: &syn::Ident,
    state: &[syn::Ident],
    step: TokenStream,
    (tapes, label): (&[syn::Ident], syn::Lifetime),
) -> TokenStream {
    let stop = quote! {
        let (#(#state,)*) = #st;
        if !#c {
            #st = (#(#state,)*);
            break #label;
        }
    };
    if tapes.is_empty() {
        return quote! {
            #label: loop {
                #stop
                #step
            }
        };
    }
    quote! {
        #label: loop {
            while #(#tapes.len() < #tapes.capacity())&&* {
                #stop
                #step
            }
            #stop
            #st = (#(#state,)*);
            #(#tapes.reserve(1);)*
        }
    }
}

/// Per list `l` collects: whether it is inline (an `ArrayVec`), and the
/// statement appending the iteration's record `out` to it.
///
/// A loop over an iterator of known length has a `Vec` tape with room for
/// every record, and a `while` loop appends only where its tapes have room
/// ([`while_loop`]), so appending needs no growth: `record` says so to
/// LLVM with a panic that cannot happen. `Vec::push`'s growth path is a
/// call that returns, across which the loop's state is spilled to the
/// stack every iteration (llsq's inner loop ran at 2x the primal's time
/// for that alone).
fn appends(l: &Loop, cols: &[syn::Ident], outs: &[syn::Ident]) -> (Vec<bool>, Vec<TokenStream>) {
    let (res_tys, _) = l.result_types();
    let inline: Vec<bool> = res_tys[l.nl.len()..]
        .iter()
        .map(|t| inline_len(t).is_some())
        .collect();
    let pushes = cols
        .iter()
        .zip(outs)
        .zip(&inline)
        .map(|((c, o), inline)| {
            if *inline {
                quote!(#c.push(#o);)
            } else {
                quote!(::linear_ad::__private::record(&mut #c, #o);)
            }
        })
        .collect();
    (inline, pushes)
}

/// Per list `l` collects (named `cols`, `inline` as [`appends`] says):
/// the statement allocating it before the loop, and the expression of
/// the list after it.
///
/// Each list is allocated once: inline when its length is a small
/// constant, else with room for every iteration known. A loop that no
/// other loop holds (`recycled`) takes a buffer from the tape pool if
/// its records can go there ([`pooled`]); it records into a plain `Vec`
/// (see `linear_ad::__private::Tape::buffer`) and makes it a `Tape`
/// after the loop.
fn tapes(
    l: &Loop,
    cols: &[syn::Ident],
    inline: &[bool],
    recycled: bool,
    capacity: &TokenStream,
) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let (res_tys, _) = l.result_types();
    let lens = res_tys[l.nl.len()..].iter().map(inline_len);
    cols.iter()
        .zip(inline)
        .zip(&l.collect)
        .zip(lens)
        .map(|(((c, inline), t), len)| {
            if let (true, Some(n)) = (*inline, len) {
                // Its capacity spelled out: nothing else may name the
                // list's type (a tape tuple the simplifier dissolved).
                let n = n as usize;
                let init = quote!(let mut #c = ::linear_ad::__private::ArrayVec::<_, #n>::new(););
                (init, quote!(#c))
            } else if recycled && pooled(t) {
                let init = quote!(let mut #c = ::linear_ad::__private::Tape::buffer(#capacity););
                (init, quote!(::linear_ad::__private::Tape::from(#c)))
            } else {
                let init =
                    quote!(let mut #c = ::linear_ad::__private::Vec::with_capacity(#capacity););
                (init, quote!(#c))
            }
        })
        .unzip()
}

/// The carried arrays (by position in the non-linear state) that a loop
/// over an iterator of known length pushes to once in every iteration,
/// at its body's top level, and reads nowhere else: a flat array of
/// inner loops' records (`passes::records::flat_tapes`). Room for every
/// push is made before the loop, and each push is a `record`, whose
/// growth path, a call that returns, would spill the loop's state every
/// iteration (llsq's gradient ran at 3.5 times its time).
fn pushed_once(l: &Loop) -> Vec<usize> {
    let (Iter::Range { .. } | Iter::Each { .. } | Iter::Zip { .. }) = &l.iter else {
        return Vec::new();
    };
    let Expr::Block { stmts, tail } = &l.body else {
        return Vec::new();
    };
    let Expr::Ret { nl: next, .. } = tail.as_ref() else {
        return Vec::new();
    };
    let uses = crate::visit::use_counts(&l.body);
    // `let a' = push(a, v)` with `a` the state and `a'` its next value: one
    // push (rows are pushed element by element, a chain of pushes).
    (0..l.nl.len())
        .filter(|&k| {
            let b = &l.nl[k].0;
            matches!(b.ty, Ty::Array(..))
                && uses.get(&b.var) == Some(&1)
                && stmts.iter().any(|s| match s {
                    Stmt::Let {
                        nl,
                        rhs: Expr::Push { arr, .. },
                        ..
                    } => arr == &b.var && nl.len() == 1 && next.get(k) == Some(&nl[0].var),
                    Stmt::Let { .. } | Stmt::Unpack { .. } | Stmt::LinUnpack { .. } => false,
                })
        })
        .collect()
}

fn gen_loop(l: &Loop, names: &mut Names, calls: &dyn CallGen) -> TokenStream {
    let st = names.temp("state");
    let it = names.temp("it");
    let item = names.temp("item");
    let mut inits: Vec<syn::Ident> =
        l.nl.iter()
            .chain(&l.lin)
            .map(|(_, v)| names.ident(v))
            .collect();
    let state: Vec<syn::Ident> =
        l.nl.iter()
            .chain(&l.lin)
            .map(|(b, _)| names.ident(&b.var))
            .collect();
    let cols: Vec<syn::Ident> = l.collect.iter().map(|_| names.temp("tape")).collect();
    let pushed = pushed_once(l);
    names
        .recorded
        .extend(pushed.iter().map(|&k| l.nl[k].0.var.clone()));
    let (header, bind_item, reach) = window::reach(l, &item, &mut inits, names);
    let recycled = names.loops == 0;
    names.loops += 1;
    let body = gen_expr(&l.body, names, calls);
    names.loops -= 1;
    window::close(&reach, names);
    let next: Vec<syn::Ident> =
        l.nl.iter()
            .chain(&l.lin)
            .map(|_| names.temp("next"))
            .collect();
    let (next_nl, next_lin) = next.split_at(l.nl.len());
    let outs: Vec<syn::Ident> = l.collect.iter().map(|_| names.temp("out")).collect();
    let unpack_state = quote!(let (#(#state,)*) = #st;);
    let body_out = results(next_nl.iter().chain(&outs).chain(next_lin).collect());
    let (inline, pushes) = appends(l, &cols, &outs);
    let step = quote! {
        let #body_out = #body;
        #st = (#(#next,)*);
        #(#pushes)*
    };
    // Per kind of header: what runs before the loop, how many elements
    // the collected lists get room for, and the loop itself.
    let (setup, capacity, looped) = match &l.iter {
        Iter::While { cond } => {
            let c = gen_expr(cond, names, calls);
            let label = names.temp("while");
            let label = syn::Lifetime::new(&format!("'{label}"), label.span());
            let looped = while_loop(c, &st, &state, step, (&cols, label));
            (quote!(), quote!(0), looped)
        }
        Iter::Replay { .. } => {
            let each = quote!(#bind_item #unpack_state #step);
            replay_driver(&l.iter, &it, &item, each, names, calls)
        }
        Iter::Range { .. } | Iter::Each { .. } | Iter::Zip { .. } => {
            let looped = quote! {
                for #item in #it {
                    #bind_item
                    #unpack_state
                    #step
                }
            };
            let room = pushed.iter().map(|&k| {
                let k = syn::Index::from(k);
                quote!(#st.#k.reserve(::core::iter::Iterator::size_hint(&#it).0);)
            });
            (
                quote!(let #it = #header; #(#room)*),
                quote!(::core::iter::Iterator::size_hint(&#it).0),
                looped,
            )
        }
    };
    let (cols_init, tapes) = tapes(l, &cols, &inline, recycled, &capacity);
    let looped = quote!(#setup #(#cols_init)* #looped);
    let looped = match skip_test(l, &st) {
        Some(nonzero) => quote!(if #nonzero { #looped }),
        None => looped,
    };
    let (fin, loop_out) = loop_results(l, tapes, &reach.owned, names);
    let checks = hoisted_checks(l, names);
    let stores = reach.stores(&fin);
    let windows = reach.setup;
    // Mutable even when the loop carries nothing: each step still
    // assigns the (empty) state.
    quote!({
        #checks
        #windows
        #[allow(unused_mut)]
        let mut #st = (#(#inits,)*);
        #looped
        let (#(#fin,)*) = #st;
        #stores
        #loop_out
    })
}

/// For a `zeroskip` loop, the test that one of the reals in its state
/// `st` is nonzero, under which it runs (invariant 12 of `check`).
fn skip_test(l: &Loop, st: &syn::Ident) -> Option<TokenStream> {
    if !l.zero_skip {
        return None;
    }
    let reals = l.nl.iter().chain(&l.lin).enumerate();
    let reals = reals.filter(|(_, (b, _))| matches!(b.ty, Ty::Real(_)));
    let nonzero = reals.map(|(k, _)| {
        let k = syn::Index::from(k);
        quote!(!::linear_ad::__private::is_zero(#st.#k))
    });
    Some(quote!(#(#nonzero)||*))
}

/// A loop body's or a loop's results: a tuple unless there is one (see
/// `tuple_of`).
fn results<T: quote::ToTokens>(ids: Vec<T>) -> TokenStream {
    match ids.as_slice() {
        [one] => quote!(#one),
        _ => quote!((#(#ids,)*)),
    }
}

/// The names the final state of `l` is unpacked into, and the loop's
/// result: the final non-linear state, the collected lists (`tapes`),
/// then the final linear state.
fn loop_results(
    l: &Loop,
    tapes: Vec<TokenStream>,
    owned: &[(usize, syn::Ident)],
    names: &mut Names,
) -> (Vec<syn::Ident>, TokenStream) {
    let fin: Vec<syn::Ident> =
        l.nl.iter()
            .chain(&l.lin)
            .map(|_| names.temp("fin"))
            .collect();
    // A windowed component's final state is the window; the loop returns
    // the array it borrows.
    let out = |k: usize, f: &syn::Ident| match owned.iter().find(|(j, _)| *j == k) {
        Some((_, own)) => quote!(#own),
        None => quote!(#f),
    };
    let n = l.nl.len();
    let outs: Vec<TokenStream> = fin[..n]
        .iter()
        .enumerate()
        .map(|(k, f)| out(k, f))
        .chain(tapes)
        .chain(fin[n..].iter().enumerate().map(|(k, f)| out(n + k, f)))
        .collect();
    // A loop with no result ends its block with the unpacking (a trailing
    // `()` would be linted as unneeded).
    let loop_out = if outs.is_empty() {
        quote!()
    } else {
        results(outs)
    };
    (fin, loop_out)
}

/// The bounds checks of the arrays `l` indexes by its index, made once
/// before it ([`bounds`]).
fn hoisted_checks(l: &Loop, names: &mut Names) -> TokenStream {
    let Some(h) = bounds::hoisted(l) else {
        return quote!();
    };
    let (lo, hi, desc) = (names.ident(h.lo), names.ident(h.hi), h.descending);
    let arrays: Vec<syn::Ident> = h.arrays.iter().map(|a| names.ident(a)).collect();
    // Downwards the test is written in two equivalent forms (`lo < hi`
    // makes `hi - 1` safe): LLVM decided the loop's own checks from
    // `hi > len` in least squares' reversed loop, and in the dot product's
    // transpose only from `hi - 1 >= len`, the form it gives them once it
    // has made them loop-invariant; either form alone left the checks in
    // the other loop (so clippy's `int_plus_one` is allowed). Upwards
    // `hi > len` does.
    let past: Vec<TokenStream> = arrays
        .iter()
        .map(|a| match desc {
            true => quote!(#hi > #a.len() || #hi - 1 >= #a.len()),
            false => quote!(#hi > #a.len()),
        })
        .collect();
    quote! {
        #[allow(clippy::int_plus_one)]
        if #lo < #hi && (#(#past)||*) {
            ::linear_ad::__private::out_of_bounds([#(#arrays.len()),*], #lo, #hi, #desc)
        }
    }
}

/// The setup, list capacity and loop of a replay header: `linear_ad`'s
/// `Replay` yields the states, recomputing them from snapshots when
/// reversed, and `each` runs per state (bound to `item`).
fn replay_driver(
    iter: &Iter,
    it: &syn::Ident,
    item: &syn::Ident,
    each: TokenStream,
    names: &mut Names,
    calls: &dyn CallGen,
) -> (TokenStream, TokenStream, TokenStream) {
    let Iter::Replay {
        state,
        init,
        count,
        next,
        snapshots,
        rev,
    } = iter
    else {
        return (quote!(), quote!(0), quote!());
    };
    // U replays only `Copy` states (reals and booleans), so the initial
    // state is read by value even from a borrowed tape.
    let init = names.ident(init);
    let count = names.ident(count);
    let s = names.ident(&state.var);
    let n = gen_expr(next, names, calls);
    let setup = quote! {
        let mut #it = ::linear_ad::__private::Replay::new(#init, #count, #snapshots, #rev);
    };
    let looped = quote! {
        while let ::core::option::Option::Some(#item) = #it.next_state(|#s| #n) {
            #each
        }
    };
    (setup, quote!(#count), looped)
}

/// `x op y` for an operator's symbol (`<=`, `<<`).
fn infix(symbol: &str, x: &TokenStream, y: &TokenStream) -> TokenStream {
    let op: TokenStream = symbol.parse().unwrap_or_default();
    quote!(#x #op #y)
}

fn gen_prim(prim: Prim, a: &[TokenStream], names: &Names, args: &[Var]) -> TokenStream {
    let x = &a[0];
    let float = names
        .types
        .get(&args[0])
        .and_then(Ty::float)
        .unwrap_or(Float::F64);
    let method = |m: &str| {
        let m = format_ident!("{}", m);
        if a.len() == 2 {
            let y = &a[1];
            quote!(#x.#m(#y))
        } else {
            quote!(#x.#m())
        }
    };
    match prim {
        Prim::Add | Prim::Sub | Prim::Mul | Prim::Div | Prim::Rem => {
            let y = &a[1];
            let op = match prim {
                Prim::Add => quote!(+),
                Prim::Sub => quote!(-),
                Prim::Mul => quote!(*),
                Prim::Div => quote!(/),
                _ => quote!(%),
            };
            quote!(#x #op #y)
        }
        Prim::Neg => quote!(-#x),
        Prim::Powi(n) => {
            let n = Literal::i32_unsuffixed(n);
            quote!(#x.powi(#n))
        }
        Prim::Le => {
            let y = &a[1];
            let (one, zero) = (float_lit(1.0, float), float_lit(0.0, float));
            quote!(if #x <= #y { #one } else { #zero })
        }
        Prim::IAdd | Prim::ISub | Prim::IMul | Prim::IDiv | Prim::IRem | Prim::And | Prim::Or => {
            let y = &a[1];
            let op = match prim {
                Prim::IAdd => quote!(+),
                Prim::ISub => quote!(-),
                Prim::IMul => quote!(*),
                Prim::IDiv => quote!(/),
                Prim::IRem => quote!(%),
                Prim::And => quote!(&&),
                _ => quote!(||),
            };
            quote!(#x #op #y)
        }
        Prim::Cmp(c) => infix(c.symbol(), x, &a[1]),
        Prim::RemEuclid if float == Float::Generic => {
            // `num_traits::Float` has no `rem_euclid`: std's definition.
            let (y, zero) = (&a[1], float_lit(0.0, float));
            let r = syn::Ident::new("__r", Span::mixed_site());
            quote!({ let #r = #x % #y; if #r < #zero { #r + #y.abs() } else { #r } })
        }
        Prim::INeg => quote!(-#x),
        Prim::IBit(b) => infix(b.symbol(), x, &a[1]),
        Prim::INot | Prim::Not => quote!(!#x),
        Prim::ToReal(Float::F64) => quote!((#x as f64)),
        Prim::ToReal(Float::F32) => quote!((#x as f32)),
        Prim::ToReal(Float::Generic) => to_generic(quote!(#x)),
        Prim::ToInt => quote!((#x as i64)),
        Prim::PowiN => {
            let n = &a[1];
            quote!(#x.powi(#n))
        }
        Prim::Sin
        | Prim::Cos
        | Prim::Tan
        | Prim::Asin
        | Prim::Acos
        | Prim::Atan
        | Prim::Atan2
        | Prim::Sinh
        | Prim::Cosh
        | Prim::Tanh
        | Prim::Exp
        | Prim::Exp2
        | Prim::Ln
        | Prim::Log2
        | Prim::Log10
        | Prim::Sqrt
        | Prim::Cbrt
        | Prim::Powf
        | Prim::Recip
        | Prim::Abs
        | Prim::Hypot
        | Prim::Min
        | Prim::Max
        | Prim::Signum
        | Prim::Ln1p
        | Prim::ExpM1
        | Prim::Asinh
        | Prim::Acosh
        | Prim::Atanh
        | Prim::Floor
        | Prim::Ceil
        | Prim::Round
        | Prim::Trunc
        | Prim::Copysign
        | Prim::RemEuclid => method(prim.name()),
    }
}

fn elementwise1(
    t: &Ty,
    x: TokenStream,
    names: &mut Names,
    f: &dyn Fn(TokenStream) -> TokenStream,
) -> TokenStream {
    match t {
        // Only reals and tuples are linear; the checker rules out the rest.
        Ty::Real(_)
        | Ty::Tape(_)
        | Ty::Int
        | Ty::Bool
        | Ty::Sum(_)
        | Ty::List(..)
        | Ty::Array(..) => f(x),
        Ty::Tuple(ts) => {
            let parts: Vec<syn::Ident> = ts.iter().map(|_| names.temp("e")).collect();
            let rs: Vec<TokenStream> = ts
                .iter()
                .zip(&parts)
                .map(|(t, p)| elementwise1(t, quote!(#p), names, f))
                .collect();
            quote!({ let (#(#parts,)*) = #x; (#(#rs,)*) })
        }
    }
}

fn elementwise2(
    t: &Ty,
    x: TokenStream,
    y: TokenStream,
    names: &mut Names,
    f: &dyn Fn(TokenStream, TokenStream) -> TokenStream,
) -> TokenStream {
    match t {
        Ty::Real(_)
        | Ty::Tape(_)
        | Ty::Int
        | Ty::Bool
        | Ty::Sum(_)
        | Ty::List(..)
        | Ty::Array(..) => f(x, y),
        Ty::Tuple(ts) => {
            let px: Vec<syn::Ident> = ts.iter().map(|_| names.temp("a")).collect();
            let py: Vec<syn::Ident> = ts.iter().map(|_| names.temp("b")).collect();
            let rs: Vec<TokenStream> = ts
                .iter()
                .zip(px.iter().zip(&py))
                .map(|(t, (p, q))| elementwise2(t, quote!(#p), quote!(#q), names, f))
                .collect();
            quote!({ let (#(#px,)*) = #x; let (#(#py,)*) = #y; (#(#rs,)*) })
        }
    }
}
