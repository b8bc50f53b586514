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
//! Branches and loops stay branches and loops; the derivative at a branch
//! point is that of the branch taken. The tape of a loop holds one record
//! per iteration ([`TapeSize`] reports its bytes):
//!
//! ```
//! use linear_ad::{differentiable, LinearMap, TapeSize};
//!
//! /// A Huber loss summed over data points.
//! #[differentiable]
//! pub fn loss(w: f64, #[nondiff] xs: &[f64], #[nondiff] ys: &[f64]) -> f64 {
//!     let mut total = 0.0;
//!     for i in 0..xs.len() {
//!         let r = w * xs[i] - ys[i];
//!         if r.abs() <= 1.0 {
//!             total += 0.5 * r * r;
//!         } else {
//!             total += r.abs() - 0.5;
//!         }
//!     }
//!     total
//! }
//!
//! let (xs, ys) = ([1.0, 2.0, 3.0], [1.5, 2.5, 9.0]);
//! let (_, g) = loss_vjp(1.0, &xs, &ys, 1.0);
//! // r = (-0.5, -0.5, -6): two quadratic terms, one linear.
//! assert_eq!(g, -0.5 * 1.0 - 0.5 * 2.0 - 3.0);
//! let (_, lin) = loss_lin(1.0, &xs, &ys);
//! assert_eq!(lin.transpose(1.0), g);
//! assert!(lin.tape_bytes() > 0);
//! ```
//!
//! ## Structs
//!
//! `#[derive(Differentiable)]` gives a struct a tangent struct of its
//! differentiable fields (`ParticleTangent` here: `pos` and `vel`, not the
//! constant `id`), a vector space with `+`, `-`, `*` by a float and
//! `Default` as its zero. Differentiable functions read the fields of
//! such structs, build them and return them:
//!
//! ```
//! use linear_ad::{differentiable, Differentiable};
//!
//! #[derive(Differentiable, Clone, Copy, Debug)]
//! pub struct Particle {
//!     pub pos: [f64; 2],
//!     pub vel: [f64; 2],
//!     #[nondiff]
//!     pub id: usize,
//! }
//!
//! #[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
//! pub struct Point {
//!     pub x: f64,
//!     pub y: f64,
//! }
//!
//! /// Where the particle is after `t` seconds of free flight.
//! #[differentiable]
//! pub fn fly(p: &Particle, t: f64) -> Point {
//!     Point {
//!         x: p.pos[0] + t * p.vel[0],
//!         y: p.pos[1] + t * p.vel[1] - 4.905 * t * t,
//!     }
//! }
//!
//! let p = Particle { pos: [0.0, 1.0], vel: [2.0, 3.0], id: 7 };
//! // The cotangent of the result is a `PointTangent`; the gradient of the
//! // height comes back as a `ParticleTangent` and the time's derivative.
//! let up = PointTangent { x: 0.0, y: 1.0 };
//! let (at, (dp, dt)) = fly_vjp(&p, 0.5, up);
//! assert_eq!(at, fly(&p, 0.5));
//! assert_eq!(dp.pos, [0.0, 1.0]);
//! assert_eq!(dp.vel, [0.0, 0.5]);
//! assert!((dt - (3.0 - 9.81 * 0.5)).abs() < 1e-12);
//! // Tangents are vectors.
//! let twice = dp + dp;
//! assert_eq!(twice, dp * 2.0);
//! ```
//!
//! The derive also defines a hidden macro named after the struct, which
//! the `#[differentiable]` functions call to read its fields (a proc
//! macro sees only its own item): a `use` of the struct brings it along.
//!
//! A `Vec` field is read in place, as a `&Vec<f64>` parameter is, from a
//! struct the function borrows; the linearization borrows it too, and the
//! cotangent's `Vec` is the one buffer reverse mode accumulates into:
//!
//! ```
//! use linear_ad::{differentiable, Differentiable};
//!
//! #[derive(Differentiable, Clone, Debug)]
//! pub struct Layer {
//!     pub w: Vec<f64>,
//!     pub bias: f64,
//! }
//!
//! #[differentiable]
//! impl Layer {
//!     #[differentiable]
//!     pub fn out(&self, x: &[f64]) -> f64 {
//!         let mut z = self.bias;
//!         for i in 0..self.w.len() {
//!             z += self.w[i] * x[i];
//!         }
//!         z.tanh()
//!     }
//! }
//!
//! let layer = Layer { w: vec![0.5, -0.25], bias: 0.1 };
//! let (y, (dl, dx)) = layer.out_vjp(&[1.0, 2.0], 1.0);
//! let dz = 1.0 - y * y;
//! assert_eq!(dl.w, vec![dz * 1.0, dz * 2.0]);
//! assert_eq!(dl.bias, dz);
//! assert_eq!(dx, vec![dz * 0.5, dz * -0.25]);
//! ```
//!
//! ## Methods
//!
//! `#[differentiable]` on an inherent `impl` block differentiates the
//! methods marked `#[differentiable]` in it. Their `_jvp`, `_lin` and
//! `_vjp` are methods too, with the receiver as the first differentiable
//! parameter (`#[nondiff] &self` makes it a constant):
//!
//! ```
//! use linear_ad::{differentiable, Differentiable};
//!
//! #[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
//! pub struct Spring {
//!     pub k: f64,
//!     pub rest: f64,
//! }
//!
//! #[differentiable]
//! impl Spring {
//!     /// The elastic energy at length `l`.
//!     #[differentiable]
//!     pub fn energy(&self, l: f64) -> f64 {
//!         0.5 * self.k * (l - self.rest) * (l - self.rest)
//!     }
//! }
//!
//! let s = Spring { k: 100.0, rest: 1.0 };
//! let (e, (ds, dl)) = s.energy_vjp(1.5, 1.0);
//! assert_eq!(e, 12.5);
//! assert_eq!(dl, 50.0); // minus the spring's force
//! assert_eq!(ds, SpringTangent { k: 0.125, rest: -50.0 });
//! ```
//!
//! Differentiable code calls marked methods, by `s.energy(l)` or
//! `Spring::energy(&s, l)`, from the same block (whose methods know each
//! other's signatures), other blocks and free functions, in this crate or
//! another. Outside the block a result that is not a float takes a `let`
//! type (`let q: Spring = s.stiffer(2.0);`):
//!
//! ```
//! # use linear_ad::{differentiable, Differentiable};
//! # #[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
//! # pub struct Spring { pub k: f64, pub rest: f64 }
//! # #[differentiable]
//! # impl Spring {
//! #     #[differentiable]
//! #     pub fn energy(&self, l: f64) -> f64 { 0.5 * self.k * (l - self.rest) * (l - self.rest) }
//! # }
//! /// Two springs in series stretched to total length `l`, the joint at `x`.
//! #[differentiable]
//! fn chain(a: &Spring, b: &Spring, x: f64, l: f64) -> f64 {
//!     a.energy(x) + Spring::energy(b, l - x)
//! }
//!
//! let (a, b) = (Spring { k: 100.0, rest: 1.0 }, Spring { k: 50.0, rest: 1.0 });
//! let (_, (_, _, dx, _)) = chain_vjp(&a, &b, 1.2, 2.5, 1.0);
//! assert!((dx - (100.0 * 0.2 - 50.0 * 0.3)).abs() < 1e-12); // the net force at the joint
//! ```
//!
//! ## Calling other functions
//!
//! A `#[differentiable]` function may call other `#[differentiable]` and
//! `#[linear]` functions, by name, by path or through a `use`. The call
//! stays a call (to the callee's generated functions), and its result
//! needs no annotation whatever its type: the callee's attribute leaves a
//! hidden macro with its signature, which the caller's expansion reads.
//!
//! ```
//! mod geometry {
//!     use linear_ad::differentiable;
//!
//!     #[differentiable]
//!     pub fn polar(x: f64, y: f64) -> (f64, f64) {
//!         ((x * x + y * y).sqrt(), y.atan2(x))
//!     }
//! }
//!
//! use geometry::polar;
//! use linear_ad::differentiable;
//!
//! #[differentiable]
//! fn spiral(x: f64, y: f64) -> f64 {
//!     let (r, t) = polar(x, y);
//!     r * t
//! }
//!
//! let (v, (dx, dy)) = spiral_vjp(0.0, 2.0, 1.0);
//! assert_eq!(v, 2.0 * std::f64::consts::FRAC_PI_2);
//! assert!((dx - -1.0).abs() < 1e-15 && (dy - std::f64::consts::FRAC_PI_2).abs() < 1e-15);
//! ```
//!
//! The same holds across crates for `pub` functions: the macro is exported
//! with the function, so `use other::polar;` or `other::polar(x, y)` in a
//! dependent crate needs no annotation either. A `let` annotation
//! (`let (r, t): (f64, f64) = polar(x, y);`) is always accepted. A call to a function without either attribute
//! is reported at the call as ``cannot find macro `g` ``, with rustc's
//! note that `g` is a function.
//!
//! ## Generic floats
//!
//! A function generic over `T: num_traits::Float` serves `f32` and `f64`
//! with one body; see [`Real`] for what its generated functions require.
//! So do structs generic in their float type, and `impl` blocks generic in
//! it, whose methods differentiable code calls at any float type:
//!
//! ```
//! use linear_ad::num_traits::Float;
//! use linear_ad::{differentiable, Differentiable};
//!
//! #[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
//! pub struct V2<T: Float> {
//!     pub x: T,
//!     pub y: T,
//! }
//!
//! #[differentiable]
//! impl<T: Float> V2<T> {
//!     #[differentiable]
//!     pub fn dot(&self, o: &Self) -> T {
//!         self.x * o.x + self.y * o.y
//!     }
//! }
//!
//! /// The squared length of `a - b`.
//! #[differentiable]
//! pub fn dist2<T: Float>(a: &V2<T>, b: &V2<T>) -> T {
//!     let d = V2 { x: a.x - b.x, y: a.y - b.y };
//!     d.dot(&d)
//! }
//!
//! // `V2Tangent<T>` is generic too.
//! let (d, (da, db)) = dist2_vjp(&V2 { x: 4.0, y: 1.0 }, &V2 { x: 1.0, y: -3.0 }, 1.0);
//! assert_eq!((d, da), (25.0, V2Tangent { x: 6.0, y: 8.0 }));
//! assert_eq!(db, V2Tangent { x: -6.0, y: -8.0 });
//! let (d, (da, _)) = dist2_vjp(&V2 { x: 4.0f32, y: 1.0 }, &V2 { x: 1.0, y: -3.0 }, 1.0);
//! assert_eq!((d, da), (25.0f32, V2Tangent { x: 6.0f32, y: 8.0 }));
//! ```
//!
//! A struct literal without its argument (`V2 { .. }`) is at the
//! function's float type parameter, or at `f64` in a function that has
//! none; write `V2::<f32> { .. }` otherwise. Differentiable code calls a
//! generic function at the float type of its arguments, and a method of a
//! generic block at its receiver's.
//!
//! ## Memory: checkpointing loops
//!
//! `#[differentiable(checkpoint = ..)]` chooses what loops keep for the
//! reverse sweep; derivatives are the same bit for bit under every policy:
//!
//! * `"auto"` (the default): as `"save"`, except that a loop over a range
//!   whose reverse sweep needs nothing per iteration but its index (a
//!   reduction over arrays, `s += f(x[i])`) keeps no record: the reverse
//!   sweep reads the arrays again and recomputes what it multiplies by,
//!   keeping per iteration only the results of math-library calls
//!   (`exp`, `sin`, …), which would cost more to compute twice.
//! * `"save"`: every intermediate the derivative reads, per iteration; the
//!   reverse sweep does linear work only.
//! * `"state"`: each iteration's loop state; the reverse sweep recomputes
//!   the body's intermediates from it (about one more forward pass).
//! * `"binomial"`, with `snapshots = N` (default 64): the loop's initial
//!   state and trip count only. The reverse sweep recomputes the states
//!   from at most `N` stored ones by Griewank's binomial (Revolve)
//!   schedule: a loop of `n ≤ C(N + t, N)` iterations evaluates each step
//!   at most `t` times more (10⁶ iterations in 64 snapshots: `t = 5`).
//!
//! ```
//! use linear_ad::{differentiable, TapeSize};
//!
//! #[differentiable(checkpoint = "binomial", snapshots = 8)]
//! pub fn decay(y0: f64, k: f64, #[nondiff] steps: usize) -> f64 {
//!     let h = 1.0 / steps as f64;
//!     let mut y = y0;
//!     for _ in 0..steps {
//!         y -= h * k * y;
//!     }
//!     y
//! }
//!
//! let n = 100_000;
//! let (v, (gy0, gk)) = decay_vjp(2.0, 0.5, n, 1.0);
//! // v = y0 (1 - hk)^n
//! assert!((gy0 - v / 2.0).abs() < 1e-9);
//! assert!((gk + v / (1.0 - 0.5 / n as f64)).abs() < 1e-9);
//! // The tape holds the initial state and the trip count, whatever the
//! // trip count.
//! let (_, short) = decay_lin(2.0, 0.5, 10);
//! let (_, long) = decay_lin(2.0, 0.5, n);
//! assert_eq!(short.tape_bytes(), long.tape_bytes());
//! ```
//!
//! A loop whose step reads Rust code that depends on no differentiable
//! input (an element of a `#[nondiff]` slice, say) cannot be recomputed
//! in the reverse sweep, which does not see the parameters; neither can a
//! loop state holding an integer, whose type only the user's code knows.
//! Such loops fall back to the next policy (`"binomial"` to `"state"` to
//! `"save"`). A loop with a literal trip count (`for i in 0..8`) keeps a
//! small tape (up to 4 KiB) inline in the linearization, with no heap.
//!
//! ## Rounding: folded scalings
//!
//! The chain rule applied one operation at a time scales a tangent once
//! per product it passes through (`s·(2s·ṡ) + s²·ṡ` for `s * s * s`). The
//! derivative's scalings are folded instead: chains into one coefficient
//! (`(s·2s + s²)·ṡ`), and the two tangents of a value read twice into
//! one, with the coefficients computed once in the forward pass, so the
//! linear map and its transpose do less work and the tape holds fewer
//! values. A branch whose arms' derivatives scale the same tangents by
//! different coefficients (the Huber loss: `r·ṙ` in one arm, `sign(r)·ṙ`
//! in the other) returns the coefficient instead, so the linear map and
//! its transpose run one combination, without a branch, and a loop's tape
//! holds the coefficient, not a tag saying which arm ran. The results are the same up to rounding: `(a·b)·ẋ` for
//! `a·(b·ẋ)` and `(a + b)·ẋ` for `a·ẋ + b·ẋ`, a few units in the last place
//! of the largest intermediate tangent; a coefficient product can also
//! overflow where the unfolded products would not. Values, as opposed to
//! derivatives, are never affected. `#[differentiable(fold = false)]`
//! keeps the operation-by-operation rounding:
//!
//! ```
//! use linear_ad::differentiable;
//!
//! #[differentiable(fold = false)]
//! fn cube(s: f64) -> f64 {
//!     s * s * s
//! }
//!
//! let (s, ds) = (1.7, 0.37);
//! assert_eq!(cube_jvp(s, ds).1, s * ((s + s) * ds) + (s * s) * ds);
//! ```
//!
//! `#[differentiable(dump)]`, or `LINEAR_AD_DUMP=name` in the compiler's
//! environment, prints the Linear A program of every stage at compile time.
//!
//! ## Linear functions and their transposes
//!
//! `#[linear]` proves a function linear in its `#[linear]` parameters, at
//! compile time, and generates its transpose:
//!
//! ```
//! use linear_ad::linear;
//!
//! #[linear]
//! pub fn axpy(a: f64, #[linear] x: f64, #[linear] y: f64) -> f64 {
//!     a * x + y
//! }
//!
//! // ⟨(x, y), axpyᵀ(ȳ)⟩ = ⟨axpy(x, y), ȳ⟩
//! assert_eq!(axpy_transpose(2.0, 3.0), (6.0, 3.0));
//! ```
//!
//! A linear function is differentiable too (`axpy_jvp`, `axpy_lin`,
//! `axpy_vjp`, its coefficients differentiable unless it calls other
//! functions), and `#[linear(order = 2)]` makes it differentiable twice,
//! as `#[differentiable(order = 2)]` does, so that functions with
//! `order = 2` can call it.
//!
//! ## Custom derivatives
//!
//! `#[differentiable(jvp = d)]` takes the derivative from `d`, a `#[linear]`
//! function of the primal parameters and one `#[linear]` tangent per
//! differentiable parameter; reverse mode is `d`'s derived transpose.
//!
//! ```
//! use linear_ad::{differentiable, linear};
//!
//! #[differentiable(jvp = softplus_tangent)]
//! pub fn softplus(x: f64) -> f64 {
//!     if x > 30.0 { x } else { x.exp().ln_1p() }
//! }
//!
//! #[linear]
//! pub fn softplus_tangent(x: f64, #[linear] dx: f64) -> f64 {
//!     dx / (1.0 + (-x).exp())
//! }
//!
//! assert_eq!(softplus_vjp(1000.0, 1.0), (1000.0, 1.0));
//! ```

