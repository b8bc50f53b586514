//! Second derivatives (`order = 2`) through calls of methods: a method
//! with `order = 2` has a differentiable `_jvp` (with its own `_jvp_jvp`,
//! `_jvp_lin`, `_jvp_vjp`), which callers' `f_hvp` goes through, from
//! inside its `impl` block and from free functions, in blocks generic in
//! their float type too. Checked against the callers' twins with the
//! methods written inline, and against central finite differences.
//!
//! A method's `_vjp` goes through the `_vjp`s of the methods of its own
//! block that it calls (the block knows they are differentiable), so it
//! is differentiable too: reverse over reverse through `paired_vjp`.
//! A method of another block has no signature there; where the
//! arguments tell its `_vjp`'s cotangents (all differentiable), callers'
//! `_vjp`s go through it (`SecondOrder::VjpLin`), and elsewhere their
//! derivatives are those of the VJP by forward mode
//! (`passes::forward_vjp`): reverse over reverse through `total_vjp`,
//! `Damper::loaded_vjp`, `chain_vjp` (over a slice) and `offset_vjp` (a
//! constant argument), against inline twins and central differences.
#![deny(warnings)]

mod support;

use linear_ad::{differentiable, Differentiable};
use num_traits::Float;
use support::{assert_central, close};

const EPS: f64 = 1e-5;

#[derive(Differentiable, Clone, Copy, Debug)]
pub struct Spring {
    pub k: f64,
    #[nondiff]
    pub rest: f64,
}

#[differentiable]
impl Spring {
    #[differentiable(order = 2)]
    pub fn energy(&self, x: f64) -> f64 {
        let d = x - self.rest;
        0.5 * self.k * d * d * x.sin()
    }

    /// Calls of a method of its own block.
    #[differentiable(order = 2)]
    pub fn paired(&self, x: f64, y: f64) -> f64 {
        self.energy(x) * self.energy(y) + self.energy(x * y)
    }
}

#[derive(Differentiable, Clone, Copy, Debug)]
pub struct Model<T: Float> {
    pub a: T,
}

#[differentiable]
impl<T: Float> Model<T> {
    #[differentiable(order = 2)]
    pub fn loss(&self, x: T) -> T {
        (self.a * x).sin() * x
    }
}

/// Methods called from a free function, on a struct it received and on
/// one it built.
#[differentiable(order = 2)]
pub fn total(x: f64, y: f64, s: &Spring) -> f64 {
    let m = Model::<f64> { a: x * y };
    s.paired(x, y) + m.loss(y) * s.energy(y)
}

#[differentiable(order = 2)]
pub fn total_inline(x: f64, y: f64, s: &Spring) -> f64 {
    let e = |t: f64| {
        let d = t - s.rest;
        0.5 * s.k * d * d * t.sin()
    };
    let a = x * y;
    e(x) * e(y) + e(x * y) + (a * y).sin() * y * e(y)
}

fn points() -> Vec<(f64, f64, Spring)> {
    let s = |k: f64| Spring { k, rest: 0.25 };
    vec![
        (0.3, 0.7, s(1.3)),
        (-0.8, 0.2, s(-2.0)),
        (1.1, -0.6, s(0.5)),
    ]
}

fn directions() -> Vec<(f64, f64, SpringTangent)> {
    vec![
        (1.0, 0.5, SpringTangent { k: 0.7 }),
        (0.0, 1.0, SpringTangent { k: 0.0 }),
        (0.0, 0.0, SpringTangent { k: -1.0 }),
    ]
}

/// Central differences of `at` along each of its three arguments.
fn central3(at: impl Fn(f64, f64, f64) -> f64) -> [f64; 3] {
    let d = |u: [f64; 3]| (at(u[0], u[1], u[2]) - at(-u[0], -u[1], -u[2])) / (2.0 * EPS);
    [d([EPS, 0.0, 0.0]), d([0.0, EPS, 0.0]), d([0.0, 0.0, EPS])]
}

fn flat(g: &(f64, f64, SpringTangent)) -> [f64; 3] {
    [g.0, g.1, g.2.k]
}

