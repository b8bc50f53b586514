use linear_ad::differentiable;

// `a` is written in the loop that indexes it: its value changes per
// iteration, so it has no one copy to read by index.
#[differentiable]
fn f(x: [f64; 3]) -> f64 {
    let mut a = x;
    let mut s = 0.0;
    for i in 0..3 {
        a[0] *= 2.0;
        s += a[i];
    }
    s
}

fn main() {}
