//! Bounds checks hoisted out of range loops.
//!
//! Rust checks every `a[i]`. In a loop over `lo..hi`, LLVM removes the
//! check only where it can prove `i < a.len()`, which needs `hi <= a.len()`
//! known before the loop. Generated loops rarely give it that: a cotangent
//! buffer's length comes from the tape, a slice's from the caller. The
//! check then stays in the loop, a compare and a branch per access, and a
//! loop with one is not vectorised: the reversed loop of a dot product's
//! transpose (`x̄[i] += y[i]·c̄; ȳ[i] += x[i]·c̄`) ran scalar with two
//! compares per element, and runs as packed `addpd`s once the test is
//! made before it; the gradient of the chained Rosenbrock function over
//! 100,000 elements took 0.45× its time.
//!
//! [`hoisted`] finds, for one loop, the arrays whose checks can be made
//! once, before the loop, with no change in when the code panics:
//!
//! * indexed by exactly the loop's index (not `i + 1`),
//! * in a statement at the top of the loop's body, so in every iteration
//!   (IR bodies have no early exit: `break` and `return` are lowered to
//!   flags and cases),
//! * with the same length in every iteration: an array from outside the
//!   loop (arrays are values), or a carried state component the body only
//!   writes in place (`set`, `lset`, `laccum`) or passes on unchanged.
//!
//! For such arrays the loop fails a check exactly when it runs at all
//! (`lo < hi`) and `hi` exceeds one of their lengths. Code generation
//! tests that before the loop, in line, and on failure calls
//! `linear_ad::__private::out_of_bounds`, which panics with the message of
//! the first of these accesses the loop would have failed. The loop's own
//! checks stay in the source; LLVM deletes them. Generated code has no side
//! effects to reorder around the panic. An access that is not hoisted
//! (`x[i + 1]`) and would have failed in an earlier iteration still makes
//! the code panic, but with the hoisted access's message.
//!
//! Not hoisted: loops with a step, list and `while` loops, indices
//! computed from the loop's, accesses in a case arm or an inner loop,
//! arrays bound in the body.

use rustc_hash::FxHashMap as HashMap;

use crate::ir::{Expr, Loop, Stmt, Var};
use crate::visit::binds;

/// The checks to make before a loop: the loop's bounds and direction, and
/// the arrays (variables in scope before the loop: outer arrays, or the
/// initial values of carried state) whose length bounds every index.
pub(super) struct Hoisted<'a> {
    pub lo: &'a Var,
    pub hi: &'a Var,
    pub descending: bool,
    pub arrays: Vec<&'a Var>,
}

/// The checks [`hoisted`] can make before `l`, or `None` if there are none.
pub(super) fn hoisted(l: &Loop) -> Option<Hoisted<'_>> {
    // The list of a zip holds one element per index (U builds it so):
    // the zip runs over the whole range.
    let (index, lo, hi, descending) = l.iter.unit_range()?;
    let Expr::Block { stmts, tail } = &l.body else {
        return None;
    };
    // Each array once, in the order the body first reads it: the sources
    // cost a pass over the body each.
    let mut indexed: Vec<&Var> = Vec::new();
    for arr in stmts.iter().filter_map(|s| indexed_by(s, index)) {
        if !indexed.contains(&arr) {
            indexed.push(arr);
        }
    }
    let mut arrays: Vec<&Var> = Vec::new();
    for source in indexed.iter().filter_map(|a| source(a, l, stmts, tail)) {
        if !arrays.contains(&source) {
            arrays.push(source);
        }
    }
    (!arrays.is_empty()).then_some(Hoisted {
        lo,
        hi,
        descending,
        arrays,
    })
}

/// The array statement `s` indexes by `index`, if it reads or writes one
/// element at exactly that index.
fn indexed_by<'a>(s: &'a Stmt, index: &Var) -> Option<&'a Var> {
    let Stmt::Let { rhs, .. } = s else {
        return None;
    };
    match rhs {
        Expr::Index { arr, idx }
        | Expr::LinIndex { arr, idx }
        | Expr::LinAccum { arr, idx, .. }
        | Expr::Set { arr, idx, .. }
        | Expr::LinSet { arr, idx, .. }
            if idx == index =>
        {
            Some(arr)
        }
        _ => None,
    }
}

/// The variable before the loop whose length is `arr`'s in every
/// iteration: `arr` itself if it comes from outside the loop, the initial
/// value if it is carried state of unchanging length; `None` for an array
/// the body binds, or state the body may replace.
fn source<'a>(arr: &'a Var, l: &'a Loop, stmts: &[Stmt], tail: &Expr) -> Option<&'a Var> {
    let state = l.nl.iter().chain(&l.lin).enumerate();
    if let Some((k, (b, init))) = state.clone().find(|(_, (b, _))| &b.var == arr) {
        let out = state_out(l, tail, k)?;
        return passed_on(stmts, out, &b.var).then_some(init);
    }
    let bound_in_body =
        l.iter.binders().iter().any(|b| &b.var == arr) || stmts.iter().any(|s| binds(s, arr));
    (!bound_in_body).then_some(arr)
}

