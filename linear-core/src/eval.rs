//! An interpreter for Linear A that counts work by the cost model of
//! section 4.3:
//!
//! * every non-linear primitive costs 1;
//! * linear addition, negation and scaling cost 1 per scalar of the result;
//! * `drop(e)` costs the work of `e` plus 1 per scalar (linear or not) that
//!   `e` returns;
//! * a call costs its body; `let` costs its bound expression plus its body;
//! * a case costs the arm that runs; a loop costs its iterations (bodies
//!   and `while` conditions), nothing more: carrying state and collecting
//!   per-iteration values into lists is data movement, like tuples;
//! * a replay costs its `count − 1` evaluations of `next` in either
//!   direction: the model charges the values a program computes, not the
//!   schedule generated code follows to bound its memory (reversed, the
//!   binomial schedule evaluates `next` at most `r·count` times, `r` its
//!   repetition number; BENCHMARKS.md measures it);
//! * an accumulation `laccum(ā, i, v̇)` costs 1 per scalar of the element
//!   (an addition); reading an element, `index(a, i)` or `lindex(ȧ, i)`,
//!   costs 0, as unpacking a tuple does (a projection; T turns an in-place
//!   read into an accumulation as it turns `dup` into an addition). The
//!   model charges elements touched, never whole arrays, which is what
//!   makes T's work bound hold for linear arrays (invariant 11 of
//!   [`crate::check`]) and lets U read an input array again in the
//!   residual instead of saving its elements, at no cost;
//! * everything else (literals, constants, tuples, injections, unpacking,
//!   returns, `dup`, linear zero, array reads, `len`) costs 0.
//!
//! Integers and booleans count one scalar each when dropped, like reals.
//!
//! A `zeroskip` loop entered with every carried real zero is skipped, as
//! generated code skips it; the interpreter still runs it (and charges
//! it), and returns an error if that changed its state: so every
//! evaluation of a skipped loop checks invariant 12 of [`crate::check`].
//!
//! Values are computed in f64 whatever the declared float type. Input: a
//! program that type-checks ([`crate::check`]); on anything else the
//! interpreter returns an error rather than panicking.

use std::collections::HashMap;
use std::fmt;

use crate::ir::{Expr, Iter, Loop, Program, Scalar, Stmt, Ty, Var};

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Real(f64),
    Int(i64),
    Bool(bool),
    Tuple(Vec<Value>),
    /// Alternative `k` of a sum.
    Sum(usize, Box<Value>),
    /// A list (a loop's tape).
    List(Vec<Value>),
    /// An array. Unlike a list's, its elements count no scalars of their
    /// own in the cost model (discarding an array or holding it on a tape
    /// touches no element: a reference in generated code); they do count
    /// in a dot product.
    Array(Vec<Value>),
}

impl Value {
    pub fn zero(t: &Ty) -> Value {
        match t {
            Ty::Real(_) => Value::Real(0.0),
            Ty::Tuple(ts) => Value::Tuple(ts.iter().map(Value::zero).collect()),
            // Never linear (the checker forbids it): an empty value.
            Ty::Int | Ty::Bool | Ty::Sum(_) | Ty::List(..) | Ty::Tape(_) => Value::Tuple(vec![]),
            // No zero form (invariant 11); `n` zeros where the length is
            // in the type.
            Ty::Array(e, n) => Value::Array(vec![Value::zero(e); n.unwrap_or(0) as usize]),
        }
    }

    pub fn scalars(&self) -> u64 {
        match self {
            Value::Real(_) | Value::Int(_) | Value::Bool(_) => 1,
            Value::Tuple(vs) | Value::List(vs) => vs.iter().map(Value::scalars).sum(),
            Value::Array(_) => 0,
            Value::Sum(_, v) => v.scalars(),
        }
    }

    pub fn as_real(&self) -> Option<f64> {
        match self {
            Value::Real(x) => Some(*x),
            Value::Int(_)
            | Value::Bool(_)
            | Value::Tuple(_)
            | Value::Sum(..)
            | Value::List(_)
            | Value::Array(_) => None,
        }
    }

