//! Prints what `#[differentiable]` generates for the function in a file:
//! `cargo run -p linear-core --example dbg_expand -- path/to/f.rs` (the
//! function without its attribute; `LINEAR_AD_DUMP='*'` also prints every
//! stage's IR; a second argument is the attribute's arguments, as in
//! `-- f.rs 'checkpoint = "binomial"'`). For reading generated code
//! without `cargo expand`.

fn main() {
    let src = std::fs::read_to_string(std::env::args().nth(1).unwrap()).unwrap();
    let item: proc_macro2::TokenStream = src.parse().unwrap();
    let attr: proc_macro2::TokenStream = std::env::args()
        .nth(2)
        .map(|a| a.parse().unwrap())
        .unwrap_or_default();
    let out = linear_core::expand::differentiable(attr, item);
    println!("{out}");
}