#![forbid(unsafe_code)]

#[doc = include_str!("../docs/differentiable.md")]
pub use linear_macros::differentiable;
#[doc = include_str!("../docs/linear.md")]
pub use linear_macros::linear;
pub use linear_macros::Differentiable;
/// The `num_traits` crate, whose `Float` bounds functions generic in
/// their float type: `fn f<T: linear_ad::num_traits::Float>(x: T) -> T`.
pub use num_traits;

pub use lanes::Lanes;

/// `x` itself, with a zero derivative: inside `#[differentiable]` code, no
/// tangent flows through `stop_gradient(x)` and no cotangent flows back
/// into `x` (JAX's `lax.stop_gradient`). Outside it, it is the identity.
///
/// For a value whose derivative is zero in exact arithmetic, so that
/// differentiating it only costs time: the shift of the max trick in a
/// log-sum-exp (`m + ln Σ exp(xᵢ − m)` does not depend on `m`), which
/// reverse mode then neither records nor runs backwards.
///
/// ```
/// use linear_ad::{differentiable, stop_gradient};
///
/// #[differentiable]
/// fn log_sum_exp(x: &[f64]) -> f64 {
///     let m = stop_gradient(x.iter().copied().fold(f64::NEG_INFINITY, f64::max));
///     let s: f64 = x.iter().map(|v| (v - m).exp()).sum();
///     m + s.ln()
/// }
///
/// let x = [1.0, 2.0, 3.0];
/// let (value, g) = log_sum_exp_vjp(&x, 1.0);
/// // The gradient is the softmax, as without `stop_gradient`.
/// let e: Vec<f64> = x.iter().map(|v| (v - value).exp()).collect();
/// for (a, b) in g.iter().zip(&e) {
///     assert!((a - b).abs() < 1e-15);
/// }
/// // Around `m`, the function itself only sees a constant.
/// #[differentiable]
/// fn scaled(x: f64) -> f64 {
///     stop_gradient(x * x) + x
/// }
/// assert_eq!(scaled_vjp(3.0, 1.0), (12.0, 1.0));
/// ```
#[inline(always)]
pub fn stop_gradient<T>(x: T) -> T {
    x
}

