use linear_ad::differentiable;

const DIM: usize = 3;

#[differentiable]
pub fn norm2(x: [f64; DIM]) -> f64 {
    x[0] * x[0] + x[1] * x[1] + x[2] * x[2]
}

#[differentiable]
pub fn rows(x: &[[f64; DIM]]) -> f64 {
    x[0][0]
}

fn main() {
    let _ = norm2([1.0, 2.0, 3.0]) + rows(&[[1.0; DIM]]);
}
