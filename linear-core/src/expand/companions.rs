//! The callee side of the calling convention between differentiable
//! functions: associated functions of `f`'s linearization type.
//!
//! A function with slice parameters (`&[T]` of floats) crosses calls
//! detached from its arrays (`items::Detached`): `__lin` returns its
//! linearization with the array fields emptied (`'static`), and
//! `__apply` and `__transpose` take the arrays back first, every slice
//! parameter's in order, `#[nondiff]` ones included; `__transpose` also
//! takes an accumulator per differentiable slice after the cotangent,
//! starts its reverse pass from it, and returns it. Tangent slots of
//! slices are borrowed (`&[T]`).
//!
//! A struct parameter crosses the call as its flat value (the tuple of its
//! differentiable fields, `linear_ad::__private::ToFlat`), and so do its
//! tangent and cotangent: that is how the caller holds it in the IR, and
//! the caller may not be able to name the struct (it can reach the callee
//! by a path whose module it does not import). The callee, which names
//! it, rebuilds the struct (`FromFlat`).
//!
//! A struct with constant fields (in it or in a struct it nests) cannot
//! be rebuilt from its flat value: it crosses as its *origin*, a borrow of
//! the caller's parameter (or of a struct nested in one) that it is, as
//! the caller's IR value is equal to it (see `lower::structs`). Its
//! tangent and cotangent still cross flat (a tangent struct has no
//! constant fields). A callee taking it by value needs an owned struct,
//! which it clones from the borrow (`__private::Origin`, whose `Clone`
//! bound rustc checks at the caller, so that a callee of a struct that is
//! not `Clone` stays callable by reference).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

use crate::lower::{Param, Shape};

/// How a parameter's value, tangent and cotangent cross a call.
enum Crossing {
    /// As the parameter's own Rust types.
    Plain,
    /// A differentiable array (`&[T]`, `&Vec<T>`) of a detached
    /// linearization (`items::Detached`): its value as the parameter's
    /// type, its tangent and cotangent as `Vec<T>`, and the value again to
    /// `__apply` and `__transpose`.
    Array,
    /// A struct: `owned` is the struct type (by value), `tangent` its
    /// tangent struct, `by_ref` whether `f` takes `&S`. Its tangent and
    /// cotangent cross as flat values, and so does its value unless
    /// `origin` (it has constant fields): then it crosses as its origin.
    Struct {
        owned: TokenStream,
        tangent: TokenStream,
        by_ref: bool,
        origin: bool,
    },
}