#[test]
fn method_calls_have_the_hvp_of_their_inlined_twin() {
    for (x, y, s) in points() {
        for v in directions() {
            let (e, g, hv) = total_hvp(x, y, &s, v.0, v.1, &v.2);
            let (f, h, hu) = total_inline_hvp(x, y, &s, v.0, v.1, &v.2);
            assert!(close(e, f, 1e-14), "value {e} against {f}");
            for (a, b) in flat(&g).into_iter().zip(flat(&h)) {
                assert!(close(a, b, 1e-13), "gradient {g:?} against {h:?}");
            }
            for (a, b) in flat(&hv).into_iter().zip(flat(&hu)) {
                assert!(close(a, b, 1e-12), "H·v {hv:?} against {hu:?}");
            }
        }
    }
}

#[test]
fn method_calls_have_the_finite_difference_hvp() {
    for (x, y, s) in points() {
        for v in directions() {
            let (_, _, hv) = total_hvp(x, y, &s, v.0, v.1, &v.2);
            let grad = |t: f64| {
                let st = Spring {
                    k: s.k + t * v.2.k,
                    ..s
                };
                flat(&total_vjp(x + t * v.0, y + t * v.1, &st, 1.0).1)
            };
            assert_central(&flat(&hv), grad, EPS, 1e-7);
        }
    }
}

/// `energy_jvp`, a method now differentiable, has its own derivatives: its
/// forward mode against central differences of `energy_jvp`.
#[test]
fn a_methods_jvp_has_its_own_derivatives() {
    for (x, _, s) in points() {
        let (dx, dk) = (0.6, SpringTangent { k: -0.4 });
        let (ex, ek) = (-0.3, SpringTangent { k: 0.9 });
        let ((y, dy), (ty, tdy)) =
            s.energy_jvp_jvp(x, &dk, dx, &ek, ex, &SpringTangent { k: 0.5 }, 0.2);
        assert_eq!((y, dy), s.energy_jvp(x, &dk, dx));
        let at = |t: f64| {
            let st = Spring {
                k: s.k + t * ek.k,
                ..s
            };
            st.energy_jvp(
                x + t * ex,
                &SpringTangent { k: dk.k + t * 0.5 },
                dx + t * 0.2,
            )
        };
        let ((p0, p1), (m0, m1)) = (at(EPS), at(-EPS));
        assert!(close(ty, (p0 - m0) / (2.0 * EPS), 1e-7), "{ty}");
        assert!(close(tdy, (p1 - m1) / (2.0 * EPS), 1e-7), "{tdy}");
    }
}

/// A method's `_vjp` and `_jvp`, differentiable because the method has
/// `order = 2`, called from differentiable code outside its block (whose
/// results a `let` annotation names there).
#[differentiable]
pub fn energy_grad_norm(s: &Spring, x: f64) -> f64 {
    let (_, (gs, gx)): (f64, (SpringTangent, f64)) = s.energy_vjp(x, 1.0);
    gs.k * gs.k + gx * gx
}

#[differentiable]
pub fn energy_along(s: &Spring, x: f64) -> f64 {
    let (v, dv): (f64, f64) = s.energy_jvp(x, &SpringTangent { k: x }, 1.0);
    v * dv
}

#[test]
fn a_methods_derivatives_are_callees() {
    type F = fn(&Spring, f64) -> f64;
    type FVjp = fn(&Spring, f64, f64) -> (f64, (SpringTangent, f64));
    let fs: [(F, FVjp); 2] = [
        (energy_grad_norm, energy_grad_norm_vjp),
        (energy_along, energy_along_vjp),
    ];
    for (x, _, s) in points() {
        for (f, f_vjp) in fs {
            let (v, (gs, gx)) = f_vjp(&s, x, 1.0);
            assert_eq!(v, f(&s, x));
            let at = |dk: f64, dx: f64| f(&Spring { k: s.k + dk, ..s }, x + dx);
            let fk = (at(EPS, 0.0) - at(-EPS, 0.0)) / (2.0 * EPS);
            let fx = (at(0.0, EPS) - at(0.0, -EPS)) / (2.0 * EPS);
            assert!(close(gs.k, fk, 1e-7), "{} against {fk}", gs.k);
            assert!(close(gx, fx, 1e-7), "{gx} against {fx}");
        }
    }
}

