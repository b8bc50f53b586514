use linear_ad::differentiable;

#[differentiable]
pub fn f(x: f64) -> f64 {
    let mut t = (x, 0.0);
    t.2 = x;
    t.0 + t.1
}

fn main() {}
