//! Code generation: a Linear A function body to Rust.
//!
//! Every IR variable becomes a Rust local with a `Span::mixed_site()`
//! identifier, so generated names can neither capture nor be captured by
//! the user's; names stay close to the IR's (`z.2` prints as `z_2`) for
//! readability in `cargo expand`. Bindings map one to one onto `let`s:
//! straight-line IR becomes straight-line Rust on plain floats and tuples,
//! with no heap, no trait objects and no `unsafe`, which LLVM optimises like
//! hand-written code.
//!
//! Linear operations on tuples are expanded componentwise in place (no
//! helper trait), so every operation is visible to the optimiser. `drop`
//! becomes `let _ = …;` so no value is left unused.
//!
//! Input: a function that type-checks in Linear A. Calls ([`Expr::App`])
//! are not generated here: the driver compiles each function separately.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use proc_macro2::{Literal, Span, TokenStream};
use quote::{format_ident, quote};

use crate::ir::{Binder, Expr, Float, Func, Prim, Stmt, Ty, Var};
use crate::lower::ty_rust;

/// Rust identifiers for the IR variables of one generated function.
#[derive(Default)]
pub struct Names {
    map: HashMap<Var, syn::Ident>,
    taken: HashSet<String>,
    types: HashMap<Var, Ty>,
    next: usize,
}

impl Names {
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

/// A float literal of the given type; non-finite values by name.
pub fn float_lit(value: f64, float: Float) -> TokenStream {
    let ty = match float {
        Float::F64 => quote!(f64),
        Float::F32 => quote!(f32),
    };
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
            Float::F64 => {
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
            Float::F64 => *k == v,
            Float::F32 => (*k as f32) == (v as f32),
        };
        same.then_some(*name)
    })
}

/// The zero of a type.
pub fn zero(t: &Ty) -> TokenStream {
    match t {
        Ty::Real(f) => float_lit(0.0, *f),
        Ty::Tuple(ts) => {
            let zs = ts.iter().map(zero);
            quote!((#(#zs,)*))
        }
        Ty::Tape(_) => quote!(()),
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

/// Generates the statements and tail of function `f`'s body, its parameters
/// bound to the given Rust expressions. Returns a block expression.
pub fn body(f: &Func, args: &[TokenStream], calls: &dyn CallGen) -> TokenStream {
    let mut names = Names {
        types: crate::visit::binder_types(f),
        ..Names::default()
    };
    let mut binds = Vec::new();
    for (b, a) in f.nl_params.iter().chain(&f.lin_params).zip(args) {
        let id = names.ident(&b.var);
        binds.push(quote!(let #id = #a;));
    }
    let e = gen_inner(&f.body, &mut names, calls);
    quote!({ #(#binds)* #e })
}

/// The statements of a block followed by its tail, without braces.
fn gen_inner(e: &Expr, names: &mut Names, calls: &dyn CallGen) -> TokenStream {
    match e {
        Expr::Block { stmts, tail } => {
            let ss: Vec<TokenStream> = stmts.iter().map(|s| gen_stmt(s, names, calls)).collect();
            let t = gen_expr(tail, names, calls);
            quote!(#(#ss)* #t)
        }
        other => gen_expr(other, names, calls),
    }
}

fn pattern(bs: &[Binder], names: &mut Names) -> TokenStream {
    let ids: Vec<syn::Ident> = bs.iter().map(|b| names.ident(&b.var)).collect();
    match ids.as_slice() {
        [one] => {
            let t = ty_rust(&bs[0].ty);
            quote!(#one: #t)
        }
        _ => quote!((#(#ids,)*)),
    }
}

fn gen_stmt(s: &Stmt, names: &mut Names, calls: &dyn CallGen) -> TokenStream {
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
                    other => {
                        let v = gen_expr(other, names, calls);
                        quote!(let () = #v;)
                    }
                };
            }
            let v = gen_expr(rhs, names, calls);
            let p = pattern(&bs, names);
            quote!(let #p = #v;)
        }
        Stmt::Unpack { vars, tuple } | Stmt::LinUnpack { vars, tuple } => {
            let t = names.ident(tuple);
            let ids: Vec<syn::Ident> = vars.iter().map(|b| names.ident(&b.var)).collect();
            quote!(let (#(#ids,)*) = #t;)
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

fn gen_expr(e: &Expr, names: &mut Names, calls: &dyn CallGen) -> TokenStream {
    match e {
        Expr::Block { .. } => {
            let inner = gen_inner(e, names, calls);
            quote!({ #inner })
        }
        Expr::Ret { nl, lin } => {
            let vs: Vec<Var> = nl.iter().chain(lin).cloned().collect();
            tuple_of(&vs, names)
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
        Expr::Const { name, .. } => {
            let id = syn::Ident::new(name.as_str(), Span::mixed_site());
            quote!(#id)
        }
        Expr::Tup(vs) | Expr::LinTup(vs) => {
            let ids: Vec<syn::Ident> = vs.iter().map(|v| names.ident(v)).collect();
            quote!((#(#ids,)*))
        }
        Expr::Prim { prim, args } => {
            let a: Vec<syn::Ident> = args.iter().map(|v| names.ident(v)).collect();
            gen_prim(*prim, &a, names, args)
        }
        Expr::LinZero(t) => zero(t),
        Expr::LinAdd(a, b) => {
            let t = names.types.get(a).cloned().unwrap_or(Ty::F64);
            let (x, y) = (names.ident(a), names.ident(b));
            elementwise2(&t, quote!(#x), quote!(#y), names, &|p, q| quote!(#p + #q))
        }
        Expr::LinNeg(a) => {
            let t = names.types.get(a).cloned().unwrap_or(Ty::F64);
            let x = names.ident(a);
            elementwise1(&t, quote!(#x), names, &|p| quote!(-#p))
        }
        Expr::LinScale(s, a) => {
            let t = names.types.get(a).cloned().unwrap_or(Ty::F64);
            let (k, x) = (names.ident(s), names.ident(a));
            elementwise1(&t, quote!(#x), names, &|p| quote!(#k * #p))
        }
        Expr::Dup(a) => {
            let x = names.ident(a);
            quote!((#x, #x))
        }
        Expr::Drop(inner) => {
            let v = gen_expr(inner, names, calls);
            quote!({ let _ = #v; })
        }
    }
}

fn gen_prim(prim: Prim, a: &[syn::Ident], names: &Names, args: &[Var]) -> TokenStream {
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
        Prim::Add => {
            let y = &a[1];
            quote!(#x + #y)
        }
        Prim::Sub => {
            let y = &a[1];
            quote!(#x - #y)
        }
        Prim::Mul => {
            let y = &a[1];
            quote!(#x * #y)
        }
        Prim::Div => {
            let y = &a[1];
            quote!(#x / #y)
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
        | Prim::Signum => method(prim.name()),
    }
}

fn elementwise1(
    t: &Ty,
    x: TokenStream,
    names: &mut Names,
    f: &dyn Fn(TokenStream) -> TokenStream,
) -> TokenStream {
    match t {
        // Tapes are never linear; the checker rules this arm out.
        Ty::Real(_) | Ty::Tape(_) => f(x),
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
        Ty::Real(_) | Ty::Tape(_) => f(x, y),
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