    fn scalar(&self) -> Option<Scalar> {
        match self {
            Value::Real(x) => Some(Scalar::Real(*x)),
            Value::Int(n) => Some(Scalar::Int(*n)),
            Value::Bool(b) => Some(Scalar::Bool(*b)),
            Value::Tuple(_) | Value::Sum(..) | Value::List(_) | Value::Array(_) => None,
        }
    }

    /// The scalars in order, flattened (integers and booleans as reals, a
    /// sum's tag before its value).
    pub fn flatten(&self, out: &mut Vec<f64>) {
        match self {
            Value::Real(x) => out.push(*x),
            Value::Int(n) => out.push(*n as f64),
            Value::Bool(b) => out.push(f64::from(u8::from(*b))),
            Value::Tuple(vs) | Value::List(vs) | Value::Array(vs) => {
                vs.iter().for_each(|v| v.flatten(out))
            }
            Value::Sum(k, v) => {
                out.push(*k as f64);
                v.flatten(out);
            }
        }
    }

    fn zip(&self, other: &Value, f: &impl Fn(f64, f64) -> f64) -> Result<Value, EvalError> {
        match (self, other) {
            (Value::Real(a), Value::Real(b)) => Ok(Value::Real(f(*a, *b))),
            (Value::Tuple(a), Value::Tuple(b)) if a.len() == b.len() => Ok(Value::Tuple(
                a.iter()
                    .zip(b)
                    .map(|(x, y)| x.zip(y, f))
                    .collect::<Result<_, _>>()?,
            )),
            _ => Err(EvalError(
                "linear addition of values of different shapes".into(),
            )),
        }
    }

    fn map(&self, f: &impl Fn(f64) -> f64) -> Value {
        match self {
            Value::Real(a) => Value::Real(f(*a)),
            Value::Tuple(vs) => Value::Tuple(vs.iter().map(|v| v.map(f)).collect()),
            // Not vectors: linear operations never reach them.
            Value::Int(_) | Value::Bool(_) | Value::Sum(..) | Value::List(_) | Value::Array(_) => {
                self.clone()
            }
        }
    }
}

/// Dot product of two values of the same shape, as the paper's ⟨·,·⟩.
pub fn dot(a: &[Value], b: &[Value]) -> f64 {
    let (mut xa, mut xb) = (Vec::new(), Vec::new());
    a.iter().for_each(|v| v.flatten(&mut xa));
    b.iter().for_each(|v| v.flatten(&mut xb));
    xa.iter().zip(&xb).map(|(x, y)| x * y).sum()
}

#[derive(Clone, Debug, PartialEq)]
pub struct EvalError(pub String);

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EvalError {}

/// Results of a call: non-linear values, linear values, the work done, the
/// largest magnitude a linear operation produced (what rounding errors in
/// the linear results scale with), and the number of in-place writes to
/// linear arrays (`lset`, `lpush`) done.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub nl: Vec<Value>,
    pub lin: Vec<Value>,
    pub work: u64,
    pub max_linear: f64,
    /// Each transposes to a read and a write of a zero (the slot is taken
    /// out of the cotangent buffer): one unit more than the write, which
    /// Thm 7.1's bound allows for arrays. A push's transpose, the pop,
    /// takes its slot out too: the model charges the pop one unit, and
    /// the allowance covers the accumulations into the slot before it (an
    /// in-place read is free, its transposed accumulation is not).
    pub writes: u64,
    /// `zeroskip` loops skipped (each run anyway, and found to leave its
    /// state unchanged).
    pub skipped: u64,
}

/// Evaluates `func` in `p` on the given arguments. `consts` gives the values
/// of [`Expr::Const`] names, if the program has any.
pub fn run(
    p: &Program,
    func: &str,
    nl: &[Value],
    lin: &[Value],
    consts: &HashMap<Var, Value>,
) -> Result<Outcome, EvalError> {
    let mut m = Machine {
        p,
        consts,
        work: 0,
        max_linear: 0.0,
        writes: 0,
        skipped: 0,
    };
    let (nl, lin) = m.call(&Var::new(func), nl.to_vec(), lin.to_vec())?;
    Ok(Outcome {
        nl,
        lin,
        work: m.work,
        max_linear: m.max_linear,
        writes: m.writes,
        skipped: m.skipped,
    })
}

/// Iterations the interpreter allows one loop, so that a test program
/// that never terminates fails instead of hanging.
const MAX_ITERATIONS: i64 = 10_000_000;

