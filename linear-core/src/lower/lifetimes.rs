//! Lifetime parameters of a differentiable function, erased before it is
//! lowered.
//!
//! `fn f<'a>(x: &'a [f64], #[nondiff] d: &'a Data<'a>) -> f64` names its
//! lifetimes only to relate its parameters; differentiable functions
//! return values, never references. The generated functions take the same
//! parameters with each lifetime parameter elided (`&'a [f64]` as
//! `&[f64]`, `Data<'a>` as `Data<'_>`), and elision gives every reference
//! one of its own, which is all a function that returns no reference
//! needs. The function itself is emitted as written.

use syn::visit_mut::VisitMut;

/// `f` with its lifetime parameters erased: elided in every type that
/// names one, and the parameters and the bounds naming them dropped. Loop
/// labels, which are lifetimes to syn too, are left alone: only types are
/// rewritten. A function without lifetime parameters is borrowed, not
/// copied (its body may be thousands of statements).
pub fn erase_lifetimes(f: &syn::ItemFn) -> std::borrow::Cow<'_, syn::ItemFn> {
    let names: Vec<syn::Ident> = f
        .sig
        .generics
        .lifetimes()
        .map(|l| l.lifetime.ident.clone())
        .collect();
    if names.is_empty() {
        return std::borrow::Cow::Borrowed(f);
    }
    let mut f = f.clone();
    let g = &mut f.sig.generics;
    g.params = std::mem::take(&mut g.params)
        .into_pairs()
        .filter(|p| !matches!(p.value(), syn::GenericParam::Lifetime(_)))
        .collect();
    if g.params.is_empty() {
        g.lt_token = None;
        g.gt_token = None;
    }
    for p in g.type_params_mut() {
        p.bounds = std::mem::take(&mut p.bounds)
            .into_pairs()
            .filter(|b| !matches!(b.value(), syn::TypeParamBound::Lifetime(_)))
            .collect();
    }
    if let Some(w) = &mut g.where_clause {
        w.predicates = std::mem::take(&mut w.predicates)
            .into_pairs()
            .filter(|p| !matches!(p.value(), syn::WherePredicate::Lifetime(_)))
            .collect();
    }
    Types(&names).visit_item_fn_mut(&mut f);
    std::borrow::Cow::Owned(f)
}

/// Rewrites the types of a function, and nothing else.
struct Types<'n>(&'n [syn::Ident]);

impl VisitMut for Types<'_> {
    fn visit_type_mut(&mut self, t: &mut syn::Type) {
        Erase(self.0).visit_type_mut(t);
    }
}

/// Drops the named lifetimes from references (`&'a T` is `&T`, which
/// the generated code may name again: a linearization that borrows an
/// input array gives it its own lifetime) and replaces them with `'_`
/// elsewhere (`Data<'a>` is `Data<'_>`).
struct Erase<'n>(&'n [syn::Ident]);

impl VisitMut for Erase<'_> {
    fn visit_type_reference_mut(&mut self, r: &mut syn::TypeReference) {
        if r.lifetime
            .as_ref()
            .is_some_and(|l| self.0.contains(&l.ident))
        {
            r.lifetime = None;
        }
        syn::visit_mut::visit_type_reference_mut(self, r);
    }

    fn visit_lifetime_mut(&mut self, l: &mut syn::Lifetime) {
        if self.0.contains(&l.ident) {
            *l = syn::Lifetime::new("'_", l.ident.span());
        }
    }
}
