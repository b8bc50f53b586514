//! File tests: each `tests/files/*.la` program goes through every stage of
//! the pipeline as the macro runs it (J, simplification, folding, U, T;
//! and L); the printed output of each stage is compared with
//! `tests/files/*.out`. Regenerate the expectations with
//! `UPDATE_EXPECT=1 cargo test -p linear-core --test golden`, then read the
//! diff. A first line `// checkpoint: binomial N` (or `state`, or `adjoint`, the macro's
//! default) unzips with
//! that policy instead of saving everything. A line `// vjp` among the
//! leading comments also prints the last function's composed VJP as
//! `order = 2` differentiates it (`hvp::first_vjp`: records as arrays,
//! each extern `g` called through its VJP `g.vjp`, `passes::through`),
//! and J of it.

use std::fmt::Write;
use std::path::Path;

use linear_core::check::{check, check_linear_b};
use linear_core::parse::parse_program;
use linear_core::passes::{
    erase::erase, fold::fold, hvp::first_vjp, jvp::jvp, simplify::simplify, through::through_all,
    transpose::transpose, unzip,
};

fn stages(src: &str) -> String {
    let mut out = String::new();
    let p = parse_program(src).expect("input parses");
    check(&p).expect("input type-checks");
    let j = jvp(&p).expect("J applies");
    check(&j).expect("J output type-checks");
    let js = simplify(&j);
    check(&js).expect("simplified J output type-checks");
    // Folded as the macro does, then simplified again.
    let jf = simplify(&fold(&js));
    check(&jf).expect("folded J output type-checks");
    let policy = match src
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("// checkpoint: "))
    {
        Some("state") => unzip::Checkpoint::LoopState,
        Some("adjoint") => unzip::Checkpoint::Adjoint,
        Some(b) => match b.strip_prefix("binomial ").map(str::parse) {
            Some(Ok(snapshots)) => unzip::Checkpoint::Binomial { snapshots },
            _ => panic!("unknown checkpoint directive `{b}`"),
        },
        None => unzip::Checkpoint::SaveAll,
    };
    let u = unzip::unzip(&jf, policy).expect("U applies");
    check_linear_b(&u).expect("U output is Linear B");
    let us = simplify(&u);
    check_linear_b(&us).expect("simplified U output is Linear B");
    let t = transpose(&us).expect("T applies");
    check_linear_b(&t).expect("T output is Linear B");
    let ts = simplify(&t);
    check_linear_b(&ts).expect("simplified T output is Linear B");
    let l = erase(&js).expect("L applies");
    check(&l).expect("L output type-checks");
    for (title, prog) in [
        ("J", &j),
        ("simplify(J)", &js),
        ("fold(simplify(J)), simplified", &jf),
        ("U(fold(..)), simplified", &us),
        ("T(U), simplified (transposes only)", &ts),
        ("L(simplify(J))", &l),
    ] {
        let _ = writeln!(out, "== {title} ==");
        if title.starts_with("T(") {
            for f in prog
                .funcs
                .iter()
                .filter(|f| f.name.as_str().ends_with(".t"))
            {
                let _ = writeln!(out, "{f}");
            }
        } else {
            let _ = writeln!(out, "{prog}");
        }
    }
    let vjp = src
        .lines()
        .take_while(|l| l.starts_with("//"))
        .any(|l| l.trim() == "// vjp");
    if vjp {
        let main = p.funcs.last().expect("a function").name.clone();
        // Every extern goes through its VJP, `g.vjp` for `g`, which
        // returns a cotangent for each parameter holding reals.
        let through = through_all(&p.externs);
        let (f, externs) = first_vjp(&ts, main.as_str(), &through)
            .expect("first_vjp applies")
            .expect("the VJP is differentiable");
        let v = linear_core::Program {
            externs,
            funcs: vec![f],
        };
        check(&v).expect("the VJP type-checks");
        let jv = simplify(&jvp(&v).expect("J applies to the VJP"));
        check(&jv).expect("J of the VJP type-checks");
        let _ = writeln!(out, "== first_vjp (records as arrays) ==\n{v}");
        let _ = writeln!(out, "== J(first_vjp), simplified ==\n{jv}");
    }
    out
}

#[test]
fn pipeline_file_tests() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/files");
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/files exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "la"))
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 4, "file tests missing");
    for input in inputs {
        let src = std::fs::read_to_string(&input).expect("readable");
        let expected = input.with_extension("out");
        expect_test::expect_file![expected].assert_eq(&stages(&src));
    }
}

/// Every file test's input and outputs also survive print → parse.
#[test]
fn file_tests_round_trip_through_text() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/files");
    for e in std::fs::read_dir(dir).expect("tests/files exists") {
        let path = e.expect("entry").path();
        if path.extension().is_some_and(|x| x == "la") {
            let p = parse_program(&std::fs::read_to_string(&path).unwrap()).unwrap();
            for q in [
                p.clone(),
                jvp(&p).unwrap(),
                transpose(&unzip::unzip(&jvp(&p).unwrap(), unzip::Checkpoint::SaveAll).unwrap())
                    .unwrap(),
            ] {
                assert_eq!(
                    parse_program(&q.to_string()).unwrap(),
                    q,
                    "{}",
                    path.display()
                );
            }
        }
    }
}
