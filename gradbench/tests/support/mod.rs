//! Runs the tool's binary on a session and reads its answers.

use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

/// The responses of `linear-ad-gradbench` to `messages`, one per line,
/// after checking that it exited successfully and wrote one line per
/// message.
pub fn session(messages: &[String]) -> Vec<Value> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_linear-ad-gradbench"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the tool starts");
    {
        let mut stdin = child.stdin.take().expect("stdin is piped");
        for m in messages {
            writeln!(stdin, "{m}").expect("the tool reads its input");
        }
    }
    let out = child.wait_with_output().expect("the tool ends");
    assert!(out.status.success(), "the tool exited with {}", out.status);
    let text = String::from_utf8(out.stdout).expect("UTF-8 output");
    let responses: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect();
    assert_eq!(
        responses.len(),
        messages.len(),
        "one response per message:\n{text}"
    );
    responses
}

/// The number of `"evaluate"` timings in a response, after checking that
/// every timing has that name and a number of nanoseconds.
pub fn runs(response: &Value) -> usize {
    let timings = response["timings"].as_array().expect("timings");
    for t in timings {
        assert_eq!(t["name"], "evaluate");
        assert!(t["nanoseconds"].is_u64(), "{t}");
    }
    timings.len()
}
