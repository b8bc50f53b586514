//! The GradBench protocol, end to end through the binary: what each kind
//! of message gets, how runs are counted and timed, and that bad input is
//! answered rather than crashing the session.

mod support;

use serde_json::{json, Value};
use support::{runs, session};

fn lines(messages: &[Value]) -> Vec<String> {
    messages.iter().map(Value::to_string).collect()
}

#[test]
fn a_hello_session_answers_every_message_with_its_id() {
    let r = session(&lines(&[
        json!({"id": 0, "kind": "start", "eval": "hello"}),
        json!({"id": 1, "kind": "define", "module": "hello"}),
        json!({"id": 2, "kind": "evaluate", "module": "hello", "function": "square", "input": 1.5}),
        json!({"id": 3, "kind": "analysis", "of": 2, "valid": true}),
        json!({"id": 4, "kind": "evaluate", "module": "hello", "function": "double", "input": 1.5}),
        json!({"id": 5, "kind": "analysis", "of": 4, "valid": false, "error": "no"}),
    ]));
    for (i, resp) in r.iter().enumerate() {
        assert_eq!(resp["id"], i, "{resp}");
    }
    assert_eq!(r[0]["tool"], "linear-ad");
    assert_eq!(r[1], json!({"id": 1, "success": true}));
    assert_eq!(r[2]["output"], 2.25);
    assert_eq!(r[4]["output"], 3.0);
    // `hello`'s input has no `min_runs`: one run each.
    assert_eq!(runs(&r[2]), 1);
    assert_eq!(runs(&r[4]), 1);
    assert_eq!(r[3], json!({"id": 3}));
    assert_eq!(r[5], json!({"id": 5}));
}

#[test]
fn ids_are_echoed_as_they_came() {
    let r = session(&lines(&[
        json!({"id": 123456789, "kind": "start"}),
        json!({"id": "a string", "kind": "define", "module": "lse"}),
    ]));
    assert_eq!(r[0]["id"], 123456789);
    assert_eq!(r[1]["id"], "a string");
    assert_eq!(r[1]["success"], true);
}

#[test]
fn every_module_of_the_list_is_defined_and_no_other() {
    let modules: Vec<&str> = linear_ad_gradbench::evals::modules().collect();
    let mut messages: Vec<Value> = modules
        .iter()
        .enumerate()
        .map(|(i, m)| json!({"id": i, "kind": "define", "module": m}))
        .collect();
    messages.push(json!({"id": 99, "kind": "define", "module": "missing"}));
    let r = session(&lines(&messages));
    for resp in &r[..modules.len()] {
        assert_eq!(resp["success"], true, "{resp}");
    }
    let unknown = &r[modules.len()];
    assert_eq!(unknown["success"], false);
    assert!(
        unknown["error"].as_str().unwrap().contains("`missing`"),
        "{unknown}"
    );
}

#[test]
fn the_tool_directory_lists_the_modules_gradbench_will_run() {
    let listed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tools/linear-ad/evals.txt"
    ))
    .expect("tools/linear-ad/evals.txt");
    let listed: Vec<&str> = listed.lines().collect();
    let modules: Vec<&str> = linear_ad_gradbench::evals::modules().collect();
    assert_eq!(listed, modules);
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    assert_eq!(listed, sorted, "GradBench wants evals.txt sorted");
}

fn lse_input(min_runs: u64, min_seconds: f64) -> Value {
    json!({"x": [0.5, 1.0, -2.0], "min_runs": min_runs, "min_seconds": min_seconds})
}

#[test]
fn min_runs_gives_one_timing_per_run() {
    let r = session(&lines(&[
        json!({"id": 0, "kind": "evaluate", "module": "lse", "function": "primal", "input": lse_input(7, 0.0)}),
        json!({"id": 1, "kind": "evaluate", "module": "lse", "function": "gradient", "input": lse_input(1, 0.0)}),
    ]));
    assert_eq!(runs(&r[0]), 7);
    assert_eq!(runs(&r[1]), 1);
}

