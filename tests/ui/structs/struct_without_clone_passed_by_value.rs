use linear_ad::{differentiable, Differentiable};

// Not `Clone`: its constant field is a `String`.
#[derive(Differentiable)]
pub struct Named {
    pub w: f64,
    #[nondiff]
    pub name: String,
}

#[differentiable]
fn consumed(n: Named, s: f64) -> f64 {
    n.w * s
}

// `consumed` takes the struct by value: the caller's generated functions
// pass it the caller's `n`, which they borrow, so they clone it.
#[differentiable]
fn caller(n: Named, s: f64) -> f64 {
    consumed(n, s)
}

fn main() {}
