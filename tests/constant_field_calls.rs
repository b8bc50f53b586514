//! Structs with constant fields (integers, `bool`s, `#[nondiff]`) passed
//! to differentiable functions and methods (issue 10). Such a struct
//! crosses a call as the caller's parameter it is (or the struct nested in
//! one), since its flat value lacks the constant fields
//! (`linear_core::expand::companions`): by reference, by value (cloned
//! when not `Copy`), as `self`, nested in another struct, and with its
//! constant fields read in a branch, bound by a pattern and read through a
//! nested struct. Each caller is checked against a version written without
//! calls, by central differences, the dot-product identity and agreement
//! of its three modes.

#![deny(warnings)]

mod support;

use linear_ad::{differentiable, Differentiable, LinearMap};
use support::{assert_close, check};

#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Bead {
    pub pos: [f64; 2],
    pub mass: f64,
    #[nondiff]
    pub fixed: bool,
    pub id: usize,
}

#[differentiable]
impl Bead {
    /// Gravity, none on a fixed bead: a branch on a constant field.
    #[differentiable]
    pub fn weight(&self, g: f64) -> f64 {
        if self.fixed {
            0.0
        } else {
            self.mass * g * self.pos[1]
        }
    }

    /// Reads the integer field and calls a method of its block on `self`.
    #[differentiable]
    pub fn tagged(&self, g: f64) -> f64 {
        self.weight(g) * (1.0 + self.id as f64)
    }

    /// The receiver by value.
    #[differentiable]
    pub fn lifted(self, h: f64) -> f64 {
        self.weight(h) + self.pos[0] * h
    }
}

fn weight_by_hand(b: &Bead, g: f64) -> f64 {
    if b.fixed {
        0.0
    } else {
        b.mass * g * b.pos[1]
    }
}

/// Beads joined by a spring: its methods call the nested beads' methods
/// and read their constant fields through `self`.
#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Chain {
    pub a: Bead,
    pub b: Bead,
    pub k: f64,
}

#[differentiable]
impl Chain {
    #[differentiable]
    pub fn energy(&self, g: f64) -> f64 {
        let dx = self.b.pos[0] - self.a.pos[0];
        let dy = self.b.pos[1] - self.a.pos[1];
        let pull = if self.b.fixed { 0.0 } else { self.k };
        self.a.tagged(g) + self.b.lifted(g) + 0.5 * pull * (dx * dx + dy * dy)
    }
}

fn energy_by_hand(c: &Chain, g: f64) -> f64 {
    let dx = c.b.pos[0] - c.a.pos[0];
    let dy = c.b.pos[1] - c.a.pos[1];
    let pull = if c.b.fixed { 0.0 } else { c.k };
    weight_by_hand(&c.a, g) * (1.0 + c.a.id as f64)
        + weight_by_hand(&c.b, g)
        + c.b.pos[0] * g
        + 0.5 * pull * (dx * dx + dy * dy)
}

/// A bead by reference, its constant fields bound by a pattern.
#[differentiable]
fn scaled(b: &Bead, s: f64) -> f64 {
    let Bead { pos, id, fixed, .. } = *b;
    let w = if fixed { 1.0 } else { 2.0 };
    w * s * pos[0] * (id as f64 + 0.5)
}

fn scaled_by_hand(b: &Bead, s: f64) -> f64 {
    let w = if b.fixed { 1.0 } else { 2.0 };
    w * s * b.pos[0] * (b.id as f64 + 0.5)
}

/// A bead by value.
#[differentiable]
fn sunk(b: Bead, g: f64) -> f64 {
    b.weight(g) - b.pos[0] * b.pos[0]
}

/// Free functions passing a chain, its nested beads (by reference and by
/// value) and a method of each.
#[differentiable]
fn system(c: &Chain, g: f64) -> f64 {
    let e = c.energy(g);
    let a = c.a;
    e + scaled(&a, g) + sunk(c.b, g) * Bead::weight(&c.a, g) + Chain::energy(c, 0.5 * g)
}

