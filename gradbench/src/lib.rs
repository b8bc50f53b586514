//! linear-ad as a [GradBench](https://github.com/gradbench/gradbench)
//! tool.
//!
//! GradBench runs an *eval* and a *tool* side by side and forwards the
//! eval's messages to the tool, one JSON object per line (the protocol of
//! GradBench's `CONTRIBUTING.md`, section "Protocol"). This crate is the
//! tool: [`serve`] reads messages and writes one response to each, and
//! [`evals`] holds one module per eval, each a plain Rust function under
//! `#[differentiable]` written the way the eval's README describes the
//! computation, whose derivative is the generated `_vjp` (reverse mode,
//! the transpose of the unzipped JVP). No derivative in this crate is
//! written by hand.
//!
//! The protocol in brief (see [`protocol`] for the types):
//! - `start`, `analysis` and any unknown kind: the response is the `id`.
//! - `define`: `success` is whether [`evals::modules`] has the module.
//! - `evaluate`: the function is run at least `min_runs` times and until
//!   the runs add up to `min_seconds`; the response has the last run's
//!   `output` and one `"evaluate"` timing per run, measured around the
//!   computation only (not the JSON decoding of the input or encoding of
//!   the output).
//!
//! Bad input never ends the session: a line that is not JSON, a message
//! without an `id`, an unknown module or function, an input of the wrong
//! shape, and a panic inside an eval are all answered with
//! `"success": false` and an `error`.

pub mod evals;
pub mod protocol;

use std::io::{BufRead, Write};

/// Answers every message read from `input` on `output`, one line each,
/// until `input` ends.
///
/// A write that fails because the reader went away (a closed pipe) ends
/// the session quietly, as GradBench stops reading once an eval is done.
pub fn serve(input: impl BufRead, mut output: impl Write) -> std::io::Result<()> {
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let response = protocol::respond(&line);
        let written = serde_json::to_writer(&mut output, &response)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(output))
            .and_then(|()| output.flush());
        match written {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            other => other?,
        }
    }
    Ok(())
}
