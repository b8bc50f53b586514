//! Writes a straight-line function of 10,000 statements into `OUT_DIR`
//! (`tests/large_function.rs` builds it in the debug profile).

use std::fmt::Write;

/// A chain of `n` statements over two inputs, each a few operations, in
/// blocks of 100: rustc's own debug information fails on a few thousand
/// `let`s nested in one scope, so a source function this long is written
/// in blocks (the macro's expansion is one flat run, which code generation
/// chunks).
fn chain(n: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "/// A straight-line function of {n} statements.");
    let _ = writeln!(s, "#[::linear_ad::differentiable]");
    let _ = writeln!(s, "pub fn chain_{n}(x: f64, y: f64) -> f64 {{");
    let _ = writeln!(s, "    let b0 = x * y;");
    for k in 1..=n / 100 {
        let _ = writeln!(s, "    let b{k} = {{");
        let _ = writeln!(s, "        let a0 = b{};", k - 1);
        for i in 1..100 {
            let p = i - 1;
            let _ = match i % 4 {
                0 => writeln!(s, "        let a{i} = (a{p} * 0.999 + x * 0.001).sin();"),
                1 => writeln!(s, "        let a{i} = a{p} + 0.001 * y * a{p};"),
                2 => writeln!(s, "        let a{i} = (a{p} * a{p} + 1.0).sqrt() - 0.5;"),
                _ => writeln!(s, "        let a{i} = a{p}.tanh() + 0.01 * x;"),
            };
        }
        let _ = writeln!(s, "        a99");
        let _ = writeln!(s, "    }};");
    }
    let _ = writeln!(s, "    b{}", n / 100);
    let _ = writeln!(s, "}}");
    s
}

fn main() {
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(format!("{out}/chain.rs"), chain(10_000)).expect("OUT_DIR is writable");
    println!("cargo:rerun-if-changed=build.rs");
}
