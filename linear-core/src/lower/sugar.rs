//! Forms written in terms of simpler ones before lowering, so each needs
//! no rule of its own in the passes: what they compute is what the
//! rewritten code computes, in Rust's order.
//!
//! * `(a, b) = e;` and `[a, b] = e;` (destructuring assignment):
//!   `{ let (t0, t1) = e; a = t0; b = t1; }`, every part of `e` computed
//!   before any is assigned, as Rust does (`(a, b) = (b, a + b)`); a `_`
//!   part is dropped, a nested tuple destructured in turn.
//! * `y.swap(i, j);`: the two indices computed once, then the two
//!   elements exchanged through a temporary.
//! * `y.fill(v);`: `v` computed once, then written to every element.
//! * `y.copy_from_slice(x);` (`x` a name or a reference to one): each
//!   element copied, over the longer of the two lengths, so that arrays
//!   of different lengths panic as `copy_from_slice` does (by an index out
//!   of bounds).
//! * `a[i].x op= e;` and `a[i].x = e;` (a field of an element, `a[i].p.0`
//!   or `a[i].pos[k]` too): the index computed once, the element copied,
//!   its field written, the element written back; the element's fields
//!   and the array's other elements are read as they were, as Rust reads
//!   them.
//!
//! Names the rewriting introduces start with `__linear_ad_` and are
//! numbered, so they neither collide with the user's nor with each other.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::visit_mut::VisitMut;

/// `block` with the forms above rewritten, in closures' bodies too.
pub(super) fn desugar(block: &syn::Block) -> syn::Block {
    let mut block = block.clone();
    Sugar(0).visit_block_mut(&mut block);
    block
}

struct Sugar(usize);

impl Sugar {
    fn fresh(&mut self, what: &str) -> syn::Ident {
        self.0 += 1;
        format_ident!("__linear_ad_{}{}", what, self.0)
    }

    /// The rewriting of `e`, if it is one of the forms.
    fn rewrite(&mut self, e: &syn::Expr) -> Option<TokenStream> {
        if let Some(r) = self.element_field_write(e) {
            return Some(r);
        }
        match e {
            syn::Expr::Assign(a) if destructures(&a.left) => {
                let mut stmts = Vec::new();
                let pat = self.pattern(&a.left, &mut stmts);
                let right = &a.right;
                Some(quote!({ let #pat = #right; #(#stmts)* }))
            }
            syn::Expr::MethodCall(m) if is_name(&m.receiver) => {
                let y = &m.receiver;
                let args: Vec<&syn::Expr> = m.args.iter().collect();
                match (m.method.to_string().as_str(), &args[..]) {
                    ("swap", [i, j]) => {
                        let (a, b, t) = (self.fresh("i"), self.fresh("j"), self.fresh("t"));
                        Some(quote!({
                            let (#a, #b) = (#i, #j);
                            let #t = #y[#a];
                            #y[#a] = #y[#b];
                            #y[#b] = #t;
                        }))
                    }
                    ("fill", [v]) => {
                        let (x, k) = (self.fresh("v"), self.fresh("k"));
                        Some(quote!({
                            let #x = #v;
                            for #k in 0..#y.len() {
                                #y[#k] = #x;
                            }
                        }))
                    }
                    ("copy_from_slice", [src]) => {
                        let src = referenced_name(src)?;
                        let (n, k) = (self.fresh("n"), self.fresh("k"));
                        Some(quote!({
                            let #n = if #y.len() > #src.len() { #y.len() } else { #src.len() };
                            for #k in 0..#n {
                                #y[#k] = #src[#k];
                            }
                        }))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// `a[i].x op= e` (or `= e`): through a copy of the element, with the
    /// index (a name, a literal or arithmetic of them, which reads no
    /// array and calls nothing) computed once.
    fn element_field_write(&mut self, e: &syn::Expr) -> Option<TokenStream> {
        let (left, op, right) = match e {
            syn::Expr::Assign(a) => (&*a.left, quote!(=), &*a.right),
            syn::Expr::Binary(b) if super::control::compound_assign(&b.op) => {
                let op = &b.op;
                (&*b.left, quote!(#op), &*b.right)
            }
            _ => return None,
        };
        // The place's path down from the element: `.x`, `.p.0`, `.pos[k]`.
        let mut rest = Vec::new();
        let mut place = left;
        let (array, index) = loop {
            match place {
                syn::Expr::Field(f) => {
                    let m = &f.member;
                    rest.push(quote!(.#m));
                    place = &f.base;
                }
                syn::Expr::Index(ix) if !rest.is_empty() => {
                    if is_name(&ix.expr) && simple_index(&ix.index) {
                        break (&ix.expr, &ix.index);
                    }
                    let k = &ix.index;
                    rest.push(quote!([#k]));
                    place = &ix.expr;
                }
                _ => return None,
            }
        };
        if !rest.iter().any(|r| r.to_string().starts_with('.')) {
            return None;
        }
        rest.reverse();
        let (i, el) = (self.fresh("i"), self.fresh("el"));
        Some(quote!({
            let #i = #index;
            let mut #el = #array[#i];
            #el #(#rest)* #op #right;
            #array[#i] = #el;
        }))
    }

    /// The pattern binding a destructuring assignment's value, with the
    /// assignments of its parts pushed to `stmts`.
    fn pattern(&mut self, left: &syn::Expr, stmts: &mut Vec<TokenStream>) -> TokenStream {
        match left {
            syn::Expr::Tuple(t) => {
                let parts = t.elems.iter().map(|e| self.pattern(e, stmts));
                quote!((#(#parts,)*))
            }
            syn::Expr::Array(a) => {
                let parts = a.elems.iter().map(|e| self.pattern(e, stmts));
                quote!([#(#parts),*])
            }
            syn::Expr::Paren(p) => self.pattern(&p.expr, stmts),
            syn::Expr::Infer(_) => quote!(_),
            place => {
                let t = self.fresh("d");
                stmts.push(quote!(#place = #t;));
                quote!(#t)
            }
        }
    }
}

impl VisitMut for Sugar {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        if let Some(r) = self.rewrite(e) {
            if let Ok(new) = syn::parse2::<syn::Expr>(r) {
                *e = new;
            }
        }
    }
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// Whether an assignment's left side destructures (a tuple or an array
/// of places).
fn destructures(left: &syn::Expr) -> bool {
    match left {
        syn::Expr::Tuple(_) | syn::Expr::Array(_) => true,
        syn::Expr::Paren(p) => destructures(&p.expr),
        _ => false,
    }
}

/// An index that is computed the same however often it is: names,
/// literals and arithmetic of them.
fn simple_index(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Path(_) | syn::Expr::Lit(_) => true,
        syn::Expr::Paren(p) => simple_index(&p.expr),
        syn::Expr::Binary(b) => {
            matches!(
                b.op,
                syn::BinOp::Add(_) | syn::BinOp::Sub(_) | syn::BinOp::Mul(_)
            ) && simple_index(&b.left)
                && simple_index(&b.right)
        }
        _ => false,
    }
}

fn is_name(e: &syn::Expr) -> bool {
    matches!(e, syn::Expr::Path(p) if p.path.get_ident().is_some())
}

/// `x` of `x` or `&x`.
fn referenced_name(e: &syn::Expr) -> Option<&syn::Expr> {
    match e {
        syn::Expr::Reference(r) if r.mutability.is_none() => referenced_name(&r.expr),
        syn::Expr::Paren(p) => referenced_name(&p.expr),
        e if is_name(e) => Some(e),
        _ => None,
    }
}
