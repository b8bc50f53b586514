//! `lstm`: ADBench's LSTM loss, a `l`-layer recurrent network with
//! diagonal weight matrices run over a sequence of `c` characters of `b`
//! bits each, and its gradient with respect to the main and extra
//! parameters, concatenated in that order.
//!
//! Layer `j`'s parameters are rows `2j` (weights) and `2j + 1` (biases) of
//! `main`, each the four gates `forget, ingate, outgate, change` of `b`
//! values; `extra` is the input weights, output weights and output biases.
//! The state holds each layer's hidden and cell vectors. At step `t` the
//! prediction `y` for character `t + 1` is scored by
//! `Σᵢ sᵢ·(yᵢ - ln(Σ exp y + 2))` (ADBench's logsumexp adds 2), and the loss
//! is minus the total over `(c - 1)·b`.
//!
//! One sweep forward over the sequence, with the state in one local array
//! the loop updates; reverse mode walks it back from the tape.

// Index loops, as the eval's formulas are written.
#![allow(clippy::needless_range_loop)]

use linear_ad::differentiable;
use serde::Deserialize;

use super::{run, unknown, Evaluated, Input};

/// The loss; `main` is 2l×4b, `extra` 3×b, `state` 2l×b and `sequence`
/// c×b, all flat and row-major.
#[differentiable]
pub fn objective(
    main: &[f64],
    extra: &[f64],
    #[nondiff] state: &[f64],
    #[nondiff] sequence: &[f64],
    l: usize,
    c: usize,
    b: usize,
) -> f64 {
    let mut s = state.to_vec();
    // The current layer's input, then its output.
    let mut x = vec![0.0; b];
    let mut total = 0.0;
    for t in 0..c - 1 {
        for i in 0..b {
            x[i] = sequence[t * b + i] * extra[i];
        }
        for j in 0..l {
            let (w, h) = (8 * b * j, 2 * b * j);
            for i in 0..b {
                let hidden = s[h + i];
                let forget = sigmoid(x[i] * main[w + i] + main[w + 4 * b + i]);
                let ingate = sigmoid(hidden * main[w + b + i] + main[w + 5 * b + i]);
                let outgate = sigmoid(x[i] * main[w + 2 * b + i] + main[w + 6 * b + i]);
                let change = (hidden * main[w + 3 * b + i] + main[w + 7 * b + i]).tanh();
                let cell = s[h + b + i] * forget + ingate * change;
                s[h + b + i] = cell;
                s[h + i] = outgate * cell.tanh();
                x[i] = s[h + i];
            }
        }
        let mut sum = 0.0;
        for i in 0..b {
            x[i] = x[i] * extra[b + i] + extra[2 * b + i];
            sum += x[i].exp();
        }
        let lse = (sum + 2.0).ln();
        for i in 0..b {
            total += sequence[(t + 1) * b + i] * (x[i] - lse);
        }
    }
    -total / (((c - 1) * b) as f64)
}

#[differentiable]
fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The gradient in `main_params` and `extra_params`, concatenated.
pub fn jacobian(i: &LstmInput) -> Vec<f64> {
    let (_, (dmain, dextra)) = objective_vjp(
        &i.main_params,
        &i.extra_params,
        &i.state,
        &i.sequence,
        i.l,
        i.c,
        i.b,
        1.0,
    );
    let mut out = dmain;
    out.extend_from_slice(&dextra);
    out
}

/// The eval's input, its matrices flattened row by row as it is decoded;
/// `l`, `c` and `b` are read off the shapes, as ADBench does.
#[derive(Deserialize)]
#[serde(try_from = "Wire")]
pub struct LstmInput {
    pub main_params: Vec<f64>,
    pub extra_params: Vec<f64>,
    pub state: Vec<f64>,
    pub sequence: Vec<f64>,
    pub l: usize,
    pub c: usize,
    pub b: usize,
}

/// The input as it comes.
#[derive(Deserialize)]
struct Wire {
    main_params: Vec<Vec<f64>>,
    extra_params: Vec<Vec<f64>>,
    state: Vec<Vec<f64>>,
    sequence: Vec<Vec<f64>>,
}

impl TryFrom<Wire> for LstmInput {
    type Error = String;
    fn try_from(w: Wire) -> Result<Self, String> {
        let l = w.main_params.len() / 2;
        let b = w.main_params.first().map_or(0, |r| r.len() / 4);
        let c = w.sequence.len();
        let shapes = [
            ("main_params", &w.main_params, 2 * l, 4 * b),
            ("extra_params", &w.extra_params, 3, b),
            ("state", &w.state, 2 * l, b),
            ("sequence", &w.sequence, c, b),
        ];
        for (name, rows, n, width) in shapes {
            if rows.len() != n || rows.iter().any(|r| r.len() != width) {
                return Err(format!(
                    "`{name}` must be {n} rows of {width} numbers (l = {l}, b = {b})"
                ));
            }
        }
        Ok(LstmInput {
            main_params: w.main_params.concat(),
            extra_params: w.extra_params.concat(),
            state: w.state.concat(),
            sequence: w.sequence.concat(),
            l,
            c,
            b,
        })
    }
}

impl Input for LstmInput {
    fn problem(&self) -> Option<String> {
        if self.l == 0 || self.b == 0 {
            Some(
                "`main_params` must have at least two rows of a positive multiple of 4 numbers"
                    .into(),
            )
        } else if self.c < 2 {
            Some("`sequence` needs at least two characters".into())
        } else {
            None
        }
    }
}

pub fn evaluate(function: &str, input: serde_json::Value) -> Evaluated {
    match function {
        "objective" => run(input, |i: &LstmInput| {
            objective(
                &i.main_params,
                &i.extra_params,
                &i.state,
                &i.sequence,
                i.l,
                i.c,
                i.b,
            )
        }),
        "jacobian" => run(input, jacobian),
        _ => unknown("lstm", function, &["objective", "jacobian"]),
    }
}
