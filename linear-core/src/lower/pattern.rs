//! `match` patterns: the test that an arm's pattern matches the scrutinee,
//! and the names it binds.
//!
//! A scrutinee is one of two kinds ([`Scrut`]):
//!
//! * an integer or a bool the IR computes (a loop index, a counter, a
//!   comparison): literal, range, `|`, binding and wildcard patterns, each
//!   tested by the IR's comparisons, a binding bound to the scrutinee;
//! * a constant of any type, reading no differentiable value (a
//!   `#[nondiff]` enum, an `Option` of data, a constant field): any
//!   pattern Rust has. The test is Rust's own, `matches!(s, P)`, run where
//!   the arm is tested, and each name `P` binds is the expression that
//!   extracts it, `match s { P => name, _ => unreachable!() }`, run where
//!   the name is read ([`Binding::Extract`]), so it has the type, the
//!   binding mode and the value Rust gives it in the original arm. The
//!   scrutinee is a place or a constant expression, so reading it again
//!   reads the same value; it is never an IR value, so no derivative
//!   crosses the test. Whether the scrutinee reads the IR's values (a
//!   loop's index) is decided where the pattern binds, and an extraction
//!   is read marked resolved ([`read_form`]): a name the pattern binds
//!   may shadow one its scrutinee reads (`if let Some(k) = k`), which no
//!   later lookup may then capture.
//!
//! Either way a guard is lowered under the arm's bindings, as a case whose
//! other arm is `false`, and the arms form a chain of cases
//! (`control.rs`).

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::visit::Visit;

use super::{Binding, Lowerer, Val};
use crate::ir::{Cmp, Expr, Prim, Ty, Var};

/// What a `match` tests its arms against.
#[derive(Clone)]
pub(super) enum Scrut {
    /// An integer or a bool in an IR variable.
    Ir(Var),
    /// Constant Rust, read again by each test and each binding.
    Const(TokenStream),
}

/// A match arm's pattern and its guard (`p if g`).
pub(super) fn split_guard(p: &syn::Pat) -> (&syn::Pat, Option<&syn::Expr>) {
    match p {
        syn::Pat::Guard(g) => (&g.pat, Some(&g.guard)),
        other => (other, None),
    }
}

/// Whether the IR tests `p` itself: literals, ranges, `|`, names, `_`.
pub(super) fn ir_pattern(p: &syn::Pat) -> bool {
    match split_guard(p).0 {
        syn::Pat::Lit(_) | syn::Pat::Range(_) | syn::Pat::Wild(_) => true,
        syn::Pat::Ident(i) => i.subpat.is_none(),
        syn::Pat::Or(o) => o.cases.iter().all(ir_pattern),
        syn::Pat::Paren(pp) => ir_pattern(&pp.pat),
        _ => false,
    }
}

