//! Every eval's every function, through the protocol, against expected
//! outputs computed independently: `data/<eval>.json`, written by
//! `data/reference.py` with JAX from the evals' READMEs. Agreement is to
//! 1e-8, relative to the largest expected magnitude of the output.

mod support;

use serde_json::{json, Value};

fn check(module: &str) {
    let path = format!("{}/data/{module}.json", env!("CARGO_MANIFEST_DIR"));
    let cases: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("data file"))
            .expect("data is JSON");
    assert!(!cases.is_empty());
    let mut messages = vec![
        json!({"id": 0, "kind": "start", "eval": module}).to_string(),
        json!({"id": 1, "kind": "define", "module": module}).to_string(),
    ];
    for (i, c) in cases.iter().enumerate() {
        messages.push(
            json!({"id": i + 2, "kind": "evaluate", "module": module,
                   "function": c["function"], "input": c["input"]})
            .to_string(),
        );
    }
    let responses = support::session(&messages);
    assert_eq!(responses[1]["success"], true);
    for (c, r) in cases.iter().zip(&responses[2..]) {
        let what = format!("{module}::{} on {}", c["function"], c["input"]);
        assert_eq!(r["success"], true, "{what}: {r}");
        assert_eq!(support::runs(r), 1, "{what}");
        let (got, want) = (numbers(&r["output"]), numbers(&c["expected"]));
        assert_eq!(got.len(), want.len(), "{what}: output length");
        let scale = want.iter().fold(1e-300_f64, |m, w| m.max(w.abs()));
        for (j, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-8 * scale,
                "{what}: element {j} is {g}, expected {w}"
            );
        }
    }
}

/// A number or an array of numbers, as a vector.
fn numbers(v: &Value) -> Vec<f64> {
    match v {
        Value::Number(n) => vec![n.as_f64().unwrap()],
        Value::Array(xs) => xs.iter().map(|x| x.as_f64().expect("a number")).collect(),
        other => panic!("not a number or an array of numbers: {other}"),
    }
}

#[test]
fn lse_matches_jax() {
    check("lse");
}

#[test]
fn llsq_matches_jax() {
    check("llsq");
}

#[test]
fn det_matches_jax() {
    check("det");
}

#[test]
fn ode_matches_jax() {
    check("ode");
}

#[test]
fn gmm_matches_jax() {
    check("gmm");
}
