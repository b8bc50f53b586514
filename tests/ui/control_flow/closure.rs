use linear_ad::differentiable;

#[differentiable]
pub fn twice(x: f64) -> f64 {
    let sq = |t: f64| t * x;
    sq(2.0)
}

fn main() {}
