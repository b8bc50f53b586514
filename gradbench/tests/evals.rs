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
        let (got, want) = (leaves(&r["output"]), leaves(&c["expected"]));
        let paths = |v: &[Leaf]| v.iter().map(|l| l.0.clone()).collect::<Vec<_>>();
        assert_eq!(paths(&got), paths(&want), "{what}: output shape");
        let scale = want
            .iter()
            .filter(|l| !l.2)
            .fold(1e-300_f64, |m, l| m.max(l.1.abs()));
        for ((path, g, _), (_, w, integer)) in got.iter().zip(&want) {
            // Sizes and indices exactly, numbers to the tolerance.
            if *integer {
                assert_eq!(g, w, "{what}: {path}");
                continue;
            }
            assert!(
                (g - w).abs() <= 1e-8 * scale,
                "{what}: {path} is {g}, expected {w}"
            );
        }
    }
}

/// A number in a JSON value: its path (`.vals[3]`), value, and whether
/// it is written as an integer.
type Leaf = (String, f64, bool);

/// The numbers of a JSON value, objects' keys in order: equal paths mean
/// equal shapes.
fn leaves(v: &Value) -> Vec<Leaf> {
    fn walk(v: &Value, path: String, out: &mut Vec<Leaf>) {
        match v {
            Value::Number(n) => out.push((path, n.as_f64().unwrap(), !n.is_f64())),
            Value::Array(xs) => {
                for (i, x) in xs.iter().enumerate() {
                    walk(x, format!("{path}[{i}]"), out);
                }
            }
            Value::Object(fields) => {
                for (k, x) in fields {
                    walk(x, format!("{path}.{k}"), out);
                }
            }
            other => panic!("{path}: not a number, array or object: {other}"),
        }
    }
    let mut out = Vec::new();
    walk(v, String::new(), &mut out);
    out
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

#[test]
fn ba_matches_jax() {
    check("ba");
}

#[test]
fn ht_matches_jax() {
    check("ht");
}

#[test]
fn lstm_matches_jax() {
    check("lstm");
}

#[test]
fn kmeans_matches_jax() {
    check("kmeans");
}

/// Nested AD: every function (`ff`, `fr`, `rf`, `rr`) against JAX's
/// `jax.grad` of a `jax.grad`, through the same gradient-descent solver.
#[test]
fn saddle_matches_jax() {
    check("saddle");
}

#[test]
fn particle_matches_jax() {
    check("particle");
}
