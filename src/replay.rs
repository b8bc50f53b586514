//! Reversing a loop in bounded memory: Griewank's binomial checkpointing.
//!
//! Under `#[differentiable(checkpoint = "binomial")]` the forward pass of a
//! loop saves only its initial state and its trip count; the reverse sweep
//! needs the states in the opposite order, and [`Replay`] produces them,
//! recomputing from a few stored states (snapshots) with the loop's own
//! step.
//!
//! The schedule is the binomial one of Griewank ("Achieving logarithmic
//! growth of temporal and spatial complexity in reverse automatic
//! differentiation", 1992; Revolve, Griewank and Walther, ACM TOMS 2000).
//! With `c` snapshots (the initial state counted), `n` states are
//! reversed evaluating each step at most `t` times, `t` the least number
//! with `n ≤ C(c + t, c)`: 10⁶ iterations with 100 snapshots evaluate each
//! step at most 4 times. To reverse states `j..=k` from the snapshot at
//! `j` with `s` free slots, the next snapshot goes to the position that
//! minimises the total number of steps; the rule (`split`) is checked
//! against an exhaustive search in the tests below.

use std::vec::Vec;

/// The states `s0 = init`, `s(k+1) = step(sk)` of a loop, `count` of them,
/// produced in order or in reverse order.
///
/// Generated code calls [`Replay::next_state`] once per iteration with the
/// loop's step; in reverse it holds at most `snapshots` states at a time.
#[derive(Clone, Debug)]
pub struct Replay<S> {
    /// Stored states (index, state), indices increasing; the first is the
    /// initial state until it is yielded.
    stack: Vec<(u64, S)>,
    /// Forward: states yielded so far. Reverse: states not yet yielded.
    pos: u64,
    count: u64,
    snapshots: usize,
    rev: bool,
    steps: u64,
}

impl<S: Clone> Replay<S> {
    /// `count` states from `init`, reversed if `rev`, keeping at most
    /// `snapshots` states (at least 1). The count is a `usize`, the one
    /// integer type tapes hold (see `linear_core::codegen`).
    pub fn new(init: S, count: usize, snapshots: u32, rev: bool) -> Replay<S> {
        let count = count as u64;
        let snapshots = (snapshots.max(1) as usize).min(count.max(1) as usize);
        let mut stack = Vec::with_capacity(if rev { snapshots } else { 1 });
        stack.push((0, init));
        Replay {
            stack,
            pos: if rev { count } else { 0 },
            count,
            snapshots,
            rev,
            steps: 0,
        }
    }

    /// The next state in the replay's order, computing states with `step`;
    /// `None` after the last.
    pub fn next_state(&mut self, step: impl FnMut(S) -> S) -> Option<S> {
        if self.rev {
            self.prev(step)
        } else {
            self.forward(step)
        }
    }

    /// How many times `step` has run.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    fn forward(&mut self, mut step: impl FnMut(S) -> S) -> Option<S> {
        if self.pos >= self.count {
            return None;
        }
        let (_, cur) = self.stack.first_mut()?;
        if self.pos > 0 {
            *cur = step(cur.clone());
            self.steps += 1;
        }
        self.pos += 1;
        Some(cur.clone())
    }

    fn prev(&mut self, mut step: impl FnMut(S) -> S) -> Option<S> {
        let target = self.pos.checked_sub(1)?;
        loop {
            let (j, held) = self.stack.last()?;
            let j = *j;
            if j == target {
                self.pos = target;
                return self.stack.pop().map(|(_, s)| s);
            }
            let mut s = held.clone();
            let free = self.snapshots.saturating_sub(self.stack.len()) as u64;
            // Run to the target without storing when no slot is free, or to
            // the next snapshot's position.
            let run = if free == 0 {
                target - j
            } else {
                split(target - j + 1, free)
            };
            for _ in 0..run {
                s = step(s);
            }
            self.steps += run;
            if free == 0 {
                self.pos = target;
                return Some(s);
            }
            self.stack.push((j + run, s));
        }
    }
}

/// `C(s + t + 1, s + 1)`: the most states that `s` free snapshots beside
/// the held one reverse with each step evaluated at most `t` times
/// (saturating).
fn reach(s: u64, t: u64) -> u64 {
    let n = u128::from(s) + u128::from(t) + 1;
    let k = u128::from(t.min(s + 1));
    let mut c: u128 = 1;
    for i in 1..=k {
        c = c * (n - k + i) / i;
        if c > u128::from(u64::MAX) {
            return u64::MAX;
        }
    }
    c as u64
}

