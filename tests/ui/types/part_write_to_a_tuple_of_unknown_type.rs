use linear_ad::differentiable;

fn half(v: f64) -> f64 {
    v / 2.0
}

#[differentiable]
pub fn f(x: f64) -> f64 {
    let mut t = (half(1.0), 0.0);
    t.0 = x;
    t.0 + t.1
}

fn main() {}
