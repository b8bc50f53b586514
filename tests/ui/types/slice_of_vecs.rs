use linear_ad::differentiable;

#[differentiable]
pub fn trace(m: &[Vec<f64>]) -> f64 {
    let mut s = 0.0;
    for i in 0..m.len() {
        s += m[i][i];
    }
    s
}

fn main() {
    let _ = trace(&[vec![1.0]]);
}
