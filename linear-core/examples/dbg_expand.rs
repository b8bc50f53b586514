fn main() {
    let src = std::fs::read_to_string(std::env::args().nth(1).unwrap()).unwrap();
    let item: proc_macro2::TokenStream = src.parse().unwrap();
    let out = linear_core::expand::differentiable(proc_macro2::TokenStream::new(), item);
    println!("{out}");
}
