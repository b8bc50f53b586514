//! A small model trained by gradient descent: a one-hidden-layer
//! perceptron as a struct, its forward pass and its loss as `&self`
//! methods (the loss calls the forward pass), fitted to `sin` on [-3, 3].
//!
//! `loss_vjp` returns the loss and its gradient in the weights as an
//! `MlpTangent` (the struct `#[derive(Differentiable)]` generates), which
//! the training loop applies field by field. The gradient is checked once
//! against central differences, and `forward_jvp` gives the model's slope
//! in its input, compared with `cos`.
//!
//! Run with `cargo run --release --example model`.

use linear_ad::{differentiable, Differentiable};

/// Hidden units.
const H: usize = 4;

/// The weights.
#[derive(Differentiable, Clone, Copy, Debug)]
pub struct Mlp {
    pub w1: [f64; 4],
    pub b1: [f64; 4],
    pub w2: [f64; 4],
    pub b2: f64,
}

#[differentiable]
impl Mlp {
    /// The model's prediction at `x`: a loop over the hidden units, which
    /// reads the weight arrays by index.
    #[differentiable]
    pub fn forward(&self, x: f64) -> f64 {
        let mut y = self.b2;
        for j in 0..4 {
            y += self.w2[j] * (self.w1[j] * x + self.b1[j]).tanh();
        }
        y
    }

    /// The mean squared error over the data set, calling `forward` per
    /// sample (its tape holds one `forward` tape per sample).
    #[differentiable]
    pub fn loss(&self, #[nondiff] xs: &[f64], #[nondiff] ys: &[f64]) -> f64 {
        let mut total = 0.0;
        for i in 0..xs.len() {
            let e = self.forward(xs[i]) - ys[i];
            total += e * e;
        }
        total / xs.len() as f64
    }
}

/// Deterministic weights in [-1, 1).
fn init() -> Mlp {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    Mlp {
        w1: std::array::from_fn(|_| next()),
        b1: std::array::from_fn(|_| next()),
        w2: std::array::from_fn(|_| next()),
        b2: 0.0,
    }
}

/// One gradient-descent step: `model -= rate * gradient`.
fn step(model: &mut Mlp, g: &MlpTangent, rate: f64) {
    for j in 0..H {
        model.w1[j] -= rate * g.w1[j];
        model.b1[j] -= rate * g.b1[j];
        model.w2[j] -= rate * g.w2[j];
    }
    model.b2 -= rate * g.b2;
}

fn main() {
    let xs: Vec<f64> = (0..40).map(|i| -3.0 + 6.0 * i as f64 / 39.0).collect();
    let ys: Vec<f64> = xs.iter().map(|x| x.sin()).collect();
    let mut model = init();

    // The gradient against central differences in one weight.
    let (_, g) = model.loss_vjp(&xs, &ys, 1.0);
    let h = 1e-6;
    let (mut up, mut down) = (model, model);
    up.w1[3] += h;
    down.w1[3] -= h;
    let fd = (up.loss(&xs, &ys) - down.loss(&xs, &ys)) / (2.0 * h);
    println!(
        "d loss / d w1[3]: {:.9} (reverse mode) vs {:.9} (central differences)",
        g.w1[3], fd
    );

    let first = model.loss(&xs, &ys);
    for epoch in 0..3000 {
        let (loss, g) = model.loss_vjp(&xs, &ys, 1.0);
        if epoch % 500 == 0 {
            println!("epoch {epoch:4}: loss {loss:.6}");
        }
        step(&mut model, &g, 0.1);
    }
    let last = model.loss(&xs, &ys);
    println!("loss {first:.4} -> {last:.6}");

    // The model's slope in its input (the weights held still: a zero
    // tangent) approaches sin's derivative.
    for x in [-2.0, 0.0, 1.0] {
        let (y, dy) = model.forward_jvp(x, &MlpTangent::default(), 1.0);
        println!(
            "x = {x:4.1}: model {y:+.3} (sin {:+.3}), slope {dy:+.3} (cos {:+.3})",
            f64::sin(x),
            f64::cos(x)
        );
    }
}
