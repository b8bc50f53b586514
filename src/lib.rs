//! # linear-ad
//!
//! Compile-time automatic differentiation for plain Rust functions, on
//! stable Rust, by the method of "You Only Linearize Once: Tangents
//! Transpose to Gradients" (Radul, Paszke, Frostig, Johnson, Maclaurin;
//! POPL 2023): forward mode is derived by a source transformation, and
//! reverse mode is always the *transpose* of the linearized forward mode,
//! never written by hand.
//!
//! ```
//! use linear_ad::{differentiable, LinearMap};
//!
//! #[differentiable]
//! pub fn f(x: f64, y: f64) -> f64 {
//!     let a = x * y;
//!     a.sin() + x
//! }
//!
//! let (x, y) = (0.5, 2.0);
//! // Forward mode: the value and the derivative along (1, 0).
//! let (v, dv) = f_jvp(x, y, 1.0, 0.0);
//! assert_eq!(v, f(x, y));
//! assert!((dv - ((x * y).cos() * y + 1.0)).abs() < 1e-12);
//!
//! // Reverse mode: the value and the gradient.
//! let (_, (gx, gy)) = f_vjp(x, y, 1.0);
//! assert!((gx - dv).abs() < 1e-12);
//! assert!((gy - (x * y).cos() * x).abs() < 1e-12);
//!
//! // Linearize once, then apply (forward) and transpose (reverse) as often
//! // as needed, without recomputing the primal.
//! let (_, lin) = f_lin(x, y);
//! assert_eq!(lin.apply((1.0, 0.0)), dv);
//! assert_eq!(lin.transpose(1.0), (gx, gy));
//! ```
//!
//! For `#[differentiable] fn f(params..) -> R`, with `In` the tangent of
//! the differentiable parameters (the parameter's type if there is one, the
//! tuple of their types if several):
//!
//! * `f_jvp(params.., tangents..) -> (R, R)`: forward mode.
//! * `f_lin(params..) -> (R, L)` with `L: LinearMap<In, R>`: the
//!   linearization at a point; `apply` is the JVP and `transpose` the VJP,
//!   both from one saved tape.
//! * `f_vjp(params.., cotangent: R) -> (R, In)`: reverse mode.
//!
//! Integer and `bool` parameters, and float parameters marked `#[nondiff]`,
//! are constants: they get no tangent. Any computation that depends on no
//! differentiable input may be any Rust code.
//!
//! `#[differentiable(dump)]`, or `LINEAR_AD_DUMP=name` in the compiler's
//! environment, prints the Linear A program of every stage at compile time.

#![forbid(unsafe_code)]

pub use linear_macros::differentiable;

/// A linear map and its transpose, as produced by `f_lin`: a Jacobian
/// evaluated at one point, without the matrix.
///
/// `transpose` is the adjoint of `apply`: for every `x` and `y`,
/// ⟨x, transpose(y)⟩ = ⟨apply(x), y⟩.
pub trait LinearMap<In, Out> {
    /// The Jacobian times a tangent (forward mode, a JVP).
    fn apply(&self, tangent: In) -> Out;
    /// A cotangent times the Jacobian (reverse mode, a VJP).
    fn transpose(&self, cotangent: Out) -> In;
}
