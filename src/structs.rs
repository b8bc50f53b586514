//! What `#[derive(Differentiable)]` builds on: the public
//! [`Differentiable`](crate::Differentiable) trait, and the conversions
//! generated code uses to move a struct in and out of the IR, where a
//! struct is the tuple of its differentiable fields.
//!
//! A struct's *flat* value is that tuple: its differentiable fields in
//! declaration order, a nested struct's field as the nested struct's own
//! flat value, arrays and tuples as they are. Integer, `bool` and
//! `#[nondiff]` fields are not part of it. A tangent struct holds exactly
//! the differentiable fields, so it converts both ways; a struct with
//! constant fields converts only into its flat value (a function cannot
//! rebuild its constants from a tangent).
//!
//! A `Vec` field is not part of the flat value either: a function reads it
//! in place ([`ArrayField`]), and a tangent struct with `Vec` fields is
//! rebuilt from its flat value and their buffers ([`FromParts`]).

/// Reads the flat value of a struct (see the module doc) by copying its
/// differentiable fields.
pub trait ToFlat {
    type Flat;
    fn flat(&self) -> Self::Flat;
}

/// Builds a struct from its flat value: for structs without constant
/// fields, and for every tangent struct.
pub trait FromFlat: ToFlat {
    fn from_flat(flat: Self::Flat) -> Self;
}

/// A struct's `Vec` field, the `K`-th of its `Vec` fields in declaration
/// order. A `Vec` is no part of the flat value: the IR holds it as an
/// array of its own, read in place, so a function borrows it from the
/// struct (and its tangent), and its cotangent is a buffer of its own.
pub trait ArrayField<const K: usize> {
    type Elem;
    fn array(&self) -> &[Self::Elem];
}

/// Builds a tangent struct with `Vec` fields from its flat value and its
/// `Vec` fields' cotangent buffers (`Arrays`, a tuple of `Vec`s in
/// declaration order): what [`FromFlat`] is to a tangent without them.
pub trait FromParts: ToFlat {
    type Arrays;
    fn from_parts(flat: Self::Flat, arrays: Self::Arrays) -> Self;
}

impl<T: ToFlat + ?Sized> ToFlat for &T {
    type Flat = T::Flat;
    #[inline]
    fn flat(&self) -> T::Flat {
        (**self).flat()
    }
}

macro_rules! leaf {
    ($($t:ty),*) => {$(
        impl ToFlat for $t {
            type Flat = $t;
            #[inline]
            fn flat(&self) -> $t {
                *self
            }
        }
        impl FromFlat for $t {
            #[inline]
            fn from_flat(flat: $t) -> $t {
                flat
            }
        }
    )*};
}
leaf!(f32, f64);

impl<T: ToFlat, const N: usize> ToFlat for [T; N] {
    type Flat = [T::Flat; N];
    #[inline]
    fn flat(&self) -> Self::Flat {
        ::core::array::from_fn(|i| self[i].flat())
    }
}

impl<T: FromFlat, const N: usize> FromFlat for [T; N] {
    #[inline]
    fn from_flat(flat: Self::Flat) -> Self {
        let mut parts = flat.into_iter();
        ::core::array::from_fn(|_| match parts.next() {
            Some(p) => T::from_flat(p),
            None => unreachable!("an array's flat value has its length"),
        })
    }
}

macro_rules! tuple_flat {
    ($($t:ident $i:tt),*) => {
        impl<$($t: ToFlat),*> ToFlat for ($($t,)*) {
            type Flat = ($($t::Flat,)*);
            #[inline]
            fn flat(&self) -> Self::Flat {
                ($(self.$i.flat(),)*)
            }
        }
        impl<$($t: FromFlat),*> FromFlat for ($($t,)*) {
            #[inline]
            fn from_flat(flat: Self::Flat) -> Self {
                ($($t::from_flat(flat.$i),)*)
            }
        }
    };
}
for_tuples!(tuple_flat);

/// The zero of a tangent type: a derived tangent struct's `Default`
/// (an empty `Vec` for a `Vec` field, whose length no type gives).
pub trait Zero {
    fn __zero() -> Self;
}

