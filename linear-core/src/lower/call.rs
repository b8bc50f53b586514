//! Calls to other functions compiled separately (`#[differentiable]`
//! calling `#[differentiable]` functions and methods or `#[linear]`
//! functions, `#[linear]` calling `#[linear]`): the IR sees an extern per
//! call site (`call.N`), and the
//! caller's generated code calls the callee's generated functions
//! (`expand::calls`). Calls are never inlined, so generated code stays
//! proportional to the source (Thm 8.1).
//!
//! The result's Rust shape comes from a `let` annotation, else from the
//! callee's signature ([`crate::signature`]), which also says whether the
//! call is possible (a `#[linear]` function calls only `#[linear]` ones;
//! some functions cannot be called yet), and whether the callee is generic
//! in its float type (its linearization is then named at the float type
//! of the call's arguments, `cube<f64>`). A call whose signature is not
//! known yet is recorded in `missing_sigs`, annotated or not, so the
//! expansion can fetch it and lower again; until then its result takes
//! the annotation, or the caller's result type when it is the caller's
//! value, else a float.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;

use super::{float_literal, Lowerer, Mode, Shape, Val};
use crate::ir::{Expr, Extern, Ty, Var};
use crate::signature::{names_type, Kind};

/// A call to another `#[differentiable]` function, compiled separately: the
/// IR sees an extern taking the call's differentiable arguments; code
/// generation calls the callee's generated functions.
#[derive(Clone, Debug)]
pub struct CallSite {
    /// The callee as written (`g`, `geometry::g`, `Particle::energy` for
    /// `p.energy(..)`).
    pub path: syn::Path,
    /// The type the caller's generated code reaches the callee's through:
    /// the function's alias `g` (see [`crate::signature`]), or a method's
    /// linearization by its `Method` impl ([`method_type`]).
    pub callee: syn::Type,
    /// Each argument, in order.
    pub args: Vec<CallArg>,
    /// The Rust shape of the result.
    pub ret: Shape,
    /// Whether a struct argument crosses the call (as its flat value or
    /// as its origin).
    pub passes_struct: bool,
    /// The callee's kind and order, if its signature is known.
    pub order: Option<(Kind, crate::signature::Order)>,
    /// Whether the callee's linearization has `apply_lanes`, by its
    /// signature.
    pub lanes: bool,
    /// Per argument, the shape of the cotangent the callee's `_vjp`
    /// returns for its parameter (`None` for a `#[nondiff]` parameter or
    /// an integer or boolean one), if its signature says for every
    /// parameter ([`Lowerer::cotangent_shapes`]), or, for a method of
    /// another block, which has none here, if its arguments do
    /// ([`Lowerer::method_cotangents`]).
    pub cotangents: Option<Vec<Option<Shape>>>,
}

#[derive(Clone, Debug)]
pub enum CallArg {
    /// A differentiable argument: the next non-linear IR argument, of this
    /// Rust shape, written at this span.
    Active(Shape, Span),
    /// A struct with constant fields: the next non-linear IR argument, of
    /// this flat shape, whose value is that of the struct the prelude
    /// variable borrows, which is passed instead (its tangent and
    /// cotangent cross as flat values).
    Origin(Shape, syn::Ident, Span),
    /// An integer or bool the function computes (`k + 1` of a loop index
    /// `k`, `i % 2 == 0`): the next non-linear IR argument, passed as its
    /// value. It has no tangent: the callee's slot for it is `Inactive`,
    /// and the IR's tangent and cotangent of it are the empty tuple.
    Discrete(Span),
    /// A constant, held in this prelude variable, written at this span.
    Inactive(syn::Ident, Span),
    /// A differentiable array passed again (`dot(x, x)`): the argument at
    /// this index of the call's arguments, which the IR passes once (an
    /// extern lends an array's tangent once).
    Again { first: usize, span: Span },
    /// A constant array of floats (a `#[nondiff]` array parameter of the
    /// caller) passed to an array parameter of the callee (`active` if
    /// that parameter is differentiable, when its tangent is zero): the
    /// next non-linear IR argument, the data array that stands for it,
    /// constant in the extern (so J gives it no tangent), of this shape.
    Data {
        shape: Shape,
        active: bool,
        span: Span,
    },
    /// A part of an array, `&a[lo..hi]`, passed to an array parameter of
    /// the callee (differentiable if `active`): the array, unless the
    /// call passes it already (then `first`, the argument that does), and
    /// the range's bounds, constant integers of the extern. `lent` if the
    /// array is differentiable (the extern borrows its tangent), else it
    /// is the data array of a `#[nondiff]` parameter, constant. Of this
    /// shape (a slice of floats).
    Part {
        first: Option<usize>,
        shape: Shape,
        lent: bool,
        active: bool,
        span: Span,
    },
}

impl CallArg {
    /// How many IR arguments stand for this one.
    pub fn ir_args(&self) -> usize {
        match self {
            CallArg::Inactive(..) | CallArg::Again { .. } => 0,
            CallArg::Part { first: None, .. } => 3,
            CallArg::Part { first: Some(_), .. } => 2,
            CallArg::Active(..)
            | CallArg::Origin(..)
            | CallArg::Discrete(_)
            | CallArg::Data { .. } => 1,
        }
    }
}

impl CallSite {
    /// Whether the call passes Rust values the caller's prelude holds
    /// (constants, the origins of structs with constant fields), which
    /// its extern then says ([`Extern::pinned`]).
    pub fn pinned(&self) -> bool {
        self.args
            .iter()
            .any(|a| matches!(a, CallArg::Inactive(..) | CallArg::Origin(..)))
    }

    /// The positions among the extern's non-linear parameters of its
    /// constants: the [`CallArg::Data`] arrays, the arrays of constant
    /// [`CallArg::Part`]s, and the bounds of every part's range.
    pub fn constant_positions(&self) -> Vec<usize> {
        let mut out = Vec::new();
        for ((a, (k, _)), range) in self.args.iter().zip(self.positions()).zip(self.ranges()) {
            match a {
                CallArg::Data { .. } | CallArg::Part { lent: false, .. } => out.extend(k),
                _ => {}
            }
            if let Some((lo, hi)) = range {
                out.extend([lo, hi]);
            }
        }
        out
    }

