//! Lowering of functions generic in their float type, `fn f<T:
//! num_traits::Float>(x: T) -> T`: `T` is the IR's `float` type
//! ([`Float::Generic`]), and the few spellings `num_traits` gives
//! constants and conversions are read as such:
//!
//! * `T::zero()`, `T::one()` and `T::from(2.5).unwrap()` (a literal,
//!   possibly negated) are literals of type `float`, which the passes
//!   fold like any other;
//! * `T::from(i).unwrap()` of an integer (a loop index) is the conversion
//!   `float(i)`, as `i as f64` is `f64(i)`, and of a constant (an integer
//!   field of a struct parameter) a constant;
//! * `T::sin(x)` and `Float::sin(x)` are the primitive, as `f64::sin(x)`.
//!
//! Any other use of `T` in an expression is Rust code the generated
//! functions run as written, where `T` is in scope with the user's bounds.

use quote::{quote, ToTokens};

use super::{is_float_param, Lowerer, Val};
use crate::ir::{Expr, Float, Prim, Ty};

/// The value of a constant spelled through the float type parameter:
/// `T::zero()`, `T::one()`, `T::from(lit).unwrap()`.
pub(super) fn generic_constant(e: &syn::Expr) -> Option<f64> {
    match e {
        syn::Expr::Call(c) if c.args.is_empty() => match assoc_fn(&c.func)?.as_str() {
            "zero" => Some(0.0),
            "one" => Some(1.0),
            _ => None,
        },
        syn::Expr::MethodCall(_) => literal(from_unwrap(e)?),
        _ => None,
    }
}

/// Whether `ty`, the first segment of a path call `ty::m(x)`, names the
/// float type parameter or the `Float` trait, whose methods are the
/// primitives.
pub(super) fn float_type_path(ty: &syn::Ident) -> bool {
    ty == "Float" || is_float_param(&syn::Path::from(ty.clone()))
}

/// `m` in `T::m`, for the float type parameter `T`.
fn assoc_fn(f: &syn::Expr) -> Option<String> {
    let syn::Expr::Path(p) = f else { return None };
    let [ty, m] = [p.path.segments.first()?, p.path.segments.last()?];
    let ty_path = syn::Path::from(ty.ident.clone());
    (p.path.segments.len() == 2 && p.qself.is_none() && is_float_param(&ty_path))
        .then(|| m.ident.to_string())
}

/// `x` in `T::from(x).unwrap()`.
fn from_unwrap(e: &syn::Expr) -> Option<&syn::Expr> {
    let syn::Expr::MethodCall(m) = e else {
        return None;
    };
    let syn::Expr::Call(c) = &*m.receiver else {
        return None;
    };
    let ok = m.method == "unwrap" && m.args.is_empty() && c.args.len() == 1;
    (ok && assoc_fn(&c.func)? == "from").then(|| &c.args[0])
}

fn literal(e: &syn::Expr) -> Option<f64> {
    match e {
        syn::Expr::Lit(l) => match &l.lit {
            syn::Lit::Float(f) => f.base10_parse().ok(),
            syn::Lit::Int(i) => i.base10_parse::<i64>().ok().map(|n| n as f64),
            _ => None,
        },
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => literal(&u.expr).map(|x| -x),
        syn::Expr::Paren(p) => literal(&p.expr),
        syn::Expr::Group(g) => literal(&g.expr),
        _ => None,
    }
}

impl Lowerer<'_> {
    /// `T::from(x).unwrap()` of a value the function computes: an integer
    /// converted (`float(i)`), a `T` passed through. `None` for any other
    /// method call.
    pub(super) fn generic_from(&mut self, e: &syn::Expr, hint: &str) -> Option<Val> {
        let x = from_unwrap(e)?;
        let v = self.expr(x, hint);
        Some(match v {
            Val::Active(i, Ty::Int) => {
                let r = self.emit_nd(
                    hint,
                    Ty::Real(Float::Generic),
                    Expr::Prim {
                        prim: Prim::ToReal(Float::Generic),
                        args: vec![i],
                    },
                );
                Val::Active(r, Ty::Real(Float::Generic))
            }
            Val::Active(_, Ty::Real(Float::Generic)) => v,
            // A constant (`T::from(p.n).unwrap()` of an integer field):
            // Rust code like any other.
            Val::Inactive(x) => {
                let t = crate::codegen::float_ty(Float::Generic);
                Val::Inactive(quote!(<#t as ::linear_ad::num_traits::NumCast>::from(#x).unwrap()))
            }
            _ if self.is_poison(&v) => v,
            _ => {
                self.errs.spanned(
                    x,
                    format!(
                        "converting `{}` to the float type parameter is not supported: convert integers (`T::from(i).unwrap()`) and constants, and compute in `T` throughout",
                        x.to_token_stream()
                    ),
                );
                self.placeholder()
            }
        })
    }
}