impl Zero for f64 {
    #[inline]
    fn __zero() -> f64 {
        0.0
    }
}

impl Zero for f32 {
    #[inline]
    fn __zero() -> f32 {
        0.0
    }
}

impl<T: Zero, const N: usize> Zero for [T; N] {
    #[inline]
    fn __zero() -> Self {
        ::core::array::from_fn(|_| T::__zero())
    }
}

impl<T> Zero for ::std::vec::Vec<T> {
    #[inline]
    fn __zero() -> Self {
        ::std::vec::Vec::new()
    }
}

macro_rules! tuple_zero {
    ($($t:ident $i:tt),*) => {
        impl<$($t: Zero),*> Zero for ($($t,)*) {
            #[inline]
            fn __zero() -> Self {
                ($($t::__zero(),)*)
            }
        }
    };
}
for_tuples!(tuple_zero);

/// The vector-space operations of a tangent type over the scalar `S`, so
/// a derived tangent struct can implement `Add`, `Sub`, `Neg` and `Mul<S>`
/// field by field whatever its fields are (floats, arrays, tuples, `Vec`s,
/// nested tangents).
pub trait Linear<S>: Sized {
    fn __add(self, other: Self) -> Self;
    fn __sub(self, other: Self) -> Self;
    fn __neg(self) -> Self;
    fn __scale(self, s: S) -> Self;
}

macro_rules! leaf_linear {
    ($($t:ty),*) => {$(
        impl Linear<$t> for $t {
            #[inline]
            fn __add(self, other: $t) -> $t {
                self + other
            }
            #[inline]
            fn __sub(self, other: $t) -> $t {
                self - other
            }
            #[inline]
            fn __neg(self) -> $t {
                -self
            }
            #[inline]
            fn __scale(self, s: $t) -> $t {
                self * s
            }
        }
    )*};
}
leaf_linear!(f32, f64);

impl<S: Copy, T: Linear<S>, const N: usize> Linear<S> for [T; N] {
    #[inline]
    fn __add(self, other: Self) -> Self {
        let mut b = other.into_iter();
        self.map(|a| match b.next() {
            Some(b) => a.__add(b),
            None => unreachable!("arrays of one type have one length"),
        })
    }
    #[inline]
    fn __sub(self, other: Self) -> Self {
        self.__add(other.__neg())
    }
    #[inline]
    fn __neg(self) -> Self {
        self.map(T::__neg)
    }
    #[inline]
    fn __scale(self, s: S) -> Self {
        self.map(|a| a.__scale(s))
    }
}

impl<S: Copy, T: Linear<S>> Linear<S> for ::std::vec::Vec<T> {
    /// Panics when the lengths differ, as adding vectors of two spaces is
    /// a bug in the caller.
    fn __add(self, other: Self) -> Self {
        assert_eq!(self.len(), other.len(), "tangents of different lengths");
        self.into_iter()
            .zip(other)
            .map(|(a, b)| a.__add(b))
            .collect()
    }
    fn __sub(self, other: Self) -> Self {
        self.__add(other.__neg())
    }
    fn __neg(self) -> Self {
        self.into_iter().map(T::__neg).collect()
    }
    fn __scale(self, s: S) -> Self {
        self.into_iter().map(|a| a.__scale(s)).collect()
    }
}

macro_rules! tuple_linear {
    ($($t:ident $i:tt),*) => {
        impl<S: Copy, $($t: Linear<S>),*> Linear<S> for ($($t,)*) {
            #[inline]
            fn __add(self, other: Self) -> Self {
                ($(self.$i.__add(other.$i),)*)
            }
            #[inline]
            fn __sub(self, other: Self) -> Self {
                ($(self.$i.__sub(other.$i),)*)
            }
            #[inline]
            fn __neg(self) -> Self {
                ($(self.$i.__neg(),)*)
            }
            #[inline]
            fn __scale(self, s: S) -> Self {
                ($(self.$i.__scale(s),)*)
            }
        }
    };
}
for_tuples!(tuple_linear);