/// The body's result for carried component `k` (non-linear state first,
/// then linear): the body returns the next non-linear state, the
/// collected values, then the next linear state.
pub(super) fn state_out<'a>(l: &Loop, tail: &'a Expr, k: usize) -> Option<&'a Var> {
    let Expr::Ret { nl, lin } = tail else {
        return None;
    };
    if k < l.nl.len() {
        nl.get(k)
    } else {
        lin.get(k - l.nl.len())
    }
}

/// Whether `out` is `binder` written in place or passed on by the
/// top-level statements `stmts`: the same array, of the same length.
fn passed_on(stmts: &[Stmt], out: &Var, binder: &Var) -> bool {
    let defs: HashMap<&Var, &Expr> = stmts
        .iter()
        .filter_map(|s| match s {
            Stmt::Let { nl, lin, rhs } if nl.len() + lin.len() == 1 => {
                nl.iter().chain(lin).next().map(|b| (&b.var, rhs))
            }
            Stmt::Let { .. } | Stmt::Unpack { .. } | Stmt::LinUnpack { .. } => None,
        })
        .collect();
    let mut v = out;
    // Each step goes to an earlier statement, so this ends.
    for _ in 0..=stmts.len() {
        if v == binder {
            return true;
        }
        let from = match defs.get(v) {
            Some(Expr::LinAccum { arr, .. } | Expr::Set { arr, .. } | Expr::LinSet { arr, .. }) => {
                Some(arr)
            }
            Some(Expr::Ret { nl, lin }) if nl.len() + lin.len() == 1 => nl.iter().chain(lin).next(),
            _ => None,
        };
        let Some(from) = from else {
            return false;
        };
        v = from;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_program;

    /// The arrays checked before the first loop in the body of `src`'s
    /// only function, by name (none: `None`).
    fn checked(src: &str) -> Option<Vec<String>> {
        let p = parse_program(src).expect("parses");
        crate::check::check(&p).expect("type-checks");
        let l = super::super::first_loop(&p.funcs[0]);
        hoisted(l).map(|h| h.arrays.iter().map(|a| a.to_string()).collect())
    }

    fn with_body(header: &str, carry: &str, body: &str) -> String {
        format!(
            "def f(x: array(f64), y0: array(f64), w: f64;) -> (f64;) =
               let z: int; = 0i in
               let n: int; = len(x) in
               let s0: f64; = 0.0 in
               let ; = drop(w) in
               let s: f64, y: array(f64); = loop for i: int in {header} carry(acc: f64 = s0, {carry}) collect() {{
                 {body}
               }} in
               let ; = drop(y) in
               (s;)"
        )
    }

    #[test]
    fn outer_array_and_state_written_in_place() {
        let body = "let xi: f64; = index(x, i) in
                    let r: f64; = acc + xi in
                    let a2: array(f64); = set(a, i, xi) in
                    (r, a2;)";
        let src = with_body("range(z, n)", "a: array(f64) = y0;", body);
        assert_eq!(checked(&src), Some(vec!["x".into(), "y0".into()]));
        // Downwards, as a transpose's loop runs.
        let src = with_body("range(z, n) rev", "a: array(f64) = y0;", body);
        let p = parse_program(&src).expect("parses");
        let Expr::Block { stmts, .. } = &p.funcs[0].body else {
            panic!()
        };
        let descending = stmts.iter().find_map(|s| match s {
            Stmt::Let {
                rhs: Expr::Loop(l), ..
            } => hoisted(l).map(|h| h.descending),
            _ => None,
        });
        assert_eq!(descending, Some(true));
    }

    #[test]
    fn state_replaced_in_the_body_is_not_checked() {
        // `a` is read at `i`, but the next state is a fresh array: its
        // length may differ from the first one's.
        let body = "let ai: f64; = index(a, i) in
                    let r: f64; = acc + ai in
                    let a2: array(f64); = fill(n, ai) in
                    (r, a2;)";
        let src = with_body("range(z, n)", "a: array(f64) = y0;", body);
        assert_eq!(checked(&src), None);
    }

    #[test]
    fn computed_index_and_case_arm_are_not_checked() {
        let body = "let one: int; = 1i in
                    let j: int; = iadd(i, one) in
                    let xj: f64; = index(x, j) in
                    let zero: f64; = 0.0 in
                    let pos: bool; = gt(w, zero) in
                    let t: f64; = case pos {
                      true => { let xi: f64; = index(x, i) in (xi;) }
                      | false => (zero;)
                    } in
                    let r0: f64; = acc + xj in
                    let r: f64; = r0 + t in
                    (r, a;)";
        let src = with_body("range(z, n)", "a: array(f64) = y0;", body);
        assert_eq!(checked(&src), None);
    }

    #[test]
    fn stepped_range_is_not_checked() {
        let body = "let xi: f64; = index(x, i) in
                    let r: f64; = acc + xi in
                    (r, a;)";
        let two = "range(z, n, n)";
        let src = with_body(two, "a: array(f64) = y0;", body);
        assert_eq!(checked(&src), None);
        let src = with_body("range(z, n)", "a: array(f64) = y0;", body);
        assert_eq!(checked(&src), Some(vec!["x".into()]));
    }
}
