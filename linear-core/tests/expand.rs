//! The `#[differentiable]` expansion as a function: it never panics, on
//! well-formed or mangled input, and what it lowers Rust to is pinned as
//! IR text.

use linear_core::expand::{differentiable, pipeline};
use linear_core::lower::{lower_fn, Errors};
use linear_core::workload::straight_line;
use proc_macro2::{TokenStream, TokenTree};
use proptest::prelude::*;

const SOURCES: &[&str] = &[
    "pub fn f(x: f64, y: f64) -> f64 { let a = x * y; a.sin() + x }",
    "fn g(p: [f64; 3], (u, v): (f64, f64), n: usize) -> (f64, [f64; 2]) {
        let w = (n as f64).sqrt();
        let mut acc = p[0] * u;
        acc += p[1] * v * w;
        let [a, b, _c] = p;
        (acc, [a * b, acc / (1.0 + b * b)])
    }",
    "fn h(x: f64, #[nondiff] k: f64) -> f64 { let t: (f64, f64) = geo::pair(x, k); t.0.powi(3) - t.1.atan2(x) }",
    "fn bad(x: f64) -> f64 { if x > 0.0 { x } else { -x } }",
    "fn calls(x: f32) -> f32 { let y = helper(x, 2.0f32, 3); f32::max(y, x).mul_add(x, 1.0) }",
    "fn arrays(x: &[f64], w: &Vec<(f64, f64)>, #[nondiff] d: &[f64]) -> f64 { let mut s = 0.0; for (i, &v) in x.iter().enumerate().rev() { s += v * w[i].0 - d[i]; } for (a, b) in x.iter().zip(d.iter()) { s += a * b; } s + x.iter().map(|v: &f64| v.sin()).sum::<f64>() + x.iter().fold(0.0, |m, &v| m * v) + x[x.len() - 1] }",
];

fn tokens(src: &str) -> Vec<TokenTree> {
    src.parse::<TokenStream>()
        .expect("sources lex")
        .into_iter()
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Deleting, duplicating or swapping top-level token trees of real
    /// inputs never makes the expansion panic; it always returns tokens.
    #[test]
    fn expansion_never_panics(src in 0..SOURCES.len(), edits in prop::collection::vec((0u8..3, any::<prop::sample::Index>(), any::<prop::sample::Index>()), 0..6)) {
        let mut toks = tokens(SOURCES[src]);
        for (kind, i, j) in edits {
            if toks.is_empty() { break; }
            let (a, b) = (i.index(toks.len()), j.index(toks.len()));
            match kind {
                0 => { toks.remove(a); }
                1 => { let t = toks[a].clone(); toks.insert(b, t); }
                _ => toks.swap(a, b),
            }
        }
        let item: TokenStream = toks.into_iter().collect();
        let out = std::panic::catch_unwind(|| differentiable(TokenStream::new(), item.clone()).to_string());
        prop_assert!(out.is_ok(), "expansion panicked on: {}", item);
        // Attribute arguments are parsed too.
        let attr: TokenStream = "dump = 3, nonsense".parse().unwrap();
        let out = std::panic::catch_unwind(|| differentiable(attr.clone(), item.clone()).to_string());
        prop_assert!(out.is_ok(), "expansion panicked on arguments: {}", attr);
        // And with every derivative generated: lanes, second order.
        let attr: TokenStream = "lanes, order = 2".parse().unwrap();
        let out = std::panic::catch_unwind(|| differentiable(attr.clone(), item.clone()).to_string());
        prop_assert!(out.is_ok(), "expansion panicked with `lanes, order = 2` on: {}", item);
    }
}

fn lowered(src: &str) -> String {
    let item: syn::ItemFn = syn::parse_str(src).expect("parses");
    let mut errs = Errors::default();
    let l = lower_fn(&item, &mut errs).expect("lowers");
    assert!(errs.is_empty());
    let stages = pipeline(
        &l.func,
        &l.externs,
        linear_core::expand::Passes::with(linear_core::passes::unzip::Checkpoint::SaveAll),
    )
    .expect("pipeline");
    format!("{}\n{}", stages.source, stages.unzipped)
}

