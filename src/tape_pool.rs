//! Recycled tape buffers.
//!
//! A loop's tape is a buffer of per-iteration records that lives from
//! the forward pass to the end of the reverse one. Optimisers, samplers
//! and benchmarks call a gradient many times with tapes of the same
//! size, and a fresh allocation per call costs more than the records:
//! glibc serves blocks above its mmap threshold (at most 32 MiB) by
//! `mmap`, and gives a freed heap top back to the operating system, so
//! every call faults the tape's pages in again, one per 4 KiB. GradBench's
//! `det` at ℓ = 9 (an 80 MB tape) ran its gradient at 7.3× the primal's
//! time with a fresh tape per call, and at 3.0× with this pool.
//!
//! So generated code keeps the tapes of its outermost loops in [`Tape`],
//! a `Vec` that goes back to a per-thread pool when dropped, and takes
//! them from there: after the first call, those loops allocate nothing.
//! Buffers under 128 KiB are not pooled: `malloc` serves them from the
//! heap's free lists without faulting pages in, and a lookup here would
//! only add to that. The pool holds at most [`limit`] bytes per thread
//! (256 MiB unless [`set_limit`] says otherwise); [`release`] frees what
//! the calling thread holds. Buffers are pooled by element type, so no
//! memory is reinterpreted and nothing here is `unsafe`.
//!
//! Plain `Vec`s remain for tapes whose records borrow (a callee's
//! linearization) or hold a generic float type, since a pool keyed by
//! type needs `'static` types. The records of loops inside loops go to
//! one flat buffer per record type, which is recycled too
//! (`linear_core::passes::records::flat_tapes`). (When each inner loop had
//! a `Vec` of its own, recycling those made LLVM lose the provenance
//! that let it vectorise `llsq`'s reversed inner loop; the flat buffer is
//! read through a slice made before that loop, and `llsq`'s gradient got
//! faster, not slower.)
//!
//! ```
//! use linear_ad::{differentiable, tape_pool};
//!
//! #[differentiable]
//! fn chain(x: &[f64]) -> f64 {
//!     let mut s = 0.0;
//!     for i in 0..x.len() {
//!         s = (s + x[i]).sin();
//!     }
//!     s
//! }
//!
//! let x = vec![0.5; 100_000];
//! let (_, g) = chain_vjp(&x, 1.0);
//! // One record per iteration, now free for the next call.
//! assert!(tape_pool::pooled() >= 100_000 * 8);
//! let (_, again) = chain_vjp(&x, 1.0);
//! assert_eq!(g, again);
//! let freed = tape_pool::release();
//! assert!(freed >= 100_000 * 8);
//! assert_eq!(tape_pool::pooled(), 0);
//! ```

use std::any::{Any, TypeId};
use std::cell::RefCell;

#[doc(hidden)]
/// A loop's tape: a `Vec` of records whose buffer is recycled (see the
/// [module documentation](self)).
pub struct Tape<T: 'static>(Vec<T>);

/// The calling thread's free buffers, by element type: each entry's value
/// is a `Vec<Vec<T>>` of empty buffers, most recently freed last. A
/// program has few tape types, so they are found by a linear search.
struct Pool {
    free: Vec<(TypeId, Box<dyn Any>)>,
    bytes: usize,
    limit: usize,
}

/// The pool's default size per thread.
const DEFAULT_LIMIT: usize = 256 << 20;

/// The smallest buffer the pool keeps: glibc's default mmap threshold,
/// below which `malloc` serves a tape from the heap's free lists.
const SMALLEST: usize = 128 << 10;

impl Pool {
    fn free_list<T: 'static>(&mut self) -> Option<&mut Vec<Vec<T>>> {
        let id = TypeId::of::<T>();
        let (_, list) = self.free.iter_mut().find(|(t, _)| *t == id)?;
        list.downcast_mut::<Vec<Vec<T>>>()
    }
}

thread_local! {
    static POOL: RefCell<Pool> = RefCell::new(Pool {
        free: Vec::new(),
        bytes: 0,
        limit: DEFAULT_LIMIT,
    });
}

fn bytes_of<T>(v: &Vec<T>) -> usize {
    v.capacity() * std::mem::size_of::<T>()
}

impl<T: 'static> Tape<T> {
    /// An empty buffer with room for at least `n` records: the calling
    /// thread's most recently freed buffer of records of this type with
    /// room, else a new one.
    ///
    /// Generated code records into it as a plain `Vec` and makes it a
    /// `Tape` after the loop ([`From`]): a `Vec` of records that need no
    /// drop frees its buffer without reading its length, so the loop
    /// keeps the length in a register; `Tape`'s drop reads it (to pool
    /// the buffer), which, on the path a panic in the loop would take,
    /// made LLVM store the length to memory in every iteration (`llsq`'s
    /// gradient ran 1.4 times the instructions).
    #[inline]
    pub fn buffer(n: usize) -> Vec<T> {
        // A `while` loop's tape starts empty (`n` is 0) and grows, so it
        // may reuse any buffer.
        if n != 0 && n.saturating_mul(std::mem::size_of::<T>()) < SMALLEST {
            return Vec::with_capacity(n);
        }
        take(n).unwrap_or_else(|| Vec::with_capacity(n))
    }

    /// An empty tape with room for at least `n` records ([`Tape::buffer`]).
    pub fn with_capacity(n: usize) -> Tape<T> {
        Tape(Tape::buffer(n))
    }
}

