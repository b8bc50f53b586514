use linear_ad::differentiable;

mod geo {
    pub fn helper(t: f64) -> f64 {
        t * 2.0
    }
}

#[differentiable]
pub fn uses_helper(x: f64) -> f64 {
    geo::helper(x) + 1.0
}

fn main() {}