fn crossing(p: &Param, arrays: bool) -> Crossing {
    let st = match &p.active {
        Some((Shape::Struct(st), _)) => st,
        Some((Shape::Slice(..), _)) if arrays => return Crossing::Array,
        _ => return Crossing::Plain,
    };
    let owned = match &p.ty {
        syn::Type::Reference(r) => {
            let t = &r.elem;
            quote!(#t)
        }
        t => quote!(#t),
    };
    Crossing::Struct {
        owned,
        tangent: st.tangent(),
        by_ref: st.by_ref,
        origin: st.has_constants(),
    }
}

impl Crossing {
    /// The type the value crosses as.
    fn value_ty(&self, p: &Param) -> TokenStream {
        match self {
            Crossing::Plain | Crossing::Array => {
                let t = &p.ty;
                quote!(#t)
            }
            Crossing::Struct {
                owned,
                origin: false,
                ..
            } => flat(owned),
            Crossing::Struct {
                owned,
                by_ref: true,
                ..
            } => quote!(&#owned),
            Crossing::Struct { owned, .. } => {
                quote!(impl ::linear_ad::__private::Origin<#owned>)
            }
        }
    }

    /// The statement rebuilding a struct parameter `a` from its flat value.
    fn rebuild(&self, a: &syn::Ident) -> Option<TokenStream> {
        match self {
            Crossing::Struct {
                owned,
                origin: false,
                ..
            } => {
                Some(quote!(let #a = <#owned as ::linear_ad::__private::FromFlat>::from_flat(#a);))
            }
            Crossing::Plain | Crossing::Array | Crossing::Struct { by_ref: true, .. } => None,
            Crossing::Struct { owned, .. } => {
                Some(quote!(let #a: #owned = ::linear_ad::__private::Origin::owned(#a);))
            }
        }
    }

    /// The value as `f`'s own functions take it.
    fn pass(&self, a: &syn::Ident) -> TokenStream {
        match self {
            Crossing::Struct {
                by_ref: true,
                origin: false,
                ..
            } => quote!(&#a),
            Crossing::Struct { .. } | Crossing::Plain | Crossing::Array => quote!(#a),
        }
    }

    /// The type of a tangent slot; `constant` for a constant parameter.
    fn slot_ty(&self, p: &Param, constant: &TokenStream) -> TokenStream {
        let t = match (&p.active, self) {
            (Some((s, _)), Crossing::Array) => return slice_of(s),
            (Some(_), Crossing::Struct { tangent, .. }) => flat(tangent),
            (Some((s, _)), Crossing::Plain) => s.rust(),
            (None, _) => return constant.clone(),
        };
        quote!(impl ::linear_ad::__private::Tangent<#t>)
    }

    /// The tangent in slot `d` as `f`'s own functions take it: by
    /// reference for a `&S` parameter if `by_ref` (as `f_jvp` does).
    fn tangent(&self, d: &syn::Ident, by_ref: bool) -> TokenStream {
        let t = quote!(::linear_ad::__private::Tangent::tangent(#d));
        match self {
            Crossing::Plain => t,
            // Borrowed from the caller (`&[T]`), as `f_jvp` takes it; the
            // linearization's `apply` takes its tangent by value.
            Crossing::Array if by_ref => quote!(#d),
            Crossing::Array => quote!(#d.to_vec()),
            Crossing::Struct {
                tangent, by_ref: r, ..
            } => {
                let amp = (by_ref && *r).then(|| quote!(&));
                quote!(#amp <#tangent as ::linear_ad::__private::FromFlat>::from_flat(#t))
            }
        }
    }

    /// A transpose's cotangent for the parameter (`c`, if it is
    /// differentiable) as it crosses back, and its type.
    fn cotangent(&self, p: &Param, c: Option<&syn::Ident>) -> (TokenStream, TokenStream) {
        match (&p.active, self, c) {
            (Some(_), Crossing::Struct { tangent, .. }, Some(c)) => (
                quote!(::linear_ad::__private::ToFlat::flat(&#c)),
                flat(tangent),
            ),
            (Some((s, _)), Crossing::Plain, Some(c)) => (quote!(#c), s.rust()),
            (Some((s, _)), Crossing::Array, Some(c)) => (quote!(#c), owned_array(s)),
            _ => {
                let inactive = quote!(::linear_ad::__private::Inactive);
                (inactive.clone(), inactive)
            }
        }
    }
}

/// `&[T]`, an array of `T` (shape `s`) as a call borrows it.
fn slice_of(s: &Shape) -> TokenStream {
    let e = match s {
        Shape::Slice(e, _) => e.rust(),
        other => other.rust(),
    };
    quote!(&[#e])
}

/// `Vec<T>`, the tangent of an array of `T` (shape `s`).
fn owned_array(s: &Shape) -> TokenStream {
    let e = match s {
        Shape::Slice(e, _) => e.rust(),
        other => other.rust(),
    };
    quote!(::linear_ad::__private::Vec<#e>)
}

/// `<t as ToFlat>::Flat`.
fn flat(t: &dyn quote::ToTokens) -> TokenStream {
    quote!(<#t as ::linear_ad::__private::ToFlat>::Flat)
}

/// Whether a call can pass a parameter of this shape: any struct, but no
/// struct inside a tuple or array.
pub(super) fn crosses(s: &Shape) -> bool {
    match s {
        Shape::Struct(_) => true,
        Shape::Float(_) | Shape::Tuple(_) | Shape::Array(..) | Shape::Slice(..) => !s.has_struct(),
    }
}

/// The callee-side half of the calling convention between differentiable
/// functions (and methods, whose `owner` is their type), as associated
/// functions of `f`'s linearization type (generic in the float type as `f`
/// is: `generics`, `where_clause`), the one name a caller refers to:
/// `__jvp`, `__lin`, `__apply` and `__transpose`
/// take one tangent (or cotangent) slot per parameter, constant ones
/// included, so a caller needs no knowledge of which of `f`'s parameters
/// are differentiable. A differentiable slot takes a tangent of its type or
/// `Inactive` (zero); a constant slot of `__jvp` takes only `Inactive`, so a
/// differentiable value passed to a constant parameter is reported there,
/// once.
#[allow(clippy::too_many_arguments)]
pub(super) fn companions(
    item: &syn::ItemFn,
    params: &[Param],
    (map_name, (generics, map_args), where_clause): (
        &syn::Ident,
        (TokenStream, TokenStream),
        &TokenStream,
    ),
    (ret_ty, ret_tan): (&TokenStream, &TokenStream),
    active: &[(usize, &Shape)],
    allow: &TokenStream,
    (owner, lanes): (Option<&syn::Type>, CompanionLanes),
    (arrays, detach): (bool, bool),
) -> TokenStream {
    let fname = &item.sig.ident;
    let (jvp, lin) = (
        format_ident!("{}_jvp", fname),
        format_ident!("{}_lin", fname),
    );
    // A method's generated functions are associated functions of its type.
    let (jvp_name, lin_name) = match owner {
        Some(t) => (quote!(<#t>::#jvp), quote!(<#t>::#lin)),
        None => (quote!(#jvp), quote!(#lin)),
    };
    let idents = |tag: &str| -> Vec<syn::Ident> {
        (0..params.len())
            .map(|i| format_ident!("__{}{}", tag, i, span = Span::mixed_site()))
            .collect()
    };
    let (a, d) = (idents("a"), idents("d"));
    let crossings: Vec<Crossing> = params.iter().map(|p| crossing(p, arrays)).collect();
    let each = |f: &dyn Fn(usize, &Crossing) -> TokenStream| -> Vec<TokenStream> {
        crossings.iter().enumerate().map(|(i, c)| f(i, c)).collect()
    };
    let tys = each(&|i, c| c.value_ty(&params[i]));
    let rebuild: Vec<TokenStream> = a
        .iter()
        .zip(&crossings)
        .filter_map(|(ai, c)| c.rebuild(ai))
        .collect();
    let pass = each(&|i, c| c.pass(&a[i]));
    let constant = quote!(impl ::linear_ad::__private::Constant);
    let jvp_slots = each(&|i, c| c.slot_ty(&params[i], &constant));
    let any = quote!(impl ::core::marker::Sized);
    let apply_slots = each(&|i, c| c.slot_ty(&params[i], &any));
    let (tangents, packed) = tangent_args(active, &crossings, &d);
    let constants: Vec<&syn::Ident> = params
        .iter()
        .zip(&d)
        .filter(|(p, _)| p.active.is_none())
        .map(|(_, di)| di)
        .collect();
    let float = crate::lower::float_param(&item.sig.generics);
    let slices = Slices::of(params, (&a, &crossings), float.as_ref(), arrays);
    let (in_params, in_args, accs) = (&slices.params, &slices.args(), &slices.accs);
    let (ct, transpose_body, per_param_ty) =
        transpose_parts(params, &crossings, active.len(), (in_args, accs));
    let acc_params = accs.iter().map(|(acc, t)| quote!(#acc: #t));
    let forward = Forward {
        a: &a,
        tys: &tys,
        d: &d,
        slots: (&jvp_slots, &apply_slots),
        constants: &constants,
        rebuild: &rebuild,
        call: (&jvp_name, &pass, &tangents),
        packed: &packed,
        ret: (ret_ty, ret_tan),
        ins: (in_params, in_args),
    };
    let plain = forward.items(None);
    let lanes = forward.lanes_items(fname, lanes);
    let lin_call = lin_call(&lin_name, &pass, detach);
    quote! {
        #[doc(hidden)]
        #allow
        impl #generics #map_name #map_args #where_clause {
            #plain

            #[inline]
            pub fn __lin(#(#a: #tys,)*) -> (#ret_ty, Self) {
                #(#rebuild)*
                #lin_call
            }

            #[inline]
            pub fn __transpose(&self, #(#in_params,)* #ct: #ret_tan, #(#acc_params,)*) -> (#(#per_param_ty,)*) {
                #transpose_body
            }

            #lanes
        }
    }
}

/// The tangents of the differentiable parameters (`active`) in their
/// slots `d`, as `f_jvp` takes them, and packed as `apply` takes them.
fn tangent_args(
    active: &[(usize, &Shape)],
    crossings: &[Crossing],
    d: &[syn::Ident],
) -> (Vec<TokenStream>, TokenStream) {
    let tangents: Vec<TokenStream> = active
        .iter()
        .map(|(i, _)| crossings[*i].tangent(&d[*i], true))
        .collect();
    let owned: Vec<TokenStream> = active
        .iter()
        .map(|(i, _)| crossings[*i].tangent(&d[*i], false))
        .collect();
    let packed = match owned.as_slice() {
        [one] => one.clone(),
        many => quote!((#(#many,)*)),
    };
    (tangents, packed)
}

/// `f_lin(a..)`, returning the linearization detached from its arrays
/// (`items::Detached`) if `detach`.
fn lin_call(lin_name: &TokenStream, pass: &[TokenStream], detach: bool) -> TokenStream {
    if !detach {
        return quote!(#lin_name(#(#pass,)*));
    }
    let (y, l) = (
        syn::Ident::new("__y", Span::mixed_site()),
        syn::Ident::new("__l", Span::mixed_site()),
    );
    quote!({ let (#y, #l) = #lin_name(#(#pass,)*); (#y, #l.__detach()) })
}

/// The slices a caller passes back to `__apply` and `__transpose`
/// (`items::Detached`): every slice parameter in order, differentiable or
/// not (as `lower::array_param` says), and the accumulators `__transpose`
/// starts from, one per differentiable slice. None unless `f` crosses
/// calls detached.
struct Slices<'a> {
    /// The parameters' names, and their declarations.
    names: Vec<&'a syn::Ident>,
    params: Vec<TokenStream>,
    accs: Vec<(syn::Ident, TokenStream)>,
}

impl<'a> Slices<'a> {
    fn of(
        params: &[Param],
        (a, crossings): (&'a [syn::Ident], &[Crossing]),
        float: Option<&syn::Ident>,
        detached: bool,
    ) -> Slices<'a> {
        let ins: Vec<(&'a syn::Ident, &syn::Type)> = params
            .iter()
            .zip(a)
            .filter(|(p, _)| detached && crate::lower::array_param(&p.ty, float))
            .map(|(p, ai)| (ai, &p.ty))
            .collect();
        let accs = params
            .iter()
            .zip(crossings)
            .filter(|(_, c)| matches!(c, Crossing::Array))
            .enumerate()
            .map(|(k, (p, _))| {
                let t = p.active.as_ref().map(|(s, _)| owned_array(s));
                (
                    format_ident!("__acc{}", k, span = Span::mixed_site()),
                    t.unwrap_or_default(),
                )
            })
            .collect();
        Slices {
            names: ins.iter().map(|(ai, _)| *ai).collect(),
            params: ins.iter().map(|(ai, t)| quote!(#ai: #t)).collect(),
            accs,
        }
    }

    fn args(&self) -> Vec<&'a syn::Ident> {
        self.names.clone()
    }
}

/// What `__jvp` and `__apply` are made of ([`companions`]): the value
/// parameters and their types, the tangent slots and their types (of
/// `__jvp`, of `__apply`), the constant slots, the statements rebuilding
/// crossed structs, the call of `f_jvp` with its arguments and tangents,
/// `apply`'s packed tangent, and the result and its tangent's type.
struct Forward<'a> {
    a: &'a [syn::Ident],
    tys: &'a [TokenStream],
    d: &'a [syn::Ident],
    slots: (&'a [TokenStream], &'a [TokenStream]),
    constants: &'a [&'a syn::Ident],
    rebuild: &'a [TokenStream],
    call: (&'a TokenStream, &'a [TokenStream], &'a [TokenStream]),
    packed: &'a TokenStream,
    ret: (&'a TokenStream, &'a TokenStream),
    /// The arrays passed back to `__apply`: parameters and arguments.
    ins: (&'a [TokenStream], &'a [&'a syn::Ident]),
}

impl Forward<'_> {
    /// The lanes companions `lanes` asks for: a caller's `apply_lanes`
    /// and `f_jvp_lanes` call `f`'s, `K` tangents per slot (a free
    /// function's: methods have no lanes); a derived `f_vjp`'s
    /// `apply_lanes` only, with no `f_vjp_jvp_lanes` to call.
    fn lanes_items(&self, fname: &syn::Ident, lanes: CompanionLanes) -> Option<TokenStream> {
        let lanes_name = format_ident!("{}_jvp_lanes", fname);
        let lanes_name = quote!(#lanes_name);
        let k = syn::Ident::new("__K", Span::mixed_site());
        match lanes {
            CompanionLanes::No => None,
            CompanionLanes::Apply => Some(self.items(Some((&k, None)))),
            CompanionLanes::Both => Some(self.items(Some((&k, Some(&lanes_name))))),
        }
    }

    /// `__jvp` and `__apply`; with `lanes` (the lane count's name and
    /// `f_jvp_lanes`), `__jvp_lanes` and `__apply_lanes`: the same bodies,
    /// each float of the slots and the result in lanes, calling
    /// `f_jvp_lanes` and `apply_lanes`.
    fn items(&self, lanes: Option<(&syn::Ident, Option<&TokenStream>)>) -> TokenStream {
        let (a, tys, d, constants, rebuild) =
            (self.a, self.tys, self.d, self.constants, self.rebuild);
        let (jvp_name, pass, tangents) = self.call;
        let (ret_ty, packed) = (self.ret.0, self.packed);
        let in_lanes = |t: &TokenStream| match lanes {
            Some((k, _)) => crate::codegen::in_lanes(t, k),
            None => t.clone(),
        };
        let ret_tan = in_lanes(self.ret.1);
        let jvp_slots = self.slots.0.iter().map(in_lanes);
        let apply_slots = self.slots.1.iter().map(in_lanes);
        let ins = self.ins.1;
        let (jvp, apply, generics, jvp_name, applied) = match lanes {
            Some((k, lanes_name)) => (
                quote!(__jvp_lanes),
                quote!(__apply_lanes),
                quote!(<const #k: usize>),
                lanes_name.unwrap_or(jvp_name),
                if ins.is_empty() {
                    quote!(self.apply_lanes(#packed))
                } else {
                    quote!(self.__tangent_lanes::<#k>(#(#ins,)* #packed))
                },
            ),
            None if !ins.is_empty() => (
                quote!(__jvp),
                quote!(__apply),
                quote!(),
                jvp_name,
                quote!(self.__tangent(#(#ins,)* #packed)),
            ),
            None => (
                quote!(__jvp),
                quote!(__apply),
                quote!(),
                jvp_name,
                quote!(::linear_ad::LinearMap::apply(self, #packed)),
            ),
        };
        let in_params = self.ins.0;
        // `__apply_lanes` alone where there is no `f_jvp_lanes`.
        let jvp_item = (!matches!(lanes, Some((_, None)))).then(|| {
            quote! {
                #[inline]
                pub fn #jvp #generics (#(#a: #tys,)* #(#d: #jvp_slots,)*) -> (#ret_ty, #ret_tan) {
                    #(let _ = #constants;)*
                    #(#rebuild)*
                    #jvp_name(#(#pass,)* #(#tangents,)*)
                }
            }
        });
        quote! {
            #jvp_item

            #[inline]
            pub fn #apply #generics (&self, #(#in_params,)* #(#d: #apply_slots,)*) -> #ret_tan {
                #(let _ = #constants;)*
                #applied
            }
        }
    }
}

/// `__transpose`'s cotangent parameter, body and result types: `f`'s
/// transpose, its cotangents spread over one slot per parameter.
fn transpose_parts(
    params: &[Param],
    crossings: &[Crossing],
    n_active: usize,
    (ins, accs): (&[&syn::Ident], &[(syn::Ident, TokenStream)]),
) -> (syn::Ident, TokenStream, Vec<TokenStream>) {
    let ct = syn::Ident::new("__ct", Span::mixed_site());
    let c: Vec<syn::Ident> = (0..n_active)
        .map(|k| format_ident!("__c{}", k, span = Span::mixed_site()))
        .collect();
    // A detached linearization's transpose reads the arrays passed back.
    let transposed = if !accs.is_empty() {
        let accs = accs.iter().map(|(acc, _)| acc);
        quote!(self.__reverse_into(#(#ins,)* #ct, #(#accs,)*))
    } else if !ins.is_empty() {
        quote!(self.__reverse(#(#ins,)* #ct))
    } else {
        quote!(::linear_ad::LinearMap::transpose(self, #ct))
    };
    let unpack = if n_active == 1 {
        let c0 = &c[0];
        quote!(let #c0 = #transposed;)
    } else {
        quote!(let (#(#c,)*) = #transposed;)
    };
    let mut next = c.iter();
    let (per_param, per_param_ty): (Vec<TokenStream>, Vec<TokenStream>) = params
        .iter()
        .zip(crossings)
        .map(|(p, crossing)| {
            let ck = p.active.as_ref().and_then(|_| next.next());
            crossing.cotangent(p, ck)
        })
        .unzip();
    (ct, quote!(#unpack (#(#per_param,)*)), per_param_ty)
}

/// The second-order half of the calling convention, for an `order = 2`
/// function `f` whose `f_jvp` is a differentiable callee: associated
/// functions of `f_jvp`'s linearization type (`jvp_map`) that take `f`'s
/// arguments and one tangent slot per parameter of `f`, as `f`'s own
/// `__jvp` does, and pass them on to `f_jvp`'s `__lin`, `__apply` and
/// `__transpose` (whose parameters are `f`'s followed by one direction per
/// differentiable parameter of `f`, a count the caller does not know):
///
/// * `__jvp_lin(a.., d..) -> ((y, ẏ), lin)`;
/// * `__jvp_apply(&lin, ins.., ȧ.., ḋ..) -> (ẏ', ẏ'')`, one slot per
///   parameter of `f` for each half;
/// * `__jvp_transpose(&lin, ins.., (c, ċ), accs..) -> ((ā..), (d̄..))`,
///   `Inactive` for a constant parameter's.
///
/// Where `f` takes slices (`arrays`), `f_jvp` takes them and their
/// directions, and crosses calls detached as `f` does (`items::Detached`):
/// `ins` are the arrays passed back, `f`'s slices (`#[nondiff]` ones too)
/// then a direction for each, as the caller's IR passes `g.jvp`'s array
/// arguments again (a constant's direction is a scratch array, which
/// `f_jvp` does not take); `accs` the differentiable slices' and their
/// directions' accumulators, returned as their cotangents.
///
/// A caller of `f` with `order = 2` differentiates its call to `f_jvp`
/// through these (reached by [`linear_ad::__private::SecondOrder`], which
/// `f`'s linearization implements). `None` where a parameter or the result
/// is a struct: that crossing is not implemented here.
pub(super) fn jvp_companions(
    params: &[Param],
    maps: &JvpMaps,
    (ret_ty, ret_tan): (&TokenStream, &TokenStream),
    allow: &TokenStream,
) -> Option<TokenStream> {
    let crossings: Vec<Crossing> = params.iter().map(|p| crossing(p, maps.arrays)).collect();
    let unsupported = params.iter().zip(&crossings).any(|(p, c)| {
        !matches!(c, Crossing::Struct { .. })
            && p.active.as_ref().is_some_and(|(s, _)| s.has_struct())
    });
    if unsupported {
        return None;
    }
    let n = params.len();
    let (a, d, e, g) = (
        idents("a", n),
        idents("d", n),
        idents("e", n),
        idents("g", n),
    );
    // As `f_jvp`'s `__lin` takes them: a struct flat, or as its origin.
    let tys: Vec<TokenStream> = params
        .iter()
        .zip(&crossings)
        .map(|(p, c)| c.value_ty(p))
        .collect();
    let constant = quote!(impl ::linear_ad::__private::Constant);
    let any = quote!(impl ::core::marker::Sized);
    let slots = |c: &TokenStream| -> Vec<TokenStream> {
        params
            .iter()
            .zip(&crossings)
            .map(|(p, x)| x.slot_ty(p, c))
            .collect()
    };
    let (jvp_slots, apply_slots) = (slots(&constant), slots(&any));
    let active: Vec<usize> = (0..n).filter(|&i| params[i].active.is_some()).collect();
    let (d_on, d_off) = (pick(&d, &active, true), pick(&d, &active, false));
    let (g_on, g_off) = (pick(&g, &active, true), pick(&g, &active, false));
    // A slice's direction is a slice: `f_jvp`'s `__lin` takes it as is.
    // A struct's flat, as `f_jvp` takes its tangent parameter (a tangent
    // struct, which has no constant fields).
    let directions = d_on.iter().zip(&active).map(|(di, &i)| match crossings[i] {
        Crossing::Array => quote!(#di),
        Crossing::Plain | Crossing::Struct { .. } => {
            quote!(::linear_ad::__private::Tangent::tangent(#di))
        }
    });
    let Back {
        ins,
        in_tys,
        unused_dirs,
        passed,
        accs,
        acc_tys,
    } = Back::new(params, &crossings, (maps.arrays, maps.float))?;
    // `f_jvp`'s transpose: one cotangent per parameter of `f_jvp`, then
    // spread over `f`'s parameters twice.
    let c = idents("c", n + active.len());
    let (firsts, dirs) = c.split_at(n);
    let (per_param, _) = spread(params, &crossings, firsts.iter());
    let (dir_tys, dirs) = spread(params, &crossings, dirs.iter());
    let ct = syn::Ident::new("__ct", Span::mixed_site());
    let JvpMaps {
        jvp: (jvp_map, jvp_args),
        generics: (generics, where_clause),
        ..
    } = maps;
    let second_order = second_order_impl(maps, allow);
    Some(quote! {
        #[doc(hidden)]
        #allow
        impl #generics #jvp_map #jvp_args #where_clause {
            #[inline]
            pub fn __jvp_lin(#(#a: #tys,)* #(#d: #jvp_slots,)*) -> ((#ret_ty, #ret_tan), Self) {
                #(let _ = #d_off;)*
                <Self>::__lin(#(#a,)* #(#directions,)*)
            }

            #[inline]
            pub fn __jvp_apply(&self, #(#ins: #in_tys,)* #(#e: #apply_slots,)* #(#g: #apply_slots,)*) -> (#ret_tan, #ret_tan) {
                #(let _ = #g_off;)*
                #(let _ = #unused_dirs;)*
                <Self>::__apply(self, #(#passed,)* #(#e,)* #(#g_on,)*)
            }

            #[inline]
            pub fn __jvp_transpose(&self, #(#ins: #in_tys,)* #ct: (#ret_tan, #ret_tan), #(#accs: #acc_tys,)*) -> ((#(#per_param,)*), (#(#dir_tys,)*)) {
                #(let _ = #unused_dirs;)*
                let (#(#c,)*) = <Self>::__transpose(self, #(#passed,)* #ct, #(#accs,)*);
                ((#(#firsts,)*), (#(#dirs,)*))
            }
        }

        #second_order
    })
}

/// `f`'s linearization's `SecondOrder` impl: `f_jvp`'s linearization,
/// and `f_vjp`'s where it is differentiable (else `()`).
fn second_order_impl(maps: &JvpMaps, allow: &TokenStream) -> TokenStream {
    let JvpMaps {
        map: (map_name, map_args),
        jvp: (jvp_map, jvp_args),
        generics: (generics, where_clause),
        vjp,
        ..
    } = maps;
    let vjp_lin = match vjp {
        Some((vjp_map, vjp_args)) => quote!(#vjp_map #vjp_args),
        None => quote!(()),
    };
    quote! {
        #[doc(hidden)]
        #allow
        impl #generics ::linear_ad::__private::SecondOrder for #map_name #map_args #where_clause {
            type JvpLin = #jvp_map #jvp_args;
            type VjpLin = #vjp_lin;
        }
    }
}

/// `n` hygienic identifiers `__{tag}0..`.
fn idents(tag: &str, n: usize) -> Vec<syn::Ident> {
    (0..n)
        .map(|i| format_ident!("__{}{}", tag, i, span = Span::mixed_site()))
        .collect()
}

/// The identifiers of `v` at the positions `active` holds (`on`), or at
/// the others.
fn pick<'v>(v: &'v [syn::Ident], active: &[usize], on: bool) -> Vec<&'v syn::Ident> {
    (0..v.len())
        .filter(|i| active.contains(i) == on)
        .map(|i| &v[i])
        .collect()
}

/// The arrays `f_jvp`'s second-order companions take back, in a caller's
/// order: `f`'s slices (`#[nondiff]` ones too), then a direction for each
/// (a constant array's a scratch one the caller makes, which `f_jvp` does
/// not take); and the accumulators of `f`'s differentiable slices, then of
/// their directions.
struct Back {
    ins: Vec<syn::Ident>,
    in_tys: Vec<TokenStream>,
    /// The directions of constant arrays, which `f_jvp` does not take.
    unused_dirs: Vec<syn::Ident>,
    /// What `f_jvp`'s linearization takes: `ins` but `unused_dirs`.
    passed: Vec<syn::Ident>,
    accs: Vec<syn::Ident>,
    acc_tys: Vec<TokenStream>,
}

impl Back {
    fn new(
        params: &[Param],
        crossings: &[Crossing],
        (arrays, float): (bool, Option<&syn::Ident>),
    ) -> Option<Back> {
        let n = params.len();
        let slices: Vec<usize> = (0..n)
            .filter(|&i| matches!(crossings[i], Crossing::Array))
            .collect();
        let back: Vec<usize> = (0..n)
            .filter(|&i| {
                matches!(crossings[i], Crossing::Array)
                    || (arrays
                        && params[i].active.is_none()
                        && crate::lower::array_param(&params[i].ty, float))
            })
            .collect();
        let ins = idents("i", 2 * back.len());
        let in_dirs = &ins[back.len()..];
        let unused_dirs: Vec<syn::Ident> = (0..back.len())
            .filter(|&k| params[back[k]].active.is_none())
            .map(|k| in_dirs[k].clone())
            .collect();
        let passed = ins
            .iter()
            .filter(|i| !unused_dirs.contains(i))
            .cloned()
            .collect();
        let in_tys = back
            .iter()
            .chain(&back)
            .map(|&i| {
                let t = &params[i].ty;
                quote!(#t)
            })
            .collect();
        let acc_tys = slices
            .iter()
            .chain(&slices)
            .map(|&i| params[i].active.as_ref().map(|(s, _)| owned_array(s)))
            .collect::<Option<_>>()?;
        Some(Back {
            ins,
            in_tys,
            unused_dirs,
            passed,
            accs: idents("acc", 2 * slices.len()),
            acc_tys,
        })
    }
}

/// For a method differentiable once, whose callers with `order = 2`
/// outside its block cannot tell: a stand-in for its `_jvp`'s
/// linearization (`map` with `Once` after it), whose `__jvp_lin`,
/// `__jvp_apply` and `__jvp_transpose` take as many arguments as
/// [`jvp_companions`]' would, of any type, and return any type, under a
/// bound no type meets
/// (`DifferentiableTwice`): rustc reports each call at the method's name,
/// with that bound's message, and nothing else (the caller's tape holds
/// the stand-in as it would the real linearization). It stands in for
/// `_vjp`'s linearization too (`SecondOrder::VjpLin`: `__jvp`, `__lin`,
/// `__apply`, `__transpose`, for `m_vjp`'s parameters), which callers
/// outside the block go through in their own `_vjp`'s derivatives.
pub(super) fn once_only(
    params: &[Param],
    (map_name, map_args): (&syn::Ident, &TokenStream),
    (generics, where_clause): (&TokenStream, &TokenStream),
    (arrays, float): (bool, Option<&syn::Ident>),
    allow: &TokenStream,
) -> Option<TokenStream> {
    let crossings: Vec<Crossing> = params.iter().map(|p| crossing(p, arrays)).collect();
    let back = Back::new(params, &crossings, (arrays, float))?;
    let n = params.len();
    let stub = format_ident!("{}Once", map_name);
    let never = |count: usize, with_self: bool| {
        let tys: Vec<syn::Ident> = (0..count)
            .map(|i| format_ident!("__A{}", i, span = Span::mixed_site()))
            .collect();
        let first = tys
            .first()
            .map(|a| quote!(#a: ::linear_ad::__private::DifferentiableTwice));
        let receiver = with_self.then(|| quote!(&self,));
        // A result of any type, rather than `!`, which would make the
        // caller's code after the call unreachable (a warning of its own).
        quote! {
            <#(#tys,)* __R>(#receiver #(_: #tys,)*) -> __R where #first {
                ::core::unreachable!()
            }
        }
    };
    let lin = never(2 * n, false);
    let apply = never(back.ins.len() + 2 * n, true);
    let transpose = never(back.ins.len() + 1 + back.accs.len(), true);
    // As `m_vjp`'s linearization (`VjpLin`): its parameters are `m`'s and
    // the cotangent.
    let (vjp_jvp, vjp_lin) = (never(2 * (n + 1), false), never(n + 1, false));
    let (vjp_apply, vjp_transpose) = (never(n + 1, true), never(1, true));
    Some(quote! {
        #[doc(hidden)]
        #[derive(Clone, Copy, Debug)]
        #[allow(non_camel_case_types, dead_code)]
        pub struct #stub;

        #[doc(hidden)]
        impl ::linear_ad::TapeSize for #stub {
            fn tape_bytes(&self) -> usize {
                0
            }
        }

        #[doc(hidden)]
        #[allow(dead_code)]
        #allow
        impl #stub {
            pub fn __jvp_lin #lin
            pub fn __jvp_apply #apply
            pub fn __jvp_transpose #transpose
            pub fn __jvp #vjp_jvp
            pub fn __lin #vjp_lin
            pub fn __apply #vjp_apply
            pub fn __transpose #vjp_transpose
        }

        #[doc(hidden)]
        #allow
        impl #generics ::linear_ad::__private::SecondOrder for #map_name #map_args #where_clause {
            type JvpLin = #stub;
            type VjpLin = #stub;
        }
    })
}

/// The names [`jvp_companions`] writes: `f`'s linearization type and its
/// generic arguments (`<'static, T>` where it is detached), `f_jvp`'s, the
/// generic parameters both are declared with and their `where` clause,
/// `f`'s float parameter, and whether `f` crosses calls detached from its
/// slices.
pub(super) struct JvpMaps<'a> {
    pub(super) map: (&'a syn::Ident, TokenStream),
    pub(super) jvp: (&'a syn::Ident, TokenStream),
    /// `f_vjp`'s linearization type and its generic arguments, where
    /// `f_vjp` is differentiable and takes no slices (`SecondOrder::VjpLin`).
    pub(super) vjp: Option<(syn::Ident, TokenStream)>,
    pub(super) generics: (TokenStream, &'a TokenStream),
    pub(super) float: Option<&'a syn::Ident>,
    pub(super) arrays: bool,
}

/// Cotangents spread over one slot per parameter of `f`: the next of
/// `cts` for each differentiable parameter, `Inactive` for each constant
/// one; their types, and the values.
fn spread<'c>(
    params: &[Param],
    crossings: &[Crossing],
    mut cts: impl Iterator<Item = &'c syn::Ident>,
) -> (Vec<TokenStream>, Vec<TokenStream>) {
    params
        .iter()
        .zip(crossings)
        .map(|(p, x)| {
            let ck = p.active.as_ref().and_then(|_| cts.next());
            let (value, t) = x.cotangent(p, ck);
            (t, value)
        })
        .unzip()
}

/// The lanes companions of a linearization: none, `__apply_lanes`
/// alone, or it and `__jvp_lanes` (which calls `f_jvp_lanes`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CompanionLanes {
    No,
    Apply,
    Both,
}