/// A pooled buffer of `T`s with room for `n`, if the calling thread has
/// one.
#[inline(never)]
fn take<T: 'static>(n: usize) -> Option<Vec<T>> {
    POOL.try_with(|p| {
        let mut p = p.borrow_mut();
        let free = p.free_list::<T>()?;
        // The most recently freed buffer with room: a function with two
        // loops of one record type asks for two sizes, and taking only
        // the last buffer would leave the other size to pile up.
        let at = free.iter().rposition(|v| v.capacity() >= n)?;
        let v = free.swap_remove(at);
        p.bytes -= bytes_of(&v);
        Some(v)
    })
    .ok()
    .flatten()
}

impl<T: 'static> From<Vec<T>> for Tape<T> {
    #[inline]
    fn from(v: Vec<T>) -> Tape<T> {
        Tape(v)
    }
}

impl<T: 'static> Drop for Tape<T> {
    #[inline]
    fn drop(&mut self) {
        if bytes_of(&self.0) >= SMALLEST {
            recycle(&mut self.0);
        }
    }
}

/// Puts `v`'s buffer in the calling thread's pool, if it has room.
#[inline(never)]
fn recycle<T: 'static>(v: &mut Vec<T>) {
    // Records first: they may hold tapes, which go back to the pool
    // themselves while it is not borrowed.
    v.clear();
    let v = std::mem::take(v);
    let b = bytes_of(&v);
    // A thread being torn down has no pool left; `v` is freed.
    let _ = POOL.try_with(|p| {
        let mut p = p.borrow_mut();
        if p.bytes + b > p.limit {
            return;
        }
        p.bytes += b;
        if p.free_list::<T>().is_none() {
            p.free
                .push((TypeId::of::<T>(), Box::new(Vec::<Vec<T>>::new())));
        }
        if let Some(free) = p.free_list::<T>() {
            free.push(v);
        }
    });
}

impl<T: 'static> std::ops::Deref for Tape<T> {
    type Target = Vec<T>;
    #[inline]
    fn deref(&self) -> &Vec<T> {
        &self.0
    }
}

impl<T: 'static> std::ops::DerefMut for Tape<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.0
    }
}

impl<T: Clone + 'static> Clone for Tape<T> {
    fn clone(&self) -> Tape<T> {
        let mut t = Tape::with_capacity(self.0.len());
        t.0.extend_from_slice(&self.0);
        t
    }
}

impl<T: std::fmt::Debug + 'static> std::fmt::Debug for Tape<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The records in order, taking the tape. The buffer is freed, not
/// pooled: generated code reads owned tapes in reverse ([`IntoRev`]).
impl<T: 'static> IntoIterator for Tape<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;
    fn into_iter(mut self) -> std::vec::IntoIter<T> {
        std::mem::take(&mut self.0).into_iter()
    }
}

#[doc(hidden)]
/// [`IntoRev::into_rev`]'s iterator for a [`Tape`]: pops records off it,
/// which leaves the buffer to go back to the pool (a `Vec`'s `IntoIter`
/// frees it).
pub struct Rev<T: 'static>(Tape<T>);

impl<T: 'static> Iterator for Rev<T> {
    type Item = T;
    #[inline]
    fn next(&mut self) -> Option<T> {
        self.0 .0.pop()
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.0.len(), Some(self.0.len()))
    }
}

impl<T: 'static> ExactSizeIterator for Rev<T> {}

#[doc(hidden)]
/// An owned list's records, last first, whatever its Rust type: a
/// [`Tape`], or the `Vec` or `ArrayVec` of records that cannot be pooled
/// or need no heap.
pub trait IntoRev {
    type Iter: Iterator;
    fn into_rev(self) -> Self::Iter;
}

impl<T: 'static> IntoRev for Tape<T> {
    type Iter = Rev<T>;
    #[inline]
    fn into_rev(self) -> Rev<T> {
        Rev(self)
    }
}

impl<T> IntoRev for Vec<T> {
    type Iter = std::iter::Rev<std::vec::IntoIter<T>>;
    #[inline]
    fn into_rev(self) -> Self::Iter {
        self.into_iter().rev()
    }
}

impl<T, const N: usize> IntoRev for arrayvec::ArrayVec<T, N> {
    type Iter = std::iter::Rev<arrayvec::IntoIter<T, N>>;
    #[inline]
    fn into_rev(self) -> Self::Iter {
        self.into_iter().rev()
    }
}

/// The most bytes of free tape buffers the calling thread keeps for
/// reuse.
pub fn limit() -> usize {
    POOL.with(|p| p.borrow().limit)
}

