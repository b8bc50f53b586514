use linear_ad::differentiable;

#[differentiable]
fn same(x: Vec<f64>) -> Vec<f64> {
    x
}

fn main() {
    let _ = same(vec![1.0]);
}
