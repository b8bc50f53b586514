//! The GradBench tool: answers an eval's messages, one JSON object per
//! line on stdin, with one response per line on stdout (see
//! [`linear_ad_gradbench::serve`]).

fn main() -> std::io::Result<()> {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    linear_ad_gradbench::serve(stdin.lock(), stdout.lock())
}
