use linear_ad::differentiable;

// A loop inside a loop: the reverse pass reads a list of records per
// outer iteration, which J cannot differentiate yet.
#[differentiable(order = 2)]
fn looped(x: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        let mut p = x;
        for _ in 0..i {
            p = (p * x).sin();
        }
        s += p;
    }
    s
}

#[differentiable]
fn outer(x: f64) -> f64 {
    let (_, g) = looped_vjp(x, 1.0);
    g * x
}

fn main() {
    let _ = outer(1.0);
}
