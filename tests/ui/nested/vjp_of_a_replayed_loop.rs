use linear_ad::differentiable;

// Binomial checkpointing replays the loop's states in the reverse pass
// instead of keeping records; its `decay_vjp` is refused all the same
// (before, it was differentiated with the replayed states constant, and
// its second derivatives came out zero).
#[differentiable(order = 2, checkpoint = "binomial", snapshots = 2)]
fn decay(y0: f64, k: f64, #[nondiff] steps: usize) -> f64 {
    let mut y = y0;
    for _ in 0..steps {
        y = y - 0.1 * k * y * y;
    }
    y
}

#[differentiable]
fn outer(k: f64) -> f64 {
    let (_, (g, _)) = decay_vjp(0.8, k, 7, 1.0);
    g * k
}

fn main() {
    let _ = outer(1.0);
}
