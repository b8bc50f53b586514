use linear_ad::differentiable;

#[differentiable]
pub fn first_step(x: f64) -> f64 {
    let mut y = x;
    loop {
        y = 0.5 * y;
        if y < 1.0 {
            break;
        }
    }
    y
}

fn main() {}
