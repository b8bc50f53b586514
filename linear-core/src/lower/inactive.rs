//! Inactive code: Rust that computes no derivative, kept as Rust.
//!
//! At the top level of the function body inactive statements go to the
//! prelude (run once, first). Inside a case arm or a loop body they must run
//! in place, exactly when Rust would run them: they become `const`
//! expressions with arguments, [`Opaque`] code whose IR variables (a loop
//! index, a counter) are read through placeholders. Such a value enters the
//! IR with a type: a real, an integer or a bool, from a `let` annotation or
//! from the expression itself ([`Lowerer::infer`]: literals, parameters'
//! declared types, `len()`, indexing a slice of floats, casts, arithmetic
//! and comparisons).

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{quote, ToTokens};
use syn::visit_mut::VisitMut;

use super::{Binding, Lowerer, Mode, Opaque, Shape, Val};
use crate::ir::{Expr, Float, Stmt, Ty, Var};

/// The IR type of a Rust scalar type: floats, integers, bool (through
/// references).
pub(super) fn scalar_ty(t: &syn::Type) -> Option<Ty> {
    match t {
        syn::Type::Reference(r) => scalar_ty(&r.elem),
        syn::Type::Paren(p) => scalar_ty(&p.elem),
        syn::Type::Group(g) => scalar_ty(&g.elem),
        syn::Type::Path(p) if p.qself.is_none() && super::is_float_param(&p.path) => {
            Some(Ty::Real(Float::Generic))
        }
        syn::Type::Path(p) if p.qself.is_none() => {
            let id = p.path.get_ident()?.to_string();
            match id.as_str() {
                "f64" => Some(Ty::Real(Float::F64)),
                "f32" => Some(Ty::Real(Float::F32)),
                "bool" => Some(Ty::Bool),
                "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32" | "u64"
                | "u128" | "usize" => Some(Ty::Int),
                _ => None,
            }
        }
        _ => Shape::from_type(t).map(|s| s.ty()),
    }
}

/// Whether evaluating `e` early is harmless: float arithmetic, literals,
/// names, casts and the float methods, none of which panics or has an
/// effect (indexing, integer division, calls may).
pub(super) fn cannot_panic(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Lit(_) | syn::Expr::Path(_) => true,
        syn::Expr::Paren(p) => cannot_panic(&p.expr),
        syn::Expr::Group(g) => cannot_panic(&g.expr),
        syn::Expr::Unary(u) => matches!(u.op, syn::UnOp::Neg(_)) && cannot_panic(&u.expr),
        syn::Expr::Binary(b) => {
            matches!(
                b.op,
                syn::BinOp::Add(_) | syn::BinOp::Sub(_) | syn::BinOp::Mul(_) | syn::BinOp::Div(_)
            ) && cannot_panic(&b.left)
                && cannot_panic(&b.right)
        }
        // Not `(n / m) as f64`: integer division may panic.
        syn::Expr::Cast(c) => matches!(&*c.expr, syn::Expr::Lit(_) | syn::Expr::Path(_)),
        syn::Expr::MethodCall(m) => {
            crate::lower::METHODS.split(", ").any(|n| m.method == n)
                && cannot_panic(&m.receiver)
                && m.args.iter().all(cannot_panic)
        }
        _ => false,
    }
}

/// The element type of a slice, array or `Vec` type (through references).
fn element_ty(t: &syn::Type) -> Option<Ty> {
    element_type(t).and_then(scalar_ty)
}