fn system_by_hand(c: &Chain, g: f64) -> f64 {
    energy_by_hand(c, g)
        + scaled_by_hand(&c.a, g)
        + (weight_by_hand(&c.b, g) - c.b.pos[0] * c.b.pos[0]) * weight_by_hand(&c.a, g)
        + energy_by_hand(c, 0.5 * g)
}

fn bead(a: &[f64], fixed: bool, id: usize) -> Bead {
    Bead {
        pos: [a[0], a[1]],
        mass: a[2],
        fixed,
        id,
    }
}

fn bead_tangent(a: &[f64]) -> BeadTangent {
    BeadTangent {
        pos: [a[0], a[1]],
        mass: a[2],
    }
}

fn bead_flat(t: &BeadTangent) -> Vec<f64> {
    vec![t.pos[0], t.pos[1], t.mass]
}

/// A chain from 7 floats, with the beads' constant fields given.
fn chain(a: &[f64], consts: ((bool, usize), (bool, usize))) -> Chain {
    let ((fa, ia), (fb, ib)) = consts;
    Chain {
        a: bead(&a[0..3], fa, ia),
        b: bead(&a[3..6], fb, ib),
        k: a[6],
    }
}

fn chain_tangent(a: &[f64]) -> ChainTangent {
    ChainTangent {
        a: bead_tangent(&a[0..3]),
        b: bead_tangent(&a[3..6]),
        k: a[6],
    }
}

fn chain_flat(t: &ChainTangent) -> Vec<f64> {
    [bead_flat(&t.a), bead_flat(&t.b), vec![t.k]].concat()
}

const X: [f64; 8] = [0.3, -1.2, 1.7, 0.8, 0.45, 0.6, 3.0, 9.81];

/// Every combination of the constant fields that changes the branches.
const CONSTS: [((bool, usize), (bool, usize)); 3] = [
    ((false, 2), (false, 0)),
    ((true, 0), (false, 3)),
    ((false, 1), (true, 1)),
];

#[test]
fn a_chain_of_beads_with_constant_fields_calls_their_methods() {
    for consts in CONSTS {
        let c = chain(&X, consts);
        let g = X[7];
        assert!((c.energy(g) - energy_by_hand(&c, g)).abs() < 1e-12);
        assert!((system(&c, g) - system_by_hand(&c, g)).abs() < 1e-12);
        check(
            &X,
            1,
            |a| vec![system_by_hand(&chain(a, consts), a[7])],
            |a, d| {
                let (y, dy) = system_jvp(&chain(a, consts), a[7], &chain_tangent(d), d[7]);
                assert_eq!(y, system(&chain(a, consts), a[7]));
                vec![dy]
            },
            |a, w| {
                let (_, (dc, dg)) = system_vjp(&chain(a, consts), a[7], w[0]);
                [chain_flat(&dc), vec![dg]].concat()
            },
            |a, d, w| {
                let (_, l) = system_lin(&chain(a, consts), a[7]);
                let (dc, dg) = l.transpose(w[0]);
                (
                    vec![l.apply((chain_tangent(d), d[7]))],
                    [chain_flat(&dc), vec![dg]].concat(),
                )
            },
        );
    }
}

#[test]
fn a_fixed_bead_gets_no_gradient_from_gravity() {
    let c = chain(&X, ((true, 0), (false, 3)));
    let (_, (dc, _)) = c.energy_vjp(X[7], 1.0);
    // Bead a is fixed: only the spring pulls on it, and its mass has no
    // weight; bead b's mass gradient is g y (by `lifted`, which adds
    // nothing in the mass).
    let (dx, dy) = (c.b.pos[0] - c.a.pos[0], c.b.pos[1] - c.a.pos[1]);
    assert_close(
        &[dc.a.pos[0], dc.a.pos[1], dc.a.mass],
        &[-c.k * dx, -c.k * dy, 0.0],
        1e-12,
    );
    assert_close(&[dc.b.mass], &[X[7] * c.b.pos[1]], 1e-12);
}

