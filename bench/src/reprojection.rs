/// The ADBench reprojection residual of one observation (see
/// `examples/bundle_adjustment.rs`).
#[differentiable(lanes)]
#[inline]
pub fn reprojection(cam: [f64; 11], x: [f64; 3], w: f64, #[nondiff] feat: [f64; 2]) -> [f64; 2] {
    let [r0, r1, r2, c0, c1, c2, f, u0, v0, k1, k2] = cam;
    let (p0, p1, p2) = (x[0] - c0, x[1] - c1, x[2] - c2);
    let theta = (r0 * r0 + r1 * r1 + r2 * r2).sqrt();
    let (cos, sin) = (theta.cos(), theta.sin());
    let inv = 1.0 / theta;
    let (w0, w1, w2) = (r0 * inv, r1 * inv, r2 * inv);
    let (x0, x1, x2) = (w1 * p2 - w2 * p1, w2 * p0 - w0 * p2, w0 * p1 - w1 * p0);
    let tmp = (w0 * p0 + w1 * p1 + w2 * p2) * (1.0 - cos);
    let q0 = p0 * cos + x0 * sin + w0 * tmp;
    let q1 = p1 * cos + x1 * sin + w1 * tmp;
    let q2 = p2 * cos + x2 * sin + w2 * tmp;
    let (m0, m1) = (q0 / q2, q1 / q2);
    let rsq = m0 * m0 + m1 * m1;
    let l = 1.0 + k1 * rsq + k2 * rsq * rsq;
    let proj0 = f * (m0 * l) + u0;
    let proj1 = f * (m1 * l) + v0;
    [w * (proj0 - feat[0]), w * (proj1 - feat[1])]
}
