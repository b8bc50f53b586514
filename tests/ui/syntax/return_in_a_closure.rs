use linear_ad::differentiable;

#[differentiable]
pub fn f(x: f64) -> f64 {
    let ramp = |v: f64| {
        if v < 0.0 {
            return 0.0;
        }
        v
    };
    ramp(x) * x
}

fn main() {}