#[test]
fn min_seconds_keeps_running_until_the_timed_runs_add_up() {
    let r = session(&lines(&[json!({
        "id": 0, "kind": "evaluate", "module": "lse", "function": "gradient",
        "input": lse_input(1, 0.02),
    })]));
    let times: Vec<u64> = r[0]["timings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["nanoseconds"].as_u64().unwrap())
        .collect();
    let total: u64 = times.iter().sum();
    assert!(total >= 20_000_000, "the runs took {total} ns in all");
    // And no more than that: the runs before the last fall short. (How
    // many runs that takes depends on the machine's load: a gradient of
    // three numbers once took 139 ms on a busy machine.)
    let before_last = total - times.last().copied().unwrap_or(0);
    assert!(before_last < 20_000_000, "{}", r[0]);
}

/// The response to an `evaluate` of `module`'s `function` on `input`,
/// expected to fail; its error message.
fn refused(module: &str, function: &str, input: Value) -> String {
    let r = session(&lines(&[json!({
        "id": 3, "kind": "evaluate", "module": module, "function": function, "input": input,
    })]));
    assert_eq!(r[0]["id"], 3);
    assert_eq!(r[0]["success"], false, "{}", r[0]);
    assert!(r[0].get("output").is_none());
    r[0]["error"].as_str().expect("an error string").to_string()
}

#[test]
fn an_unknown_function_is_an_error_naming_the_known_ones() {
    let e = refused("lse", "hessian", lse_input(1, 0.0));
    assert!(
        e.contains("`hessian`") && e.contains("primal, gradient"),
        "{e}"
    );
}

#[test]
fn an_unknown_module_in_evaluate_is_an_error() {
    let e = refused("missing", "rr", json!({}));
    assert!(e.contains("`missing`"), "{e}");
}

#[test]
fn inputs_of_the_wrong_shape_are_errors_not_panics() {
    let e = refused(
        "det",
        "gradient",
        json!({"A": [1.0, 2.0, 3.0], "ell": 2, "min_runs": 1, "min_seconds": 0}),
    );
    assert!(e.contains("ell²"), "{e}");
    let e = refused(
        "lse",
        "primal",
        json!({"x": [], "min_runs": 1, "min_seconds": 0}),
    );
    assert!(e.contains("empty"), "{e}");
    let e = refused(
        "llsq",
        "primal",
        json!({"x": [1.0], "n": 1, "min_runs": 1, "min_seconds": 0}),
    );
    assert!(e.contains("n ≥ 2"), "{e}");
    let e = refused(
        "kmeans",
        "dir",
        json!({"points": [[1.0, 2.0], [3.0]], "centroids": [[0.0, 0.0]], "min_runs": 1, "min_seconds": 0}),
    );
    assert!(e.contains("different lengths"), "{e}");
    let e = refused(
        "kmeans",
        "cost",
        json!({"points": [[1.0, 2.0]], "centroids": [[0.0, 0.0, 0.0]], "min_runs": 1, "min_seconds": 0}),
    );
    assert!(e.contains("2 coordinates and centroids 3"), "{e}");
    let e = refused(
        "saddle",
        "rr",
        json!({"start": [1.0, 2.0, 3.0], "min_runs": 1, "min_seconds": 0}),
    );
    assert!(e.contains("bad input"), "{e}");
    let e = refused("particle", "fx", json!({"w": 0.0}));
    assert!(e.contains("ff, fr, rf, rr"), "{e}");
    let e = refused(
        "ode",
        "gradient",
        json!({"x": [1.0], "s": 0, "min_runs": 1, "min_seconds": 0}),
    );
    assert!(e.contains("`s` is 0"), "{e}");
    let e = refused(
        "gmm",
        "jacobian",
        json!({
            "d": 2, "k": 1, "n": 1, "alpha": [0.0], "means": [[0.0, 0.0]], "icf": [[0.0, 0.0]],
            "x": [[0.0, 0.0]], "gamma": 1.0, "m": 0, "min_runs": 1, "min_seconds": 0,
        }),
    );
    assert!(e.contains("`icf` has 2 numbers"), "{e}");
    let e = refused("hello", "square", json!("three"));
    assert!(e.starts_with("bad input"), "{e}");
    let e = refused(
        "lse",
        "primal",
        json!({"x": [1.0], "min_runs": "many", "min_seconds": 0}),
    );
    assert!(e.starts_with("bad input"), "{e}");
}

#[test]
fn malformed_messages_are_answered_and_the_session_goes_on() {
    let r = session(&[
        "this is not JSON".to_string(),
        json!({"kind": "start"}).to_string(),
        json!({"id": 1, "kind": "define"}).to_string(),
        json!({"id": 2, "kind": "evaluate", "module": "lse"}).to_string(),
        json!({"id": 3, "kind": "a kind from the future"}).to_string(),
        json!({"id": 4, "kind": "evaluate", "module": "hello", "function": "double", "input": 2.0})
            .to_string(),
    ]);
    assert_eq!(r[0]["id"], Value::Null);
    assert_eq!(r[0]["success"], false);
    assert!(r[0]["error"].as_str().unwrap().contains("not JSON"));
    assert_eq!(r[1]["success"], false, "no id: {}", r[1]);
    assert_eq!((&r[2]["id"], &r[2]["success"]), (&json!(1), &json!(false)));
    assert_eq!((&r[3]["id"], &r[3]["success"]), (&json!(2), &json!(false)));
    assert_eq!(r[4], json!({"id": 3}));
    assert_eq!(r[5]["output"], 4.0);
}
