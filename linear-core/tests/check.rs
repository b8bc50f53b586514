//! The type checker (Fig. 3, Def. 6.1): each ill-typed program expects its
//! own error, naming the variable and what went wrong.

use expect_test::{expect, Expect};
use linear_core::check::{check, check_linear_b};
use linear_core::parse::parse_program;

fn err_a(src: &str, want: Expect) {
    let p = parse_program(src).expect("parses");
    want.assert_eq(&check(&p).expect_err("must be rejected").to_string());
}

fn err_b(src: &str, want: Expect) {
    let p = parse_program(src).expect("parses");
    check(&p).expect("well-typed in Linear A");
    want.assert_eq(
        &check_linear_b(&p)
            .expect_err("must be rejected")
            .to_string(),
    );
}

#[test]
fn linear_variable_used_twice() {
    err_a(
        "def f(; dx: f64) -> (; f64) = dx + dx",
        expect![[
            r#"in `f`: linear variable `dx` is used 2 times; every linear variable is consumed exactly once (use `dup` to fan it out)"#
        ]],
    );
}

#[test]
fn linear_variable_never_used() {
    err_a(
        "def f(x: f64; dx: f64) -> (f64;) = (x;)",
        expect![[
            r#"in `f`: linear variable `dx` is never used; every linear variable is consumed exactly once (use `drop` to discard it)"#
        ]],
    );
}

#[test]
fn non_linear_variable_never_used() {
    err_a(
        "def f(x: f64, y: f64;) -> (f64;) = (x;)",
        expect![[
            r#"in `f`: non-linear variable `y` is never used; every non-linear variable is used at least once (use `drop` to discard it)"#
        ]],
    );
}

