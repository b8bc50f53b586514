//! Closures bound by `let` and called by name (`let sq = |v: f64| v * v;
//! sq(x) + sq(y)`), as numeric code writes small helpers inline.
//!
//! A closure is not a value in Linear A: each call is its body, lowered in
//! place with its parameters bound to the call's arguments (the
//! substitution a call of a function would make, the callee inlined).
//! What the closure captures is what its free variables were bound to
//! where it was defined, so a variable shadowed or (in a `move` closure)
//! assigned after the definition does not change it, as in Rust: an IR
//! variable is a value; a mutable prelude constant is copied when the
//! closure is defined. No IR form is new, so J, U and T see the body's
//! operations as if written at each call. `map` given a closure by name
//! (`.map(sq)`) calls it on each item (`array::map_call`).
//!
//! Refused, each with an error at the closure: a closure used other than
//! by a call of its name (passed to a function, returned), `return` in its
//! body (it would return from the function), parameter patterns other
//! than names, typed names and tuples of them, and a call with the wrong
//! number of arguments.

use proc_macro2::TokenStream;
use quote::quote;
use syn::visit::Visit;

use super::{Binding, Lowerer, Val};

/// A closure bound by `let`: its parameters and body, and the bindings of
/// the variables it captures, as they were where it was defined.
#[derive(Clone)]
pub(super) struct Closure {
    inputs: Vec<syn::Pat>,
    body: syn::Expr,
    captured: Vec<(String, Binding)>,
}

impl Lowerer<'_> {
    /// `let name = |params| body;`: records the closure under `name`, or
    /// reports why it cannot be. `false` if `local` binds no closure.
    pub(super) fn closure_local(&mut self, local: &syn::Local) -> bool {
        let Some(init) = &local.init else {
            return false;
        };
        let syn::Expr::Closure(cl) = super::exits::strip(&init.expr) else {
            return false;
        };
        let name = match &local.pat {
            syn::Pat::Ident(i) if i.subpat.is_none() => i.ident.to_string(),
            _ => {
                self.errs.spanned(&local.pat, "a closure is supported bound to a name (`let f = |v: f64| ..;`), and called by it");
                return true;
            }
        };
        if let Some(why) = unsupported(cl) {
            self.errs.spanned(cl, why);
            self.set(name, Binding::Poisoned);
            return true;
        }
        let params: Vec<String> = cl.inputs.iter().flat_map(pattern_names).collect();
        let mut captured = Vec::new();
        for free in free_names(&cl.body) {
            if params.contains(&free) || captured.iter().any(|(n, _)| *n == free) {
                continue;
            }
            let Some(b) = self.lookup(&free).cloned() else {
                continue;
            };
            let b = match b {
                // A mutable constant: its value now, not at the call.
                Binding::Inactive(id, true) => {
                    let copy = self.new_inactive_name(&free);
                    self.prelude.push(quote!(let #copy = #id;));
                    Binding::Inactive(copy, false)
                }
                other => other,
            };
            captured.push((free, b));
        }
        let k = self.closures.len();
        self.closures.push(Closure {
            inputs: cl.inputs.iter().cloned().collect(),
            body: (*cl.body).clone(),
            captured,
        });
        self.set(name, Binding::Closure(k));
        true
    }

    /// `f(args..)` of the closure `k`: its body, lowered with its captured
    /// variables and its parameters (bound to `args`) in scope.
    pub(super) fn call_closure(&mut self, k: usize, c: &syn::ExprCall, hint: &str) -> Val {
        let Some(Closure {
            inputs,
            body,
            captured,
        }) = self.closures.get(k).cloned()
        else {
            return self.placeholder();
        };
        if c.args.len() != inputs.len() {
            let n = inputs.len();
            self.errs.spanned(
                c,
                format!("this closure takes {n} argument(s), not {}", c.args.len()),
            );
            return self.placeholder();
        }
        // The arguments in the caller's scope, first.
        let args: Vec<Val> = c.args.iter().map(|a| self.expr(a, hint)).collect();
        self.scopes.push(Default::default());
        for (name, b) in captured {
            self.set(name, b);
        }
        for (pat, v) in inputs.iter().zip(args) {
            self.bind_pattern(pat, v);
        }
        let v = self.expr(&body, hint);
        self.scopes.pop();
        v
    }
}

/// Why a closure cannot be lowered, if it cannot.
fn unsupported(cl: &syn::ExprClosure) -> Option<&'static str> {
    if cl.asyncness.is_some() || cl.constness.is_some() || cl.lifetimes.is_some() {
        return Some("only plain closures (`|v: f64| ..`) are supported");
    }
    if !cl.inputs.iter().all(simple_pattern) {
        return Some("a closure's parameters must be names, typed names or tuples of them (`|v: f64|`, `|(a, b)|`)");
    }
    let mut r = Returns(false);
    r.visit_expr(&cl.body);
    r.0.then_some(
        "`return` in a closure is not supported: make the value the closure's last expression",
    )
}

fn simple_pattern(p: &syn::Pat) -> bool {
    match p {
        syn::Pat::Ident(i) => i.subpat.is_none() && i.by_ref.is_none(),
        syn::Pat::Type(t) => simple_pattern(&t.pat),
        syn::Pat::Tuple(t) => t.elems.iter().all(simple_pattern),
        syn::Pat::Paren(p) => simple_pattern(&p.pat),
        syn::Pat::Wild(_) => true,
        _ => false,
    }
}

/// The names a simple pattern binds.
fn pattern_names(p: &syn::Pat) -> Vec<String> {
    match p {
        syn::Pat::Ident(i) => vec![i.ident.to_string()],
        syn::Pat::Type(t) => pattern_names(&t.pat),
        syn::Pat::Tuple(t) => t.elems.iter().flat_map(pattern_names).collect(),
        syn::Pat::Paren(p) => pattern_names(&p.pat),
        _ => vec![],
    }
}

/// Whether a `return` is in an expression, outside nested closures.
struct Returns(bool);

impl<'a> Visit<'a> for Returns {
    fn visit_expr_return(&mut self, _: &'a syn::ExprReturn) {
        self.0 = true;
    }
    fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
}

/// Every single-segment path in `e` (variables it may read), and the
/// names in macros' tokens, in order.
fn free_names(e: &syn::Expr) -> Vec<String> {
    struct Names(Vec<String>);
    impl<'a> Visit<'a> for Names {
        fn visit_path(&mut self, p: &'a syn::Path) {
            if let Some(id) = p.get_ident() {
                self.0.push(id.to_string());
            }
            syn::visit::visit_path(self, p);
        }
        fn visit_macro(&mut self, m: &'a syn::Macro) {
            idents(m.tokens.clone(), &mut self.0);
        }
    }
    fn idents(t: TokenStream, out: &mut Vec<String>) {
        for tt in t {
            match tt {
                proc_macro2::TokenTree::Ident(i) => out.push(i.to_string()),
                proc_macro2::TokenTree::Group(g) => idents(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut n = Names(Vec::new());
    n.visit_expr(e);
    n.0
}
