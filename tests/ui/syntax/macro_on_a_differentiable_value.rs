use linear_ad::differentiable;

#[differentiable]
pub fn noisy(x: f64) -> f64 {
    println!("x = {x}");
    x * x
}

fn main() {}
