//! Functions another crate calls (`tests/cross_crate.rs` in the facade):
//! results of each shape the calling convention has, a `#[linear]`
//! function, a function in a module, and a derived struct.
#![deny(warnings)]

use linear_ad::{differentiable, linear, Differentiable};

/// A float result.
#[differentiable]
pub fn soft_abs(x: f64, #[nondiff] eps: f64) -> f64 {
    (x * x + eps * eps).sqrt()
}

/// A tuple result.
#[differentiable]
pub fn polar(x: f64, y: f64) -> (f64, f64) {
    ((x * x + y * y).sqrt(), y.atan2(x))
}

/// An array result.
#[differentiable]
pub fn project(p: [f64; 3], f: f64) -> [f64; 2] {
    [f * p[0] / p[2], f * p[1] / p[2]]
}

/// A `Vec` result.
#[differentiable]
pub fn powers(x: f64, #[nondiff] n: usize) -> Vec<f64> {
    let mut y = Vec::new();
    let mut p = 1.0;
    for _ in 0..n {
        p *= x;
        y.push(p);
    }
    y
}

/// A linear map.
#[linear]
pub fn shear(#[linear] x: f64, #[linear] y: f64, k: f64) -> (f64, f64) {
    (x + k * y, y)
}

pub mod nested {
    use linear_ad::differentiable;

    /// A function reached through a module path.
    #[differentiable]
    pub fn logistic(x: f64) -> f64 {
        1.0 / (1.0 + (-x).exp())
    }
}

/// A struct another crate's functions take and build.
#[derive(Differentiable)]
pub struct Body {
    pub pos: [f64; 2],
    pub mass: f64,
}

/// A struct result.
#[differentiable]
pub fn body_at(x: f64, y: f64) -> Body {
    Body {
        pos: [x, y],
        mass: x * y,
    }
}

/// The same `pub` function stamped into two modules: token for token the
/// same item twice, whose exported signature macros must not collide.
macro_rules! stamp {
    ($module:ident, $k:expr) => {
        pub mod $module {
            use linear_ad::differentiable;

            const K: f64 = $k;

            /// A scaled square, one per module.
            #[differentiable]
            pub fn scaled(x: f64) -> (f64, f64) {
                (K * x * x, x)
            }
        }
    };
}
stamp!(twice, 2.0);
stamp!(thrice, 3.0);

/// A struct parameter by reference, for callers in another crate.
#[differentiable]
pub fn kinetic(b: &Body) -> f64 {
    0.5 * b.mass * (b.pos[0] * b.pos[0] + b.pos[1] * b.pos[1])
}

#[differentiable]
impl Body {
    /// The weight under gravity `g`, for methods called from another crate.
    #[differentiable]
    pub fn weight(&self, g: f64) -> f64 {
        self.mass * g
    }

    /// The body moved by `d`: a struct result, typed by the caller's `let`.
    #[differentiable]
    pub fn shifted(&self, d: f64) -> Body {
        Body {
            pos: [self.pos[0] + d, self.pos[1] - d],
            mass: self.mass,
        }
    }
}

/// A struct with a constant field, whose methods are called from another
/// crate: it crosses the call as the caller's parameter it is.
#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Pinned {
    pub pos: [f64; 2],
    #[nondiff]
    pub pinned: bool,
}

#[differentiable]
impl Pinned {
    /// The squared distance to `to`, none if pinned.
    #[differentiable]
    pub fn pull(&self, to: f64) -> f64 {
        if self.pinned {
            0.0
        } else {
            (self.pos[0] - to) * (self.pos[0] - to) + self.pos[1] * self.pos[1]
        }
    }
}