/// Invokes `$m!` once per tuple arity from 1 to 8, with each component's
/// type parameter and index (`A 0, B 1`).
macro_rules! for_tuples {
    ($m:ident) => {
        $m!(A 0);
        $m!(A 0, B 1);
        $m!(A 0, B 1, C 2);
        $m!(A 0, B 1, C 2, D 3);
        $m!(A 0, B 1, C 2, D 3, E 4);
        $m!(A 0, B 1, C 2, D 3, E 4, F 5);
        $m!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
        $m!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
    };
}

mod lanes;
mod replay;
mod structs;
pub mod tape_pool;

/// The float types the functions `#[differentiable]` generates for a
/// function generic in its float type (`fn f<T: Float>`) accept: `f32`
/// and `f64`. The function itself keeps its own bounds; its `f_jvp`,
/// `f_lin` and `f_vjp` add this one, for the zeros and buffers of the
/// derivative code. The impls `#[derive(Differentiable)]` gives a struct
/// generic in its float type (`struct Point<T: Float>`) take it too: its
/// (hidden) supertraits are what a tangent struct's fields of type `T`
/// need (a vector space over `T`, and conversions to the IR's flat value).
///
/// ```
/// use linear_ad::{differentiable, num_traits::Float};
///
/// #[differentiable]
/// fn norm<T: Float>(x: T, y: T) -> T {
///     (x * x + y * y).sqrt()
/// }
///
/// // One body, two instances: the gradient (x, y) / |(x, y)|.
/// let (n, (dx, dy)) = norm_vjp(3.0f64, 4.0, 1.0);
/// assert_eq!(n, 5.0);
/// assert!((dx - 0.6).abs() < 1e-15 && (dy - 0.8).abs() < 1e-15);
/// let (n, (dx, dy)) = norm_vjp(3.0f32, 4.0, 1.0);
/// assert_eq!(n, 5.0f32);
/// assert!((dx - 0.6).abs() < 1e-6 && (dy - 0.8).abs() < 1e-6);
///
/// // Generic callers name this bound.
/// fn gradient<T: linear_ad::Real>(x: T, y: T) -> (T, T) {
///     norm_vjp(x, y, T::one()).1
/// }
/// assert_eq!(gradient(3.0f64, 4.0), norm_vjp(3.0, 4.0, 1.0).1);
/// ```
pub trait Real:
    num_traits::Float
    + Differentiable<Tangent = Self>
    + core::fmt::Debug
    + Default
    + Send
    + Sync
    + 'static
    + structs::Linear<Self>
    + structs::Zero
    + structs::FromFlat<Flat = Self>
{
}

