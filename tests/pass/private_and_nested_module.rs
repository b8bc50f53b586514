#![deny(warnings)]
mod geometry {
    use linear_ad::differentiable;

    // User names that look like generated ones must not collide.
    #[differentiable]
    pub(crate) fn norm(p: (f64, f64, f64)) -> f64 {
        let __y = p.0 * p.0;
        let __tape = p.1 * p.1;
        let tangent = p.2 * p.2;
        (__y + __tape + tangent).sqrt()
    }
}

fn main() {
    let p = (1.0, 2.0, 2.0);
    let (n, g) = geometry::norm_vjp(p, 1.0);
    assert_eq!(n, 3.0);
    assert!((g.0 - 1.0 / 3.0).abs() < 1e-15 && (g.1 - 2.0 / 3.0).abs() < 1e-15);
}
