//! Writes the straight-line Rosenbrock sums over `[f64; N]` (N = 10, 100),
//! unrolled, one statement per operation group.

use std::fmt::Write;

fn rosenbrock(n: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "/// Σ 100 (x[i+1] - x[i]²)² + (1 - x[i])², unrolled for N = {n}."
    );
    let _ = writeln!(s, "#[::linear_ad::differentiable]");
    let _ = writeln!(s, "#[inline]");
    let _ = writeln!(s, "pub fn rosenbrock_{n}(x: [f64; {n}]) -> f64 {{");
    for i in 0..n - 1 {
        let _ = writeln!(s, "    let t{i} = x[{}] - x[{i}] * x[{i}];", i + 1);
        let _ = writeln!(s, "    let u{i} = 1.0 - x[{i}];");
        let _ = writeln!(s, "    let s{i} = 100.0 * t{i} * t{i} + u{i} * u{i};");
    }
    let _ = writeln!(s, "    let a0 = s0;");
    for i in 1..n - 2 {
        let _ = writeln!(s, "    let a{i} = a{} + s{i};", i - 1);
    }
    let _ = writeln!(s, "    a{} + s{}", n - 3, n - 2);
    let _ = writeln!(s, "}}");
    s
}

fn main() {
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let mut code = String::new();
    for n in [10, 100] {
        code.push_str(&rosenbrock(n));
    }
    std::fs::write(format!("{out}/rosenbrock_n.rs"), code).expect("OUT_DIR is writable");
    println!("cargo:rerun-if-changed=build.rs");
}
