use linear_ad::{differentiable, Differentiable};
use std::ops::{Neg, Sub};

#[derive(Differentiable, Clone, Copy)]
pub struct V2 {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
impl Sub for V2 {
    type Output = V2;
    #[differentiable]
    fn sub(self, o: V2) -> V2 {
        V2 { x: self.x - o.x, y: self.y - o.y }
    }
}

#[differentiable]
impl Neg for V2 {
    type Output = V2;
    #[differentiable]
    fn neg(self) -> V2 {
        V2 { x: -self.x, y: -self.y }
    }
}

#[differentiable]
impl V2 {
    #[differentiable]
    pub fn dot(&self, o: &V2) -> f64 {
        self.x * o.x + self.y * o.y
    }
    #[differentiable]
    pub fn halved(&self) -> V2 {
        V2 { x: 0.5 * self.x, y: 0.5 * self.y }
    }
}

// Both results are taken to be floats: the errors name the calls, where
// the code uses a struct.
#[differentiable]
fn reflected(d: V2, n: V2) -> f64 {
    let h = n.halved();
    let m = -n.halved();
    let r = d - h;
    let a = m.dot(&m);
    r.dot(&d) + a
}

fn main() {
    let v = V2 { x: 1.0, y: 2.0 };
    let _ = reflected(v, v);
}
