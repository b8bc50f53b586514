//! The messages and responses of GradBench's protocol, and the timing of
//! an evaluation.
//!
//! A message is decoded in two steps: first as JSON with an `id` and a
//! `kind`, then, for `define` and `evaluate`, into the fields that kind
//! needs. That way a message this tool cannot use (a kind added to the
//! protocol later, a field of the wrong type) still gets a response with
//! its own `id`, which is all the eval waits for.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crate::evals;

/// The tool's name, given in the response to `start`.
pub const TOOL: &str = "linear-ad";

/// A response: `id` always, the rest as the message's kind requires.
#[derive(Debug, Default, Serialize)]
pub struct Response {
    /// The message's `id`, echoed as it came (`null` when the message had
    /// none or was not JSON).
    pub id: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timings: Option<Vec<Timing>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One measured subtask; this tool reports only `"evaluate"`, once per
/// run of the function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub name: String,
    pub nanoseconds: u64,
}

/// How often to run a function: at least `min_runs` times, and until the
/// runs add up to `min_seconds`, whichever takes longer. Evals whose
/// input has no such fields (`hello`) get one run.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Runs {
    #[serde(default = "one")]
    pub min_runs: u64,
    #[serde(default)]
    pub min_seconds: f64,
}

fn one() -> u64 {
    1
}

impl Default for Runs {
    fn default() -> Self {
        Runs {
            min_runs: 1,
            min_seconds: 0.0,
        }
    }
}

/// Runs `f` as `runs` asks, timing each run alone, and returns the last
/// run's result with one `"evaluate"` timing per run.
///
/// Earlier results are dropped outside the timed region, so freeing a
/// gradient is not counted as computing the next one.
pub fn measure<O>(runs: Runs, mut f: impl FnMut() -> O) -> (O, Vec<Timing>) {
    let mut timings = Vec::new();
    let mut total = Duration::ZERO;
    loop {
        let start = Instant::now();
        let out = std::hint::black_box(f());
        let took = start.elapsed();
        total += took;
        timings.push(Timing {
            name: "evaluate".into(),
            nanoseconds: u64::try_from(took.as_nanos()).unwrap_or(u64::MAX),
        });
        let enough_runs = timings.len() as u64 >= runs.min_runs.max(1);
        if enough_runs && total.as_secs_f64() >= runs.min_seconds {
            return (out, timings);
        }
    }
}

#[derive(Deserialize)]
struct Define {
    module: String,
}

#[derive(Deserialize)]
struct Evaluate {
    module: String,
    function: String,
    #[serde(default)]
    input: Value,
}

/// The response to one line of the eval's output.
pub fn respond(line: &str) -> Response {
    let message: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return failure(Value::Null, format!("the message is not JSON: {e}")),
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    if id.is_null() {
        return failure(id, "the message has no `id`".into());
    }
    match message.get("kind").and_then(Value::as_str) {
        Some("start") => Response {
            id,
            tool: Some(TOOL),
            ..Response::default()
        },
        Some("define") => define(id, message),
        Some("evaluate") => evaluate(id, message),
        // `analysis` and kinds this tool does not know need only the id.
        _ => Response {
            id,
            ..Response::default()
        },
    }
}

fn define(id: Value, message: Value) -> Response {
    match serde_json::from_value::<Define>(message) {
        Ok(d) if evals::modules().any(|m| m == d.module) => Response {
            id,
            success: Some(true),
            ..Response::default()
        },
        Ok(d) => failure(
            id,
            format!(
                "linear-ad has no implementation of the module `{}`",
                d.module
            ),
        ),
        Err(e) => failure(
            id,
            format!("a `define` message needs a `module` string: {e}"),
        ),
    }
}

fn evaluate(id: Value, message: Value) -> Response {
    let e = match serde_json::from_value::<Evaluate>(message) {
        Ok(e) => e,
        Err(e) => {
            return failure(
                id,
                format!("an `evaluate` message needs `module` and `function` strings: {e}"),
            )
        }
    };
    // A panic inside an eval (an index out of bounds on inconsistent
    // sizes, say) answers this message and leaves the session running.
    let run = panic::catch_unwind(AssertUnwindSafe(|| {
        evals::evaluate(&e.module, &e.function, e.input)
    }));
    match run {
        Ok(Ok((output, timings))) => Response {
            id,
            success: Some(true),
            output: Some(output),
            timings: Some(timings),
            ..Response::default()
        },
        Ok(Err(error)) => failure(id, error),
        Err(payload) => {
            let what = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("no message");
            failure(
                id,
                format!("`{}::{}` panicked: {what}", e.module, e.function),
            )
        }
    }
}

fn failure(id: Value, error: String) -> Response {
    Response {
        id,
        success: Some(false),
        error: Some(error),
        ..Response::default()
    }
}