#[test]
fn linear_variable_in_a_non_linear_primitive() {
    err_a(
        "def f(; dx: f64) -> (; f64) = let y: f64; = sin(dx) in zero(f64)",
        expect![[r#"in `f`: linear variable `dx` is used where a non-linear value is expected"#]],
    );
}

#[test]
fn product_of_two_linear_variables() {
    err_a(
        "def f(; dx: f64, dy: f64) -> (; f64) = dx * dy",
        expect![[r#"in `f`: linear variable `dx` is used where a non-linear value is expected"#]],
    );
}

#[test]
fn non_linear_variable_in_a_linear_position() {
    err_a(
        "def f(x: f64;) -> (; f64, f64) = dup(x)",
        expect![[r#"in `f`: non-linear variable `x` is used where a linear value is expected"#]],
    );
}

#[test]
fn unbound_variable() {
    err_a(
        "def f(x: f64;) -> (f64;) = let y: f64; = x + z in (y;)",
        expect![[r#"in `f`: variable `z` is not bound"#]],
    );
}

#[test]
fn variable_bound_twice() {
    err_a(
        "def f(x: f64;) -> (f64;) = let x: f64; = sin(x) in (x;)",
        expect![[
            r#"in `f`: variable `x` is bound twice; bindings must be unique within a function"#
        ]],
    );
}

#[test]
fn variable_used_outside_its_block() {
    err_a(
        "def f(x: f64;) -> (f64;) = let y: f64; = { let z: f64; = sin(x) in (z;) } in let w: f64; = y + z in (w;)",
        expect![[r#"in `f`: variable `z` is used outside the block that binds it"#]],
    );
}

#[test]
fn recursion_is_rejected() {
    err_a(
        "def f(x: f64;) -> (f64;) = f(x;)",
        expect![[r#"in `f`: call to `f`, which is not defined before this function"#]],
    );
}

#[test]
fn call_with_wrong_arity() {
    err_a(
        "def g(x: f64;) -> (f64;) = (x;)\ndef f(x: f64;) -> (f64;) = g(x, x;)",
        expect![[r#"in `f`: `g` takes 1 non-linear and 0 linear arguments, given 2 and 0"#]],
    );
}

#[test]
fn let_type_mismatch() {
    err_a(
        "def f(x: f64;) -> (f64;) = let t: (f64, f64); = sin(x) in unpack (a: f64, b: f64) = t in a + b",
        expect![[r#"in `f`: let binding `t` declares ((f64, f64); ) but its right-hand side returns (f64; )"#]],
    );
}

#[test]
fn linear_addition_of_different_types() {
    err_a(
        "def f(; dx: f64, dt: (f64,)) -> (; f64) = dx + dt",
        expect![[r#"in `f`: linear addition of `dx: f64` and `dt: (f64,)`, which differ in type"#]],
    );
}

#[test]
fn mixed_float_types() {
    err_a(
        "def f(x: f64, y: f32;) -> (f64;) = x + y",
        expect![[r#"in `f`: `add` mixes f32 and f64 operands (`y`)"#]],
    );
}

#[test]
fn unpack_of_the_wrong_shape() {
    err_a(
        "def f(t: (f64, f64);) -> (f64;) = unpack (a: f64) = t in (a;)",
        expect![[r#"in `f`: unpacking `t: (f64, f64)` into binders of type (f64,)"#]],
    );
}

#[test]
fn body_disagrees_with_signature() {
    err_a(
        "def f(x: f64;) -> (f64, f64;) = (x;)",
        expect![[r#"in `f`: body returns (f64; ) but the function declares (f64, f64; )"#]],
    );
}

#[test]
fn linear_b_forbids_mixed_results() {
    err_b(
        "def f(x: f64; dx: f64) -> (f64; f64) = (x; dx)",
        expect![[
            r#"in `f`: function returns both non-linear and linear results, which Linear B forbids (Def. 6.1)"#
        ]],
    );
}

#[test]
fn linear_b_forbids_mixed_bindings() {
    err_b(
        "def f(x: f64; dx: f64) -> (; f64) = let y: f64; dy: f64 = (x; dx) in let ; = drop((y;)) in (; dy)",
        expect![[r#"in `f`: expression returns both non-linear and linear results, which Linear B forbids (Def. 6.1): (x; dx)"#]],
    );
}

#[test]
fn linear_b_forbids_non_linear_code_reading_linear_variables() {
    err_b(
        "def f(x: f64; dx: f64) -> (f64;) = let y: f64; = { let ; = drop((; dx)) in (x;) } in (y;)",
        expect![[
            r#"in `f`: non-linear expression reads linear variable `dx`, which Linear B forbids (Def. 6.1): { …"#
        ]],
    );
}

#[test]
fn the_paper_examples_type_check() {
    // g(x; y) = (x²; x² y) from section 4, in both linear and non-linear
    // taggings, and no other (footnote to section 4).
    let g = "def g(x: f64; y: f64) -> (f64; f64) = let a: f64; = x * x in let ; b: f64 = a * y in (a; b)";
    check(&parse_program(g).unwrap()).unwrap();
    let g_nl = "def g(x: f64, y: f64;) -> (f64, f64;) = let a: f64; = x * x in let b: f64; = a * y in (a, b;)";
    check(&parse_program(g_nl).unwrap()).unwrap();
    let g_bad = "def g(; x: f64, y: f64) -> (; f64, f64) = let ; a: f64 = x * x in let ; b: f64 = a * y in (; a, b)";
    assert!(check(&parse_program(g_bad).unwrap()).is_err());
}

#[test]
fn parse_errors_carry_a_position() {
    let e = parse_program("def f(x: f64;) -> (f64;) =\n  let y: f64; = sin(x) (y;)").unwrap_err();
    expect!["2:24: expected `in`, found `(`"].assert_eq(&e.to_string());
}

/// Lowering from Rust reads linear variables any number of times; the pass
/// that inserts `dup`s and `drop`s must make such code well typed without
/// changing what it computes.
#[test]
fn dups_and_drops_make_linear_code_well_typed() {
    use linear_core::eval::{run, Value};
    let src = "def f(c: f64; x: f64, y: f64) -> (; f64) = let ; a: f64 = x + x in let ; b: f64 = c * x in a + b";
    let mut p = parse_program(src).unwrap();
    let e = check(&p).unwrap_err().to_string();
    assert!(e.contains("`x` is used 3 times"), "{e}");
    linear_core::visit::insert_dups_and_drops(&mut p.funcs[0]);
    check_linear_b(&p).unwrap();
    let out = run(
        &p,
        "f",
        &[Value::Real(2.0)],
        &[Value::Real(3.0), Value::Real(5.0)],
        &Default::default(),
    )
    .unwrap();
    // 3 + 3 + 2·3, with y dropped.
    assert_eq!(out.lin, vec![Value::Real(12.0)]);
    let printed = p.to_string();
    assert_eq!(printed.matches("dup(").count(), 2, "{printed}");
    assert_eq!(printed.matches("drop(").count(), 1, "{printed}");
}

// Control flow and the discrete types.

#[test]
fn case_arms_consume_different_linear_variables() {
    err_a(
        "def f(c: bool; dx: f64, dy: f64) -> (; f64) =
           case c { true => (; dx) | false => dx + dy }",
        expect![[
            r#"in `f`: linear variable `dy` is consumed in arm 2 but not in arm 1 of the case on `c`; every arm must consume the same linear variables (use `drop` in the other arm)"#
        ]],
    );
}

#[test]
fn case_arms_return_different_types() {
    err_a(
        "def f(c: bool, x: f64, t: (f64, f64);) -> (f64;) = case c { true => (x;) | false => (t;) }",
        expect![[
            r#"in `f`: arm 2 of the case on `c` returns ((f64, f64); ) but arm 1 returns (f64; )"#
        ]],
    );
}

#[test]
fn case_on_a_real() {
    err_a(
        "def f(x: f64;) -> (f64;) = case x { true => (x;) | false => (x;) }",
        expect![[r#"in `f`: case on `x: f64`, which is neither a bool nor a sum"#]],
    );
}

#[test]
fn case_arm_binds_the_wrong_type() {
    err_a(
        "def f(s: sum((f64,) | ());) -> (f64;) =
           case s { a: (f64,) => { unpack (x: f64) = a in (x;) } | b: (f64,) => { let ; = drop((b;)) in 0.0 } }",
        expect![[
            r#"in `f`: arm 2 of the case on `s` binds (f64,) where the scrutinee's alternative is ()"#
        ]],
    );
}

#[test]
fn injection_of_the_wrong_type() {
    err_a(
        "def f(x: f64;) -> (sum((f64,) | ());) = inj(x, 0, sum((f64,) | ()))",
        expect![[
            r#"in `f`: injecting `x: f64` as alternative 0 of sum((f64,) | ()), which is not a sum with such an alternative"#
        ]],
    );
}

#[test]
fn loop_body_reads_an_outer_linear_variable() {
    err_a(
        "def f(n: int; dx: f64) -> (; f64) =
           let lo: int; = 0i in
           loop for i: int in range(lo, n) carry(; s: f64 = dx) collect() {
             let ; = drop((i;)) in s + dx
           }",
        expect!["in `f`: the loop body reads linear variable `dx` from outside the loop; a loop body runs many times, so outer linear values must be carried in its state"],
    );
    err_a(
        "def f(n: int; dx: f64, dy: f64) -> (; f64) =
           let lo: int; = 0i in
           let ; s: f64 = loop for i: int in range(lo, n) carry(; s: f64 = dx) collect() {
             let ; = drop((i;)) in s + dy
           } in s",
        expect![[
            r#"in `f`: the loop body reads linear variable `dy` from outside the loop; a loop body runs many times, so outer linear values must be carried in its state"#
        ]],
    );
}

#[test]
fn skipped_loop_carries_more_than_reals_and_arrays() {
    // Skipped, the loop would leave its counter where it was.
    err_a(
        "def f(n: int; dx: f64) -> (; f64) =
           let lo: int; = 0i in
           let k: int, ; s: f64 = loop for i: int in range(lo, n) carry(k: int = lo; s: f64 = dx) collect() zeroskip {
             let j: int; = iadd(k, i) in (j; s)
           } in let ; = drop((k;)) in s",
        expect![[
            r#"in `f`: a `zeroskip` loop collects nothing, is not a `while` loop, and carries reals and arrays only, at least one real (invariant 12)"#
        ]],
    );
    // Skipped, it would collect no list.
    err_a(
        "def f(n: int, x: f64;) -> (list(f64);) =
           let lo: int; = 0i in
           let s: f64, xs: list(f64); = loop for i: int in range(lo, n) carry(s: f64 = x;) collect(f64) zeroskip {
             let ; = drop((i;)) in (s, s;)
           } in let ; = drop((s;)) in (xs;)",
        expect![[
            r#"in `f`: a `zeroskip` loop collects nothing, is not a `while` loop, and carries reals and arrays only, at least one real (invariant 12)"#
        ]],
    );
}

#[test]
fn skipped_loop_round_trips_through_text() {
    let src = "def f(n: int; dx: f64) -> (; f64) =
  let lo: int; = 0i in
  loop for i: int in range(lo, n) rev carry(; s: f64 = dx) collect() zeroskip {
    let ; = drop((i;)) in (; s)
  }";
    let p = parse_program(src).expect("parses");
    check(&p).expect("well-typed");
    let again = parse_program(&p.to_string()).expect("the printed program parses");
    assert_eq!(again, p);
    assert!(p.to_string().contains("zeroskip"));
}

#[test]
fn loop_bound_is_not_an_integer() {
    err_a(
        "def f(x: f64, n: int;) -> (f64;) =
           loop for i: int in range(x, n) carry(s: f64 = x;) collect() { let ; = drop((i;)) in (s;) }",
        expect![[r#"in `f`: loop bound or step `x` has type f64, not int"#]],
    );
}

#[test]
fn while_condition_is_not_a_bool() {
    err_a(
        "def f(x: f64;) -> (f64;) = loop while sin(s) carry(s: f64 = x;) collect() (s;)",
        expect![[
            r#"in `f`: a `while` condition must return one bool and read no linear variable"#
        ]],
    );
}

#[test]
fn loop_body_returns_the_wrong_state() {
    err_a(
        "def f(x: f64, n: int;) -> (f64;) =
           let lo: int; = 0i in
           loop for i: int in range(lo, n) carry(s: f64 = x;) collect() { let ; = drop((s;)) in (i;) }",
        expect![[
            r#"in `f`: the loop body returns (int; ) but the loop's state and collected values are (f64; )"#
        ]],
    );
}

#[test]
fn integer_arithmetic_on_reals() {
    err_a(
        "def f(x: f64;) -> (int;) = iadd(x, x)",
        expect![[r#"in `f`: `iadd` takes an integer, but `x` has type f64"#]],
    );
    err_a(
        "def f(x: f64, n: int;) -> (bool;) = lt(x, n)",
        expect![[r#"in `f`: `lt` takes two reals or two integers, but `n` has type int"#]],
    );
}

#[test]
fn linear_integer() {
    err_a(
        "def f(; n: int) -> (; int) = (; n)",
        expect!["in `f`: linear variable `n` has type int, which has no zero, sum or scaling and is not an array of such values"],
    );
}

#[test]
fn linear_b_forbids_a_case_with_mixed_results() {
    err_b(
        "def f(c: bool, x: f64; dx: f64) -> (f64; f64) = case c { true => (x; dx) | false => (x; dx) }",
        expect![[
            r#"in `f`: function returns both non-linear and linear results, which Linear B forbids (Def. 6.1)"#
        ]],
    );
}

/// A replay's states: `s` over `n` values from `s0`, each the `next` of the
/// one before.
const REPLAY: &str = "def f(x: f64; dx: f64) -> (; f64) =
  let n: int; = 3i in
  let s0: (f64,); = tup(x) in
  loop replay s: (f64,) from s0 count n keep 2 next NEXT carry(; d: f64 = dx) collect() {
    unpack (y: f64) = s in
    let ; e: f64 = y * d in
    (; e)
  }";

#[test]
fn a_replay_type_checks() {
    let p = parse_program(&REPLAY.replace(
        "NEXT",
        "{ unpack (z: f64) = s in let w: f64; = sin(z) in tup(w) }",
    ))
    .expect("parses");
    check_linear_b(&p).expect("well-typed");
}

#[test]
fn replay_next_returns_the_wrong_type() {
    err_a(
        &REPLAY.replace("NEXT", "{ unpack (z: f64) = s in sin(z) }"),
        expect![[
            r#"in `f`: a replay's `next` must return one (f64,) and read no linear variable"#
        ]],
    );
}

#[test]
fn replay_next_reads_a_linear_variable() {
    err_a(
        &REPLAY.replace("NEXT", "{ let ; = drop(dx) in s }"),
        expect!["in `f`: a replay's `next` must return one (f64,) and read no linear variable"],
    );
}

#[test]
fn replay_starts_from_the_wrong_type() {
    err_a(
        &REPLAY.replace("NEXT", "s").replace("from s0", "from x"),
        expect!["in `f`: replay of `s: (f64,)` starts from `x: f64`"],
    );
}

#[test]
fn replay_without_snapshots() {
    err_a(
        &REPLAY.replace("NEXT", "s").replace("keep 2", "keep 0"),
        expect!["in `f`: a replay keeps at least one snapshot (its initial state)"],
    );
}

#[test]
fn array_lent_to_an_extern_after_it_was_consumed() {
    // An extern reads a borrowed array in place (invariant 11): it may be
    // read again after the call, but not lent once it is consumed.
    let lent_then_read = "extern g(array(f64); borrow array(f64)) -> (f64; f64)\n\
        def f(a: array(f64); da: array(f64)) -> (f64; f64) =\n\
          let u: f64; du: f64 = g(a; da) in\n\
          let z: int; = 0i in\n\
          let ; dx: f64 = lindex(da, z) in\n\
          let ; s: f64 = du + dx in\n\
          (u; s)";
    check(&parse_program(lent_then_read).expect("parses")).expect("lent arrays stay readable");
    err_a(
        "extern g(array(f64); borrow array(f64)) -> (f64; f64)\n\
         def f(a: array(f64); da: array(f64)) -> (f64; f64) =\n\
           let n: int; = len(a) in\n\
           let ; = lfree(da, n) in\n\
           let u: f64; du: f64 = g(a; da) in\n\
           (u; du)",
        expect![[
            r#"in `f`: linear array `da` is read after it was consumed; in-place reads come before the array is consumed"#
        ]],
    );
}
