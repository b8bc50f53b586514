//! The generated straight-line function the expansion-cost measurements
//! and tests share (`benches/macro_cost.rs`, `examples/expansion_cost.rs`,
//! `tests/expand.rs`; `bench/build_time.sh` writes the same one in shell),
//! so that every figure and test about large bodies is about one shape.

/// Rust source of `pub fn big(x: f64, y: f64) -> f64` with `n ≥ 3`
/// statements, one per line, cycling through arithmetic, transcendental
/// functions and reuse of the three previous values.
pub fn straight_line(n: usize) -> String {
    let mut s = String::from(
        "pub fn big(x: f64, y: f64) -> f64 {\n    let v0 = x * y;\n    let v1 = v0 + x;\n    let v2 = v1 * y;\n",
    );
    for i in 3..n {
        let (a, b, c) = (i - 1, i - 2, i - 3);
        s.push_str(&match i % 4 {
            0 => format!("    let v{i} = v{a} * v{b} + x;\n"),
            1 => format!("    let v{i} = v{a}.sin() * y - v{c};\n"),
            2 => format!("    let v{i} = (v{a} - v{b}).tanh() + v{c} * 0.5;\n"),
            _ => format!("    let v{i} = v{a}.exp().sqrt() / (v{b} * v{b} + 1.0);\n"),
        });
    }
    s.push_str(&format!("    v{}\n}}\n", n.max(3) - 1));
    s
}