/// Where to put the next snapshot, as an offset from the held state, to
/// reverse `len ≥ 2` states with `free ≥ 1` free slots: anywhere that
/// leaves the right part reversible with one slot fewer and the left part
/// with one repetition fewer keeps each step's evaluations under the
/// binomial bound; of those offsets, the ones from `reach(free, t - 2)` up
/// give the fewest steps in all.
fn split(len: u64, free: u64) -> u64 {
    let mut t = 0;
    while reach(free, t) < len {
        t += 1;
    }
    let low = if t >= 2 { reach(free, t - 2) } else { 1 };
    low.max(len.saturating_sub(reach(free - 1, t)))
        .clamp(1, len - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// States are the indices themselves; the step counts how often it runs.
    fn reversed(n: i64, snapshots: u32) -> (Vec<i64>, u64, usize) {
        let mut r = Replay::new(0i64, n as usize, snapshots, true);
        let mut out = Vec::new();
        let mut most = 0;
        while let Some(s) = r.next_state(|s| s + 1) {
            most = most.max(r.stack.len() + 1);
            out.push(s);
        }
        (out, r.steps(), most)
    }

    /// The fewest steps any schedule needs, by exhaustive search.
    fn optimum(len: u64, free: u64, memo: &mut std::collections::HashMap<(u64, u64), u64>) -> u64 {
        if len <= 1 {
            return 0;
        }
        if free == 0 {
            return len * (len - 1) / 2;
        }
        if let Some(&v) = memo.get(&(len, free)) {
            return v;
        }
        let best = (1..len)
            .map(|m| m + optimum(len - m, free - 1, memo) + optimum(m, free, memo))
            .min()
            .unwrap_or(0);
        memo.insert((len, free), best);
        best
    }

    #[test]
    fn yields_every_state_in_reverse_order() {
        for n in 0..60 {
            for c in 1..6 {
                let (out, _, most) = reversed(n, c);
                let want: Vec<i64> = (0..n).rev().collect();
                assert_eq!(out, want, "n = {n}, snapshots = {c}");
                // The stack plus the state being yielded.
                assert!(
                    most <= c as usize + 1,
                    "n = {n}, snapshots = {c}: {most} held"
                );
            }
        }
    }

    #[test]
    fn forward_yields_states_in_order_with_one_step_each() {
        let mut r = Replay::new(1.0f64, 5, 3, false);
        let mut out = Vec::new();
        while let Some(s) = r.next_state(|s| s * 2.0) {
            out.push(s);
        }
        assert_eq!(out, [1.0, 2.0, 4.0, 8.0, 16.0]);
        assert_eq!(r.steps(), 4);
    }

    #[test]
    fn total_steps_are_the_optimum() {
        let mut memo = Default::default();
        for c in 2..7u32 {
            for n in 1..250i64 {
                let (_, steps, _) = reversed(n, c);
                let best = optimum(n as u64, u64::from(c) - 1, &mut memo);
                assert_eq!(steps, best, "n = {n}, snapshots = {c}");
            }
        }
    }

    #[test]
    fn each_step_runs_at_most_the_binomial_bound() {
        // 10^5 states with 20 snapshots: C(20 + t, 20) first reaches 10^5
        // at t = 6 (C(25, 20) = 53,130; C(26, 20) = 230,230).
        let n = 100_000u64;
        let mut counts = vec![0u32; n as usize];
        let mut r = Replay::new(0u64, n as usize, 20, true);
        while r
            .next_state(|s| {
                counts[s as usize] += 1;
                s + 1
            })
            .is_some()
        {}
        let t = (0..).find(|&t| reach(19, t) >= n).unwrap_or(0);
        assert_eq!(t, 6);
        assert!(counts.iter().all(|&k| k as u64 <= t));
    }

    #[test]
    fn one_snapshot_recomputes_from_the_start() {
        let (out, steps, _) = reversed(5, 1);
        assert_eq!(out, [4, 3, 2, 1, 0]);
        assert_eq!(steps, 4 + 3 + 2 + 1);
    }

    #[test]
    fn reach_is_the_binomial_coefficient() {
        assert_eq!(reach(0, 3), 4);
        assert_eq!(reach(1, 3), 10);
        assert_eq!(reach(9, 13), 1_144_066); // C(23, 10)
        assert_eq!(reach(10_000, 10_000), u64::MAX);
    }
}
