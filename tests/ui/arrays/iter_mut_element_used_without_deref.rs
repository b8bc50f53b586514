use linear_ad::differentiable;

// An element of `iter_mut()` is the place `buf[k]`: it is read and
// written through `*b`, not passed on as a reference.
#[differentiable]
fn fill(x: f64) -> f64 {
    let mut buf = [0.0; 3];
    for b in buf.iter_mut() {
        let r = b;
        *r = x;
    }
    buf[0] + buf[1]
}

fn main() {
    let _ = fill(1.0);
}