#[test]
fn lowering_of_the_quickstart_function() {
    expect_test::expect![[r#"
        def f(x: f64, y: f64;) -> (f64;) =
          let a.1: f64; = x * y in
          let r.2: f64; = sin(a.1) in
          let r.3: f64; = r.2 + x in
          (r.3;)

        def f.jvp.nl(x: f64, y: f64;) -> (f64, (f64, f64, f64);) =
          let z.8: f64; = x * y in
          let z.13: f64; = sin(z.8) in
          let c.14: f64; = cos(z.8) in
          let z.17: f64; = z.13 + x in
          let tape.20: (f64, f64, f64); = tup(x, y, c.14) in
          (z.17, tape.20;)

        def f.jvp.lin(tape.20: (f64, f64, f64); dx.4: f64, dy.5: f64) -> (; f64) =
          unpack (x: f64, y: f64, c.14: f64) = tape.20 in
          let ; dx.6: f64, dx.7: f64 = dup(dx.4) in
          let ; dz.9: f64 = x * dy.5 in
          let ; dz.10: f64 = y * dx.6 in
          let ; dz.11: f64 = dz.9 + dz.10 in
          let ; dz.15: f64 = c.14 * dz.11 in
          let ; dz.18: f64 = dz.15 + dx.7 in
          (; dz.18)
    "#]]
    .assert_eq(&lowered(SOURCES[0]));
}

#[test]
fn lowering_of_calls_constants_and_arrays() {
    expect_test::expect![[r#"
        extern pinned call.1(f64;) -> ((f64, f64);)

        def h(x: f64;) -> (f64;) =
          let t.1: (f64, f64); = call.1(x;) in
          unpack (t.2: f64, t.3: f64) = t.1 in
          let r.4: f64; = powi(t.2, 3) in
          let r.5: f64; = atan2(t.3, x) in
          let r.6: f64; = r.4 - r.5 in
          (r.6;)

        extern pinned call.1.jvp.nl(f64;) -> ((f64, f64), tape(call.1.jvp);)
        extern pinned call.1.jvp.lin(tape(call.1.jvp); f64) -> (; (f64, f64))

        def h.jvp.nl(x: f64;) -> (f64, (tape(call.1.jvp), f64, f64, f64);) =
          let u.34: (f64, f64), w.35: tape(call.1.jvp); = call.1.jvp.nl(x;) in
          unpack (t.2: f64, t.3: f64) = u.34 in
          let z.13: f64; = powi(t.2, 3) in
          let c.14: f64; = powi(t.2, 2) in
          let k.15: f64; = 3.0 in
          let c.16: f64; = k.15 * c.14 in
          let z.19: f64; = atan2(t.3, x) in
          let c.20: f64; = t.3 * t.3 in
          let c.21: f64; = x * x in
          let c.22: f64; = c.20 + c.21 in
          let c.23: f64; = recip(c.22) in
          let c.24: f64; = x * c.23 in
          let c.25: f64; = t.3 * c.23 in
          let n.26: f64; = -c.25 in
          let z.31: f64; = z.13 - z.19 in
          let tape.37: (tape(call.1.jvp), f64, f64, f64); = tup(w.35, c.16, c.24, n.26) in
          (z.31, tape.37;)

        def h.jvp.lin(tape.37: (tape(call.1.jvp), f64, f64, f64); dx.7: f64) -> (; f64) =
          unpack (w.35: tape(call.1.jvp), c.16: f64, c.24: f64, n.26: f64) = tape.37 in
          let ; dx.8: f64, dx.9: f64 = dup(dx.7) in
          let ; dt.10: (f64, f64) = call.1.jvp.lin(w.35; dx.8) in
          unpack ; (dt.11: f64, dt.12: f64) = dt.10 in
          let ; dz.17: f64 = c.16 * dt.11 in
          let ; dz.27: f64 = c.24 * dt.12 in
          let ; dz.28: f64 = n.26 * dx.9 in
          let ; dz.29: f64 = dz.27 + dz.28 in
          let ; dz.32: f64 = -dz.29 in
          let ; dz.33: f64 = dz.17 + dz.32 in
          (; dz.33)
    "#]]
    .assert_eq(&lowered(SOURCES[2]));
}

/// J fans every tangent read twice out with a `dup`; code generation
/// prints both copies as the original's local, so no `let (a, b) = (x, x)`
/// reaches rustc (each cost it a scope and a move).
#[test]
fn a_dup_is_not_printed_as_a_let() {
    let src = "pub fn f(x: f64, y: f64) -> f64 { let a = x * y; let b = a * a + x; b * y + a }";
    let ir = {
        let item: syn::ItemFn = syn::parse_str(src).unwrap();
        let mut errs = Errors::default();
        let l = lower_fn(&item, &mut errs).unwrap();
        pipeline(
            &l.func,
            &l.externs,
            linear_core::expand::Passes::with(linear_core::passes::unzip::Checkpoint::SaveAll),
        )
        .unwrap()
        .jvp
        .to_string()
    };
    assert!(ir.contains("dup("), "J's output has dups:\n{ir}");
    let out = differentiable(TokenStream::new(), src.parse().unwrap()).to_string();
    let compact: String = out.split_whitespace().collect();
    // A let binding a pair of one variable twice.
    let pairs = compact
        .match_indices("=(")
        .filter(|(i, _)| {
            let rest = &compact[i + 2..];
            let Some(end) = rest.find(')') else {
                return false;
            };
            let parts: Vec<&str> = rest[..end].split(',').collect();
            parts.len() == 2 && parts[0] == parts[1]
        })
        .count();
    assert_eq!(pairs, 0, "{out}");
}

/// A body of more than 1024 statements is split into nested functions
/// (rustc's checkers are superlinear in a function's size); a small one is
/// not.
#[test]
fn large_bodies_are_split_into_nested_functions() {
    let expand =
        |n| differentiable(TokenStream::new(), straight_line(n).parse().unwrap()).to_string();
    let small = expand(20);
    assert!(!small.contains("__chunk"), "{small}");
    // 400 source statements give J, U and T bodies of well over 1,024
    // statements each: every one of the five long bodies (`f_jvp`, the
    // shared forward pass, `apply`, `transpose`, `f_vjp`'s reverse sweep)
    // holds several functions of 256.
    let large = expand(400);
    let chunks = large.matches("fn __chunk").count();
    assert!(chunks >= 5 * 4, "{chunks} nested functions");
    assert!(!large.contains("compile_error"));
}

/// The elements at the top level of a parenthesized group: its top-level
/// commas, plus one unless it ends with one.
fn elements(g: &proc_macro2::Group) -> usize {
    let toks: Vec<TokenTree> = g.stream().into_iter().collect();
    let commas = toks
        .iter()
        .filter(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','))
        .count();
    let trailing = matches!(toks.last(), Some(TokenTree::Punct(p)) if p.as_char() == ',');
    commas + usize::from(!toks.is_empty() && !trailing)
}

/// Every `let` tuple pattern and every parenthesized group made only of
/// `self.field` reads in `ts`, recursively: (pattern widths, widest
/// tuple of fields).
fn wide_spots(ts: TokenStream, pats: &mut Vec<usize>, fields: &mut usize) {
    let toks: Vec<TokenTree> = ts.into_iter().collect();
    for (i, t) in toks.iter().enumerate() {
        let TokenTree::Group(g) = t else { continue };
        if g.delimiter() == proc_macro2::Delimiter::Parenthesis {
            if matches!(i.checked_sub(1).map(|j| &toks[j]), Some(TokenTree::Ident(l)) if l == "let")
            {
                pats.push(elements(g));
            }
            let reads = g.stream().to_string().matches("self .").count();
            if reads == elements(g) {
                *fields = (*fields).max(reads);
            }
        }
        wide_spots(g.stream(), pats, fields);
    }
}

/// A long function's tape (thousands of values) is never bound by one
/// tuple pattern, nor built as one flat tuple in the forward pass, nor
/// rebuilt as one from the linearization's fields: rustc's borrow checker is quadratic in a pattern's bindings,
/// and a 2,000-statement function's crate took 0.62 s of borrow checking
/// that way, against 0.24 s now. Values passed out of chunks go in groups
/// of 16; `apply` and `transpose` read each tape element from its field
/// where a chunk reads it.
#[test]
fn long_bodies_bind_no_wide_tuple_patterns() {
    let large: TokenStream =
        differentiable(TokenStream::new(), straight_line(400).parse().unwrap());
    let text = large.to_string();
    assert!(!text.contains("compile_error"));
    let (mut pats, mut fields) = (Vec::new(), 0);
    wide_spots(large, &mut pats, &mut fields);
    assert!(pats.len() > 50, "{} tuple patterns", pats.len());
    let widest = pats.iter().max().copied().unwrap_or(0);
    assert!(widest <= 16, "a tuple pattern binds {widest} values");
    assert!(fields <= 16, "a tuple of {fields} fields of the tape");
    // Chunks of `apply` and `transpose` receive tape elements from their
    // fields.
    let from_fields = text
        .split("= __chunk")
        .skip(1)
        .filter(|call| {
            call.split(')')
                .next()
                .is_some_and(|args| args.contains("self ."))
        })
        .count();
    assert!(
        from_fields >= 2,
        "{from_fields} chunk calls pass tape fields"
    );
    // The forward pass returns its tape in groups, which `f_lin` moves
    // into the linearization's group fields whole: never a field of a
    // flat tuple (each such read costs rustc time in the tuple's length),
    // and no value unpacked into a local and packed again (which costs
    // rustc's MIR optimiser time quadratic in the tape's length).
    assert!(
        text.contains("__tape0 : __tape . 0 ,") && text.contains("__tape1 : __tape . 1 ,"),
        "the tape's groups are not moved whole"
    );
    assert!(!text.contains("__t0"), "the tape is unpacked into locals");
}

/// A long function's linearization holds its tape in tuples of at most 16
/// values, a few dozen fields rather than one per value: rustc finds a
/// struct's field by a linear search of its fields, so each `self.x` of
/// `apply`, `transpose` and the derived `Clone` cost time in the struct's
/// width (type checking a 10,000-statement function took 1.9 s with 17,500
/// fields, 1.1 s in groups).
#[test]
fn long_tapes_are_held_in_groups_of_fields() {
    let large: TokenStream =
        differentiable(TokenStream::new(), straight_line(400).parse().unwrap());
    let file: syn::File = syn::parse2(large).expect("the expansion parses");
    let lin = file
        .items
        .iter()
        .find_map(|i| match i {
            syn::Item::Struct(s) if s.ident.to_string().ends_with("Linearization") => Some(s),
            _ => None,
        })
        .expect("a linearization struct");
    let widths: Vec<usize> = lin
        .fields
        .iter()
        .map(|f| match &f.ty {
            syn::Type::Tuple(t) => t.elems.len(),
            _ => 1,
        })
        .collect();
    let values: usize = widths.iter().sum();
    assert!(values > 400, "a tape of {values} values");
    assert!(
        widths.len() * 8 < values,
        "{} fields for {values} values",
        widths.len()
    );
    assert!(widths.iter().all(|&w| w <= 16), "{widths:?}");
    let text = file.items.iter().map(|i| quote::quote!(#i).to_string());
    let grouped_reads: usize = text.map(|t| t.matches("self . __tape").count()).sum();
    assert!(grouped_reads > values, "{grouped_reads} reads of groups");
}

/// A `let` of one float computed by arithmetic carries no type annotation
/// (rustc infers it from the operands): most `let`s of a long body are
/// these, and each annotation is tokens for the macro to build and rustc to
/// check.
#[test]
fn arithmetic_lets_carry_no_type_annotation() {
    let out = differentiable(TokenStream::new(), straight_line(50).parse().unwrap()).to_string();
    let lets = out.matches("let ").count();
    let annotated = out.matches(": f64 =").count();
    assert!(lets > 500, "{lets} lets");
    assert!(annotated * 4 < lets, "{annotated} of {lets} lets annotated");
    // A literal read once is printed where it is read.
    assert!(out.contains("(0.5f64 * "), "{out}");
}

/// A real computed by arithmetic and read once, as an operand of
/// arithmetic in a later statement, is printed inside that operand
/// rather than bound by a `let` of its own; a value read twice keeps its
/// `let`.
#[test]
fn single_use_arithmetic_is_printed_in_place() {
    let src =
        "pub fn f(x: f64, y: f64) -> f64 { let a = x * y; let b = a + x; let c = b * b; c - y }";
    let out = differentiable(TokenStream::new(), src.parse().unwrap()).to_string();
    let forward = out.split("fn __f_forward").nth(1).expect("a forward pass");
    let forward = forward.split("fn f_lin").next().unwrap_or_default();
    // `a` is read once: inside `b`'s expression, with no `let` of its own.
    assert!(forward.contains("= (x * y) + x ;"), "{forward}");
    assert!(!forward.contains("= x * y ;"), "{forward}");
    // `b` is read twice: a `let` of its own, read by name.
    let b = forward
        .split("let ")
        .find_map(|l| l.strip_suffix(" = (x * y) + x ; "))
        .expect("a `let` of `b`");
    assert!(forward.contains(&format!("({b} * {b}) - y")), "{forward}");
}

/// Each reversed loop of the transpose runs under a test that its incoming
/// cotangent is nonzero (`Loop::zero_skip`), so only the nearest
/// centroid's loop over coordinates runs backwards; the forward loops and
/// the tangent loops of `f_jvp` and `apply` run unconditionally.
#[test]
fn reversed_loops_are_skipped_on_zero_cotangents() {
    let src = "pub fn cost(#[nondiff] p: &[f64], c: &[f64], #[nondiff] d: usize) -> f64 {
        let mut total = 0.0;
        for i in 0..p.len() / d {
            let mut closest = f64::MAX;
            for j in 0..c.len() / d {
                let mut dist = 0.0;
                for l in 0..d {
                    let e = c[j * d + l] - p[i * d + l];
                    dist += e * e;
                }
                closest = closest.min(dist);
            }
            total += closest;
        }
        total
    }";
    let out = differentiable(TokenStream::new(), src.parse().unwrap()).to_string();
    let compact: String = out.split_whitespace().collect();
    // Three reversed loops (over points, centroids, coordinates), each
    // carrying one real cotangent, in the one transpose `f_vjp` shares.
    assert_eq!(compact.matches("__private::is_zero(").count(), 3, "{out}");
}
