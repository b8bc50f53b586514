//! The ADBench bundle-adjustment reprojection residual of one observation,
//! and its 2×15 Jacobian built from one linearization and two transposes.
//!
//! Camera (11 parameters): Rodrigues rotation (3), centre (3), focal length,
//! principal point (2), two radial distortion coefficients. Point: 3
//! coordinates. Weight: 1. Observation: a fixed 2-D feature. Residual: 2.
//!
//! Run with `cargo run --example bundle_adjustment`.

use linear_ad::{differentiable, LinearMap};

/// w · (projection of `x` by `cam` − `feat`), as in ADBench's
/// `computeReprojError`, with its first-order rotation where the angle is 0.
#[differentiable]
pub fn reprojection(cam: [f64; 11], x: [f64; 3], w: f64, #[nondiff] feat: [f64; 2]) -> [f64; 2] {
    let [r0, r1, r2, c0, c1, c2, f, u0, v0, k1, k2] = cam;
    // The point relative to the camera centre.
    let (p0, p1, p2) = (x[0] - c0, x[1] - c1, x[2] - c2);
    // Rodrigues rotation; the closed form divides by the angle.
    let sqtheta = r0 * r0 + r1 * r1 + r2 * r2;
    let (q0, q1, q2) = if sqtheta != 0.0 {
        let theta = sqtheta.sqrt();
        let (cos, sin) = (theta.cos(), theta.sin());
        let inv = 1.0 / theta;
        let (w0, w1, w2) = (r0 * inv, r1 * inv, r2 * inv);
        let (x0, x1, x2) = (w1 * p2 - w2 * p1, w2 * p0 - w0 * p2, w0 * p1 - w1 * p0);
        let tmp = (w0 * p0 + w1 * p1 + w2 * p2) * (1.0 - cos);
        (
            p0 * cos + x0 * sin + w0 * tmp,
            p1 * cos + x1 * sin + w1 * tmp,
            p2 * cos + x2 * sin + w2 * tmp,
        )
    } else {
        (
            p0 + (r1 * p2 - r2 * p1),
            p1 + (r2 * p0 - r0 * p2),
            p2 + (r0 * p1 - r1 * p0),
        )
    };
    // Perspective division and radial distortion.
    let (m0, m1) = (q0 / q2, q1 / q2);
    let rsq = m0 * m0 + m1 * m1;
    let l = 1.0 + k1 * rsq + k2 * rsq * rsq;
    let proj0 = f * (m0 * l) + u0;
    let proj1 = f * (m1 * l) + v0;
    [w * (proj0 - feat[0]), w * (proj1 - feat[1])]
}

fn main() {
    let cam = [
        0.1, -0.2, 0.05, 0.3, -0.1, -5.0, 400.0, 320.0, 240.0, -1e-3, 1e-6,
    ];
    let x = [0.2, 0.4, 3.0];
    let w = 0.9;
    let feat = [300.0, 280.0];

    let (r, lin) = reprojection_lin(cam, x, w, feat);
    println!("residual = [{:.6}, {:.6}]", r[0], r[1]);

    // Two transposes give the two rows of the 2×15 Jacobian.
    let mut jac = [[0.0; 15]; 2];
    for (i, row) in jac.iter_mut().enumerate() {
        let mut ybar = [0.0; 2];
        ybar[i] = 1.0;
        let (dcam, dx, dw) = lin.transpose(ybar);
        row[..11].copy_from_slice(&dcam);
        row[11..14].copy_from_slice(&dx);
        row[14] = dw;
    }

    // Check every column against forward mode (f_jvp) and `apply`.
    let mut worst: f64 = 0.0;
    for j in 0..15 {
        let mut e = [0.0; 15];
        e[j] = 1.0;
        let dcam: [f64; 11] = e[..11].try_into().expect("11 camera tangents");
        let dx: [f64; 3] = e[11..14].try_into().expect("3 point tangents");
        let (_, col) = reprojection_jvp(cam, x, w, feat, dcam, dx, e[14]);
        assert_eq!(lin.apply((dcam, dx, e[14])), col);
        for i in 0..2 {
            worst = worst.max((jac[i][j] - col[i]).abs() / (1.0 + col[i].abs()));
        }
    }
    println!("Jacobian (2×15), rows by reverse mode:");
    for row in &jac {
        let cells: Vec<String> = row.iter().map(|v| format!("{v:9.3}")).collect();
        println!("  [{}]", cells.join(" "));
    }
    println!("largest relative difference from the forward-mode columns: {worst:.2e}");
    assert!(worst < 1e-12);
}
