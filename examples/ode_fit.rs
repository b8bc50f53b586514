//! Fits the decay rate `k` of dy/dt = -k·y to noisy observations by
//! gradient descent, differentiating through an RK4 integrator: a loop,
//! reverse-differentiated with `checkpoint = "state"` so that the tape
//! holds one state per step, as a hand-written adjoint would.
//!
//! `cargo run --example ode_fit`

use linear_ad::{differentiable, LinearMap, TapeSize};

/// Squared error between the RK4 solution (from y(0) = 1, over t in
/// [0, 2]) and the observations `obs`, taken at every `every`-th step.
#[differentiable(checkpoint = "state")]
pub fn misfit(k: f64, #[nondiff] obs: &[f64], #[nondiff] every: usize) -> f64 {
    let steps = obs.len() * every;
    let h = 2.0 / steps as f64;
    let mut y = 1.0;
    let mut err = 0.0;
    for s in 0..steps {
        let k1 = -k * y;
        let k2 = -k * (y + 0.5 * h * k1);
        let k3 = -k * (y + 0.5 * h * k2);
        let k4 = -k * (y + h * k3);
        y += h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
        if (s + 1) % every == 0 {
            let r = y - obs[s / every];
            err += r * r;
        }
    }
    err
}

fn main() {
    // Observations of exp(-1.3 t) at t = 0.1, 0.2, .., 2.0, with noise.
    let truth: f64 = 1.3;
    let obs: Vec<f64> = (1..=20)
        .map(|i| {
            let t = 0.1 * f64::from(i);
            (-truth * t).exp() * (1.0 + 0.01 * (f64::from(i) * 2.7).sin())
        })
        .collect();
    let every = 50;
    let mut k = 0.3;
    for step in 0..200 {
        let (err, g) = misfit_vjp(k, &obs, every, 1.0);
        if step % 40 == 0 {
            println!("step {step:3}: k = {k:.6}, misfit = {err:.3e}, d misfit/dk = {g:+.3e}");
        }
        k -= 0.5 * g;
    }
    let (err, lin) = misfit_lin(k, &obs, every);
    println!("fitted k = {k:.6} (true 1.3), misfit {err:.3e}");
    println!(
        "the linearization holds {} bytes for {} RK4 steps; its transpose gives the gradient {:+.2e}",
        lin.tape_bytes(),
        obs.len() * every,
        lin.transpose(1.0)
    );
    assert!((k - truth).abs() < 0.02, "the fit should recover k");
}