/// `paired_vjp`, whose reverse pass goes through `energy_vjp` (a method of
/// its own block), is differentiable: the norm of `paired`'s gradient,
/// reverse over reverse, against the same norm with `energy` inlined and
/// against central differences.
#[differentiable]
pub fn paired_grad_norm(s: &Spring, x: f64, y: f64) -> f64 {
    let (_, (gs, gx, gy)): (f64, (SpringTangent, f64, f64)) = s.paired_vjp(x, y, 1.0);
    gs.k * gs.k + gx * gx + gy * gy
}

#[differentiable(order = 2)]
pub fn paired_inline(k: f64, x: f64, y: f64, #[nondiff] rest: f64) -> f64 {
    let e = |t: f64| {
        let d = t - rest;
        0.5 * k * d * d * t.sin()
    };
    e(x) * e(y) + e(x * y)
}

#[differentiable]
pub fn paired_inline_grad_norm(k: f64, x: f64, y: f64, #[nondiff] rest: f64) -> f64 {
    let (_, (gk, gx, gy)) = paired_inline_vjp(k, x, y, rest, 1.0);
    gk * gk + gx * gx + gy * gy
}

#[test]
fn a_method_callers_vjp_goes_through_its_blocks_methods() {
    for (x, y, s) in points() {
        let (v, (gs, gx, gy)) = paired_grad_norm_vjp(&s, x, y, 1.0);
        let (w, (hk, hx, hy)) = paired_inline_grad_norm_vjp(s.k, x, y, s.rest, 1.0);
        assert!(close(v, w, 1e-13), "{v} against {w}");
        for (a, b) in [(gs.k, hk), (gx, hx), (gy, hy)] {
            assert!(close(a, b, 1e-12), "{a} against its inline twin's {b}");
        }
        let at = |dk: f64, dx: f64, dy: f64| {
            paired_grad_norm(&Spring { k: s.k + dk, ..s }, x + dx, y + dy)
        };
        let fd = central3(at);
        for (a, b) in [gs.k, gx, gy].into_iter().zip(fd) {
            assert!(close(a, b, 1e-7), "{a} against {b}");
        }
    }
}

/// `paired_vjp`'s own derivatives: forward mode against central
/// differences of `paired_vjp`.
#[test]
fn a_method_callers_vjp_has_its_own_derivatives() {
    for (x, y, s) in points() {
        let (ek, ex, ey) = (SpringTangent { k: 0.4 }, -0.7, 0.3);
        let (r, (_, (tk, tx, ty))) = s.paired_vjp_jvp(x, y, 1.0, &ek, ex, ey, 0.0);
        assert_eq!(r.0, s.paired(x, y));
        let at = |t: f64| {
            let st = Spring {
                k: s.k + t * ek.k,
                ..s
            };
            let (_, (gs, gx, gy)) = st.paired_vjp(x + t * ex, y + t * ey, 1.0);
            [gs.k, gx, gy]
        };
        assert_central(&[tk.k, tx, ty], at, EPS, 1e-7);
    }
}

#[derive(Differentiable, Clone, Copy, Debug)]
pub struct Damper {
    pub c: f64,
}

#[differentiable]
impl Damper {
    /// Calls a method of another block: its reverse pass reads that
    /// method's tape, so its `_vjp` is differentiated as the VJP by
    /// forward mode.
    #[differentiable(order = 2)]
    pub fn loaded(&self, s: &Spring, x: f64) -> f64 {
        self.c * s.energy(x)
    }

    /// Calls `loaded`, whose `_vjp` is differentiable: `near`'s goes
    /// through it.
    #[differentiable(order = 2)]
    pub fn near(&self, s: &Spring, x: f64) -> f64 {
        self.loaded(s, x) * x
    }
}

