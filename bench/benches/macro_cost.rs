//! The macro's own cost: the time `#[differentiable]` takes to expand a
//! function (parse, lower, J, U, T with re-checking, code generation) for
//! functions of 10 to 10,000 statements and for the bundle-adjustment
//! residual, and the size of what it generates. Sizes go to
//! `target/criterion/macro_cost_sizes.csv` for the report.
//!
//! The expansion runs under jemalloc, the allocator it runs under inside
//! rustc: rustc links jemalloc and exports its `malloc` (`nm -D rustc`),
//! which the proc macros it loads call. glibc's allocator, which a plain
//! binary gets, spends much longer consolidating the many small blocks an
//! expansion frees: at 10,000 statements 2.7 s against 1.4 s under
//! jemalloc, in a run side by side.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use linear_core::expand::{differentiable, pipeline};
use linear_core::lower::{lower_fn, Errors};
use linear_core::visit::size;
use linear_core::workload::straight_line as source;
use proc_macro2::TokenStream;

#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The bundle-adjustment residual, as benchmarked (bench/src/reprojection.rs).
const BA: &str = include_str!("../src/reprojection.rs");

fn tokens(src: &str) -> TokenStream {
    src.parse().expect("generated source lexes")
}

fn sizes(n: usize, src: &str) -> String {
    let item: syn::ItemFn = syn::parse_str(src).expect("parses");
    let mut errs = Errors::default();
    let l = lower_fn(&item, &mut errs).expect("lowers");
    let st = pipeline(
        &l.func,
        &l.externs,
        linear_core::expand::Passes::with(linear_core::passes::unzip::Checkpoint::SaveAll),
    )
    .expect("pipeline");
    let out = differentiable(TokenStream::new(), tokens(src)).to_string();
    format!(
        "{n},{},{},{},{},{},{}\n",
        src.len(),
        out.len(),
        size(&st.source),
        size(&st.jvp),
        size(&st.unzipped),
        size(&st.transposed)
    )
}

fn macro_cost(c: &mut Criterion) {
    let mut csv = String::from(
        "statements,source_bytes,generated_bytes,ir_source,ir_jvp,ir_unzipped,ir_transposed\n",
    );
    let mut g = c.benchmark_group("macro_cost");
    g.warm_up_time(Duration::from_millis(300));
    for n in [10usize, 100, 1000, 10000] {
        let src = source(n);
        csv.push_str(&sizes(n, &src));
        let toks = tokens(&src);
        g.sample_size(if n >= 10000 { 10 } else { 20 });
        g.measurement_time(Duration::from_secs(if n >= 10000 { 8 } else { 2 }));
        g.bench_with_input(BenchmarkId::from_parameter(n), &toks, |b, t| {
            b.iter(|| differentiable(TokenStream::new(), t.clone()))
        });
    }
    g.finish();
    let mut g = c.benchmark_group("macro_cost_ba");
    g.sample_size(20).measurement_time(Duration::from_secs(2));
    let ba = tokens(BA);
    g.bench_function("reprojection", |b| {
        b.iter(|| differentiable(TokenStream::new(), ba.clone()))
    });
    g.finish();
    // One long expression: lowering once printed every node of the chain
    // again for each of its ancestors, which was quadratic in its length.
    let mut g = c.benchmark_group("macro_cost_expression");
    g.sample_size(20).measurement_time(Duration::from_secs(2));
    for terms in [200usize, 800] {
        let toks = tokens(&long_expression(terms));
        g.bench_with_input(BenchmarkId::from_parameter(terms), &toks, |b, t| {
            b.iter(|| differentiable(TokenStream::new(), t.clone()))
        });
    }
    g.finish();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/criterion");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("macro_cost_sizes.csv"), csv);
}

/// `fn f(x0, .., x3) -> f64 { x0 + x1 * x2 + x2 * x3 + … }`, `terms` terms
/// in one expression.
fn long_expression(terms: usize) -> String {
    let mut body = String::from("x0");
    for i in 1..terms {
        body.push_str(&format!(" + x{} * x{}", i % 4, (i + 1) % 4));
    }
    format!("fn f(x0: f64, x1: f64, x2: f64, x3: f64) -> f64 {{ {body} }}")
}

criterion_group!(benches, macro_cost);
criterion_main!(benches);
