use linear_ad::differentiable;

// A chunk is read by index and `len()`: here it is passed on whole.
#[differentiable]
fn sums(p: &[f64]) -> f64 {
    let mut s = 0.0;
    for c in p.chunks(2) {
        s += c.iter().sum::<f64>();
    }
    s
}

fn main() {
    let _ = sums(&[1.0, 2.0]);
}