#[test]
fn a_method_whose_vjp_is_not_differentiable_leaves_its_callers_hvp() {
    for (x, _, s) in points() {
        let d = Damper { c: 0.8 };
        let (dd, ds, dx) = (DamperTangent { c: 0.3 }, SpringTangent { k: -0.5 }, 0.9);
        let (_, (_, _, g), (_, _, h)) = d.near_hvp(&s, x, &dd, &ds, dx);
        let grad = |t: f64| {
            let (dt, st) = (
                Damper { c: d.c + t * dd.c },
                Spring {
                    k: s.k + t * ds.k,
                    ..s
                },
            );
            dt.near_vjp(&st, x + t * dx, 1.0).1 .2
        };
        let fd = (grad(EPS) - grad(-EPS)) / (2.0 * EPS);
        assert_eq!(g, d.near_vjp(&s, x, 1.0).1 .2);
        assert!(close(h, fd, 1e-7), "{h} against {fd}");
    }
}

/// Reverse over reverse through `total_vjp`, whose reverse pass reads the
/// tapes of methods of other blocks.
#[differentiable]
pub fn total_grad_norm(x: f64, y: f64, s: &Spring) -> f64 {
    let (_, (gx, gy, gs)): (f64, (f64, f64, SpringTangent)) = total_vjp(x, y, s, 1.0);
    gx * gx + gy * gy + gs.k * gs.k
}

#[differentiable]
pub fn total_inline_grad_norm(x: f64, y: f64, s: &Spring) -> f64 {
    let (_, (gx, gy, gs)): (f64, (f64, f64, SpringTangent)) = total_inline_vjp(x, y, s, 1.0);
    gx * gx + gy * gy + gs.k * gs.k
}

#[test]
fn a_vjp_reading_other_blocks_tapes_is_differentiable() {
    for (x, y, s) in points() {
        let (v, (gx, gy, gs)) = total_grad_norm_vjp(x, y, &s, 1.0);
        let (w, (hx, hy, hs)) = total_inline_grad_norm_vjp(x, y, &s, 1.0);
        assert!(close(v, w, 1e-13), "{v} against {w}");
        for (a, b) in [(gx, hx), (gy, hy), (gs.k, hs.k)] {
            assert!(close(a, b, 1e-11), "{a} against its inline twin's {b}");
        }
        let at = |dx: f64, dy: f64, dk: f64| {
            total_grad_norm(x + dx, y + dy, &Spring { k: s.k + dk, ..s })
        };
        let fd = central3(at);
        for (a, b) in [gx, gy, gs.k].into_iter().zip(fd) {
            assert!(close(a, b, 1e-7), "{a} against {b}");
        }
        // Its own forward mode, against central differences of the VJP.
        let (ex, ey, ek) = (0.4, -0.7, SpringTangent { k: 0.3 });
        let (r, (_, (tx, ty, ts))) = total_vjp_jvp(x, y, &s, 1.0, ex, ey, &ek, 0.0);
        // The gradient it returns is the one by forward mode: `total_vjp`'s
        // up to rounding, the value bit for bit.
        let (value, g) = total_vjp(x, y, &s, 1.0);
        assert_eq!(r.0, value);
        for (a, b) in flat(&r.1).into_iter().zip(flat(&g)) {
            assert!(close(a, b, 1e-14), "{a} against {b}");
        }
        let grad = |t: f64| {
            let st = Spring {
                k: s.k + t * ek.k,
                ..s
            };
            flat(&total_vjp(x + t * ex, y + t * ey, &st, 1.0).1)
        };
        assert_central(&[tx, ty, ts.k], grad, EPS, 1e-7);
    }
}

/// Reverse over reverse through a method's `_vjp` that reads another
/// block's tape (`loaded`), called from outside its block, and through
/// one that calls it (`near`, through `loaded_vjp`).
#[differentiable]
pub fn loaded_grad_norm(d: &Damper, s: &Spring, x: f64) -> f64 {
    let (_, (gd, _, gx)): (f64, (DamperTangent, SpringTangent, f64)) = d.loaded_vjp(s, x, 1.0);
    let (_, (hd, _, hx)): (f64, (DamperTangent, SpringTangent, f64)) = d.near_vjp(s, x, 1.0);
    gd.c * gd.c + gx * gx + hd.c * hx
}