    /// Per argument, its position among the extern's non-linear arguments
    /// and among its tangents (linear arguments), where it has one (a
    /// part's: its array's, if the part passes it).
    pub fn positions(&self) -> Vec<(Option<usize>, Option<usize>)> {
        let mut t = 0;
        self.args
            .iter()
            .zip(self.starts())
            .map(|(a, at)| match a {
                CallArg::Active(..) | CallArg::Origin(..) | CallArg::Discrete(_) => {
                    t += 1;
                    (Some(at), Some(t - 1))
                }
                CallArg::Part {
                    first: None, lent, ..
                } => {
                    t += usize::from(*lent);
                    (Some(at), lent.then(|| t - 1))
                }
                CallArg::Data { .. } => (Some(at), None),
                CallArg::Inactive(..) | CallArg::Again { .. } | CallArg::Part { .. } => {
                    (None, None)
                }
            })
            .collect()
    }

    /// Per argument, the positions among the extern's non-linear arguments
    /// of its range's bounds, if it is a [`CallArg::Part`].
    pub fn ranges(&self) -> Vec<Option<(usize, usize)>> {
        self.args
            .iter()
            .zip(self.starts())
            .map(|(a, at)| match a {
                CallArg::Part { first: None, .. } => Some((at + 1, at + 2)),
                CallArg::Part { first: Some(_), .. } => Some((at, at + 1)),
                _ => None,
            })
            .collect()
    }

    /// Per argument, the position among the extern's non-linear arguments
    /// of the first IR argument standing for it.
    fn starts(&self) -> impl Iterator<Item = usize> + '_ {
        self.args.iter().scan(0, |k, a| {
            let at = *k;
            *k += a.ir_args();
            Some(at)
        })
    }

    /// How many non-linear arguments the extern takes, and how many
    /// tangents (linear arguments) its derivative.
    pub fn counts(&self) -> (usize, usize) {
        let nl = self.args.iter().map(CallArg::ir_args).sum();
        let tangents = self.positions().iter().filter(|(_, t)| t.is_some()).count();
        (nl, tangents)
    }

    /// The [`CallArg::Part`]s among the arguments, in order.
    pub fn parts(&self) -> Vec<usize> {
        (0..self.args.len())
            .filter(|&i| matches!(self.args[i], CallArg::Part { .. }))
            .collect()
    }
}

/// Whether a parameter of type `t` crosses a call as an array: a shared
/// slice of a float (`&[f64]`, `&[f32]`, `&[T]` of the function's float
/// type parameter `float`), differentiable or `#[nondiff]` (see
/// `expand::calls`). Caller and callee read it off the same signature.
/// (`&Vec<T>`, `&[T; N]` and `Vec<T>` would need a copy of a caller's
/// slice: not yet.)
pub fn array_param(t: &syn::Type, float: Option<&syn::Ident>) -> bool {
    let syn::Type::Reference(r) = t else {
        return false;
    };
    if r.mutability.is_some() {
        return false;
    }
    let syn::Type::Slice(s) = &*r.elem else {
        return false;
    };
    let elem = &*s.elem;
    let syn::Type::Path(p) = elem else {
        return false;
    };
    p.qself.is_none()
        && p.path
            .get_ident()
            .is_some_and(|id| id == "f64" || id == "f32" || float.is_some_and(|f| id == f))
}

/// The name `e` is, if it is a plain name.
fn param_name(e: &syn::Expr) -> Option<String> {
    match e {
        syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    }
}

/// The reals in a value of type `t`.
fn count_reals(t: &Ty) -> usize {
    match t {
        Ty::Real(_) => 1,
        Ty::Tuple(ts) | Ty::Sum(ts) => ts.iter().map(count_reals).fold(0, usize::saturating_add),
        Ty::Array(e, Some(n)) => usize::try_from(*n)
            .unwrap_or(usize::MAX)
            .saturating_mul(count_reals(e)),
        Ty::Int | Ty::Bool | Ty::Array(..) | Ty::List(..) | Ty::Tape(_) => 0,
    }
}

/// `Type::name` for a path whose segment before the last names a type
/// (starts with a capital: `Particle::energy`, `geo::Particle::new`): the
/// type's path and the method's name.
pub(super) fn method_path(path: &syn::Path) -> Option<(syn::Path, syn::Ident)> {
    let mut owner = path.clone();
    let name = owner.segments.pop()?.ident;
    owner.segments.pop_punct();
    let last = owner.segments.last()?;
    (names_type(&last.ident) && last.ident != "Self").then_some((owner, name))
}