/// The element type of a slice, array or `Vec` type (behind references).
fn element_type(t: &syn::Type) -> Option<&syn::Type> {
    match t {
        syn::Type::Reference(r) => element_type(&r.elem),
        syn::Type::Slice(s) => Some(&s.elem),
        syn::Type::Array(a) => Some(&a.elem),
        syn::Type::Path(p) => {
            let last = p.path.segments.last()?;
            if last.ident != "Vec" {
                return None;
            }
            match &last.arguments {
                syn::PathArguments::AngleBracketed(a) => match a.args.first()? {
                    syn::GenericArgument::Type(t) => Some(t),
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    }
}

/// `value`, a Rust value of shape `s` holding fixed-size arrays, rebuilt
/// with tuples in their place (the IR's form of a fixed-size array).
pub(super) fn arrays_as_tuples(value: TokenStream, s: &Shape, next: &mut usize) -> TokenStream {
    let (parts, array) = match s {
        Shape::Float(_) | Shape::Slice(..) => return value,
        Shape::Struct(st) => {
            let flat = quote!(::linear_ad::__private::ToFlat::flat(&#value));
            return arrays_as_tuples(flat, &st.flat(), next);
        }
        Shape::Tuple(ss) => (ss.iter().collect::<Vec<_>>(), false),
        Shape::Array(e, n) => (vec![&**e; *n], true),
    };
    let names: Vec<syn::Ident> = parts
        .iter()
        .map(|_| {
            *next += 1;
            syn::Ident::new(&format!("__linear_ad_e{next}"), Span::mixed_site())
        })
        .collect();
    let rebuilt = names
        .iter()
        .zip(parts)
        .map(|(n, p)| arrays_as_tuples(quote!(#n), p, next));
    let pat = if array {
        quote!([#(#names),*])
    } else {
        quote!((#(#names,)*))
    };
    quote!({ let #pat = #value; (#(#rebuilt,)*) })
}

impl Lowerer<'_> {
    /// A non-linear binding of a value with no derivative.
    pub(super) fn emit_nd(&mut self, hint: &str, ty: Ty, rhs: Expr) -> Var {
        let v = self.emit(hint, ty, rhs);
        self.nondiff.insert(v.clone());
        v
    }

    /// Whether a lowered value may carry a derivative.
    pub(super) fn mentions_diff_val(&self, v: &Val) -> bool {
        match v {
            Val::Active(var, _) => !self.nondiff.contains(var),
            Val::Inactive(_) => false,
        }
    }

    /// Whether `tokens` mentions a value that may carry a derivative.
    pub(super) fn mentions_diff(&self, tokens: TokenStream) -> bool {
        let mut prev_dot = false;
        for tt in tokens {
            match &tt {
                TokenTree::Ident(i) => {
                    if !prev_dot {
                        match self.lookup(&i.to_string()) {
                            Some(Binding::Active(v, ..)) if !self.nondiff.contains(v) => {
                                return true
                            }
                            // A closure's call is its body, lowered in place.
                            Some(Binding::Poisoned | Binding::Closure(_)) => return true,
                            _ => {}
                        }
                    }
                    prev_dot = false;
                }
                TokenTree::Punct(p) => prev_dot = p.as_char() == '.',
                TokenTree::Group(g) => {
                    if self.mentions_diff(g.stream()) {
                        return true;
                    }
                    prev_dot = false;
                }
                TokenTree::Literal(lit) => {
                    // Inline format arguments: `println!("{x}")` reads `x`.
                    let text = lit.to_string();
                    if text.starts_with('"')
                        && self.diff_names().any(|n| text.contains(&format!("{{{n}")))
                    {
                        return true;
                    }
                    prev_dot = false;
                }
            }
        }
        false
    }

    fn diff_names(&self) -> impl Iterator<Item = &String> + '_ {
        self.scopes
            .iter()
            .flat_map(|s| s.iter())
            .filter_map(|(n, b)| match b {
                Binding::Active(v, ..) if !self.nondiff.contains(v) => Some(n),
                Binding::Poisoned => Some(n),
                _ => None,
            })
    }

    /// The IR type of an inactive expression, where the syntax tells.
    pub(super) fn infer(&self, e: &syn::Expr) -> Option<Ty> {
        match e {
            syn::Expr::Lit(l) => match &l.lit {
                syn::Lit::Int(i) => Some(match i.suffix() {
                    "f64" => Ty::Real(Float::F64),
                    "f32" => Ty::Real(Float::F32),
                    _ => Ty::Int,
                }),
                syn::Lit::Float(f) => Some(match f.suffix() {
                    "f32" => Ty::Real(Float::F32),
                    "f64" => Ty::Real(Float::F64),
                    _ => Ty::Real(self.float()),
                }),
                syn::Lit::Bool(_) => Some(Ty::Bool),
                _ => None,
            },
            syn::Expr::Paren(p) => self.infer(&p.expr),
            syn::Expr::Group(g) => self.infer(&g.expr),
            syn::Expr::Block(b) => match b.block.stmts.last() {
                Some(syn::Stmt::Expr(e, None)) => self.infer(e),
                _ => None,
            },
            syn::Expr::Path(p) if p.path.get_ident().is_none() => float_constant(&p.path),
            syn::Expr::Path(p) => {
                let id = p.path.get_ident()?.to_string();
                match self.lookup(&id)? {
                    Binding::Active(_, t, _) => Some(t.clone()),
                    Binding::Inactive(v, _) => self.inactive_types.get(&v.to_string()).cloned(),
                    Binding::Param => self.param_types.get(&id).and_then(scalar_ty),
                    Binding::Poisoned | Binding::Closure(_) | Binding::Extract { .. } => None,
                }
            }
            syn::Expr::Binary(b) => match b.op {
                syn::BinOp::Lt(_)
                | syn::BinOp::Le(_)
                | syn::BinOp::Gt(_)
                | syn::BinOp::Ge(_)
                | syn::BinOp::Eq(_)
                | syn::BinOp::Ne(_)
                | syn::BinOp::And(_)
                | syn::BinOp::Or(_) => Some(Ty::Bool),
                _ => self.infer(&b.left).or_else(|| self.infer(&b.right)),
            },
            syn::Expr::Unary(u) => self.infer(&u.expr),
            syn::Expr::Cast(c) => scalar_ty(&c.ty),
            syn::Expr::Index(ix) => {
                if let syn::Expr::Path(p) = &*ix.expr {
                    let id = p.path.get_ident()?.to_string();
                    if let Some(t) = self.param_types.get(&id) {
                        return element_ty(t);
                    }
                }
                // A row (`rows[i]`, or a local bound to one) is a tuple
                // here: any of its elements has the type of the first.
                match self.infer(&ix.expr)? {
                    Ty::Tuple(ts) => {
                        let k = super::int_literal(&ix.index).unwrap_or(0);
                        ts.get(usize::try_from(k).ok()?).cloned()
                    }
                    Ty::Array(e, _) => Some(*e),
                    _ => None,
                }
            }
            syn::Expr::MethodCall(m) => match m.method.to_string().as_str() {
                "len" | "count" => Some(Ty::Int),
                // The tests (`is_empty`, `is_nan`, `is_multiple_of`, ..).
                name if name.starts_with("is_") => Some(Ty::Bool),
                _ => self.infer(&m.receiver),
            },
            syn::Expr::Call(c) => match &*c.func {
                syn::Expr::Path(p) if p.path.segments.len() == 2 => {
                    let ty = p.path.segments[0].ident.to_string();
                    scalar_ty(&syn::parse_str::<syn::Type>(&ty).ok()?)
                }
                _ => None,
            },
            syn::Expr::If(i) => self.infer_block(&i.then_branch),
            syn::Expr::Field(f) => self.infer_field(f),
            // A tuple (not an array: the IR's tuple would not be the Rust
            // value's type).
            syn::Expr::Tuple(t) if !t.elems.is_empty() => t
                .elems
                .iter()
                .map(|e| self.infer(e))
                .collect::<Option<Vec<_>>>()
                .map(Ty::Tuple),
            _ => None,
        }
    }

    /// The type of `t.k`, a field of a local tuple (not of a tuple
    /// struct, whose IR tuple leaves out its constant fields).
    fn infer_field(&self, f: &syn::ExprField) -> Option<Ty> {
        let syn::Expr::Path(p) = &*f.base else {
            return None;
        };
        let name = p.path.get_ident()?.to_string();
        let Binding::Active(v, Ty::Tuple(ts), _) = self.lookup(&name)? else {
            return None;
        };
        match (&f.member, self.shapes.get(v)) {
            (syn::Member::Unnamed(i), None | Some(Shape::Tuple(_))) => {
                ts.get(i.index as usize).cloned()
            }
            _ => None,
        }
    }

    /// The float type `e` has, if it can tell: the context its operand or
    /// assigned value gets (see `Lowerer::context`).
    pub(super) fn float_context(&self, e: &syn::Expr) -> Option<Ty> {
        self.infer(e).filter(|t| matches!(t, Ty::Real(_)))
    }

    fn infer_block(&self, b: &syn::Block) -> Option<Ty> {
        match b.stmts.last() {
            Some(syn::Stmt::Expr(e, None)) => self.infer(e),
            _ => None,
        }
    }

    /// The shape of an array literal of floats (`[0.0, 0.0]`, `[x0; 3]`
    /// with a literal length, arrays of them), as its `[f64; N]`
    /// annotation would give it; `None` for anything else.
    pub(super) fn array_literal_shape(&self, t: &TokenStream) -> Option<Shape> {
        fn shape(l: &Lowerer<'_>, e: &syn::Expr) -> Option<Shape> {
            match e {
                syn::Expr::Array(a) => {
                    let mut elems = a.elems.iter().map(|e| elem(l, e));
                    let first = elems.next()??;
                    elems
                        .all(|s| s.as_ref() == Some(&first))
                        .then(|| Shape::Array(Box::new(first), a.elems.len()))
                }
                syn::Expr::Repeat(r) => {
                    let n = usize::try_from(super::int_literal(&r.len)?).ok()?;
                    Some(Shape::Array(Box::new(elem(l, &r.expr)?), n))
                }
                syn::Expr::Paren(p) => shape(l, &p.expr),
                syn::Expr::Group(g) => shape(l, &g.expr),
                _ => None,
            }
        }
        fn elem(l: &Lowerer<'_>, e: &syn::Expr) -> Option<Shape> {
            match l.infer(e) {
                Some(Ty::Real(f)) => Some(Shape::Float(f)),
                _ => shape(l, e),
            }
        }
        shape(self, &syn::parse2::<syn::Expr>(t.clone()).ok()?)
    }

    pub(super) fn infer_tokens(&self, t: &TokenStream) -> Option<Ty> {
        self.infer(&syn::parse2::<syn::Expr>(t.clone()).ok()?)
    }

    /// `e` (inactive: it reads no value with a derivative) evaluated in
    /// place, reading the IR variables it mentions through placeholders.
    pub(super) fn opaque(&mut self, e: &syn::Expr, ty: Ty) -> Var {
        // The code becomes a block's value, where parentheses around it
        // would be linted as unused.
        let (code, args) = self.placeholders(super::unparen(e.to_token_stream()));
        self.opaque_code(code, args, ty)
    }

    pub(super) fn opaque_code(
        &mut self,
        code: (TokenStream, Vec<syn::Ident>),
        args: Vec<Var>,
        ty: Ty,
    ) -> Var {
        let name = Var::new(&format!("__opaque_{}", self.opaques.len() + 1));
        self.opaques.insert(
            name.clone(),
            Opaque {
                params: code.1,
                code: code.0,
            },
        );
        self.emit_nd("c", ty.clone(), Expr::Const { name, args, ty })
    }

    /// `stop_gradient(e)`: `e`'s value as inactive code kept in place
    /// (`Expr::Const`, whose tangent is zero and whose arguments' tangents
    /// J drops), so that no derivative flows through it either way.
    pub(super) fn stop_gradient(&mut self, c: &syn::ExprCall, hint: &str) -> Val {
        let [arg] = c.args.iter().collect::<Vec<_>>()[..] else {
            self.errs
                .spanned(c, "`stop_gradient` takes one value: `stop_gradient(x)`");
            return self.placeholder();
        };
        match self.expr(arg, hint) {
            Val::Active(v, _) if self.poison.contains(&v) => self.placeholder(),
            Val::Active(_, _) if self.mode == Mode::Linear => {
                self.errs.spanned(c, "`stop_gradient` of a linear value is not linear (it is the value itself, with no derivative): a `#[linear]` function has no use for it");
                self.placeholder()
            }
            Val::Active(v, ty) if ty.is_vector() => {
                let p = syn::Ident::new("__arg1", Span::mixed_site());
                let out = self.opaque_code((quote!(#p), vec![p]), vec![v.clone()], ty.clone());
                if let Some(s) = self.shapes.get(&v).cloned() {
                    self.shapes.insert(out.clone(), s);
                }
                Val::Active(out, ty)
            }
            Val::Active(_, Ty::Array(..)) => {
                self.errs.spanned(arg, "`stop_gradient` takes a float, or a tuple or fixed-size array of floats, not an array read by index: hold the elements it needs (`stop_gradient(x[i])`)");
                self.placeholder()
            }
            Val::Active(_, ty) => {
                self.errs.spanned(arg, format!("`stop_gradient` takes a float, or a tuple or fixed-size array of floats, not a value of type {ty}"));
                self.placeholder()
            }
            inactive @ Val::Inactive(_) => inactive,
        }
    }

    /// Tokens with prelude locals renamed and IR variables replaced by
    /// placeholders: the code, the placeholders, and the variables they
    /// stand for.
    fn placeholders(&self, tokens: TokenStream) -> ((TokenStream, Vec<syn::Ident>), Vec<Var>) {
        struct Ph<'b, 'c> {
            l: &'b Lowerer<'c>,
            params: Vec<syn::Ident>,
            args: Vec<Var>,
        }
        impl Ph<'_, '_> {
            fn ident(&mut self, i: &proc_macro2::Ident) -> Option<proc_macro2::Ident> {
                match self.l.lookup(&i.to_string()) {
                    Some(Binding::Inactive(id, _)) => Some(id.clone()),
                    Some(Binding::Active(v, _, _)) => {
                        let k = match self.args.iter().position(|a| a == v) {
                            Some(k) => k,
                            None => {
                                self.args.push(v.clone());
                                self.params.push(syn::Ident::new(
                                    &format!("__arg{}", self.args.len()),
                                    Span::mixed_site(),
                                ));
                                self.args.len() - 1
                            }
                        };
                        Some(self.params[k].clone())
                    }
                    _ => None,
                }
            }
            fn tokens(&mut self, t: TokenStream) -> TokenStream {
                let mut prev_dot = false;
                t.into_iter()
                    .map(|tt| match tt {
                        TokenTree::Ident(i) => {
                            let r = if prev_dot { None } else { self.ident(&i) };
                            prev_dot = false;
                            TokenTree::Ident(r.unwrap_or(i))
                        }
                        TokenTree::Group(g) => {
                            prev_dot = false;
                            let mut ng =
                                proc_macro2::Group::new(g.delimiter(), self.tokens(g.stream()));
                            ng.set_span(g.span());
                            TokenTree::Group(ng)
                        }
                        TokenTree::Punct(p) => {
                            prev_dot = p.as_char() == '.';
                            TokenTree::Punct(p)
                        }
                        other => {
                            prev_dot = false;
                            other
                        }
                    })
                    .collect()
            }
        }
        impl VisitMut for Ph<'_, '_> {
            fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
                if let syn::Expr::Path(p) = e {
                    let name = p.path.get_ident().map(|i| i.to_string());
                    if let Some(Binding::Extract { code, .. }) =
                        name.and_then(|n| self.l.lookup(&n))
                    {
                        let code = self.tokens(code.clone());
                        *e = syn::Expr::Verbatim(super::pattern::read_form(&code));
                        return;
                    }
                }
                syn::visit_mut::visit_expr_mut(self, e);
            }
            fn visit_expr_path_mut(&mut self, p: &mut syn::ExprPath) {
                if p.qself.is_none() && p.path.segments.len() == 1 && p.path.leading_colon.is_none()
                {
                    if let Some(id) = self.ident(&p.path.segments[0].ident) {
                        p.path.segments[0].ident = id;
                    }
                }
            }
            fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
                m.tokens = self.tokens(m.tokens.clone());
            }
        }
        let mut ph = Ph {
            l: self,
            params: Vec::new(),
            args: Vec::new(),
        };
        let code = match syn::parse2::<syn::Expr>(tokens.clone()) {
            Ok(mut e) => {
                ph.visit_expr_mut(&mut e);
                e.to_token_stream()
            }
            Err(_) => ph.tokens(tokens),
        };
        ((code, ph.params), ph.args)
    }

    /// An inactive statement inside a case arm or loop body: run in place.
    pub(super) fn opaque_effect(&mut self, e: &syn::Expr) {
        let ((code, params), args) = self.placeholders(e.to_token_stream());
        let v = self.opaque_code((quote!({ #code; }), params), args, Ty::Tuple(vec![]));
        self.out.push(Stmt::Let {
            nl: vec![],
            lin: vec![],
            rhs: Expr::Drop(Box::new(Expr::var(v))),
        });
    }

    /// An inactive `let` inside a case arm or loop body: an IR variable of
    /// the annotated or inferred type.
    pub(super) fn inactive_local(
        &mut self,
        tokens: &TokenStream,
        annotated: Option<Ty>,
        span: Span,
    ) -> Option<Var> {
        let Some(ty) = annotated.or_else(|| self.infer_tokens(tokens)) else {
            self.errs.push(span, "inside a loop or a branch, give this value a type: `let v: f64 = ..;` (or an integer type, or `bool`)");
            return None;
        };
        Some(match (&ty, super::float_literal(tokens)) {
            (Ty::Real(f), Some(x)) => self.emit_nd(
                "k",
                ty.clone(),
                Expr::Lit {
                    value: x,
                    float: *f,
                },
            ),
            _ => {
                let e: syn::Expr = match syn::parse2(tokens.clone()) {
                    Ok(e) => e,
                    Err(_) => {
                        self.errs.push(span, "cannot read this expression");
                        return None;
                    }
                };
                self.opaque(&e, ty)
            }
        })
    }

    /// The shape of `data[i]`'s element, for a `#[nondiff]` parameter
    /// `data` of elements the IR holds (floats, tuples and arrays of them).
    pub(super) fn data_row_shape(&self, e: &syn::Expr) -> Option<Shape> {
        let syn::Expr::Index(ix) = e else {
            return None;
        };
        let syn::Expr::Path(p) = &*ix.expr else {
            return None;
        };
        let id = p.path.get_ident()?.to_string();
        if !matches!(self.lookup(&id), Some(Binding::Param)) {
            return None;
        }
        Shape::from_type(element_type(self.param_types.get(&id)?)?)
    }

    /// `data[i]` of constant data whose elements hold fixed-size arrays
    /// (`#[nondiff] pts: &[[f64; 2]]`): the element as the IR sees a
    /// fixed-size array, a tuple, converted in place; `None` for anything
    /// else.
    fn data_row(&mut self, e: &syn::Expr) -> Option<Val> {
        let shape = self.data_row_shape(e)?;
        if !shape.has_array() {
            return None;
        }
        let code = arrays_as_tuples(e.to_token_stream(), &shape, &mut 0);
        let ty = shape.ty();
        let v = self.opaque(&syn::parse2(code).ok()?, ty.clone());
        self.shapes.insert(v.clone(), shape);
        Some(Val::Active(v, ty))
    }

    /// `xs[i]` of a `#[nondiff]` slice, array or `Vec` of floats held by
    /// reference, at an index the IR computes (a loop's): an element of
    /// the data array standing for `xs` ([`crate::visit::is_data`]). The
    /// reverse pass then reads `xs[i]` again, as it reads an input array,
    /// instead of saving the element on the tape.
    fn data_read(&mut self, e: &syn::Expr) -> Option<Val> {
        let syn::Expr::Index(ix) = e else {
            return None;
        };
        let syn::Expr::Path(p) = &*ix.expr else {
            return None;
        };
        let id = p.path.get_ident()?;
        let (arr, elem) = self.data_array(id)?;
        let i = self.int(&ix.index);
        let x = self.emit_nd("x", elem.clone(), Expr::Index { arr, idx: i });
        Some(Val::Active(x, elem))
    }

    /// The data array standing for the `#[nondiff]` parameter `id` if it is
    /// a reference to floats (`&[f64]`, `&[f64; N]`, `&Vec<f64>`): bound
    /// once, at the top of the function, to a prelude local that borrows
    /// the parameter (so that `f_lin`'s linearization borrows it too).
    /// Only in a function with an array parameter or result: others may
    /// be called by other differentiable functions, whose tapes hold
    /// their linearizations and could not name its lifetime; they keep
    /// the elements they read on the tape.
    fn data_array(&mut self, id: &syn::Ident) -> Option<(Var, Ty)> {
        if !self.data_ok {
            return None;
        }
        self.data_array_for_call(id)
    }

    /// [`Self::data_array`] for an argument of a call, which a call can
    /// pass only as a data array, whatever the function's interface: its
    /// linearization then borrows it, and crosses calls detached from it
    /// (`expand::items::Detached`).
    pub(super) fn data_array_for_call(&mut self, id: &syn::Ident) -> Option<(Var, Ty)> {
        let name = id.to_string();
        if !matches!(self.lookup(&name), Some(Binding::Param)) {
            return None;
        }
        let t = self.param_types.get(&name)?.clone();
        let syn::Type::Reference(r) = &t else {
            return None;
        };
        let elem = element_ty(&t).filter(|e| matches!(e, Ty::Real(_)))?;
        if let Some((v, _)) = self.data_arrays.get(&name) {
            return Some((v.clone(), elem));
        }
        let Ty::Real(float) = elem else {
            return None;
        };
        let (len, borrowed) = match &*r.elem {
            syn::Type::Array(a) => {
                let n = u64::try_from(super::int_literal(&a.len)?).ok()?;
                let (e, n_src) = (&a.elem, &a.len);
                (Some(n), quote!(&[#e; #n_src]))
            }
            _ => {
                let e = element_type(&t)?;
                (None, quote!(&[#e]))
            }
        };
        let local = self.new_inactive_name("data");
        self.prelude.push(quote!(let #local: #borrowed = #id;));
        let ty = Ty::Array(Box::new(elem.clone()), len);
        let v = self.hoist_const(&name, &local, ty);
        let kind = match len {
            Some(n) => super::SliceKind::ArrayRef(n as usize),
            None => super::SliceKind::Slice,
        };
        let shape = Shape::Slice(Box::new(Shape::Float(float)), kind);
        self.data_arrays.insert(name, (v.clone(), shape));
        Some((v, elem))
    }

    /// Whether `e` is `v[k]` of a variable `v` bound to an IR tuple (a
    /// fixed-size array, as the IR holds it).
    fn indexes_a_tuple(&self, e: &syn::Expr) -> bool {
        let syn::Expr::Index(ix) = e else {
            return false;
        };
        let syn::Expr::Path(p) = &*ix.expr else {
            return false;
        };
        let Some(id) = p.path.get_ident() else {
            return false;
        };
        matches!(
            self.lookup(&id.to_string()),
            Some(Binding::Active(_, Ty::Tuple(_), _))
        )
    }

    /// Statements with no value (a loop body, an `if` statement's arm).
    pub(super) fn stmts(&mut self, stmts: &[syn::Stmt]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    /// Code that reads IR variables but no derivative, in a form with no
    /// rule of its own (indexing data with a loop index, integer methods,
    /// calls): kept as Rust, in place, as a value of the type its syntax
    /// (or the expected result) gives; `None` for everything else.
    pub(super) fn in_place(
        &mut self,
        e: &syn::Expr,
        ret_hint: Option<&Shape>,
        context: Option<&Ty>,
    ) -> Option<Val> {
        let structural = matches!(
            e,
            syn::Expr::Path(_)
                | syn::Expr::Paren(_)
                | syn::Expr::Group(_)
                | syn::Expr::Binary(_)
                | syn::Expr::Unary(_)
                | syn::Expr::Cast(_)
                | syn::Expr::If(_)
                | syn::Expr::Match(_)
                | syn::Expr::Block(_)
                | syn::Expr::ForLoop(_)
                | syn::Expr::While(_)
                | syn::Expr::Tuple(_)
                | syn::Expr::Array(_)
        );
        if self.mode != Mode::Differentiable
            || structural
            || self.mentions_diff(e.to_token_stream())
        {
            return None;
        }
        if let Some(v) = self.data_read(e) {
            return Some(v);
        }
        if let Some(v) = self.data_row(e) {
            return Some(v);
        }
        if self.indexes_a_tuple(e) {
            // `p[0]` of a row bound earlier: a part of an IR tuple.
            return None;
        }
        let hinted = ret_hint.map(Shape::ty).filter(|t| matches!(t, Ty::Real(_)));
        let hinted = hinted.or_else(|| context.cloned());
        Some(match self.infer(e).or(hinted) {
            Some(t) => Val::Active(self.opaque(e, t.clone()), t),
            None => {
                self.errs.spanned(e, "cannot tell the type of this expression, which reads a loop variable: bind it with a type annotation (`let v: f64 = ..;`, or an integer type, or `bool`)");
                self.placeholder()
            }
        })
    }
}

/// The type of a float type's associated constant (`f64::NEG_INFINITY`,
/// `f32::EPSILON`, `std::f64::consts::PI`): a path through `f64` or `f32`
/// to an upper-case name.
fn float_constant(p: &syn::Path) -> Option<Ty> {
    let names: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
    let (last, init) = names.split_last()?;
    if !last
        .chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    {
        return None;
    }
    match init
        .iter()
        .rev()
        .find(|n| *n == "f64" || *n == "f32")?
        .as_str()
    {
        "f32" => Some(Ty::Real(Float::F32)),
        _ => Some(Ty::Real(Float::F64)),
    }
}