/// Sets how many bytes of free tape buffers the calling thread keeps
/// for reuse (256 MiB by default; 0 turns recycling off), freeing what it
/// holds if that is more.
pub fn set_limit(bytes: usize) {
    let over = POOL.with(|p| {
        let mut p = p.borrow_mut();
        p.limit = bytes;
        p.bytes > bytes
    });
    if over {
        release();
    }
}

/// Frees every tape buffer the calling thread keeps for reuse, and
/// returns how many bytes they held.
pub fn release() -> usize {
    let (free, bytes) = POOL.with(|p| {
        let mut p = p.borrow_mut();
        (
            std::mem::take(&mut p.free),
            std::mem::replace(&mut p.bytes, 0),
        )
    });
    // Every buffer is empty, so this frees memory only: no record's drop
    // runs, none touches the pool.
    drop(free);
    bytes
}

/// How many bytes of free tape buffers the calling thread holds.
pub fn pooled() -> usize {
    POOL.with(|p| p.borrow().bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Enough `f64`s to be pooled.
    const BIG: usize = SMALLEST / 8 * 4;

    #[test]
    fn a_dropped_tape_is_the_next_tape_of_its_type() {
        release();
        let mut t: Tape<f64> = Tape::with_capacity(BIG);
        t.push(1.0);
        let at = t.as_ptr();
        drop(t);
        assert_eq!(pooled(), BIG * 8);
        // A `while` loop's tape (room for nothing announced) and a range
        // loop's alike.
        let t: Tape<f64> = Tape::with_capacity(0);
        assert_eq!(t.as_ptr(), at);
        assert!(t.is_empty(), "a recycled tape has no records");
        assert_eq!(pooled(), 0);
        drop(t);
        let t: Tape<f64> = Tape::with_capacity(BIG / 2);
        assert_eq!(t.as_ptr(), at);
        // Another element type does not get it.
        let u: Tape<(f64, f64)> = Tape::with_capacity(0);
        assert_eq!(u.capacity(), 0);
        drop(t);
        assert_eq!(release(), BIG * 8);
        assert_eq!(pooled(), 0);
    }

    #[test]
    fn two_sizes_of_one_type_each_find_their_buffer_again() {
        release();
        let (a, b) = (
            Tape::<f64>::with_capacity(BIG),
            Tape::<f64>::with_capacity(2 * BIG),
        );
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        drop(b);
        drop(a);
        // The larger buffer is not the last one freed.
        let b = Tape::<f64>::with_capacity(2 * BIG);
        let a = Tape::<f64>::with_capacity(BIG);
        assert_eq!((a.as_ptr(), b.as_ptr()), (pa, pb));
        drop((a, b));
        assert_eq!(release(), 3 * BIG * 8, "no buffer was added");
    }

    #[test]
    fn small_tapes_and_tapes_beyond_the_limit_are_freed() {
        release();
        drop(Tape::<f64>::with_capacity(16));
        assert_eq!(pooled(), 0, "below the smallest pooled buffer");
        let old = limit();
        set_limit(BIG * 8);
        drop(Tape::<f64>::with_capacity(BIG));
        drop(Tape::<u64>::with_capacity(BIG));
        assert_eq!(pooled(), BIG * 8, "the second buffer would pass the limit");
        set_limit(0);
        assert_eq!(pooled(), 0, "a lower limit frees what is over it");
        drop(Tape::<f64>::with_capacity(BIG));
        assert_eq!(pooled(), 0, "a limit of 0 turns recycling off");
        set_limit(old);
    }

    #[test]
    fn a_tape_of_tapes_recycles_both() {
        release();
        let mut outer: Tape<(f64, Tape<f64>)> = Tape::with_capacity(BIG);
        outer.push((1.0, Tape::with_capacity(BIG)));
        // The inner tape goes back while the outer one is being pooled.
        drop(outer);
        let in_records = std::mem::size_of::<(f64, Tape<f64>)>();
        assert_eq!(pooled(), BIG * 8 + BIG * in_records);
        release();
    }

    #[test]
    fn an_owned_tape_read_last_first_goes_back_to_the_pool() {
        release();
        let mut t: Tape<u32> = Tape::with_capacity(BIG);
        t.extend([1, 2, 3]);
        let rev = IntoRev::into_rev(t);
        assert_eq!(rev.len(), 3);
        assert_eq!(rev.collect::<Vec<_>>(), [3, 2, 1]);
        assert_eq!(pooled(), BIG * 4);
        let v = [4u32, 5];
        let t: Tape<u32> = Tape::from(v.to_vec());
        assert_eq!(t.into_iter().collect::<Vec<_>>(), v, "in order");
        release();
    }

    #[test]
    fn a_clone_has_the_records_in_a_buffer_of_its_own() {
        let mut t: Tape<f64> = Tape::with_capacity(4);
        t.extend([1.0, 2.0]);
        let c = t.clone();
        assert_eq!(*c, [1.0, 2.0]);
        assert_ne!(c.as_ptr(), t.as_ptr());
        assert_eq!(format!("{c:?}"), "[1.0, 2.0]");
    }
}