/// The linearization type of a function generic in its float type, at
/// the float type `f`: its alias `path` with the argument (`cube<f64>`).
fn at_float_arg(path: &syn::Path, f: &TokenStream) -> syn::Type {
    let p = crate::layout::at_arg(path, f);
    syn::parse_quote!(#p)
}

/// The linearization type of the method `name` of the type `owner`, by the
/// `Method` impl its `#[differentiable] impl` block adds, spanned at the
/// method's name (as `owner` is, by [`Lowerer::call_method_of`]) so that
/// rustc's message about a method that has none points there.
pub(crate) fn method_type(owner: &syn::Path, name: &syn::Ident) -> syn::Type {
    let key = crate::expand::method_key(name);
    let span = name.span();
    syn::parse_quote_spanned!(span=> <#owner as ::linear_ad::__private::Method<#key>>::Linearization)
}

impl Lowerer<'_> {
    /// A call to another function compiled separately: an extern named
    /// after the call site, taking the call's active arguments (see
    /// [`CallSite`]); constant arguments stay in the prelude. In a
    /// `#[differentiable]` function the callee is differentiable and the
    /// extern non-linear; in a `#[linear]` function the callee is
    /// `#[linear]`, the extern linear, and `0.0` is a linear zero argument.
    pub(super) fn call_function(
        &mut self,
        c: &syn::ExprCall,
        ret: Option<Shape>,
        hint: &str,
    ) -> Val {
        if let syn::Expr::Path(p) = &*c.func {
            let closure = p
                .path
                .get_ident()
                .and_then(|id| match self.lookup(&id.to_string()) {
                    Some(super::Binding::Closure(k)) => Some(*k),
                    _ => None,
                });
            if let Some(k) = closure {
                return self.call_closure(k, c, hint);
            }
        }
        let path = match &*c.func {
            syn::Expr::Path(p) if p.qself.is_none() => p.path.clone(),
            other => {
                self.errs.spanned(other, "only calls to functions by name or path (`g(x)`, `module::g(x)`) are supported");
                return self.placeholder();
            }
        };
        if path.segments.last().is_some_and(|s| !s.arguments.is_none()) {
            self.errs
                .spanned(&path, "calls with generic arguments are not supported");
            return self.placeholder();
        }
        if path.is_ident(&self.fn_name) {
            self.errs.spanned(&path, "a differentiable function cannot call itself: Linear A has no recursion (its tape would contain itself); write the recursion as a loop");
            return self.placeholder();
        }
        let args = c.args.iter().map(|a| (a, None)).collect();
        match method_path(&path) {
            Some((owner, name)) => self.call_method_of(&owner, &name, args, ret, hint),
            None => self.call(path.clone(), syn::parse_quote!(#path), args, ret, hint),
        }
    }

    /// Records the struct that the annotation `ty` of a `let` names, if
    /// its layout is unknown and the value is a call's result (which only
    /// the annotation types, see [`super::Missing`]). Constant code
    /// (`let c: Config = Config::new(3);`) has its call lowered as a
    /// constant before this matters, so only calls with differentiable
    /// arguments fetch; a struct without the derive is then reported by
    /// rustc at the annotation.
    pub(super) fn want_layout(&mut self, ty: &syn::Type, init: &syn::Expr) {
        // The structs in a tuple or array the call returns, too (`(f64,
        // (PointTangent, f64))`, a method's `_vjp`).
        let p = match ty {
            syn::Type::Path(p) => p,
            syn::Type::Tuple(t) => return t.elems.iter().for_each(|e| self.want_layout(e, init)),
            syn::Type::Array(a) => return self.want_layout(&a.elem, init),
            syn::Type::Paren(p) => return self.want_layout(&p.elem, init),
            _ => return,
        };
        let call = matches!(init, syn::Expr::Call(_) | syn::Expr::MethodCall(_));
        // With generic arguments: a struct generic in its float type
        // (`V2<T>`), not a standard type (`Vec<f64>`).
        let named = p.qself.is_none()
            && p.path.segments.last().is_some_and(|s| {
                let standard = crate::layout::NOT_STRUCTS.iter().any(|n| s.ident == n);
                names_type(&s.ident) && (s.arguments.is_none() || !standard)
            });
        if !call || !named || self.structs.get(&p.path).is_some() {
            return;
        }
        if !self.calls_active(init) || self.missing_layouts.contains(&p.path) {
            return;
        }
        self.missing_layouts.push(p.path.clone());
    }

    /// Whether the call `e` reads a differentiable value (by the
    /// variables its arguments and receiver name).
    fn calls_active(&self, e: &syn::Expr) -> bool {
        struct Reads<'l, 'a> {
            l: &'l Lowerer<'a>,
            active: bool,
        }
        impl<'ast> syn::visit::Visit<'ast> for Reads<'_, '_> {
            fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
                if let Some(id) = p.path.get_ident() {
                    let b = self.l.lookup(&id.to_string());
                    self.active |= matches!(b, Some(super::Binding::Active(..)));
                }
            }
        }
        let mut r = Reads {
            l: self,
            active: false,
        };
        syn::visit::Visit::visit_expr(&mut r, e);
        r.active
    }

    /// `recv.name(args..)` where `recv` (already lowered to `val`) is a
    /// struct `owner` names: a call of the method `owner::name`, the
    /// receiver its first argument, as `Type::name(&recv, args..)` is.
    pub(super) fn call_method(
        &mut self,
        m: &syn::ExprMethodCall,
        (val, owner): (Val, &syn::Path),
        ret: Option<Shape>,
        hint: &str,
    ) -> Val {
        if m.turbofish.is_some() {
            self.errs
                .spanned(m, "calls with generic arguments are not supported");
            return self.placeholder();
        }
        let mut args = vec![(&*m.receiver, Some(val))];
        args.extend(m.args.iter().map(|a| (a, None)));
        self.call_method_of(owner, &m.method, args, ret, hint)
    }

    /// A call of the method `name` of the type `owner` with `args`, the
    /// receiver (if any) first, once [`Self::method_callable`] allows it.
    /// The path is spanned at the method's name: messages about the call
    /// point there, not at the receiver's type, which may be far away
    /// (`&self`).
    pub(super) fn call_method_of(
        &mut self,
        owner: &syn::Path,
        name: &syn::Ident,
        args: Vec<(&syn::Expr, Option<Val>)>,
        ret: Option<Shape>,
        hint: &str,
    ) -> Val {
        let mut owner = self.at_function_float(owner);
        for s in owner.segments.iter_mut() {
            s.ident.set_span(name.span());
        }
        let mut path = owner.clone();
        path.segments.push(name.clone().into());
        if !self.method_callable(&path, &owner, name) {
            return self.placeholder();
        }
        let callee = method_type(&owner, name);
        self.call(path, callee, args, ret, hint)
    }

    /// Whether a `#[differentiable]` function may call the method `path`
    /// (of `owner`): not from a `#[linear]` one, and not itself. Else the
    /// error is reported.
    fn method_callable(&mut self, path: &syn::Path, owner: &syn::Path, name: &syn::Ident) -> bool {
        let shown = super::structs::show(path);
        if self.mode == Mode::Linear {
            self.errs.spanned(path, format!("`{shown}` is a method: a `#[linear]` function may call only `#[linear]` functions, and methods cannot be `#[linear]` yet"));
            return false;
        }
        // A method's own receiver is its parameter `self` (see
        // `expand::methods`).
        let own = match self.lookup("self") {
            Some(super::Binding::Active(v, ..)) => matches!(
                self.shapes.get(v),
                Some(Shape::Struct(st)) if crate::layout::key(&st.path) == crate::layout::key(owner)
            ),
            _ => false,
        };
        if own && *name == self.fn_name {
            self.errs.spanned(path, format!("the method `{shown}` cannot call itself: Linear A has no recursion (its tape would contain itself); write the recursion as a loop"));
            return false;
        }
        true
    }

    /// A call of `callee` (the linearization type the caller's generated
    /// code goes through) by `path`, with `args`, each lowered here unless
    /// it comes lowered already (a method's receiver).
    pub(super) fn call(
        &mut self,
        path: syn::Path,
        callee: syn::Type,
        args_in: Vec<(&syn::Expr, Option<Val>)>,
        ret: Option<Shape>,
        hint: &str,
    ) -> Val {
        let f = self.float();
        let constant_structs = match self.constant_structs(&path, &args_in) {
            Ok(c) => c,
            Err(a) => {
                self.errs.spanned(a, super::constant_struct_message(a));
                return self.placeholder();
            }
        };
        let mut lowered = Arguments::default();
        let slots = self.array_slots(&path, args_in.len());
        for (i, ((a, val), slot)) in args_in.into_iter().zip(slots).enumerate() {
            if let Some(&(_, flat)) = constant_structs.iter().find(|(k, _)| *k == i) {
                self.constant_struct(a, flat, &mut lowered);
            } else if self.call_arg((a, val), slot, hint, &mut lowered).is_none() {
                return self.placeholder();
            }
        }
        let Arguments {
            args,
            vars,
            tys,
            passes_struct,
        } = lowered;
        // After the arguments: a problem with one of them is the more
        // precise message, and their own calls are numbered first.
        let at = self.callee_float(&path, &tys);
        let callee = match &at {
            Some((_, f)) => at_float_arg(&path, f),
            None => callee,
        };
        let mark = self.errs.mark();
        let from_sig = self.signature_result(&path, at.as_ref());
        // A callee that failed: its result is a placeholder, so that its
        // uses raise nothing either.
        if self.sigs.get(&path).is_some_and(|s| s.kind == Kind::Failed) {
            return self.placeholder();
        }
        // A refused callee whose result has no shape here (`Vec`s in a
        // tuple): its error stands alone, and uses of its result are not
        // reported again.
        if from_sig.is_none() && self.errs.mark().0 > mark.0 {
            return self.placeholder();
        }
        // A known signature whose result differentiable code cannot hold
        // (a struct with `Vec` fields, a type it cannot read).
        if let (None, None, Some(sig)) = (&ret, &from_sig, self.sigs.get(&path)) {
            if let syn::ReturnType::Type(_, t) = &sig.sig.output {
                let name = quote::quote!(#path).to_string().replace(' ', "");
                let t = quote::quote!(#t).to_string();
                self.errs.spanned(
                    &path,
                    format!("differentiable code cannot hold `{t}`, the result of `{name}`: call it outside differentiable code"),
                );
                return self.placeholder();
            }
        }
        let assumed = ret.is_none() && from_sig.is_none() && self.sigs.get(&path).is_none();
        let ret = ret.or(from_sig).unwrap_or(Shape::Float(f));
        let name = Var::new(&format!("call.{}", self.calls.len() + 1));
        let cotangents = match self.sigs.get(&path) {
            Some(_) => self.cotangent_shapes(&path, at.as_ref()),
            None => self.method_cotangents(&path, &args, &vars),
        };
        let site = CallSite {
            path: path.clone(),
            callee,
            args,
            ret,
            passes_struct,
            order: self.sigs.get(&path).map(|s| (s.kind, s.order)),
            lanes: self.sigs.get(&path).is_some_and(|s| s.lanes),
            cotangents,
        };
        let v = self.emit_call(name, site, vars, tys, hint);
        if let (true, Val::Active(r, _)) = (assumed, &v) {
            self.assumed.insert(r.clone(), path);
        }
        v
    }

    /// The arguments naming a `#[nondiff]` struct parameter of this
    /// function that go to a differentiable parameter of the callee, by its
    /// signature, and how each crosses: as its flat value (`true`), or as
    /// its origin, a borrow, where the struct has constant fields (as a
    /// differentiable struct does, [`CallArg::Origin`]); its tangent is
    /// zero. `Err` with the argument where its struct's layout is not
    /// known. Where the signature is unknown (a method of another block),
    /// a constant argument may go to a `#[nondiff]` parameter, which takes
    /// it as it is: none (the receiver is checked by `method_call`).
    fn constant_structs<'e>(
        &self,
        path: &syn::Path,
        args: &[(&'e syn::Expr, Option<Val>)],
    ) -> Result<Vec<(usize, bool)>, &'e syn::Expr> {
        let Some(sig) = self.sigs.get(path).filter(|_| self.mode != Mode::Linear) else {
            return Ok(Vec::new());
        };
        // The type of each differentiable parameter (`None` for others).
        let differentiable = sig.sig.inputs.iter().map(|input| match input {
            syn::FnArg::Typed(pt)
                if !pt.attrs.iter().any(|a| a.path().is_ident("nondiff"))
                    && !super::is_constant_type(&pt.ty) =>
            {
                Some(&*pt.ty)
            }
            syn::FnArg::Receiver(_) | syn::FnArg::Typed(_) => None,
        });
        let mut out = Vec::new();
        for (i, ((a, val), ty)) in args.iter().zip(differentiable).enumerate() {
            let constant =
                matches!(val, None | Some(Val::Inactive(_))) && !self.expr_mentions_active(a);
            let (Some(ty), true, Some(_)) = (ty, constant, self.constant_receiver(a)) else {
                continue;
            };
            // The layout the callee's signature carries, resolved where it is.
            match Shape::from_param_type_in(ty, &sig.structs) {
                Some(Shape::Struct(st)) => out.push((i, !st.has_constants())),
                _ => return Err(a),
            }
        }
        Ok(out)
    }

    /// The constant struct `a` (a `#[nondiff]` parameter) as an argument
    /// ([`Self::constant_structs`]): a prelude value, its flat value if
    /// `flat`, else a borrow of it.
    fn constant_struct(&mut self, a: &syn::Expr, flat: bool, out: &mut Arguments) {
        let id = self.new_inactive_name("s");
        // The parameter itself (`s` of `&s`, `*s`), borrowed.
        let param = super::constant_param(a);
        let by_ref = matches!(
            param_name(param).and_then(|n| self.param_types.get(&n)),
            Some(syn::Type::Reference(_))
        );
        let borrow = match by_ref {
            true => quote::quote!(&*#param),
            false => quote::quote!(&#param),
        };
        let value = match flat {
            true => quote::quote!(::linear_ad::__private::ToFlat::flat(#borrow)),
            false => borrow,
        };
        self.prelude.push(quote::quote!(let #id = #value;));
        out.args.push(CallArg::Inactive(id, a.span()));
    }

    /// Lowers the argument `a` of a call (`lowered` already, for a method's
    /// receiver) into `out`, for a parameter `slot` says whether is a
    /// slice ([`Self::array_slots`]); `None` if it cannot be passed (the
    /// error is reported).
    fn call_arg(
        &mut self,
        (a, lowered): (&syn::Expr, Option<Val>),
        slot: Option<bool>,
        hint: &str,
        out: &mut Arguments,
    ) -> Option<()> {
        let (linear, f) = (self.mode == Mode::Linear, self.float());
        // `g(&s)`: a struct crosses as its value whichever way the
        // callee takes it; a constant keeps its `&`.
        let (inner, by_ref) = match a {
            syn::Expr::Reference(r) if r.mutability.is_none() => (&*r.expr, true),
            _ => (a, false),
        };
        // A part of a constant array for a callee that takes no
        // differentiable slice is an ordinary constant.
        if let Some(part) = sub_slice(inner) {
            if slot.is_some() || self.calls_active(&part.0.expr) {
                return self.part_arg(a, part, slot, out);
            }
        }
        let val = match lowered {
            Some(v) => v,
            None => self.expr(inner, hint),
        };
        match val {
            Val::Active(v, _) if self.poison.contains(&v) => return None,
            Val::Active(_, Ty::Array(..)) if slot == Some(false) => {
                self.errs.spanned(a, "this array is differentiable here, but the function called takes it as `#[nondiff]`: its derivative through this argument would be lost; pass a constant array, or remove `#[nondiff]` from the parameter");
                return None;
            }
            Val::Inactive(_) if slot.is_some() => {
                let (arg, v, ty) = self.data_call_arg(a, inner, slot == Some(true))?;
                out.push(arg, v, ty);
            }
            Val::Active(v, ty) if self.not_passable(&v, &ty).is_some() => {
                let msg = self.not_passable(&v, &ty).unwrap_or_default();
                self.errs.spanned(a, msg);
                return None;
            }
            Val::Active(v, ty @ (Ty::Int | Ty::Bool)) if !linear => {
                out.push(CallArg::Discrete(a.span()), v, ty);
            }
            Val::Active(v, Ty::Array(..)) if out.vars.contains(&v) => {
                // `vars` lists the IR arguments, `args` every argument.
                let k = out.vars.iter().position(|w| *w == v).unwrap_or_default();
                let first = nth_ir_arg(&out.args, k);
                out.args.push(CallArg::Again {
                    first,
                    span: a.span(),
                });
            }
            Val::Active(v, ty) => {
                out.passes_struct |= matches!(self.shape_of(&v), Shape::Struct(_));
                let arg = self.active_arg(&v, a)?;
                out.push(arg, v, ty);
            }
            Val::Inactive(tokens) if linear && float_literal(&tokens) == Some(0.0) => {
                let z = self.emit_lin("zero", Ty::Real(f), Expr::LinZero(Ty::Real(f)));
                out.push(CallArg::Active(Shape::Float(f), a.span()), z, Ty::Real(f));
            }
            Val::Inactive(tokens) => {
                let tokens = if by_ref {
                    quote!(&#tokens)
                } else {
                    super::unparen(tokens)
                };
                let id = self.new_inactive_name("a");
                self.prelude.push(quote!(let #id = #tokens;));
                out.args.push(CallArg::Inactive(id, a.span()));
            }
        }
        Some(())
    }

    /// Why `v` is a float where the code uses it as something else, if it
    /// is a call result taken to be one.
    pub(super) fn assumed_float(&self, v: &Var) -> Option<String> {
        let path = self.assumed.get(v)?;
        let name = super::structs::show(path);
        let whose = if method_path(path).is_some() {
            "a method's signature is known only to the other methods of its `impl` block"
        } else {
            "its signature is not known here"
        };
        Some(format!("the result of `{name}` is taken to be a float, since {whose}: give the `let` its type (`let (a, b): (f64, f64) = ..`, `let q: Particle = ..`)"))
    }

    /// The extern `name` of a call site, and its application to `vars` (of
    /// types `tys`): non-linear in a `#[differentiable]` function, linear
    /// in a `#[linear]` one.
    fn emit_call(
        &mut self,
        name: Var,
        site: CallSite,
        vars: Vec<Var>,
        tys: Vec<Ty>,
        hint: &str,
    ) -> Val {
        let ret_ty = site.ret.ty();
        let ret = site.ret.clone();
        let linear = self.mode == Mode::Linear;
        if ret.grouped() && !linear {
            return self.emit_grouped_call(name, site, (vars, tys), hint);
        }
        let (params, rets) = (tys, vec![ret_ty.clone()]);
        let (nl_params, lin_params, nl_rets, lin_rets, nl, lin) = if linear {
            (vec![], params, vec![], rets, vec![], vars)
        } else {
            (params, vec![], rets, vec![], vars, vec![])
        };
        // The arrays constant here: J gives them no tangent.
        let constant = site.constant_positions();
        self.externs.push(Extern {
            constant,
            pinned: site.pinned(),
            ..Extern::plain(name.clone(), (nl_params, lin_params), (nl_rets, lin_rets))
        });
        self.calls.insert(name.clone(), site);
        let app = Expr::App {
            func: name,
            nl,
            lin,
        };
        let v = if linear {
            self.emit_lin(hint, ret_ty.clone(), app)
        } else {
            self.emit(hint, ret_ty.clone(), app)
        };
        self.shapes.insert(v.clone(), ret);
        Val::Active(v, ret_ty)
    }

    /// How the differentiable value `v`, written `a`, crosses a call: a
    /// struct as its flat value, or, if it has constant fields, as its
    /// origin, which a prelude variable borrows (see
    /// `expand::companions`); else the error is reported.
    fn active_arg(&mut self, v: &Var, a: &syn::Expr) -> Option<CallArg> {
        // An array of floats crosses as a slice, whatever made it (a
        // local array has no recorded shape).
        if let Some(Ty::Array(e, _)) = self.types.get(v) {
            if let Ty::Real(f) = **e {
                let s = Shape::Slice(Box::new(Shape::Float(f)), super::SliceKind::Vec);
                return Some(CallArg::Active(s, a.span()));
            }
        }
        let shape = self.shape_of(v);
        let Shape::Struct(st) = &shape else {
            return Some(CallArg::Active(shape, a.span()));
        };
        let flat = super::flat_shape(&shape);
        if !st.has_constants() {
            return Some(CallArg::Active(flat, a.span()));
        }
        if self.is_element(v) {
            let name = super::structs::show(&st.path);
            self.errs.spanned(a, format!("`{name}` has constant fields, and this value is an element of an array of structs: passing it to another differentiable function is not supported yet; pass its fields (`p.x`), or the differentiable ones as a struct without constant fields"));
            return None;
        }
        let origin = match self.borrow_origin(v) {
            Ok(o) => o,
            Err(written) => {
                let name = super::structs::show(&st.path);
                let why = if written {
                    "a field of this value was written since it was read from one; pass the parameter itself, and the new field values beside it"
                } else {
                    "this value was rebound by a loop or a branch; pass the parameter itself"
                };
                self.errs.spanned(a, format!("`{name}` has constant fields, so a call takes it only as a parameter of this function or a struct nested in one, as it is: {why}"));
                return None;
            }
        };
        // At the argument: rustc's message about it (a callee taking a
        // struct that is not `Clone` by value) points there.
        let mut id = self.new_inactive_name("s");
        id.set_span(a.span().resolved_at(Span::mixed_site()));
        self.prelude.push(quote!(let #id = #origin;));
        Some(CallArg::Origin(flat, id, a.span()))
    }

    /// Per parameter of the callee at `path` (its float type `at` if it
    /// is generic), the shape of its cotangent in the callee's `_vjp`
    /// result: a differentiable parameter's own shape, `None` for a
    /// `#[nondiff]` one or an integer or boolean one. `None` for a method
    /// and for a callee whose signature is unknown or has a parameter of
    /// another type: it is not read (`expand::items::derived`) unless
    /// every parameter is accounted for.
    fn cotangent_shapes(
        &self,
        path: &syn::Path,
        at: Option<&(syn::Ident, TokenStream)>,
    ) -> Option<Vec<Option<Shape>>> {
        let sig = self.sigs.get(path)?;
        let discrete = |t: &syn::Type| {
            const NAMES: [&str; 13] = [
                "usize", "isize", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "bool",
                "u128", "i128",
            ];
            matches!(t, syn::Type::Path(p) if p.qself.is_none()
                && NAMES.iter().any(|n| p.path.is_ident(n)))
        };
        sig.sig
            .inputs
            .iter()
            .map(|input| match input {
                syn::FnArg::Receiver(_) => None,
                syn::FnArg::Typed(pt) if pt.attrs.iter().any(|a| a.path().is_ident("nondiff")) => {
                    Some(None)
                }
                syn::FnArg::Typed(pt) if discrete(&pt.ty) => Some(None),
                syn::FnArg::Typed(pt) => {
                    let t = match at {
                        Some((param, f)) => {
                            super::structs::subst(&pt.ty, param, &syn::parse_quote!(#f))
                        }
                        None => (*pt.ty).clone(),
                    };
                    Shape::from_param_type_in(&t, &sig.structs).map(Some)
                }
            })
            .collect()
    }

    /// For a call of a method of another block (no signature here), the
    /// cotangents its `_vjp` returns, read off the arguments where they
    /// tell: every argument differentiable (a value, a struct: a constant
    /// could go to a `#[nondiff]` parameter, which has none, and a
    /// differentiable argument to one is an error at the call) or an
    /// integer or boolean (none), and at most
    /// [`crate::passes::forward_vjp::MAX_DIRECTIONS`] floats in all, so
    /// that an `order = 2` method's `_vjp` is differentiable (by forward
    /// mode at worst). `vars` are the IR arguments, in order.
    fn method_cotangents(
        &self,
        path: &syn::Path,
        args: &[CallArg],
        vars: &[Var],
    ) -> Option<Vec<Option<Shape>>> {
        method_path(path)?;
        let mut vars = vars.iter();
        let mut floats = 0;
        let mut out = Vec::new();
        for a in args {
            match a {
                CallArg::Active(..) | CallArg::Origin(..) => {
                    let shape = self.shape_of(vars.next()?);
                    if shape.has_slice() {
                        return None;
                    }
                    floats += count_reals(&super::flat_shape(&shape).ty());
                    out.push(Some(shape));
                }
                CallArg::Discrete(_) => {
                    vars.next()?;
                    out.push(None);
                }
                CallArg::Inactive(..)
                | CallArg::Again { .. }
                | CallArg::Data { .. }
                | CallArg::Part { .. } => return None,
            }
        }
        (floats <= crate::passes::forward_vjp::MAX_DIRECTIONS).then_some(out)
    }

    /// Per argument of a call of `path` (`n` of them): for a parameter that
    /// crosses as an array ([`array_param`]), whether it is differentiable
    /// (`Some(false)` for `#[nondiff]`); `None` for other parameters, and
    /// for all of them while the callee's signature is unknown (a method
    /// called from outside its block, which then takes no `#[nondiff]`
    /// slices: `expand::items::generate`) and for a callee with no
    /// differentiable array.
    fn array_slots(&self, path: &syn::Path, n: usize) -> Vec<Option<bool>> {
        let sig = match self.sigs.get(path) {
            Some(sig) if self.mode != Mode::Linear => sig,
            _ => return vec![None; n],
        };
        let float = crate::lower::float_param(&sig.sig.generics);
        let mut out: Vec<Option<bool>> = sig
            .sig
            .inputs
            .iter()
            .map(|input| match input {
                syn::FnArg::Typed(pt) if array_param(&pt.ty, float.as_ref()) => {
                    Some(!pt.attrs.iter().any(|a| a.path().is_ident("nondiff")))
                }
                _ => None,
            })
            .collect();
        // Only a callee with a differentiable array takes its arrays back
        // (`expand::items::Detached`); another's constant arrays are
        // ordinary constants.
        if !out.contains(&Some(true)) {
            return vec![None; n];
        }
        out.resize(n, None);
        out
    }

    /// A constant array argument `a` (`inner` without its `&`) for an array
    /// parameter of the callee (differentiable if `active`): the data
    /// array standing for it, which must be a `#[nondiff]` parameter of
    /// this function (else the error is reported), with its type.
    fn data_call_arg(
        &mut self,
        a: &syn::Expr,
        inner: &syn::Expr,
        active: bool,
    ) -> Option<(CallArg, Var, Ty)> {
        let param = match super::exits::strip(inner) {
            syn::Expr::Path(p) => p.path.get_ident().cloned(),
            _ => None,
        };
        let Some((v, elem)) = param.and_then(|id| self.data_array_for_call(&id)) else {
            self.errs.spanned(a, "a constant array passed to another differentiable function must be a `#[nondiff]` parameter of this function (`#[nondiff] name: &[f64]`) or an array this function builds (`let ones = vec![1.0; n];`); other constants (a `const` or `static`, an expression) cannot be passed yet");
            return None;
        };
        let float = match elem {
            Ty::Real(f) => f,
            _ => self.float(),
        };
        let arg = CallArg::Data {
            shape: Shape::Slice(Box::new(Shape::Float(float)), super::SliceKind::Slice),
            active,
            span: a.span(),
        };
        Some((arg, v, Ty::Array(Box::new(elem), None)))
    }

    /// A part of an array, `&a[lo..hi]` (`ix` with its range, written
    /// `a`), for a parameter that `slot` says is a slice: the array, lent
    /// if it is differentiable or else the data array of a `#[nondiff]`
    /// parameter, unless the call lends it already; then the bounds,
    /// `0` and `len(a)` where the range leaves them out ([`CallArg::Part`]).
    /// `None` if it cannot be passed (the error is reported).
    fn part_arg(
        &mut self,
        a: &syn::Expr,
        (ix, range): (&syn::ExprIndex, &syn::ExprRange),
        slot: Option<bool>,
        out: &mut Arguments,
    ) -> Option<()> {
        let base = self.expr(&ix.expr, "a");
        // Without the callee's signature (not known yet, or a method
        // called from outside its block), a differentiable array goes to
        // a differentiable slice, as a whole one does.
        let slot = match (slot, &base) {
            (Some(slot), _) => slot,
            (None, Val::Active(..)) => true,
            // A constant for a callee without differentiable slices is
            // lowered as any constant ([`Self::call_arg`]), not here.
            (None, Val::Inactive(_)) => {
                self.errs.spanned(a, "linear-ad internal error (please report it): a part of a constant array taken as one the call lends");
                return None;
            }
        };
        let (array, elem, lent) = match base {
            Val::Active(v, _) if self.poison.contains(&v) => return None,
            Val::Active(v, ty @ Ty::Array(..)) => {
                if let Some(msg) = self.not_passable(&v, &ty) {
                    self.errs.spanned(a, msg);
                    return None;
                }
                if !slot {
                    self.errs.spanned(a, "this array is differentiable here, but the function called takes it as `#[nondiff]`: its derivative through this argument would be lost; pass a constant array, or remove `#[nondiff]` from the parameter");
                    return None;
                }
                let Ty::Array(e, _) = ty else { return None };
                (v, *e, true)
            }
            Val::Inactive(_) => {
                let param = match super::exits::strip(&ix.expr) {
                    syn::Expr::Path(p) => p.path.get_ident().cloned(),
                    _ => None,
                };
                let Some((v, elem)) = param.and_then(|id| self.data_array_for_call(&id)) else {
                    self.errs.spanned(a, "a part of a constant array passed to another differentiable function must be of a `#[nondiff]` parameter of this function (`#[nondiff] name: &[f64]`); parts of other constants cannot be passed yet");
                    return None;
                };
                (v, elem, false)
            }
            Val::Active(..) => {
                self.errs.spanned(
                    &ix.expr,
                    "only a part of an array of floats can be passed to a slice parameter",
                );
                return None;
            }
        };
        let bound = |l: &mut Self, e: &syn::Expr| {
            let v = l.expr(e, "k");
            l.materialize(v, &Ty::Int, e.span())
        };
        let lo = match &range.start {
            Some(e) => bound(self, e),
            None => self.emit_nd("k", Ty::Int, Expr::Int(0)),
        };
        let hi = match (&range.end, &range.limits) {
            (Some(e), syn::RangeLimits::HalfOpen(_)) => bound(self, e),
            (Some(e), syn::RangeLimits::Closed(_)) => {
                let last = bound(self, e);
                let one = self.emit_nd("k", Ty::Int, Expr::Int(1));
                self.int_prim(crate::ir::Prim::IAdd, last, one)
            }
            (None, _) => self.emit_nd("n", Ty::Int, Expr::Len(array.clone())),
        };
        let float = match elem {
            Ty::Real(f) => f,
            _ => self.float(),
        };
        // An array lent already: the extern borrows its tangent once.
        let first = lent
            .then(|| out.vars.iter().position(|w| *w == array))
            .flatten()
            .map(|k| nth_ir_arg(&out.args, k));
        out.args.push(CallArg::Part {
            first,
            shape: Shape::Slice(Box::new(Shape::Float(float)), super::SliceKind::Slice),
            lent,
            active: slot,
            span: a.span(),
        });
        if first.is_none() {
            out.vars.push(array);
            out.tys.push(Ty::Array(Box::new(elem), None));
        }
        out.vars.extend([lo, hi]);
        out.tys.extend([Ty::Int, Ty::Int]);
        Some(())
    }

    /// Why the differentiable value `v` cannot be an argument of another
    /// differentiable function yet (the calling convention has no arrays
    /// or structs), if it cannot.
    fn not_passable(&self, v: &Var, ty: &Ty) -> Option<&'static str> {
        if let Ty::Array(e, _) = ty {
            // A flat array of floats crosses as a slice (see
            // `expand::calls`); arrays of rows or tuples do not yet.
            let flat = matches!(**e, Ty::Real(_))
                && !matches!(self.shapes.get(v), Some(s @ Shape::Slice(..)) if s.row().is_some());
            return match self.mode {
                Mode::Linear => Some("passing an array to another `#[linear]` function is not supported yet: index it here, or pass its elements"),
                _ if !flat => Some("passing an array of rows, tuples or structs to another differentiable function is not supported yet: pass a flat array of floats, or its elements"),
                _ => None,
            };
        }
        let inner = match self.shapes.get(v) {
            Some(s @ (Shape::Tuple(_) | Shape::Array(..))) => s.has_struct(),
            Some(Shape::Float(_) | Shape::Struct(_) | Shape::Slice(..)) | None => false,
        };
        inner.then_some(
            "passing a tuple or array holding structs to another differentiable function is not supported yet: pass the structs one by one",
        )
    }

    /// The result shape the callee's signature gives (at the float type
    /// `at` of a generic callee), if it is known and says the call is
    /// possible (else the error is reported). Without a signature, if the
    /// callee may have a signature macro, the path is recorded as missing,
    /// even where a `let` annotation gives the result's shape: the
    /// signature also says whether the callee is generic, and so how its
    /// linearization is named.
    fn signature_result(
        &mut self,
        path: &syn::Path,
        at: Option<&(syn::Ident, TokenStream)>,
    ) -> Option<Shape> {
        let Some(sig) = self.sigs.get(path).cloned() else {
            let known = self.missing_sigs.iter().any(|p| p == path);
            if crate::signature::lookup(path) && !known {
                self.missing_sigs.push(path.clone());
            }
            return None;
        };
        let name = super::structs::show(path);
        // A refused callee's error stands alone: its result still takes
        // the shape its signature gives, so the caller's use of it raises
        // no second error.
        match sig.kind {
            // Its own errors stand alone: stop, without a message here.
            Kind::Failed => self.errs.rustc_reports(),
            Kind::Differentiable
            | Kind::Closed
            | Kind::Unmarked
            | Kind::Tape
            | Kind::FirstOrder
            | Kind::ThirdOrder
                if self.mode == Mode::Linear =>
            {
                self.errs.spanned(path, format!("`{name}` is `#[differentiable]`, not `#[linear]`: a `#[linear]` function may call only `#[linear]` functions (mark `{name}` `#[linear]` in the parameters it is linear in, if it is linear)"));
            }
            Kind::Unmarked => {
                self.errs.spanned(
                    path,
                    format!("`{name}` is not marked `#[differentiable]`, so differentiable code cannot call it: mark it `#[differentiable]` in its `impl` block"),
                );
            }
            Kind::Closed => {
                let why = "its parameters take arrays other than slices of floats (`&[T; N]`, `&Vec<T>`, `Vec<T>`, slices of rows), structs with `Vec` fields, or tuples or arrays of structs, which calls between differentiable functions cannot pass yet; take `&[T]` there, compute it here, or pass the elements it needs";
                self.errs.spanned(
                    path,
                    format!("`{name}` cannot be called from a differentiable function yet: {why}"),
                );
            }
            Kind::Tape => {
                let f = name.strip_suffix("_vjp").unwrap_or(&name);
                self.errs.spanned(
                    path,
                    format!("`{name}` cannot be differentiated yet: its reverse pass reads what forward mode cannot differentiate (the tape of a call in `{f}` of a method of another `impl` block passed a constant or a slice, or of a function whose own `_vjp` cannot be differentiated, or the records of a loop nested where they cannot be kept flat), and `{f}` takes slices or more than {} floats, so `{name}` cannot be computed by forward mode either; call `{f}_jvp` here instead (forward mode for the inner derivative)", crate::passes::forward_vjp::MAX_DIRECTIONS),
                );
            }
            Kind::FirstOrder => {
                let f = derivative_of(&name);
                self.errs.spanned(
                    path,
                    format!("`{name}` is a derivative, which differentiable code can call only if `{f}` is differentiable twice: write `#[differentiable(order = 2)]` on `{f}`"),
                );
            }
            Kind::ThirdOrder => {
                let d = derivative_of(&name);
                let f = derivative_of(d);
                self.errs.spanned(
                    path,
                    format!("`{name}` would be a third derivative of `{f}`: `order = 2` makes `{d}` differentiable, but not its own derivatives, and third-order derivatives are not generated; second derivatives of `{f}` are `{f}_hvp`, `{f}_hessian` and the derivatives of `{f}_jvp` and `{f}_vjp`"),
                );
            }
            Kind::Differentiable | Kind::Linear => {}
        }
        match (&sig.sig.output, at) {
            (syn::ReturnType::Type(_, t), Some((param, f))) => {
                let t = super::structs::subst(t, param, &syn::parse_quote!(#f));
                Shape::from_result_type(&t, &sig.structs)
            }
            (syn::ReturnType::Type(_, t), None) => Shape::from_result_type(t, &sig.structs),
            (syn::ReturnType::Default, _) => None,
        }
    }

    /// For a call of a free function generic in its float type (by its
    /// signature), that type parameter and the float type the call is at:
    /// its first float argument's (of IR types `tys`), else the caller's.
    fn callee_float(&self, path: &syn::Path, tys: &[Ty]) -> Option<(syn::Ident, TokenStream)> {
        if method_path(path).is_some() {
            // A method is named through its receiver's type.
            return None;
        }
        let param = crate::lower::float_param(&self.sigs.get(path)?.sig.generics)?;
        fn first(t: &Ty) -> Option<crate::ir::Float> {
            match t {
                Ty::Real(f) => Some(*f),
                Ty::Tuple(ts) => ts.iter().find_map(first),
                Ty::Array(e, _) => first(e),
                Ty::Int | Ty::Bool | Ty::Sum(_) | Ty::List(..) | Ty::Tape(_) => None,
            }
        }
        let f = tys.iter().find_map(first).unwrap_or(self.float());
        Some((param, crate::codegen::float_ty(f)))
    }
}

/// A call's arguments as lowering collects them: every argument, the IR
/// arguments and their types, and whether a struct crosses the call.
#[derive(Default)]
struct Arguments {
    args: Vec<CallArg>,
    vars: Vec<Var>,
    tys: Vec<Ty>,
    passes_struct: bool,
}

impl Arguments {
    /// An argument the IR passes, as `v` of type `ty`.
    fn push(&mut self, arg: CallArg, v: Var, ty: Ty) {
        self.args.push(arg);
        self.vars.push(v);
        self.tys.push(ty);
    }
}

/// `a[lo..hi]` (or `a[..]`, `a[lo..]`, `a[lo..=hi]`): a part of an
/// array, if `e` is one.
fn sub_slice(e: &syn::Expr) -> Option<(&syn::ExprIndex, &syn::ExprRange)> {
    match super::exits::strip(e) {
        syn::Expr::Index(ix) => match &*ix.index {
            syn::Expr::Range(r) => Some((ix, r)),
            _ => None,
        },
        _ => None,
    }
}

/// The index among a call's arguments `args` of the one that passes its
/// `k`-th IR argument.
fn nth_ir_arg(args: &[CallArg], k: usize) -> usize {
    let mut at = 0;
    for (i, a) in args.iter().enumerate() {
        at += a.ir_args();
        if k < at {
            return i;
        }
    }
    0
}

/// The function `name` is a derivative of: `f` for `f_jvp` or `f_vjp`
/// (`name` itself otherwise).
fn derivative_of(name: &str) -> &str {
    name.strip_suffix("_jvp")
        .or_else(|| name.strip_suffix("_vjp"))
        .unwrap_or(name)
}
