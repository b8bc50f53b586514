use linear_ad::{differentiable, Differentiable};

#[derive(Differentiable, Clone, Copy)]
pub struct Body {
    pub pos: [f64; 3],
}

// `p.vel` is looked at once before the loop (to copy an array indexed in
// it) and once in it: its error is reported once.
#[differentiable]
fn f(p: Body) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        s += p.pos[i] * p.vel[i];
    }
    s
}

fn main() {}
