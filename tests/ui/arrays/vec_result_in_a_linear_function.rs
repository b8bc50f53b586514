use linear_ad::linear;

#[linear]
fn twice(#[linear] x: [f64; 2]) -> Vec<f64> {
    let mut y = vec![0.0; 2];
    y[0] = 2.0 * x[0];
    y
}

fn main() {
    let _ = twice([1.0, 2.0]);
}