#[test]
fn a_methods_vjp_reading_another_blocks_tape_is_differentiable() {
    for (x, _, s) in points() {
        let d = Damper { c: 0.8 };
        let (v, (gd, gs, gx)) = loaded_grad_norm_vjp(&d, &s, x, 1.0);
        assert_eq!(v, loaded_grad_norm(&d, &s, x));
        let at = |dc: f64, dk: f64, dx: f64| {
            let st = Spring { k: s.k + dk, ..s };
            loaded_grad_norm(&Damper { c: d.c + dc }, &st, x + dx)
        };
        let fd = central3(at);
        for (a, b) in [gd.c, gs.k, gx].into_iter().zip(fd) {
            assert!(close(a, b, 1e-7), "{a} against {b}");
        }
    }
}

/// A function of a slice calling a method of another block on every
/// element: its `_vjp` goes through `energy_vjp` (forward mode could not
/// take the slice).
#[differentiable(order = 2)]
pub fn chain(s: &Spring, xs: &[f64]) -> f64 {
    let mut e = 0.0;
    for x in xs {
        e += s.energy(*x) * x;
    }
    e
}

#[differentiable]
pub fn chain_grad_norm(s: &Spring, xs: &[f64]) -> f64 {
    let (_, (gs, gx)): (f64, (SpringTangent, Vec<f64>)) = chain_vjp(s, xs, 1.0);
    let mut n = gs.k * gs.k;
    for g in gx.iter() {
        n += g * g;
    }
    n
}

/// A constant argument (`0.5`): the caller cannot tell whether its
/// parameter has a cotangent, so `offset_vjp`'s derivatives are by
/// forward mode.
#[differentiable(order = 2)]
pub fn offset(x: f64, y: f64, s: &Spring) -> f64 {
    s.paired(x, 0.5) * y
}

#[differentiable]
pub fn offset_grad_norm(x: f64, y: f64, s: &Spring) -> f64 {
    let (_, (gx, gy, gs)): (f64, (f64, f64, SpringTangent)) = offset_vjp(x, y, s, 1.0);
    gx * gx + gy * gy + gs.k * gs.k
}

#[test]
fn a_slice_functions_vjp_goes_through_another_blocks_method() {
    for (x, y, s) in points() {
        let xs = [x, y, 0.5 * x - y];
        let (v, (gs, gx)) = chain_grad_norm_vjp(&s, &xs, 1.0);
        assert_eq!(v, chain_grad_norm(&s, &xs));
        let at = |dk: f64, i: usize, dx: f64| {
            let mut ys = xs;
            ys[i] += dx;
            chain_grad_norm(&Spring { k: s.k + dk, ..s }, &ys)
        };
        let fk = (at(EPS, 0, 0.0) - at(-EPS, 0, 0.0)) / (2.0 * EPS);
        assert!(close(gs.k, fk, 1e-7), "{} against {fk}", gs.k);
        for (i, g) in gx.iter().enumerate() {
            let fd = (at(0.0, i, EPS) - at(0.0, i, -EPS)) / (2.0 * EPS);
            assert!(close(*g, fd, 1e-7), "{g} against {fd}");
        }
    }
}

#[test]
fn a_vjp_passing_a_constant_to_another_blocks_method_is_differentiable() {
    for (x, y, s) in points() {
        let (v, (gx, gy, gs)) = offset_grad_norm_vjp(x, y, &s, 1.0);
        // The inner gradient is the forward-mode one: `offset_vjp`'s up
        // to rounding.
        let w = offset_grad_norm(x, y, &s);
        assert!(close(v, w, 1e-13), "{v} against {w}");
        let at = |dx: f64, dy: f64, dk: f64| {
            offset_grad_norm(x + dx, y + dy, &Spring { k: s.k + dk, ..s })
        };
        let fd = central3(at);
        for (a, b) in [gx, gy, gs.k].into_iter().zip(fd) {
            assert!(close(a, b, 1e-7), "{a} against {b}");
        }
    }
}
