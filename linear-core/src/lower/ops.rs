//! Lowering of Rust operators: arithmetic (real or integer by the
//! operands' types), comparisons (to a `bool`), `&&` and `||` (cases, see
//! `control.rs`), negation and `!`, and casts (between float types and
//! from integers as `f64(i)`; to integer types as Rust code, truncation
//! being piecewise constant). In a `#[linear]` function only linear
//! combinations are accepted, each rejection naming the linear values.

use proc_macro2::Span;
use quote::{quote, ToTokens};
use syn::spanned::Spanned;

use super::{describe, inactive, Lowerer, Mode, Shape, Val};
use crate::ir::{Bit, Cmp, Expr, Prim, Ty};

/// The compound assignment of `op` (`+=` for `add`), for messages.
pub(super) fn assign_symbol(op: Prim) -> proc_macro2::TokenStream {
    match op {
        Prim::Add => quote!(+=),
        Prim::Sub => quote!(-=),
        Prim::Mul => quote!(*=),
        Prim::IRem => quote!(%=),
        Prim::IBit(b) => format!("{}=", b.symbol()).parse().unwrap_or_default(),
        _ => quote!(/=),
    }
}

impl Lowerer<'_> {
    /// `a op b`.
    pub(super) fn binary_expr(&mut self, e: &syn::Expr, b: &syn::ExprBinary, hint: &str) -> Val {
        let op = match b.op {
            syn::BinOp::Add(_) => Prim::Add,
            syn::BinOp::Sub(_) => Prim::Sub,
            syn::BinOp::Mul(_) => Prim::Mul,
            syn::BinOp::Div(_) => Prim::Div,
            syn::BinOp::Rem(_) if self.mode == Mode::Differentiable => Prim::IRem,
            syn::BinOp::BitAnd(_) if self.mode == Mode::Differentiable => Prim::IBit(Bit::And),
            syn::BinOp::BitOr(_) if self.mode == Mode::Differentiable => Prim::IBit(Bit::Or),
            syn::BinOp::BitXor(_) if self.mode == Mode::Differentiable => Prim::IBit(Bit::Xor),
            syn::BinOp::Shl(_) if self.mode == Mode::Differentiable => Prim::IBit(Bit::Shl),
            syn::BinOp::Shr(_) if self.mode == Mode::Differentiable => Prim::IBit(Bit::Shr),
            syn::BinOp::And(_) if self.mode == Mode::Differentiable => {
                return self.logical(b, true)
            }
            syn::BinOp::Or(_) if self.mode == Mode::Differentiable => {
                return self.logical(b, false)
            }
            syn::BinOp::Lt(_)
            | syn::BinOp::Le(_)
            | syn::BinOp::Gt(_)
            | syn::BinOp::Ge(_)
            | syn::BinOp::Eq(_)
            | syn::BinOp::Ne(_)
                if self.mode == Mode::Differentiable =>
            {
                let c = match b.op {
                    syn::BinOp::Lt(_) => Cmp::Lt,
                    syn::BinOp::Le(_) => Cmp::Le,
                    syn::BinOp::Gt(_) => Cmp::Gt,
                    syn::BinOp::Ge(_) => Cmp::Ge,
                    syn::BinOp::Eq(_) => Cmp::Eq,
                    _ => Cmp::Ne,
                };
                let x = self.expr(&b.left, hint);
                let y = self.expr(&b.right, hint);
                return self.compare(c, x, y, b.left.span(), b.right.span());
            }
            syn::BinOp::Lt(_)
            | syn::BinOp::Le(_)
            | syn::BinOp::Gt(_)
            | syn::BinOp::Ge(_)
            | syn::BinOp::Eq(_)
            | syn::BinOp::Ne(_) => {
                // Only `#[linear]` functions get here: comparisons in
                // differentiable ones are lowered above.
                let names = self.linear_names(e.to_token_stream());
                self.errs.spanned(
                    e,
                    format!("comparing the linear value {names} is not linear"),
                );
                return self.placeholder();
            }
            _ => {
                self.errs.spanned(
                    b.op,
                    format!(
                        "operator `{}` is not supported on differentiable values",
                        b.op.to_token_stream()
                    ),
                );
                return self.placeholder();
            }
        };
        self.context = self.float_context(&b.right);
        let a = self.expr(&b.left, hint);
        self.context = match &a {
            Val::Active(_, t @ Ty::Real(_)) => Some(t.clone()),
            Val::Active(..) => None,
            Val::Inactive(_) => self.float_context(&b.left),
        };
        let c = self.expr(&b.right, hint);
        if let Some(why) = self.mistaken_operand(op, &a, &c) {
            self.errs.spanned(e, why);
            return self.placeholder();
        }
        if let Some(st) = self.struct_of(&a) {
            let name = match op {
                Prim::Add => "add",
                Prim::Sub => "sub",
                Prim::Mul => "mul",
                _ => "div",
            };
            return self.struct_operator(&st, name, b.op.span(), [(&*b.left, a), (&*b.right, c)]);
        }
        // The whole expression's text, for `#[linear]` functions' errors
        // only: printing it at every node of a long chain is quadratic.
        let whole = match self.mode {
            Mode::Linear => b.to_token_stream(),
            Mode::Differentiable => proc_macro2::TokenStream::new(),
        };
        let (sa, sb) = (operand_span(&b.left), operand_span(&b.right));
        self.binary(op, a, c, sa, sb, &whole, hint)
    }

    /// Why `a op b` fails, where one operand is a struct and the other a
    /// call result taken to be a float (`d - nn * k` with `nn` a method's
    /// result): a struct plus or minus a float, or a float with a struct
    /// on its right, which is not what the code means.
    fn mistaken_operand(&self, op: Prim, a: &Val, c: &Val) -> Option<String> {
        let assumed = |v: &Val| match v {
            Val::Active(v, _) => self.assumed_float(v),
            Val::Inactive(_) => None,
        };
        match (self.struct_of(a), self.struct_of(c)) {
            (Some(_), None) if matches!(op, Prim::Add | Prim::Sub) => assumed(c),
            (None, Some(_)) => assumed(a),
            _ => None,
        }
    }

    /// `a op b` or `-a` on a struct `st`: a call of the method its
    /// `#[differentiable]` operator impl amounts to (see
    /// `expand::methods`), `mul_f64` for `v * k` with a float `k`. The
    /// result is taken to be `st` by value, as `Output = Self` has it (an
    /// impl with another `Output` is a type error at the operator).
    fn struct_operator<const N: usize>(
        &mut self,
        st: &super::StructShape,
        name: &str,
        span: Span,
        operands: [(&syn::Expr, Val); N],
    ) -> Val {
        let rhs_float = match operands.get(1) {
            Some((_, Val::Active(_, Ty::Real(_)) | Val::Inactive(_))) => true,
            Some((_, Val::Active(..))) | None => false,
        };
        let name = if rhs_float {
            format!("{name}_{}", self.float().name())
        } else {
            name.to_string()
        };
        let result = super::StructShape {
            by_ref: false,
            ..st.clone()
        };
        let ret = Shape::Struct(std::rc::Rc::new(result));
        let args = operands.into_iter().map(|(e, v)| (e, Some(v))).collect();
        let name = syn::Ident::new(&name, span);
        self.call_method_of(&st.path, &name, args, Some(ret), "op")
    }

    /// `-a`, `!a`.
    pub(super) fn unary_expr(&mut self, e: &syn::Expr, u: &syn::ExprUnary, hint: &str) -> Val {
        match u.op {
            syn::UnOp::Neg(_) if self.mode == Mode::Linear => match self.expr(&u.expr, hint) {
                Val::Active(x, t) => {
                    Val::Active(self.emit_lin(hint, t.clone(), Expr::LinNeg(x)), t)
                }
                inactive => inactive,
            },
            syn::UnOp::Neg(_) => {
                let a = self.expr(&u.expr, hint);
                if let Some(st) = self.struct_of(&a) {
                    return self.struct_operator(&st, "neg", u.op.span(), [(&*u.expr, a)]);
                }
                if let Val::Active(x, Ty::Int) = &a {
                    let v = self.emit_nd(
                        hint,
                        Ty::Int,
                        Expr::Prim {
                            prim: Prim::INeg,
                            args: vec![x.clone()],
                        },
                    );
                    return Val::Active(v, Ty::Int);
                }
                let x = self.scalar(a, u.expr.span());
                self.prim(Prim::Neg, vec![x], hint)
            }
            syn::UnOp::Not(_) if self.mode == Mode::Differentiable => {
                let a = self.expr(&u.expr, hint);
                // `!` is logical on a bool and bitwise on an integer.
                let (prim, ty) = match &a {
                    Val::Active(_, Ty::Int) => (Prim::INot, Ty::Int),
                    _ => (Prim::Not, Ty::Bool),
                };
                let x = self.materialize(a, &ty, u.expr.span());
                let args = vec![x];
                Val::Active(
                    self.emit_nd(hint, ty.clone(), Expr::Prim { prim, args }),
                    ty,
                )
            }
            // An element bound by an iteration is a value already: `*v`
            // reads it (see `array.rs`).
            syn::UnOp::Deref(_) if self.mode == Mode::Differentiable => {
                match self.expr(&u.expr, hint) {
                    v @ Val::Active(_, Ty::Real(_) | Ty::Tuple(_)) => v,
                    Val::Inactive(t) => Val::Inactive(quote::quote!(*#t)),
                    _ => {
                        self.errs.spanned(u, "`*` of this value is not supported");
                        self.placeholder()
                    }
                }
            }
            _ => {
                self.errs.spanned(
                    u,
                    format!("{} are not supported on differentiable values", describe(e)),
                );
                self.placeholder()
            }
        }
    }

    /// `a as T`.
    pub(super) fn cast_expr(&mut self, e: &syn::Expr, c: &syn::ExprCast, hint: &str) -> Val {
        let v = self.expr(&c.expr, hint);
        if self.is_poison(&v) {
            return v;
        }
        let to_int = inactive::scalar_ty(&c.ty) == Some(Ty::Int);
        match (Shape::from_type(&c.ty), &v) {
            (Some(Shape::Float(f)), Val::Active(_, Ty::Real(g))) if f == *g => v,
            (Some(Shape::Float(f)), Val::Active(x, Ty::Int)) => {
                let r = self.emit_nd(
                    hint,
                    Ty::Real(f),
                    Expr::Prim {
                        prim: Prim::ToReal(f),
                        args: vec![x.clone()],
                    },
                );
                Val::Active(r, Ty::Real(f))
            }
            // To an integer type: Rust's own cast (truncation, a
            // piecewise-constant function), in place.
            (None, Val::Active(x, Ty::Real(_) | Ty::Int | Ty::Bool))
                if to_int && self.mode == Mode::Differentiable =>
            {
                let ty = &c.ty;
                let p = syn::Ident::new("__arg1", Span::mixed_site());
                let code = quote!((#p as #ty));
                let v = self.opaque_code((code, vec![p]), vec![x.clone()], Ty::Int);
                Val::Active(v, Ty::Int)
            }
            // A constant field of a struct parameter (`p.n as f64`).
            (_, Val::Inactive(t)) => {
                let ty = &c.ty;
                Val::Inactive(quote!((#t as #ty)))
            }
            _ => {
                if self.mode == Mode::Linear {
                    let names = self.linear_names(e.to_token_stream());
                    self.errs.spanned(c, format!("casting the linear value {names} to another type is not supported (casting coefficients is)"));
                } else {
                    self.errs.spanned(
                        c,
                        "casting a differentiable value is not supported (casting constants is)",
                    );
                }
                self.placeholder()
            }
        }
    }
}

/// `e.span()` (syn's: the first token's span joined to the last's, which
/// stable rustc cannot join, so the first token's) found by walking down to
/// the first and last tokens instead of printing `e`: a long chain of
/// operators would otherwise be printed again at each of its nodes.
fn operand_span(e: &syn::Expr) -> Span {
    let first = first_span(e);
    first.join(last_span(e)).unwrap_or(first)
}

/// The span of `e`'s first token, as `e.span()` has it on stable rustc.
fn first_span(e: &syn::Expr) -> Span {
    use syn::Expr as E;
    match e {
        E::Binary(b) if b.attrs.is_empty() => first_span(&b.left),
        E::MethodCall(m) if m.attrs.is_empty() => first_span(&m.receiver),
        E::Call(c) if c.attrs.is_empty() => first_span(&c.func),
        E::Field(f) if f.attrs.is_empty() => first_span(&f.base),
        E::Index(i) if i.attrs.is_empty() => first_span(&i.expr),
        E::Cast(c) if c.attrs.is_empty() => first_span(&c.expr),
        // The parenthesis group, as one token.
        E::Paren(p) if p.attrs.is_empty() => p.paren_token.span.join(),
        other => other.span(),
    }
}

/// The span of `e`'s last token.
fn last_span(e: &syn::Expr) -> Span {
    use syn::Expr as E;
    match e {
        E::Binary(b) if b.attrs.is_empty() => last_span(&b.right),
        E::Unary(u) if u.attrs.is_empty() => last_span(&u.expr),
        E::MethodCall(m) if m.attrs.is_empty() => m.paren_token.span.join(),
        E::Call(c) if c.attrs.is_empty() => c.paren_token.span.join(),
        E::Index(i) if i.attrs.is_empty() => i.bracket_token.span.join(),
        E::Paren(p) if p.attrs.is_empty() => p.paren_token.span.join(),
        other => other.span(),
    }
}