/// The names a pattern binds (`s` in `Act::Leaky(s)`, `x` and `rest` in
/// `[x, rest @ ..]`).
fn bound_names(p: &syn::Pat) -> Vec<syn::Ident> {
    struct Names(Vec<syn::Ident>);
    impl<'ast> Visit<'ast> for Names {
        fn visit_pat_ident(&mut self, i: &'ast syn::PatIdent) {
            self.0.push(i.ident.clone());
            syn::visit::visit_pat_ident(self, i);
        }
        // A path's segments and a range's bounds name no binding.
        fn visit_expr(&mut self, _: &'ast syn::Expr) {}
    }
    let mut names = Names(Vec::new());
    names.visit_pat(p);
    names.0
}

/// How an extraction is read in place of its name: marked resolved
/// (`linear_ad::__private::__resolved!`, the tokens themselves), so that
/// no pass looks its names up again in a scope where a pattern has since
/// bound one of them.
pub(super) fn read_form(code: &TokenStream) -> TokenStream {
    quote!((::linear_ad::__private::__resolved!(#code)))
}

/// Whether macro `m` is the marker of [`read_form`].
pub(super) fn is_resolved(m: &syn::Macro) -> bool {
    m.path
        .segments
        .last()
        .is_some_and(|s| s.ident == "__resolved")
}

/// An extraction taken by value where it becomes a float: a reference to
/// a float (bound from a reference to an enum) is read through.
pub(super) fn by_value(extraction: TokenStream) -> TokenStream {
    quote! {{
        use ::linear_ad::__private::PickAny as _;
        ::linear_ad::__private::Pick(#extraction).get()
    }}
}

impl Lowerer<'_> {
    /// A name bound from a constant scrutinee that reads IR variables (a
    /// loop index: `match kinds[i] { Kind::Spring(k) => k * x, .. }`),
    /// read where the IR needs it: run in place as a value of the type
    /// its context gives.
    pub(super) fn extracted_in_place(
        &mut self,
        t: &TokenStream,
        ty: Option<Ty>,
        span: Span,
    ) -> Val {
        let Some(ty) = ty.filter(|t| matches!(t, Ty::Real(_) | Ty::Int | Ty::Bool)) else {
            self.errs.push(span, "cannot tell the type of this name, which a pattern binds from data read in a loop: bind it with a type annotation (`let v: f64 = v;`, or an integer type, or `bool`)");
            return self.placeholder();
        };
        let code = match ty {
            Ty::Real(_) => by_value(read_form(t)),
            _ => read_form(t),
        };
        match syn::parse2::<syn::Expr>(code) {
            Ok(e) => Val::Active(self.opaque(&e, ty.clone()), ty),
            Err(_) => self.placeholder(),
        }
    }

    /// Binds the names of a match arm's pattern for its guard and body.
    pub(super) fn bind_match(&mut self, p: &syn::Pat, s: &Scrut) {
        let p = split_guard(p).0;
        match s {
            Scrut::Ir(v) => self.bind_ir_match(p, v),
            Scrut::Const(t) => {
                // Before any name is bound: one may shadow a name `t` reads.
                let reads_ir = self.mentions_active(t.clone());
                for name in bound_names(p) {
                    let extract = quote! {
                        match #t {
                            #[allow(unused_variables)]
                            #p => #name,
                            _ => ::core::unreachable!(),
                        }
                    };
                    self.extractions.insert(read_form(&extract).to_string());
                    let code = extract;
                    self.set(name.to_string(), Binding::Extract { code, reads_ir });
                }
            }
        }
    }

    /// Binds an identifier pattern (`n`) to the IR scrutinee.
    fn bind_ir_match(&mut self, p: &syn::Pat, s: &Var) {
        match p {
            syn::Pat::Ident(i) => {
                let t = self.types.get(s).cloned().unwrap_or(Ty::Int);
                self.set(i.ident.to_string(), Binding::Active(s.clone(), t, false));
            }
            syn::Pat::Paren(pp) => self.bind_ir_match(&pp.pat, s),
            _ => {}
        }
    }

    /// Whether `s` matches `p` (its guard aside), as a `bool` variable.
    pub(super) fn pattern_test(&mut self, p: &syn::Pat, s: &Scrut) -> Option<Var> {
        match s {
            Scrut::Ir(v) => self.ir_pattern_test(p, v),
            Scrut::Const(t) => {
                let test = quote! {
                    match #t {
                        #[allow(unused_variables)]
                        #p => true,
                        _ => false,
                    }
                };
                match syn::parse2::<syn::Expr>(test) {
                    Ok(e) => Some(self.opaque(&e, Ty::Bool)),
                    Err(_) => {
                        self.errs.spanned(p, "cannot read this pattern");
                        None
                    }
                }
            }
        }
    }

    fn ir_pattern_test(&mut self, p: &syn::Pat, s: &Var) -> Option<Var> {
        let ty = self.types.get(s).cloned().unwrap_or(Ty::Int);
        let compare = |l: &mut Self, c: Cmp, e: &syn::Expr| -> Option<Var> {
            let k = l.expr(e, "k");
            let k = l.materialize(k, &ty, e.span());
            Some(l.bool_prim(Prim::Cmp(c), s.clone(), k))
        };
        match p {
            syn::Pat::Lit(e) => compare(self, Cmp::Eq, &syn::Expr::Lit(e.clone())),
            syn::Pat::Range(r) => {
                let lo = match &r.start {
                    Some(lo) => Some(compare(self, Cmp::Ge, lo)?),
                    None => None,
                };
                let hi = match &r.end {
                    Some(hi) => Some(match r.limits {
                        syn::RangeLimits::HalfOpen(_) => compare(self, Cmp::Lt, hi)?,
                        syn::RangeLimits::Closed(_) => compare(self, Cmp::Le, hi)?,
                    }),
                    None => None,
                };
                match (lo, hi) {
                    (Some(a), Some(b)) => Some(self.bool_prim(Prim::And, a, b)),
                    (a, b) => a.or(b),
                }
            }
            syn::Pat::Or(o) => {
                let mut acc: Option<Var> = None;
                for c in &o.cases {
                    let t = self.ir_pattern_test(c, s)?;
                    acc = Some(match acc {
                        Some(a) => self.bool_prim(Prim::Or, a, t),
                        None => t,
                    });
                }
                acc
            }
            syn::Pat::Paren(pp) => self.ir_pattern_test(&pp.pat, s),
            syn::Pat::Wild(_) | syn::Pat::Ident(_) => {
                Some(self.emit_nd("m", Ty::Bool, Expr::Bool(true)))
            }
            other => {
                self.errs.spanned(other, "unsupported pattern in a `match` on a value computed from differentiable ones: use literals, ranges, `|`, `_` or a name, with guards");
                None
            }
        }
    }

    /// A bool from a comparison or a logical primitive of two operands.
    fn bool_prim(&mut self, prim: Prim, a: Var, b: Var) -> Var {
        let args = vec![a, b];
        self.emit_nd("m", Ty::Bool, Expr::Prim { prim, args })
    }
}
