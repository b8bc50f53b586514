use linear_ad::differentiable;

#[differentiable(order = 2)]
pub fn sq(x: f64) -> f64 {
    x * x
}

#[differentiable(order = 2)]
pub fn energy(x: f64) -> f64 {
    sq(x).sin()
}

// `energy_jvp` is differentiable through its call of `sq`; `energy_vjp`,
// whose reverse pass reads `sq`'s tape, is not.
#[differentiable]
pub fn descend(x: f64) -> f64 {
    let (_, d) = energy_jvp(x, 1.0);
    let (_, g) = energy_vjp(x, 1.0);
    d + g
}

fn main() {
    let _ = descend(1.0);
}
