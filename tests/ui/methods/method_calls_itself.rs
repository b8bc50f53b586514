use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
impl Point {
    #[differentiable]
    pub fn decay(&self, k: f64) -> f64 {
        if k < 1.0 {
            self.x
        } else {
            self.decay(k - 1.0) * 0.5
        }
    }
}

fn main() {
    let _ = Point { x: 1.0, y: 2.0 }.decay(2.0);
}