impl Real for f64 {}
impl Real for f32 {}

/// A type whose values have a tangent space: what
/// `#[derive(Differentiable)]` implements for a struct, naming the
/// struct it generates for the tangents (`ParticleTangent` for
/// `Particle`: the same fields minus the integer, `bool` and
/// `#[nondiff]` ones, each replaced by its tangent).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not differentiable",
    label = "a differentiable function reads this type's fields",
    note = "add `#[derive(linear_ad::Differentiable)]` to the struct; an enum or any other type is not differentiable: mark the parameter `#[nondiff]` to use it as a constant"
)]
pub trait Differentiable {
    /// The tangent (and cotangent) of a value of this type.
    type Tangent;
}

impl Differentiable for f64 {
    type Tangent = f64;
}

impl Differentiable for f32 {
    type Tangent = f32;
}

impl<T: Differentiable, const N: usize> Differentiable for [T; N] {
    type Tangent = [T::Tangent; N];
}

impl<T: Differentiable> Differentiable for ::std::vec::Vec<T> {
    type Tangent = ::std::vec::Vec<T::Tangent>;
}

macro_rules! tuple_differentiable {
    ($($t:ident $i:tt),*) => {
        impl<$($t: Differentiable),*> Differentiable for ($($t,)*) {
            type Tangent = ($($t::Tangent,)*);
        }
    };
}
for_tuples!(tuple_differentiable);

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

