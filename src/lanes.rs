//! Tangents in lanes: `K` directional derivatives carried through one
//! sweep of a linearization.
//!
//! A dense Jacobian of a function with few inputs is `K` applications of
//! its linear map, one per input direction (JAX's `jacfwd`, a `vmap` of
//! the JVP). Applying the map `K` times reads the tape `K` times and runs
//! every loop `K` times. [`Lanes`] makes the `K` directions one value:
//! `#[differentiable(lanes)]` adds `apply_lanes` to the linearization,
//! the same residual code with every tangent float replaced by a
//! `Lanes<f64, K>`, and `f_jvp_lanes`, forward mode itself in lanes (no
//! tape), and, for inputs and results of fixed size, `f_jacobian`. Each tape value is read once and scales all `K`
//! lanes, which LLVM turns into packed arithmetic over the lanes.
//!
//! Lane `j` of every result is exactly what `apply` returns for the
//! tangent made of the inputs' lane `j`: the same operations in the same
//! order, applied lane by lane (no fused multiply-add, no reassociation).
//!
//! The operators are loops over the lanes in place, which LLVM unrolls
//! and vectorises at any `K`. Written with `array::map` and
//! `array::from_fn`, they were calls at 28 lanes, and GradBench's `ht`
//! Jacobian took 6.7 times as long (107 against 16 times its primal).
//!
//! ```
//! use linear_ad::{differentiable, Lanes, LinearMap};
//!
//! #[differentiable(lanes)]
//! fn polar(r: f64, t: f64) -> (f64, f64) {
//!     (r * t.cos(), r * t.sin())
//! }
//!
//! let (_, lin) = polar_lin(2.0, 0.5);
//! // Both columns of the 2×2 Jacobian in one sweep: lane j is ∂/∂(input j).
//! let (dx, dy) = lin.apply_lanes((Lanes::<f64, 2>::unit(0), Lanes::unit(1)));
//! assert_eq!([dx[0], dy[0]], [0.5f64.cos(), 0.5f64.sin()]);
//! assert_eq!(dx[1], lin.apply((0.0, 1.0)).0);
//! // `lanes` also generates the whole Jacobian, from the same run.
//! assert_eq!(polar_jacobian(2.0, 0.5).1, [dx.0, dy.0]);
//! ```

use core::ops::{Add, AddAssign, Index, IndexMut, Mul, Neg, Sub};

/// `K` tangents (or cotangents) of one float, one per lane, computed
/// together: the tangent floats of `f_jvp_lanes` and `apply_lanes`,
/// which `#[differentiable(lanes)]` generates (see
/// [`differentiable`](crate::differentiable)). Lane `j` of a result is
/// what `f_jvp` or `apply` gives for lane `j` of the tangents, bit for
/// bit.
///
/// ```
/// use linear_ad::{differentiable, Lanes, LinearMap};
///
/// #[differentiable(lanes)]
/// fn polar(r: f64, t: f64) -> (f64, f64) {
///     (r * t.cos(), r * t.sin())
/// }
///
/// // Both columns of the 2×2 Jacobian in one run: lane j is ∂/∂(input j).
/// let (_, (dx, dy)) = polar_jvp_lanes(2.0, 0.5, Lanes::<f64, 2>::unit(0), Lanes::unit(1));
/// assert_eq!([dx[0], dy[0]], [0.5f64.cos(), 0.5f64.sin()]);
/// let (_, lin) = polar_lin(2.0, 0.5);
/// assert_eq!(dx[1], lin.apply((0.0, 1.0)).0);
/// assert_eq!(polar_jacobian(2.0, 0.5).1, [dx.0, dy.0]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lanes<T, const K: usize>(pub [T; K]);

impl<T: num_traits::Zero + Copy, const K: usize> Lanes<T, K> {
    /// Every lane `v`.
    #[inline]
    pub fn splat(v: T) -> Self {
        Lanes([v; K])
    }

    /// Every lane zero.
    #[inline]
    pub fn zero() -> Self {
        Lanes([T::zero(); K])
    }
}

impl<T: num_traits::Zero + num_traits::One + Copy, const K: usize> Lanes<T, K> {
    /// One in lane `j`, zero elsewhere: the tangent of input `j` among
    /// `K` seeded at once (panics if `j >= K`).
    #[inline]
    pub fn unit(j: usize) -> Self {
        let mut l = Self::zero();
        l.0[j] = T::one();
        l
    }
}

impl<T: num_traits::Zero + Copy, const K: usize> Default for Lanes<T, K> {
    #[inline]
    fn default() -> Self {
        Self::zero()
    }
}

impl<T, const K: usize> Index<usize> for Lanes<T, K> {
    type Output = T;
    #[inline]
    fn index(&self, j: usize) -> &T {
        &self.0[j]
    }
}

impl<T, const K: usize> IndexMut<usize> for Lanes<T, K> {
    #[inline]
    fn index_mut(&mut self, j: usize) -> &mut T {
        &mut self.0[j]
    }
}

impl<T: Add<Output = T> + Copy, const K: usize> Add for Lanes<T, K> {
    type Output = Self;
    #[inline]
    fn add(mut self, o: Self) -> Self {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a = *a + b;
        }
        self
    }
}

impl<T: Sub<Output = T> + Copy, const K: usize> Sub for Lanes<T, K> {
    type Output = Self;
    #[inline]
    fn sub(mut self, o: Self) -> Self {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a = *a - b;
        }
        self
    }
}

impl<T: AddAssign + Copy, const K: usize> AddAssign for Lanes<T, K> {
    #[inline]
    fn add_assign(&mut self, o: Self) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a += b;
        }
    }
}

impl<T: Neg<Output = T> + Copy, const K: usize> Neg for Lanes<T, K> {
    type Output = Self;
    #[inline]
    fn neg(mut self) -> Self {
        for a in self.0.iter_mut() {
            *a = -*a;
        }
        self
    }
}

/// Scaling by a float, the one product linear code has (`c · ẋ`, with
/// `c` from the tape). Written per float type: a blanket
/// `impl<T> Mul<Lanes<T, K>> for T` is not allowed by the orphan rules.
macro_rules! scale {
    ($($t:ty),*) => {$(
        impl<const K: usize> Mul<Lanes<$t, K>> for $t {
            type Output = Lanes<$t, K>;
            #[inline]
            fn mul(self, mut l: Lanes<$t, K>) -> Lanes<$t, K> {
                // `a * c` is `c * a` bit for bit (IEEE products commute).
                for a in l.0.iter_mut() {
                    *a *= self;
                }
                l
            }
        }
    )*};
}
scale!(f32, f64);

#[cfg(test)]
mod tests {
    use super::Lanes;

    #[test]
    fn each_operation_is_the_scalar_one_per_lane() {
        let a = Lanes([1.5f64, -2.0, 0.25]);
        let b = Lanes([0.5f64, 4.0, -8.0]);
        assert_eq!(a + b, Lanes([2.0, 2.0, -7.75]));
        assert_eq!(a - b, Lanes([1.0, -6.0, 8.25]));
        assert_eq!(-a, Lanes([-1.5, 2.0, -0.25]));
        assert_eq!(3.0 * a, Lanes([4.5, -6.0, 0.75]));
        let mut c = a;
        c += b;
        assert_eq!(c, a + b);
        assert_eq!(Lanes::<f32, 3>::unit(1), Lanes([0.0, 1.0, 0.0]));
        assert_eq!(Lanes::<f64, 2>::default(), Lanes::splat(0.0));
    }
}
