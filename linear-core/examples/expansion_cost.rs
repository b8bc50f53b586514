//! Where `#[differentiable]` spends its time on a function of N statements:
//! each stage timed separately, then the whole expansion.
//!
//! `cargo run --release -p linear-core --example expansion_cost -- 2000`.
//! For instruction counts, which do not depend on machine load:
//! `valgrind --tool=callgrind target/release/examples/expansion_cost 2000`;
//! `expansion_cost 2000 expand` runs the whole expansion only.

use std::time::Instant;
fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let s = linear_core::workload::straight_line(n);
    if std::env::args().nth(2).as_deref() == Some("expand") {
        // The whole expansion only (for a profiler).
        let toks: proc_macro2::TokenStream = s.parse().unwrap();
        let t = Instant::now();
        let out = linear_core::expand::differentiable(proc_macro2::TokenStream::new(), toks);
        eprintln!("whole expand {:?}", t.elapsed());
        std::hint::black_box(out);
        return;
    }
    let t = Instant::now();
    let item: syn::ItemFn = syn::parse_str(&s).unwrap();
    eprintln!("parse {:?}", t.elapsed());
    let t = Instant::now();
    let mut errs = linear_core::lower::Errors::default();
    let l = linear_core::lower::lower_fn(&item, &mut errs).unwrap();
    eprintln!("lower {:?}", t.elapsed());
    use linear_core::passes::*;
    let p = linear_core::Program {
        externs: vec![],
        funcs: vec![l.func.clone()],
    };
    let t = Instant::now();
    linear_core::check::check(&p).unwrap();
    eprintln!("check {:?}", t.elapsed());
    let t = Instant::now();
    let j = jvp::jvp(&p).unwrap();
    eprintln!("jvp {:?}", t.elapsed());
    let t = Instant::now();
    let js = simplify::simplify(&j);
    eprintln!("simplify J {:?}", t.elapsed());
    let t = Instant::now();
    linear_core::check::check(&js).unwrap();
    eprintln!("check J {:?}", t.elapsed());
    let t = Instant::now();
    let js = simplify::simplify(&linear_core::passes::fold::fold(&js));
    eprintln!("fold J, simplify {:?}", t.elapsed());
    let t = Instant::now();
    let u = unzip::unzip(&js, unzip::Checkpoint::SaveAll).unwrap();
    eprintln!("unzip {:?}", t.elapsed());
    let t = Instant::now();
    let us = simplify::simplify(&u);
    eprintln!("simplify U {:?}", t.elapsed());
    let t = Instant::now();
    linear_core::check::check_linear_b(&us).unwrap();
    eprintln!("check U {:?}", t.elapsed());
    let t = Instant::now();
    let tt = transpose::transpose(&us).unwrap();
    eprintln!("transpose {:?}", t.elapsed());
    let t = Instant::now();
    let ts = simplify::simplify(&tt);
    eprintln!("simplify T {:?}", t.elapsed());
    let t = Instant::now();
    linear_core::check::check_linear_b(&ts).unwrap();
    eprintln!("check T {:?}", t.elapsed());
    let fj = js.funcs[0].clone();
    let args: Vec<proc_macro2::TokenStream> = fj
        .nl_params
        .iter()
        .chain(&fj.lin_params)
        .map(|_| quote::quote!(1.0))
        .collect();
    let t = Instant::now();
    let b = linear_core::codegen::body(&fj, &args, &linear_core::codegen::NoCalls);
    eprintln!("codegen body(J) {:?}", t.elapsed());
    let t = Instant::now();
    let bs = b.to_string();
    eprintln!("body to_string {:?} {}", t.elapsed(), bs.len());
    let toks: proc_macro2::TokenStream = s.parse().unwrap();
    let t = Instant::now();
    let out = linear_core::expand::differentiable(proc_macro2::TokenStream::new(), toks);
    eprintln!("whole expand {:?}", t.elapsed());
    let t = Instant::now();
    let st = out.to_string();
    eprintln!("to_string {:?} ({} bytes)", t.elapsed(), st.len());
}