/// Support for the code `#[differentiable]` generates: calls between
/// differentiable functions use a uniform convention, so a caller needs to
/// know nothing of its callee's parameters. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::structs::{ArrayField, FromFlat, FromParts, Linear, ToFlat, Zero};
    pub use linear_macros::{__resolved, __resume};

    /// A name a `match` on constant data binds, read where differentiable
    /// code takes it as a float: `Pick(v).get()` is `*v` for a reference
    /// to a float (a pattern on `&Kind` binds `&f64`) and `v` itself for
    /// anything else. The inherent method wins where it applies; the
    /// trait's, which [`PickAny`] brings in scope, elsewhere.
    pub struct Pick<T>(pub T);

    impl<T: crate::Real> Pick<&T> {
        #[inline(always)]
        pub fn get(self) -> T {
            *self.0
        }
    }

    /// [`Pick`]'s fallback: the value as it is.
    pub trait PickAny {
        type Out;
        fn get(self) -> Self::Out;
    }

    impl<T> PickAny for Pick<T> {
        type Out = T;
        #[inline(always)]
        fn get(self) -> T {
            self.0
        }
    }

    /// Stands for the tangent of an argument that is constant at the call
    /// site.
    #[derive(Clone, Copy, Debug)]
    pub struct Inactive;

    /// A struct with constant fields, passed by a caller that borrows it
    /// to a differentiable function that takes it by value: the callee
    /// clones it. A trait, rather than a `Clone` bound in the callee, so
    /// that rustc checks the bound at the call.
    #[diagnostic::on_unimplemented(
        message = "a differentiable function takes `{S}` by value, so differentiable code that calls it clones the struct",
        label = "`{S}` is not `Clone`",
        note = "derive `Clone` for `{S}`, or take it by reference (`&{S}`)"
    )]
    pub trait Origin<S> {
        fn owned(self) -> S;
    }

    impl<S: Clone> Origin<S> for &S {
        #[inline]
        fn owned(self) -> S {
            self.clone()
        }
    }

    /// Tangent spaces: values with a zero.
    pub trait Vector: Copy {
        fn zero() -> Self;
    }

    /// `f32` and `f64`. Through [`Real`](crate::Real), rather than a
    /// supertrait of it, so that a generic function's `T::zero()` names
    /// only `num_traits::Zero::zero`.
    impl<T: crate::Real> Vector for T {
        #[inline]
        fn zero() -> Self {
            <T as num_traits::Zero>::zero()
        }
    }

    impl<T: Vector, const N: usize> Vector for [T; N] {
        #[inline]
        fn zero() -> Self {
            [T::zero(); N]
        }
    }

    macro_rules! tuple_vector {
        ($($t:ident),*) => {
            impl<$($t: Vector),*> Vector for ($($t,)*) {
                #[inline]
                fn zero() -> Self {
                    ($($t::zero(),)*)
                }
            }
        };
    }
    impl Vector for () {
        #[inline]
        fn zero() -> Self {}
    }
    tuple_vector!(A);
    tuple_vector!(A, B);
    tuple_vector!(A, B, C);
    tuple_vector!(A, B, C, D);
    tuple_vector!(A, B, C, D, E);
    tuple_vector!(A, B, C, D, E, F);
    tuple_vector!(A, B, C, D, E, F, G);
    tuple_vector!(A, B, C, D, E, F, G, H);
    tuple_vector!(A, B, C, D, E, F, G, H, I);
    tuple_vector!(A, B, C, D, E, F, G, H, I, J);
    tuple_vector!(A, B, C, D, E, F, G, H, I, J, K);
    tuple_vector!(A, B, C, D, E, F, G, H, I, J, K, L);

    /// Vectors of real coordinates of type `S`, numbered in order (a
    /// tuple's components one after the other, an array's elements in
    /// index order): `f_hessian` builds its unit directions and reads the
    /// Hessian's rows through them.
    pub trait Coords<S: Copy>: Vector {
        /// The number of coordinates.
        const LEN: usize;
        /// Coordinate `k` (`k < LEN`).
        fn coord(&self, k: usize) -> S;
        /// Coordinate `k`, to write (`k < LEN`).
        fn coord_mut(&mut self, k: usize) -> &mut S;
    }

    impl<T: crate::Real> Coords<T> for T {
        const LEN: usize = 1;
        #[inline]
        fn coord(&self, _: usize) -> T {
            *self
        }
        #[inline]
        fn coord_mut(&mut self, _: usize) -> &mut T {
            self
        }
    }

    impl<S: Copy, T: Coords<S>, const N: usize> Coords<S> for [T; N] {
        const LEN: usize = N * T::LEN;
        #[inline]
        fn coord(&self, k: usize) -> S {
            self[k / T::LEN].coord(k % T::LEN)
        }
        #[inline]
        fn coord_mut(&mut self, k: usize) -> &mut S {
            self[k / T::LEN].coord_mut(k % T::LEN)
        }
    }

    macro_rules! tuple_coords {
        ($($t:ident $i:tt),*) => {
            impl<S: Copy, $($t: Coords<S>),*> Coords<S> for ($($t,)*) {
                const LEN: usize = 0 $(+ $t::LEN)*;
                #[inline]
                fn coord(&self, k: usize) -> S {
                    let mut start = 0;
                    $(
                        if k < start + $t::LEN {
                            return self.$i.coord(k - start);
                        }
                        start += $t::LEN;
                    )*
                    panic!("coordinate {k} of a vector of {start}")
                }
                #[inline]
                fn coord_mut(&mut self, k: usize) -> &mut S {
                    let mut start = 0;
                    $(
                        if k < start + $t::LEN {
                            return self.$i.coord_mut(k - start);
                        }
                        start += $t::LEN;
                    )*
                    panic!("coordinate {k} of a vector of {start}")
                }
            }
        };
    }
    tuple_coords!(A 0);
    tuple_coords!(A 0, B 1);
    tuple_coords!(A 0, B 1, C 2);
    tuple_coords!(A 0, B 1, C 2, D 3);
    tuple_coords!(A 0, B 1, C 2, D 3, E 4);
    tuple_coords!(A 0, B 1, C 2, D 3, E 4, F 5);
    tuple_coords!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
    tuple_coords!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
    tuple_coords!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
    tuple_coords!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
    tuple_coords!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
    tuple_coords!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);

    /// The unit vector along coordinate `k` ([`Coords`]).
    #[inline]
    pub fn unit<S: crate::Real, V: Coords<S>>(k: usize) -> V {
        let mut v = V::zero();
        *v.coord_mut(k) = S::one();
        v
    }

    /// `K` unit vectors at once, in lanes: lane `k` of coordinate
    /// `first + k` is one, every other lane zero (`f_hessian` and
    /// `f_jacobian` through `apply_lanes`, [`LANES`] coordinates a run).
    pub fn lane_seeds<S: crate::Real, V: Coords<crate::Lanes<S, K>>, const K: usize>(
        first: usize,
    ) -> V {
        let mut v = V::zero();
        for k in 0..K.min(V::LEN.saturating_sub(first)) {
            v.coord_mut(first + k).0[k] = S::one();
        }
        v
    }

    /// The most lanes `f_hessian` and `f_jacobian` run at once: more
    /// coordinates take several runs. A run's floats are `LANES` wide,
    /// which bounds every value of the generated code (and its stack in a
    /// debug build, where each `let` has a slot of its own) whatever the
    /// number of coordinates; GradBench's `ht` Jacobian ran as fast at 14
    /// lanes a run as at 28, and 1.3 times slower at 8.
    pub const LANES: usize = 16;

    /// Lanes are a tangent space, of one coordinate: `f_hessian` seeds
    /// and reads its lanes through [`Coords`] as it does floats.
    impl<T: crate::Real, const K: usize> Vector for crate::Lanes<T, K> {
        #[inline]
        fn zero() -> Self {
            crate::Lanes::zero()
        }
    }

    impl<T: crate::Real, const K: usize> Coords<crate::Lanes<T, K>> for crate::Lanes<T, K> {
        const LEN: usize = 1;
        #[inline]
        fn coord(&self, _: usize) -> Self {
            *self
        }
        #[inline]
        fn coord_mut(&mut self, _: usize) -> &mut Self {
            self
        }
    }

    /// What a caller may pass as the tangent of a differentiable parameter
    /// of type `T`: a tangent of type `T`, or [`Inactive`] (zero).
    #[diagnostic::on_unimplemented(
        message = "the tangent passed here has type `{Self}`, but the called function's parameter has type `{T}`",
        label = "argument of the wrong type for a differentiable parameter"
    )]
    pub trait Tangent<T> {
        fn tangent(self) -> T;
    }

    impl<T: Vector> Tangent<T> for T {
        #[inline]
        fn tangent(self) -> T {
            self
        }
    }

    impl<T: Vector> Tangent<T> for Inactive {
        #[inline]
        fn tangent(self) -> T {
            T::zero()
        }
    }

    /// What a caller may pass for a constant parameter: only [`Inactive`].
    #[diagnostic::on_unimplemented(
        message = "a differentiable value is passed to a constant parameter",
        label = "this argument depends on a differentiable input, but the called function's parameter is a constant (an integer, a bool, or marked `#[nondiff]`)",
        note = "make that parameter differentiable, or compute this argument from constants only"
    )]
    pub trait Constant {}

    impl Constant for Inactive {}

    /// A linear argument's position in a call to another `#[linear]`
    /// function's transpose.
    #[derive(Clone, Copy, Debug)]
    pub struct LinSlot;

    /// A coefficient argument in a call to another `#[linear]` function's
    /// transpose.
    #[derive(Clone, Copy, Debug)]
    pub struct Coef<T>(pub T);

    /// What a caller may pass for a coefficient parameter of a `#[linear]`
    /// function: a coefficient.
    #[diagnostic::on_unimplemented(
        message = "a linear value is passed to a coefficient parameter",
        label = "this argument depends on the linear parameters, but the called function's parameter is a coefficient: the call would not be linear",
        note = "mark that parameter `#[linear]` in the called function, or pass a value that does not depend on the linear parameters"
    )]
    pub trait CoefArg<T> {
        fn coef(self) -> T;
    }

    impl<T> CoefArg<T> for Coef<T> {
        #[inline]
        fn coef(self) -> T {
            self.0
        }
    }

    /// What a caller may pass for a linear parameter of a `#[linear]`
    /// function: a linear value.
    #[diagnostic::on_unimplemented(
        message = "a value that does not depend on the linear parameters is passed to a linear parameter",
        label = "the called function is linear in this parameter, so this argument makes the call affine",
        note = "pass a linear value, or `0.0`"
    )]
    pub trait LinearSlot {}

    impl LinearSlot for LinSlot {}

    /// How the second derivatives of a function reach those of the
    /// functions it calls: `g`'s linearization type names `g_jvp`'s, whose
    /// `__jvp_lin`, `__jvp_apply` and `__jvp_transpose` take `g`'s
    /// arguments and tangent slots as `g`'s own `__jvp` does. Implemented
    /// by `#[differentiable(order = 2)]` and `#[linear(order = 2)]` on
    /// functions other differentiable code can call.
    #[diagnostic::on_unimplemented(
        message = "a function with `order = 2` calls a function that is not differentiable twice",
        label = "`{Self}` is the linearization of a function differentiable once",
        note = "second derivatives of a function need those of every function it calls: write `#[differentiable(order = 2)]` (or `#[linear(order = 2)]`) on the called function too"
    )]
    pub trait SecondOrder {
        /// The linearization type of the callee's `_jvp`.
        type JvpLin;
        /// The linearization type of the callee's `_vjp`, which callers
        /// of a method of another block reach it by (they see no
        /// signature that would name it); `()` where `_vjp` cannot be
        /// differentiated, and for a method differentiable once, the
        /// stand-in its `JvpLin` is.
        type VjpLin;
    }

    /// Never implemented: the bound on the functions of the stand-in
    /// [`SecondOrder::JvpLin`] a method differentiable once has (its
    /// callers with `order = 2` outside its block cannot tell), so that
    /// rustc reports each call at the method's name, and nothing else.
    #[diagnostic::on_unimplemented(
        message = "a function with `order = 2` calls a method that is differentiable once",
        label = "this method has no second derivatives",
        note = "second derivatives of a function need those of every function it calls: write `#[differentiable(order = 2)]` on the method"
    )]
    pub trait DifferentiableTwice {}

    /// How differentiable code names the linearization type of a method it
    /// calls: `<Particle as Method<{ method_key("energy") }>>::Linearization`.
    /// A method lives in an `impl` block, where no alias or signature macro
    /// can sit beside it as one does beside a free function; a trait impl
    /// keyed by the method's name can, and the caller needs only the
    /// receiver's type, which it knows. `#[differentiable] impl` blocks
    /// implement it for each marked method that other differentiable code
    /// can call.
    #[diagnostic::on_unimplemented(
        message = "differentiable code cannot call this method of `{Self}`",
        label = "not a method that differentiable code can call",
        note = "a method called from differentiable code must be marked `#[differentiable]` inside a `#[differentiable] impl` block of its type, and take no arrays other than slices of floats (`&[f64]`, not `Vec<f64>` or `&[f64; 3]`), not slices both differentiable and `#[nondiff]`, no struct with `Vec` fields, nor a struct with constant fields; a method's `m_jvp` and `m_vjp` can be called only where `m` has `#[differentiable(order = 2)]`, and `m_vjp` only where it can be differentiated (where `m` passes a method of another block a constant or a slice, only if `m` takes no slices and at most 32 floats, for the derivative by forward mode)"
    )]
    pub trait Method<const NAME: u64> {
        type Linearization;
    }

    /// The key of a method's name in [`Method`]: its FNV-1a hash. Two
    /// method names of one type with the same key would make the two
    /// `Method` impls conflict, an error at compile time, never a wrong
    /// call.
    pub const fn method_key(name: &str) -> u64 {
        let bytes = name.as_bytes();
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut i = 0;
        while i < bytes.len() {
            h ^= bytes[i] as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
            i += 1;
        }
        h
    }

    /// The tape of an `if`/`else`: which branch ran, and that branch's
    /// saved values only. A `match` with more arms nests it.
    #[derive(Clone, Copy, Debug)]
    pub enum Branch<A, B> {
        Then(A),
        Else(B),
    }

    pub use ::std::vec::Vec;

    /// The tape of a loop holds one record per iteration, in a buffer
    /// recycled from call to call.
    pub use crate::tape_pool::{IntoRev, Tape};

    /// Appends one iteration's record to the tape of a loop whose trip
    /// count was known when the tape was allocated with room for all of
    /// them (a range, a list, a zip of the two, a replay).
    ///
    /// `Vec::push` may grow, by a call that returns; LLVM then spills the
    /// loop's state around it in every iteration, adding a store and a
    /// load to each loop-carried chain. Here a full tape is a bug, a call
    /// that never returns, so the check after it folds away with `push`'s
    /// own and the state stays in registers.
    #[inline(always)]
    pub fn record<T>(tape: &mut Vec<T>, x: T) {
        if tape.len() == tape.capacity() {
            overrun()
        }
        tape.push(x)
    }

    #[cold]
    #[inline(never)]
    fn overrun() -> ! {
        panic!("linear-ad internal error: a loop ran more iterations than its iterator announced")
    }

    /// A callee's linearization held by a caller that passed it parts of
    /// arrays (`f(&a[lo..hi])`): the caller's residual and transpose pass
    /// the same parts again, so the ranges are kept beside it, one per
    /// part in the order of the arguments.
    #[derive(Clone, Copy, Debug)]
    pub struct Ranged<M, const P: usize> {
        pub map: M,
        pub ranges: [(usize, usize); P],
    }

    impl<M: crate::TapeSize, const P: usize> crate::TapeSize for Ranged<M, P> {
        fn tape_bytes(&self) -> usize {
            core::mem::size_of::<Self>() - core::mem::size_of::<M>() + self.map.tape_bytes()
        }
    }

    /// Whether `x` is zero: the test a reversed loop whose incoming
    /// cotangents are all zero is skipped on (`Loop::zero_skip` in
    /// linear-core), for reals and lanes alike.
    #[inline]
    pub fn is_zero<T: Vector + PartialEq>(x: T) -> bool {
        x == T::zero()
    }

    /// A zeroed cotangent buffer of `n` elements: the accumulator the
    /// transpose of a function with an array parameter adds into.
    #[inline]
    pub fn zeros<T: Vector>(n: usize) -> Vec<T> {
        let mut v = Vec::with_capacity(n);
        v.resize(n, T::zero());
        v
    }

    /// Adds the cotangent `b` into the accumulator `a`, element by
    /// element: where a call passes one array to two of the callee's
    /// parameters, the second's cotangent comes back in a buffer of its
    /// own (`expand::calls`).
    #[inline]
    pub fn add_into<T: crate::Real>(a: &mut [T], b: &[T]) {
        assert_eq!(
            a.len(),
            b.len(),
            "cotangents of one array have different lengths"
        );
        for (x, y) in a.iter_mut().zip(b) {
            *x = *x + *y;
        }
    }

    /// The panic of a loop over `lo..hi` (visited downwards if
    /// `descending`) that reads past the end of one of the arrays of
    /// lengths `lens` (in the order the loop's body reads them), raised
    /// before the loop: the message is that of the first access to fail,
    /// in the first iteration that fails (the first, downwards; upwards,
    /// the first index past the shortest array), the first array too
    /// short for it. Generated code tests `lo < hi && (hi > len || ..)`
    /// itself, in line: after that test LLVM knows every index of the loop
    /// is in bounds, drops the checks inside the loop and can vectorise it
    /// (a reversed loop that accumulates `grad[i] += ..` is not vectorised
    /// with a check in it). A helper doing the test loses that knowledge.
    #[cold]
    #[inline(never)]
    #[track_caller]
    pub fn out_of_bounds<const K: usize>(
        lens: [usize; K],
        lo: usize,
        hi: usize,
        descending: bool,
    ) -> ! {
        let shortest = lens.iter().copied().min().unwrap_or(usize::MAX);
        let index = if descending { hi - 1 } else { lo.max(shortest) };
        let len = lens
            .iter()
            .copied()
            .find(|&n| n <= index)
            .unwrap_or(shortest);
        panic!("index out of bounds: the len is {len} but the index is {index}")
    }

    /// `a[start..start + len]`: the elements a loop reaches, which it then
    /// indexes in the window (`linear_core::codegen::window`), so that
    /// LLVM sees every index below the window's length. Out of bounds it
    /// panics as the loop would have: with the first index past the end
    /// that a loop running upwards (or, `descending`, downwards) reaches.
    #[inline]
    #[track_caller]
    pub fn window<T>(a: &[T], start: usize, len: usize, descending: bool) -> &[T] {
        // One test, `start + len <= a.len()`, after which the window's
        // length is `len` as LLVM sees it; an empty window fits anywhere,
        // as the loop that does not run reads nothing.
        let n = a.len();
        match start.checked_add(len) {
            Some(end) if end <= n => &a[start..end],
            _ if len == 0 => &a[..0],
            _ => window_past(n, start, len, descending),
        }
    }

    /// [`window`] of an array the loop writes in place.
    #[inline]
    #[track_caller]
    pub fn window_mut<T>(a: &mut [T], start: usize, len: usize, descending: bool) -> &mut [T] {
        let n = a.len();
        match start.checked_add(len) {
            Some(end) if end <= n => &mut a[start..end],
            _ if len == 0 => &mut a[..0],
            _ => window_past(n, start, len, descending),
        }
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn window_past(n: usize, start: usize, len: usize, descending: bool) -> ! {
        let index = if descending {
            start.saturating_add(len.saturating_sub(1))
        } else {
            start.max(n)
        };
        panic!("index out of bounds: the len is {n} but the index is {index}")
    }

    /// `v` without its last element, and that element: the reverse of a
    /// `push`, which ran before, so `v` is not empty.
    pub fn pop<T>(mut v: Vec<T>) -> (Vec<T>, T) {
        match v.pop() {
            Some(last) => (v, last),
            None => panic!("linear-ad internal error: a cotangent popped off an empty buffer"),
        }
    }

    /// The flat cotangent of an array of rows (`&[[T; M]]`, `&Vec<[T; M]>`,
    /// `Vec<[T; M]>`) as rows: one copy, at the end of the reverse pass.
    pub fn rows<T: Copy, const M: usize>(flat: Vec<T>) -> Vec<[T; M]> {
        flat.chunks_exact(M)
            .map(|c| ::core::array::from_fn(|j| c[j]))
            .collect()
    }

    /// The flat values of an array of structs (`&[Body]`), which the IR
    /// holds in their place: each generated function that runs the IR on
    /// such a parameter copies it first.
    pub fn flat_elements<S: crate::structs::ToFlat>(xs: &[S]) -> Vec<S::Flat> {
        xs.iter().map(crate::structs::ToFlat::flat).collect()
    }

    /// An array of tangent structs from the IR's cotangent buffer of
    /// their flat values.
    pub fn elements_from_flat<T: crate::structs::FromFlat>(flat: Vec<T::Flat>) -> Vec<T> {
        flat.into_iter().map(T::from_flat).collect()
    }

    /// [`rows`] for `&[[T; M]; N]` and `[[T; M]; N]`: from a flat `Vec`
    /// (a parameter's cotangent) or a flat array (a result built in a
    /// local array of rows).
    pub fn rows_array<T: Copy, const M: usize, const N: usize>(
        flat: impl AsRef<[T]>,
    ) -> [[T; M]; N] {
        let flat = flat.as_ref();
        ::core::array::from_fn(|i| ::core::array::from_fn(|j| flat[i * M + j]))
    }

    /// The flat array of `[[T; M]; N]`, `L = N * M` elements (a cotangent
    /// of rows to the IR's fixed-length array).
    pub fn flat_array<T: Copy, const M: usize, const N: usize, const L: usize>(
        rows: [[T; M]; N],
    ) -> [T; L] {
        ::core::array::from_fn(|k| rows[k / M][k % M])
    }

    /// The tape of a loop whose trip count is a compile-time constant, when
    /// its records are small: inline, no heap.
    pub use ::arrayvec::ArrayVec;

    /// A loop's states, recomputed for the reverse sweep under binomial
    /// checkpointing.
    pub use crate::replay::Replay;
}

/// The memory a linearization holds: what `f_lin` saved to apply and
/// transpose the derivative later. For a function with loops this grows
/// with the number of iterations.
pub trait TapeSize {
    /// Bytes of the tape, its heap-allocated per-iteration records included.
    fn tape_bytes(&self) -> usize;
}

#[cfg(test)]
mod tests {
    use super::__private::record;

    #[test]
    fn a_tape_takes_as_many_records_as_it_has_room_for_and_no_more() {
        let mut tape = Vec::with_capacity(2);
        record(&mut tape, 1.0);
        record(&mut tape, 2.0);
        assert_eq!(tape, [1.0, 2.0]);
        let overrun = std::panic::catch_unwind(move || record(&mut tape, 3.0));
        let message = overrun.expect_err("a third record must not fit");
        let message = message.downcast_ref::<&str>().copied().unwrap_or_default();
        assert!(message.contains("more iterations"), "{message}");
    }
}