/// A struct that is not `Copy` (its constant field owns heap memory),
/// passed by reference and, since it is `Clone`, by value.
#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Named {
    pub w: [f64; 2],
    #[nondiff]
    pub name: String,
}

#[differentiable]
impl Named {
    #[differentiable]
    pub fn norm2(&self) -> f64 {
        self.w[0] * self.w[0] + self.w[1] * self.w[1]
    }

    #[differentiable]
    pub fn consumed(self, s: f64) -> f64 {
        s * self.norm2() * self.w[1]
    }
}

#[differentiable]
fn named(n: &Named, s: f64) -> f64 {
    n.norm2() * s + Named::consumed(n.clone(), s)
}

#[test]
fn a_struct_that_is_not_copy_crosses_by_reference_and_by_clone() {
    let n = |a: &[f64]| Named {
        w: [a[0], a[1]],
        name: "n".to_string(),
    };
    let by_hand = |a: &[f64]| {
        let r = a[0] * a[0] + a[1] * a[1];
        vec![r * a[2] + a[2] * r * a[1]]
    };
    let x = [0.7, -1.3, 2.1];
    assert_close(&[named(&n(&x), x[2])], &by_hand(&x), 1e-12);
    check(
        &x,
        1,
        by_hand,
        |a, d| {
            let t = NamedTangent { w: [d[0], d[1]] };
            vec![named_jvp(&n(a), a[2], &t, d[2]).1]
        },
        |a, w| {
            let (_, (dn, ds)) = named_vjp(&n(a), a[2], w[0]);
            vec![dn.w[0], dn.w[1], ds]
        },
        |a, d, w| {
            let (_, l) = named_lin(&n(a), a[2]);
            let (dn, ds) = l.transpose(w[0]);
            let t = NamedTangent { w: [d[0], d[1]] };
            (vec![l.apply((t, d[2]))], vec![dn.w[0], dn.w[1], ds])
        },
    );
}

/// A struct chosen by a branch keeps its fields (not its origin, which
/// depends on the branch).
#[differentiable]
fn picked(a: &Bead, b: &Bead, first: bool) -> f64 {
    let p = if first { *a } else { *b };
    p.mass * p.pos[0] + a.weight(p.pos[1])
}

#[test]
fn a_struct_chosen_by_a_branch_keeps_its_fields() {
    for first in [true, false] {
        let by_hand = |x: &[f64]| {
            let (a, b) = (bead(&x[0..3], false, 0), bead(&x[3..6], true, 1));
            let p = if first { a } else { b };
            vec![p.mass * p.pos[0] + weight_by_hand(&a, p.pos[1])]
        };
        let beads = |x: &[f64]| (bead(&x[0..3], false, 0), bead(&x[3..6], true, 1));
        let flat2 = |da: &BeadTangent, db: &BeadTangent| [bead_flat(da), bead_flat(db)].concat();
        let x = &X[0..6];
        let (a, b) = beads(x);
        assert_close(&[picked(&a, &b, first)], &by_hand(x), 1e-12);
        check(
            x,
            1,
            by_hand,
            |x, d| {
                let (a, b) = beads(x);
                let (ta, tb) = (bead_tangent(&d[0..3]), bead_tangent(&d[3..6]));
                vec![picked_jvp(&a, &b, first, &ta, &tb).1]
            },
            |x, w| {
                let (a, b) = beads(x);
                let (_, (da, db)) = picked_vjp(&a, &b, first, w[0]);
                flat2(&da, &db)
            },
            |x, d, w| {
                let (a, b) = beads(x);
                let (_, l) = picked_lin(&a, &b, first);
                let (da, db) = l.transpose(w[0]);
                let t = (bead_tangent(&d[0..3]), bead_tangent(&d[3..6]));
                (vec![l.apply(t)], flat2(&da, &db))
            },
        );
    }
}
