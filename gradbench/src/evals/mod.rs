//! One module per GradBench eval, each with the eval's functions written
//! as plain Rust under `#[differentiable]`, and [`evaluate`], the
//! dispatch from a message's `module` and `function`.
//!
//! Each eval module has an `Input` type that decodes the eval's input
//! (the README's TypeScript interface, with the [`Runs`] fields), checks
//! what the computation assumes (matching sizes), and an `evaluate`
//! function that runs the requested function through [`measure`].

pub mod ba;
pub mod det;
pub mod gmm;
pub mod hello;
pub mod ht;
pub mod kmeans;
pub mod llsq;
pub mod lse;
pub mod lstm;
pub mod ode;
pub mod particle;
pub mod saddle;
pub mod solver;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::{measure, Runs, Timing};

/// What an evaluation gives: the output as JSON, and one timing per run.
pub type Evaluated = Result<(Value, Vec<Timing>), String>;

/// A module's dispatch: its function of this name on this input.
type Eval = fn(&str, Value) -> Evaluated;

/// The modules this tool implements, sorted as GradBench's `evals.txt`
/// lists them, each with its dispatch.
const EVALS: &[(&str, Eval)] = &[
    ("ba", ba::evaluate),
    ("det", det::evaluate),
    ("gmm", gmm::evaluate),
    ("hello", hello::evaluate),
    ("ht", ht::evaluate),
    ("kmeans", kmeans::evaluate),
    ("llsq", llsq::evaluate),
    ("lse", lse::evaluate),
    ("lstm", lstm::evaluate),
    ("ode", ode::evaluate),
    ("particle", particle::evaluate),
    ("saddle", saddle::evaluate),
];

/// The names of the modules this tool implements, sorted.
pub fn modules() -> impl Iterator<Item = &'static str> {
    EVALS.iter().map(|(name, _)| *name)
}

/// Runs `function` of `module` on `input`.
pub fn evaluate(module: &str, function: &str, input: Value) -> Evaluated {
    match EVALS.iter().find(|(name, _)| *name == module) {
        Some((_, eval)) => eval(function, input),
        None => Err(format!(
            "linear-ad has no implementation of the module `{module}`"
        )),
    }
}

/// An eval's input, which knows whether its sizes agree.
pub(crate) trait Input: DeserializeOwned {
    /// Why the computation cannot run on this input, if it cannot.
    fn problem(&self) -> Option<String> {
        None
    }
}

/// Decodes `input`, checks it, and times `f` on it; only `f` is timed. How
/// often to run is read from the same object (`min_runs`, `min_seconds`,
/// which the eval's own fields ignore); an input that is not an object
/// (`hello`'s number) runs once.
pub(crate) fn run<I: Input, O: Serialize>(input: Value, f: impl Fn(&I) -> O) -> Evaluated {
    let bad = |e: serde_json::Error| format!("bad input: {e}");
    let runs = match input {
        Value::Object(_) => Runs::deserialize(&input).map_err(bad)?,
        _ => Runs::default(),
    };
    let input: I = serde_json::from_value(input).map_err(bad)?;
    if let Some(problem) = input.problem() {
        return Err(format!("bad input: {problem}"));
    }
    let (output, timings) = measure(runs, || f(&input));
    let output = serde_json::to_value(output).map_err(|e| format!("bad output: {e}"))?;
    Ok((output, timings))
}

/// The error for a function the module does not have.
pub(crate) fn unknown(module: &str, function: &str, known: &[&str]) -> Evaluated {
    Err(format!(
        "the module `{module}` has no function `{function}` (it has: {})",
        known.join(", ")
    ))
}