struct Machine<'a> {
    p: &'a Program,
    consts: &'a HashMap<Var, Value>,
    work: u64,
    max_linear: f64,
    writes: u64,
    skipped: u64,
}

type Env = HashMap<Var, Value>;

impl Machine<'_> {
    fn call(
        &mut self,
        name: &Var,
        nl: Vec<Value>,
        lin: Vec<Value>,
    ) -> Result<(Vec<Value>, Vec<Value>), EvalError> {
        if self.p.extern_(name.as_str()).is_some() {
            return Err(EvalError(format!(
                "`{name}` is external: the interpreter cannot run it"
            )));
        }
        let f = self
            .p
            .func(name.as_str())
            .ok_or_else(|| EvalError(format!("no function `{name}`")))?;
        if nl.len() != f.nl_params.len() || lin.len() != f.lin_params.len() {
            return Err(EvalError(format!("wrong number of arguments to `{name}`")));
        }
        let mut env = Env::new();
        for (b, v) in f
            .nl_params
            .iter()
            .zip(nl)
            .chain(f.lin_params.iter().zip(lin))
        {
            env.insert(b.var.clone(), v);
        }
        self.expr(&f.body, &mut env)
    }

    fn get(env: &Env, v: &Var) -> Result<Value, EvalError> {
        env.get(v)
            .cloned()
            .ok_or_else(|| EvalError(format!("unbound variable `{v}`")))
    }

    fn real(env: &Env, v: &Var) -> Result<f64, EvalError> {
        Self::get(env, v)?
            .as_real()
            .ok_or_else(|| EvalError(format!("`{v}` is not a scalar")))
    }

    fn expr(&mut self, e: &Expr, env: &mut Env) -> Result<(Vec<Value>, Vec<Value>), EvalError> {
        let one = |v: Value| Ok((vec![v], vec![]));
        let lin1 = |v: Value| Ok((vec![], vec![v]));
        match e {
            Expr::Block { stmts, tail } => {
                for s in stmts {
                    self.stmt(s, env)?;
                }
                self.expr(tail, env)
            }
            Expr::Ret { nl, lin } => Ok((
                nl.iter()
                    .map(|v| Self::get(env, v))
                    .collect::<Result<_, _>>()?,
                lin.iter()
                    .map(|v| Self::get(env, v))
                    .collect::<Result<_, _>>()?,
            )),
            Expr::App { func, nl, lin } => {
                let nl = nl
                    .iter()
                    .map(|v| Self::get(env, v))
                    .collect::<Result<_, _>>()?;
                let lin = lin
                    .iter()
                    .map(|v| Self::get(env, v))
                    .collect::<Result<_, _>>()?;
                self.call(func, nl, lin)
            }
            Expr::Lit { value, .. } => one(Value::Real(*value)),
            Expr::Const { name, args, .. } => {
                // The interpreter cannot run Rust: the caller supplies the
                // value of each constant by name.
                for a in args {
                    Self::get(env, a)?;
                }
                self.work += u64::from(!args.is_empty());
                one(self
                    .consts
                    .get(name)
                    .cloned()
                    .ok_or_else(|| EvalError(format!("no value for constant `{name}`")))?)
            }
            Expr::Tup(vs) => one(Value::Tuple(
                vs.iter()
                    .map(|v| Self::get(env, v))
                    .collect::<Result<_, _>>()?,
            )),
            Expr::Prim { prim, args } => {
                let a = args
                    .iter()
                    .map(|v| {
                        Self::get(env, v)?
                            .scalar()
                            .ok_or_else(|| EvalError(format!("`{v}` is not a scalar")))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                self.work += 1;
                one(match prim.eval_scalars(&a) {
                    Some(Scalar::Real(x)) => Value::Real(x),
                    Some(Scalar::Int(n)) => Value::Int(n),
                    Some(Scalar::Bool(b)) => Value::Bool(b),
                    None => {
                        return Err(EvalError(format!(
                            "`{}` cannot be applied to {a:?}",
                            prim.name()
                        )))
                    }
                })
            }
            Expr::Int(n) => one(Value::Int(*n)),
            Expr::Bool(b) => one(Value::Bool(*b)),
            Expr::Inj { tag, val, .. } => one(Value::Sum(*tag, Box::new(Self::get(env, val)?))),
            Expr::Case { scrut, arms } => {
                let (k, inner) = match Self::get(env, scrut)? {
                    Value::Bool(b) => (usize::from(!b), None),
                    Value::Sum(k, v) => (k, Some(*v)),
                    _ => return Err(EvalError(format!("case on `{scrut}`, not a bool or sum"))),
                };
                let arm = arms
                    .get(k)
                    .ok_or_else(|| EvalError(format!("no arm {k} in the case on `{scrut}`")))?;
                if let (Some(b), Some(v)) = (&arm.bind, inner) {
                    env.insert(b.var.clone(), v);
                }
                self.expr(&arm.body, env)
            }
            Expr::Loop(l) => self.loop_(l, env),
            Expr::LinZero(t) => lin1(Value::zero(t)),
            Expr::LinTup(vs) => lin1(Value::Tuple(
                vs.iter()
                    .map(|v| Self::get(env, v))
                    .collect::<Result<_, _>>()?,
            )),
            Expr::LinAdd(a, b) => {
                let r = Self::get(env, a)?.zip(&Self::get(env, b)?, &|x, y| x + y)?;
                self.linear_op(&r);
                lin1(r)
            }
            Expr::LinNeg(a) => {
                let r = Self::get(env, a)?.map(&|x| -x);
                self.linear_op(&r);
                lin1(r)
            }
            Expr::LinScale(s, a) => {
                let s = Self::real(env, s)?;
                let r = Self::get(env, a)?.map(&|x| s * x);
                self.linear_op(&r);
                lin1(r)
            }
            Expr::Dup(a) => {
                let v = Self::get(env, a)?;
                Ok((vec![], vec![v.clone(), v]))
            }
            Expr::Drop(e) => {
                let (nl, lin) = self.expr(e, env)?;
                self.work += nl.iter().chain(&lin).map(Value::scalars).sum::<u64>();
                Ok((vec![], vec![]))
            }
            Expr::Index { arr, idx } => one(Self::element(env, arr, idx)?.1),
            Expr::Len(arr) => match Self::get(env, arr)? {
                Value::Array(vs) => one(Value::Int(vs.len() as i64)),
                _ => Err(EvalError(format!("`{arr}` is not an array"))),
            },
            Expr::LinIndex { arr, idx } => lin1(Self::element(env, arr, idx)?.1),
            Expr::LinAccum { arr, idx, val } => lin1(self.accumulate(env, arr, idx, val)?),
            Expr::Fill { len, val, size } => {
                let n = Self::length(env, len)?;
                if size.is_some_and(|m| m != n as u64) {
                    return Err(EvalError(format!(
                        "`fill` of length {n} into an array of length {}",
                        size.unwrap_or(0)
                    )));
                }
                // Creating, writing and freeing an array are charged 1
                // each, linear or not: the model counts operations on
                // values, and these are one allocation, one store, one
                // release (L maps each to the other, T swaps creation and
                // release, and both must keep work: Lemma 4.3, Thm 7.1).
                self.work += 1;
                one(Value::Array(vec![Self::get(env, val)?; n]))
            }
            Expr::Set { arr, idx, val } => {
                self.work += 1;
                one(Self::write(env, arr, idx, val)?)
            }
            Expr::LinZeros { ty, len } => {
                let n = Self::length(env, len)?;
                let Ty::Array(elem, _) = ty else {
                    return Err(EvalError(format!("`lzeros` of type {ty}")));
                };
                self.work += 1;
                lin1(Value::Array(vec![Value::zero(elem); n]))
            }
            Expr::LinSet { arr, idx, val } => {
                self.work += 1;
                self.writes += 1;
                lin1(Self::write(env, arr, idx, val)?)
            }
            Expr::LinFree { arr, len } => {
                let n = Self::length(env, len)?;
                let Some(Value::Array(vs)) = env.remove(arr) else {
                    return Err(EvalError(format!("`{arr}` is not an array")));
                };
                if vs.len() != n {
                    return Err(EvalError(format!(
                        "`lfree` of `{arr}`, of length {}, given length {n}",
                        vs.len()
                    )));
                }
                self.work += 1;
                Ok((vec![], vec![]))
            }
            // One store (and the length's update) each, linear or not.
            Expr::Push { arr, val } | Expr::LinPush { arr, val } => {
                self.work += 1;
                self.writes += u64::from(matches!(e, Expr::LinPush { .. }));
                let v = Self::get(env, val)?;
                let mut vs = Self::take_array(env, arr)?;
                vs.push(v);
                if matches!(e, Expr::Push { .. }) {
                    one(Value::Array(vs))
                } else {
                    lin1(Value::Array(vs))
                }
            }
            Expr::Pop { arr } | Expr::LinPop { arr } => {
                self.work += 1;
                let mut vs = Self::take_array(env, arr)?;
                let Some(last) = vs.pop() else {
                    return Err(EvalError(format!("`pop` of `{arr}`, which is empty")));
                };
                let both = vec![Value::Array(vs), last];
                if matches!(e, Expr::Pop { .. }) {
                    Ok((both, vec![]))
                } else {
                    Ok((vec![], both))
                }
            }
        }
    }

    /// An array moved out of `env` (it is consumed) rather than copied.
    fn take_array(env: &mut Env, arr: &Var) -> Result<Vec<Value>, EvalError> {
        match env.remove(arr) {
            Some(Value::Array(vs)) => Ok(vs),
            _ => Err(EvalError(format!("`{arr}` is not an array"))),
        }
    }

    /// A non-negative integer length.
    fn length(env: &Env, len: &Var) -> Result<usize, EvalError> {
        match Self::get(env, len)? {
            Value::Int(n) => usize::try_from(n)
                .map_err(|_| EvalError(format!("negative array length {n} (`{len}`)"))),
            _ => Err(EvalError(format!("array length `{len}` is not an integer"))),
        }
    }

    /// `set`/`lset(arr, idx, val)`: the array, moved out of `env` (it is
    /// consumed) rather than copied, with `val` at `idx`.
    fn write(env: &mut Env, arr: &Var, idx: &Var, val: &Var) -> Result<Value, EvalError> {
        let (k, _) = Self::element(env, arr, idx)?;
        let new = Self::get(env, val)?;
        let Some(Value::Array(mut vs)) = env.remove(arr) else {
            return Err(EvalError(format!("`{arr}` is not an array")));
        };
        vs[k] = new;
        Ok(Value::Array(vs))
    }

    /// `laccum(arr, idx, val)`: the array, moved out of `env` (it is
    /// consumed) rather than copied, with `val` added at `idx`.
    fn accumulate(
        &mut self,
        env: &mut Env,
        arr: &Var,
        idx: &Var,
        val: &Var,
    ) -> Result<Value, EvalError> {
        let (k, old) = Self::element(env, arr, idx)?;
        let new = old.zip(&Self::get(env, val)?, &|x, y| x + y)?;
        self.linear_op(&new);
        let Some(Value::Array(mut vs)) = env.remove(arr) else {
            return Err(EvalError(format!("`{arr}` is not an array")));
        };
        vs[k] = new;
        Ok(Value::Array(vs))
    }

    /// The position and value of element `idx` of array `arr`; an error
    /// out of bounds (a panic in generated Rust).
    fn element(env: &Env, arr: &Var, idx: &Var) -> Result<(usize, Value), EvalError> {
        let (Some(Value::Array(vs)), Some(Value::Int(i))) = (env.get(arr), env.get(idx)) else {
            return Err(EvalError(format!("`{arr}[{idx}]` is not an array element")));
        };
        usize::try_from(*i)
            .ok()
            .and_then(|k| Some((k, vs.get(k)?.clone())))
            .ok_or_else(|| {
                EvalError(format!(
                    "index {i} out of bounds for `{arr}` of length {}",
                    vs.len()
                ))
            })
    }

    fn linear_op(&mut self, r: &Value) {
        self.work += r.scalars();
        let mut xs = Vec::new();
        r.flatten(&mut xs);
        for x in xs {
            self.max_linear = self.max_linear.max(x.abs());
        }
    }

    /// The values a loop header iterates over (indices or elements); `None`
    /// for a `while` loop.
    fn iteration(&mut self, it: &Iter, env: &mut Env) -> Result<Option<Vec<Value>>, EvalError> {
        let int = |env: &Env, v: &Var| match Self::get(env, v)? {
            Value::Int(n) => Ok(n),
            _ => Err(EvalError(format!("`{v}` is not an integer"))),
        };
        Ok(Some(match it {
            Iter::Range {
                lo,
                hi,
                step,
                rev,
                trip,
                ..
            } => {
                let mut v = Self::range(env, (lo, hi, step.as_ref()), *trip)?;
                if *rev {
                    v.reverse();
                }
                v
            }
            Iter::Each { list, rev, .. } => {
                let mut v = Self::list(env, list)?;
                if *rev {
                    v.reverse();
                }
                v
            }
            Iter::Zip {
                lo,
                hi,
                step,
                desc,
                list,
                rev,
                ..
            } => {
                let mut range = Self::range(env, (lo, hi, step.as_ref()), None)?;
                if *desc {
                    range.reverse();
                }
                let list = Self::list(env, list)?;
                if list.len() != range.len() {
                    return Err(EvalError(format!(
                        "a zipped loop over {} indices reads a list of {}",
                        range.len(),
                        list.len()
                    )));
                }
                // One value per iteration, the pair (index, element).
                let mut v: Vec<Value> = range
                    .into_iter()
                    .zip(list)
                    .map(|(i, e)| Value::Tuple(vec![i, e]))
                    .collect();
                if *rev {
                    v.reverse();
                }
                v
            }
            Iter::While { .. } => return Ok(None),
            Iter::Replay {
                state,
                init,
                count,
                next,
                rev,
                ..
            } => {
                let n = int(env, count)?;
                if n > MAX_ITERATIONS {
                    return Err(EvalError(format!("replay of {n} states")));
                }
                let mut v = Vec::new();
                let mut s = Self::get(env, init)?;
                for k in 0..n {
                    if k > 0 {
                        env.insert(state.var.clone(), s);
                        let (mut r, _) = self.expr(next, env)?;
                        if r.len() != 1 {
                            return Err(EvalError("a replay's `next` returns one value".into()));
                        }
                        s = r.remove(0);
                    }
                    v.push(s.clone());
                }
                if *rev {
                    v.reverse();
                }
                v
            }
        }))
    }

    /// The indices of a range, in order; `trip` is its declared length.
    fn range(
        env: &Env,
        (lo, hi, step): (&Var, &Var, Option<&Var>),
        trip: Option<u64>,
    ) -> Result<Vec<Value>, EvalError> {
        let int = |v: &Var| match Self::get(env, v)? {
            Value::Int(n) => Ok(n),
            _ => Err(EvalError(format!("`{v}` is not an integer"))),
        };
        let (lo, hi) = (int(lo)?, int(hi)?);
        let step = step.map_or(Ok(1), int)?;
        if step <= 0 {
            return Err(EvalError(format!("loop step {step} is not positive")));
        }
        let n = if hi > lo { (hi - lo - 1) / step + 1 } else { 0 };
        if n > MAX_ITERATIONS {
            return Err(EvalError(format!("loop of {n} iterations")));
        }
        if trip.is_some_and(|t| t != n as u64) {
            return Err(EvalError(format!(
                "loop declared with {} iterations runs {n}",
                trip.unwrap_or(0)
            )));
        }
        Ok((0..n).map(|k| Value::Int(lo + k * step)).collect())
    }

    fn list(env: &Env, list: &Var) -> Result<Vec<Value>, EvalError> {
        match Self::get(env, list)? {
            Value::List(v) => Ok(v),
            _ => Err(EvalError(format!("`{list}` is not a list"))),
        }
    }

    fn loop_(&mut self, l: &Loop, env: &mut Env) -> Result<(Vec<Value>, Vec<Value>), EvalError> {
        let mut nl: Vec<Value> =
            l.nl.iter()
                .map(|(_, v)| Self::get(env, v))
                .collect::<Result<_, _>>()?;
        let mut lin: Vec<Value> = l
            .lin
            .iter()
            .map(|(_, v)| Self::get(env, v))
            .collect::<Result<_, _>>()?;
        let real = |v: &&Value| matches!(v, Value::Real(_));
        let zero = nl
            .iter()
            .chain(&lin)
            .filter(real)
            .all(|v| *v == Value::Real(0.0));
        let skipped = (l.zero_skip && zero).then(|| (nl.clone(), lin.clone()));
        let mut lists: Vec<Vec<Value>> = vec![Vec::new(); l.collect.len()];
        let items = self.iteration(&l.iter, env)?;
        let mut k = 0;
        loop {
            for ((b, _), v) in l.nl.iter().zip(&nl) {
                env.insert(b.var.clone(), v.clone());
            }
            match (&items, &l.iter) {
                (Some(items), _) => {
                    let Some(item) = items.get(k) else { break };
                    match (l.iter.binders().as_slice(), item) {
                        ([], _) => {}
                        ([b], item) => {
                            env.insert(b.var.clone(), item.clone());
                        }
                        ([i, e], Value::Tuple(pair)) if pair.len() == 2 => {
                            env.insert(i.var.clone(), pair[0].clone());
                            env.insert(e.var.clone(), pair[1].clone());
                        }
                        _ => return Err(EvalError("a zipped loop's item is a pair".into())),
                    }
                }
                (None, Iter::While { cond }) => {
                    let (c, _) = self.expr(cond, env)?;
                    if c != [Value::Bool(true)] {
                        break;
                    }
                    if k as i64 >= MAX_ITERATIONS {
                        return Err(EvalError("a `while` loop ran too long".into()));
                    }
                }
                (None, _) => return Err(EvalError("loop without iterations".into())),
            }
            for ((b, _), v) in l.lin.iter().zip(lin) {
                env.insert(b.var.clone(), v);
            }
            let (mut vn, vl) = self.expr(&l.body, env)?;
            if vn.len() != l.nl.len() + l.collect.len() || vl.len() != l.lin.len() {
                return Err(EvalError(
                    "loop body returns the wrong number of values".into(),
                ));
            }
            for (list, v) in lists.iter_mut().zip(vn.drain(l.nl.len()..)) {
                list.push(v);
            }
            nl = vn;
            lin = vl;
            k += 1;
        }
        if let Some(state) = skipped {
            self.skipped += 1;
            return Self::unchanged(state, (nl, lin));
        }
        nl.extend(lists.into_iter().map(Value::List));
        Ok((nl, lin))
    }

    /// The state a skipped `zeroskip` loop returns (what it came in
    /// with), if running it left that state as it was: only a zero
    /// cotangent times an infinite coefficient (a NaN) may differ.
    fn unchanged(
        state: (Vec<Value>, Vec<Value>),
        ran: (Vec<Value>, Vec<Value>),
    ) -> Result<(Vec<Value>, Vec<Value>), EvalError> {
        fn same(a: &Value, b: &Value) -> bool {
            match (a, b) {
                (Value::Real(x), Value::Real(y)) => x == y || y.is_nan(),
                (Value::Tuple(xs), Value::Tuple(ys)) | (Value::Array(xs), Value::Array(ys)) => {
                    xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same(x, y))
                }
                _ => a == b,
            }
        }
        let pairs = state.0.iter().zip(&ran.0).chain(state.1.iter().zip(&ran.1));
        if state.0.len() != ran.0.len() || !pairs.clone().all(|(a, b)| same(a, b)) {
            return Err(EvalError(
                "a `zeroskip` loop entered with its reals zero changed its state (invariant 12)"
                    .into(),
            ));
        }
        Ok(state)
    }

    fn stmt(&mut self, s: &Stmt, env: &mut Env) -> Result<(), EvalError> {
        match s {
            Stmt::Let { nl, lin, rhs } => {
                let (vn, vl) = self.expr(rhs, env)?;
                if vn.len() != nl.len() || vl.len() != lin.len() {
                    return Err(EvalError("let binds the wrong number of results".into()));
                }
                for (b, v) in nl.iter().zip(vn).chain(lin.iter().zip(vl)) {
                    env.insert(b.var.clone(), v);
                }
            }
            Stmt::Unpack { vars, tuple } | Stmt::LinUnpack { vars, tuple } => {
                let Value::Tuple(vs) = Self::get(env, tuple)? else {
                    return Err(EvalError(format!("`{tuple}` is not a tuple")));
                };
                if vs.len() != vars.len() {
                    return Err(EvalError(format!("`{tuple}` has the wrong arity")));
                }
                for (b, v) in vars.iter().zip(vs) {
                    env.insert(b.var.clone(), v);
                }
            }
        }
        Ok(())
    }
}
