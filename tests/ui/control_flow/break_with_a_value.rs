use linear_ad::differentiable;

#[differentiable]
pub fn first_small(x: f64) -> f64 {
    let mut y = x;
    let z = loop {
        y = 0.5 * y;
        if y < 1.0 {
            break y * y;
        }
    };
    z
}

fn main() {}
