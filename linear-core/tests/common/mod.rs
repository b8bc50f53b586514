//! Test support: a generator of random well-typed non-linear programs and a
//! dual-number evaluator used as the independent reference for derivatives.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet};

use linear_core::eval::Value;
use linear_core::ir::{Arm, Bit, Cmp, Iter, Loop, Scalar};
use linear_core::{Binder, Expr, Float, Func, Prim, Program, Stmt, Ty, Var};

/// splitmix64: small, seedable, good enough for test programs.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn chance(&mut self, p: f64) -> bool {
        self.real(0.0, 1.0) < p
    }
    pub fn real(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// A random value of type `t` with scalars in [-2, 2].
pub fn random_value(rng: &mut Rng, t: &Ty) -> Value {
    match t {
        Ty::Real(_) => Value::Real(rng.real(-2.0, 2.0)),
        Ty::Tuple(ts) => Value::Tuple(ts.iter().map(|t| random_value(rng, t)).collect()),
        Ty::Int => Value::Int(rng.below(5) as i64),
        Ty::Bool => Value::Bool(rng.chance(0.5)),
        Ty::Sum(ts) => {
            let k = rng.below(ts.len());
            Value::Sum(k, Box::new(random_value(rng, &ts[k])))
        }
        Ty::List(t, None) => Value::List((0..rng.below(4)).map(|_| random_value(rng, t)).collect()),
        Ty::List(t, Some(n)) => Value::List((0..*n).map(|_| random_value(rng, t)).collect()),
        Ty::Array(t, Some(n)) => Value::Array((0..*n).map(|_| random_value(rng, t)).collect()),
        // Never empty: the generator reads element 0 without a check.
        Ty::Array(t, None) => Value::Array(
            (0..1 + rng.below(4))
                .map(|_| random_value(rng, t))
                .collect(),
        ),
        Ty::Tape(_) => Value::Tuple(vec![]),
    }
}

/// A random tangent for the value `x`: its shape (arrays of its length),
/// scalars in [-2, 2].
pub fn random_like(rng: &mut Rng, x: &Value) -> Value {
    match x {
        Value::Real(_) => Value::Real(rng.real(-2.0, 2.0)),
        Value::Tuple(vs) => Value::Tuple(vs.iter().map(|v| random_like(rng, v)).collect()),
        Value::List(vs) => Value::List(vs.iter().map(|v| random_like(rng, v)).collect()),
        Value::Array(vs) => Value::Array(vs.iter().map(|v| random_like(rng, v)).collect()),
        Value::Int(_) | Value::Bool(_) | Value::Sum(..) => x.clone(),
    }
}

/// The arguments of a transposed function `f.t`: the results' cotangents
/// `ybar`, then a zeroed accumulator for each array among the tangents
/// `dx` (every linear array of J's and U's output is a borrowed
/// parameter: T gives it an accumulator, in order).
pub fn cotangent_args(ybar: &[Value], dx: &[Value]) -> Vec<Value> {
    fn zeros(v: &Value) -> Value {
        match v {
            Value::Real(_) => Value::Real(0.0),
            Value::Tuple(vs) => Value::Tuple(vs.iter().map(zeros).collect()),
            Value::List(vs) => Value::List(vs.iter().map(zeros).collect()),
            Value::Array(vs) => Value::Array(vs.iter().map(zeros).collect()),
            Value::Int(_) | Value::Bool(_) | Value::Sum(..) => v.clone(),
        }
    }
    ybar.iter()
        .cloned()
        .chain(
            dx.iter()
                .filter(|v| matches!(v, Value::Array(_)))
                .map(zeros),
        )
        .collect()
}

const F: Ty = Ty::Real(Float::F64);

/// A random program of 1 to 4 functions, each calling earlier ones, with
/// `size` bounding the statements drawn per block. The last function is the
/// entry point.
/// `set(a, i, v)`, or `push(a, v)` without an index.
fn write_at(arr: &Var, idx: Option<&Var>, val: Var) -> Expr {
    match idx {
        Some(i) => Expr::Set {
            arr: arr.clone(),
            idx: i.clone(),
            val,
        },
        None => Expr::Push {
            arr: arr.clone(),
            val,
        },
    }
}

/// `let v: t = rhs`.
fn let_(v: &Var, t: Ty, rhs: Expr) -> Stmt {
    Stmt::Let {
        nl: vec![Binder::new(v.clone(), t)],
        lin: vec![],
        rhs,
    }
}

/// An integer primitive of two variables.
fn iprim(prim: Prim, l: &Var, r: &Var) -> Expr {
    Expr::Prim {
        prim,
        args: vec![l.clone(), r.clone()],
    }
}

/// A loop over `iter` carrying the non-linear `state` (binder, type,
/// initial value), collecting nothing.
fn carry(iter: Iter, state: Vec<(Var, Ty, Var)>, body: Expr) -> Expr {
    let nl = state
        .into_iter()
        .map(|(b, t, init)| (Binder::new(b, t), init))
        .collect();
    Expr::Loop(Box::new(Loop {
        iter,
        nl,
        lin: vec![],
        collect: vec![],
        zero_skip: false,
        body,
    }))
}

pub fn gen_program(seed: u64, size: usize) -> Program {
    let mut rng = Rng(seed);
    let n = 1 + rng.below(4);
    let mut p = Program::default();
    for i in 0..n {
        let f = FnGen::new(&mut rng, &p.funcs, size).func(&format!("f{i}"), i);
        p.funcs.push(f);
    }
    p
}

/// The name of function `i`'s data array, a Rust constant.
fn data_name(i: usize) -> Var {
    Var::new(&format!("__data{i}"))
}

/// The value of the data array called `name` (a few reals, never empty).
fn data_value(name: &Var) -> Value {
    let k = name
        .as_str()
        .trim_start_matches("__data")
        .parse::<usize>()
        .unwrap_or(0);
    Value::Array(
        (0..2 + k)
            .map(|j| Value::Real(0.3 + 0.7 * ((k * 3 + j) as f64 + 1.0).sin()))
            .collect(),
    )
}

/// The values of the constants generated programs read: their data
/// arrays.
pub fn data_consts() -> HashMap<Var, Value> {
    (0..4)
        .map(|i| (data_name(i), data_value(&data_name(i))))
        .collect()
}

struct FnGen<'a> {
    rng: &'a mut Rng,
    /// Whether to generate control flow and discrete values.
    control: bool,
    funcs: &'a [Func],
    size: usize,
    next: usize,
    /// Variables in scope with their types and block depth.
    pool: Vec<(Var, Ty, usize)>,
    used: HashSet<Var>,
    /// The data array (a Rust constant, with no tangent), if any: never
    /// passed to a call, which lends its arguments' tangents.
    data: Option<Var>,
}

fn random_param_ty(rng: &mut Rng) -> Ty {
    match rng.below(10) {
        0 => Ty::Tuple(vec![F, F]),
        1 => Ty::Tuple(vec![Ty::Tuple(vec![F]), F]),
        2 => Ty::Array(Box::new(F), None),
        3 => Ty::Array(Box::new(Ty::Tuple(vec![F, F])), Some(3)),
        _ => F,
    }
}

impl<'a> FnGen<'a> {
    fn new(rng: &'a mut Rng, funcs: &'a [Func], size: usize) -> Self {
        FnGen {
            control: true,
            rng,
            funcs,
            size: size.max(2),
            next: 0,
            pool: Vec::new(),
            used: HashSet::new(),
            data: None,
        }
    }

    fn var(&mut self) -> Var {
        self.next += 1;
        Var::new(&format!("x{}", self.next))
    }

    /// A fresh variable of each type in `tys`, each in scope from depth
    /// `d` on.
    fn fresh_binders(&mut self, tys: &[Ty], d: usize) -> Vec<Binder> {
        let bs: Vec<Binder> = tys
            .iter()
            .map(|t| Binder::new(self.var(), t.clone()))
            .collect();
        for b in &bs {
            self.pool.push((b.var.clone(), b.ty.clone(), d));
        }
        bs
    }

    fn bind(&mut self, out: &mut Vec<Stmt>, ty: Ty, rhs: Expr, depth: usize) -> Var {
        let v = self.var();
        out.push(Stmt::Let {
            nl: vec![Binder::new(v.clone(), ty.clone())],
            lin: vec![],
            rhs,
        });
        self.pool.push((v.clone(), ty, depth));
        v
    }

    fn use_(&mut self, v: &Var) -> Var {
        self.used.insert(v.clone());
        v.clone()
    }

    /// A scalar in scope, preferring ones not used yet.
    fn scalar(&mut self) -> Option<Var> {
        let scalars: Vec<Var> = self
            .pool
            .iter()
            .filter(|(_, t, _)| *t == F)
            .map(|(v, _, _)| v.clone())
            .collect();
        if scalars.is_empty() {
            return None;
        }
        let fresh: Vec<&Var> = scalars.iter().filter(|v| !self.used.contains(*v)).collect();
        let v = if !fresh.is_empty() && self.rng.chance(0.7) {
            fresh[self.rng.below(fresh.len())].clone()
        } else {
            scalars[self.rng.below(scalars.len())].clone()
        };
        Some(self.use_(&v))
    }

    fn of_type(&mut self, t: &Ty) -> Option<Var> {
        let c: Vec<Var> = self
            .pool
            .iter()
            .filter(|(_, u, _)| u == t)
            .map(|(v, _, _)| v.clone())
            .collect();
        self.pick(c)
    }

    /// One of the variables `c`, marked used.
    fn pick(&mut self, c: Vec<Var>) -> Option<Var> {
        if c.is_empty() {
            return None;
        }
        let v = c[self.rng.below(c.len())].clone();
        Some(self.use_(&v))
    }

    /// A call of an earlier function of the program. Arrays in scope are
    /// lent to it (the callee borrows their tangents), each once per call
    /// (invariant 11); without one of a parameter's type, no call.
    fn call(&mut self, out: &mut Vec<Stmt>, d: usize) {
        let f = &self.funcs[self.rng.below(self.funcs.len())];
        let (name, params, rets) = (f.name.clone(), f.nl_params.clone(), f.nl_rets.clone());
        let arrays: Option<Vec<Option<Var>>> = params
            .iter()
            .map(|b| match &b.ty {
                Ty::Array(..) => self.array_of(&b.ty).map(Some),
                _ => Some(None),
            })
            .collect();
        let Some(arrays) = arrays else {
            return;
        };
        let lent: Vec<&Var> = arrays.iter().flatten().collect();
        if (1..lent.len()).any(|i| lent[..i].contains(&lent[i])) {
            return;
        }
        let args: Vec<Var> = params
            .iter()
            .zip(arrays)
            .map(|(b, a)| a.unwrap_or_else(|| self.build(out, &b.ty, d)))
            .collect();
        let bs = self.fresh_binders(&rets, d);
        out.push(Stmt::Let {
            nl: bs,
            lin: vec![],
            rhs: Expr::App {
                func: name,
                nl: args,
                lin: vec![],
            },
        });
    }

    /// An array of type `t` in scope, other than the data array.
    fn array_of(&mut self, t: &Ty) -> Option<Var> {
        let c: Vec<Var> = self
            .pool
            .iter()
            .filter(|(v, u, _)| u == t && self.data.as_ref() != Some(v))
            .map(|(v, _, _)| v.clone())
            .collect();
        self.pick(c)
    }

    /// A value of type `t`, built from scalars in scope if need be.
    fn build(&mut self, out: &mut Vec<Stmt>, t: &Ty, depth: usize) -> Var {
        if self.rng.chance(0.6) {
            if let Some(v) = self.of_type(t) {
                return v;
            }
        }
        match t {
            Ty::Int => {
                let v = {
                    let x = self.rng.below(4) as i64;
                    self.bind(out, Ty::Int, Expr::Int(x), depth)
                };
                self.use_(&v)
            }
            Ty::Bool => {
                let v = {
                    let x = self.rng.chance(0.5);
                    self.bind(out, Ty::Bool, Expr::Bool(x), depth)
                };
                self.use_(&v)
            }
            // Generated programs have no externs, hence no tapes, and no
            // sums or lists (U makes those); arrays are parameters only,
            // never built or passed on.
            Ty::Real(_) | Ty::Tape(_) | Ty::Sum(_) | Ty::List(..) | Ty::Array(..) => {
                match self.scalar() {
                    Some(v) => v,
                    None => {
                        let v = self.bind(
                            out,
                            F,
                            Expr::Lit {
                                value: 0.5,
                                float: Float::F64,
                            },
                            depth,
                        );
                        self.use_(&v)
                    }
                }
            }
            Ty::Tuple(ts) => {
                let parts: Vec<Var> = ts.iter().map(|t| self.build(out, t, depth)).collect();
                let v = self.bind(out, t.clone(), Expr::Tup(parts), depth);
                self.use_(&v)
            }
        }
    }

    fn prim(&mut self, out: &mut Vec<Stmt>, p: Prim, args: &[&Var], depth: usize) -> Var {
        let args = args.iter().map(|v| (*v).clone()).collect();
        self.bind(out, F, Expr::Prim { prim: p, args }, depth)
    }

    fn lit(&mut self, out: &mut Vec<Stmt>, x: f64, depth: usize) -> Var {
        self.bind(
            out,
            F,
            Expr::Lit {
                value: x,
                float: Float::F64,
            },
            depth,
        )
    }

    /// x² + 1 ≥ 1.
    fn positive(&mut self, out: &mut Vec<Stmt>, x: &Var, d: usize) -> Var {
        let s = self.prim(out, Prim::Mul, &[x, x], d);
        let k = self.lit(out, 1.0, d);
        self.used.insert(s.clone());
        self.used.insert(k.clone());
        let r = self.prim(out, Prim::Add, &[&s, &k], d);
        self.use_(&r)
    }

    /// tanh(x)·c ∈ (-c, c).
    fn bounded(&mut self, out: &mut Vec<Stmt>, x: &Var, c: f64, d: usize) -> Var {
        let t = self.prim(out, Prim::Tanh, &[x], d);
        let k = self.lit(out, c, d);
        self.used.insert(t.clone());
        self.used.insert(k.clone());
        let r = self.prim(out, Prim::Mul, &[&t, &k], d);
        self.use_(&r)
    }

    /// A primitive application with its operands guarded into the domain
    /// where it is smooth and finite.
    fn prim_stmt(&mut self, out: &mut Vec<Stmt>, d: usize) {
        let mut p = Prim::ALL[self.rng.below(Prim::ALL.len())];
        if let Prim::Powi(_) = p {
            p = Prim::Powi(self.rng.below(8) as i32 - 3);
        }
        let Some(x) = self.scalar() else { return };
        // Only binary primitives read a second operand (possibly `x` again).
        let y = if p.arity() == 2 {
            self.scalar().unwrap_or_else(|| x.clone())
        } else {
            x.clone()
        };
        let args: Vec<Var> = match p {
            Prim::Ln | Prim::Log2 | Prim::Log10 | Prim::Sqrt | Prim::Cbrt | Prim::Recip => {
                vec![self.positive(out, &x, d)]
            }
            Prim::Asin | Prim::Acos | Prim::Atanh => vec![self.bounded(out, &x, 0.9, d)],
            Prim::Ln1p => vec![self.positive(out, &x, d)],
            // ≥ 2: away from acosh's singularity at 1.
            Prim::Acosh => {
                let p = self.positive(out, &x, d);
                vec![self.positive(out, &p, d)]
            }
            Prim::ExpM1 => vec![self.bounded(out, &x, 2.0, d)],
            Prim::Copysign => vec![x, y],
            Prim::Tan => vec![self.bounded(out, &x, 1.2, d)],
            Prim::Exp | Prim::Exp2 | Prim::Sinh | Prim::Cosh => vec![self.bounded(out, &x, 2.0, d)],
            Prim::Powi(n) if n < 0 => vec![self.positive(out, &x, d)],
            Prim::Powi(_) => vec![self.bounded(out, &x, 1.5, d)],
            Prim::Div | Prim::Atan2 | Prim::Hypot | Prim::Rem | Prim::RemEuclid => {
                vec![x.clone(), self.positive(out, &y, d)]
            }
            Prim::Powf => {
                let b = self.positive(out, &x, d);
                vec![b, self.bounded(out, &y, 2.0, d)]
            }
            Prim::Add | Prim::Sub | Prim::Mul | Prim::Min | Prim::Max | Prim::Le => vec![x, y],
            Prim::Neg
            | Prim::Sin
            | Prim::Cos
            | Prim::Atan
            | Prim::Tanh
            | Prim::Abs
            | Prim::Signum
            | Prim::Asinh
            | Prim::Floor
            | Prim::Ceil
            | Prim::Round
            | Prim::Trunc => vec![x],
            // Not in `Prim::ALL`: `discrete_stmt` makes these.
            Prim::IAdd
            | Prim::ISub
            | Prim::IMul
            | Prim::IDiv
            | Prim::IRem
            | Prim::INeg
            | Prim::IBit(_)
            | Prim::INot
            | Prim::Cmp(_)
            | Prim::And
            | Prim::Or
            | Prim::Not
            | Prim::ToReal(_)
            | Prim::ToInt
            | Prim::PowiN => return,
        };
        let refs: Vec<&Var> = args.iter().collect();
        self.prim(out, p, &refs, d);
    }

    /// The arrays in scope.
    fn arrays(&self) -> Vec<(Var, Ty)> {
        self.pool
            .iter()
            .filter(|(_, t, _)| matches!(t, Ty::Array(..)))
            .map(|(v, t, _)| (v.clone(), t.clone()))
            .collect()
    }

    /// `index(a, i)` of an array in scope at an index that is a literal 0
    /// (arrays are never empty) or any integer in scope brought into range
    /// by `((k % n) + n) % n`. Returns whether there was an array.
    fn array_read(&mut self, out: &mut Vec<Stmt>, d: usize) -> bool {
        let arrays = self.arrays();
        let Some((a, t)) = arrays.get(self.rng.below(arrays.len())).cloned() else {
            return false;
        };
        let Ty::Array(elem, _) = t else { return false };
        let ints: Vec<Var> = self
            .pool
            .iter()
            .filter(|(_, t, _)| *t == Ty::Int)
            .map(|(v, _, _)| v.clone())
            .collect();
        self.use_(&a);
        let idx = if ints.is_empty() || self.rng.chance(0.3) {
            let z = self.bind(out, Ty::Int, Expr::Int(0), d);
            self.use_(&z)
        } else {
            let k = ints[self.rng.below(ints.len())].clone();
            self.use_(&k);
            let n = self.bind(out, Ty::Int, Expr::Len(a.clone()), d);
            self.use_(&n);
            let iop = |p: Prim, x: &Var, y: &Var| Expr::Prim {
                prim: p,
                args: vec![x.clone(), y.clone()],
            };
            let m = self.bind(out, Ty::Int, iop(Prim::IRem, &k, &n), d);
            self.use_(&m);
            let m2 = self.bind(out, Ty::Int, iop(Prim::IAdd, &m, &n), d);
            self.use_(&m2);
            let i = self.bind(out, Ty::Int, iop(Prim::IRem, &m2, &n), d);
            self.use_(&i)
        };
        self.bind(out, *elem, Expr::Index { arr: a, idx }, d);
        true
    }

    fn stmt(&mut self, out: &mut Vec<Stmt>, d: usize) {
        if self.rng.chance(0.15) && self.array_read(out, d) {
            return;
        }
        if d < 2 && self.rng.chance(0.06) && self.local_array(out, d) {
            return;
        }
        if d < 2 && self.control && self.rng.chance(0.12) {
            match self.rng.below(6) {
                0 | 1 => self.case_stmt(out, d),
                2 => self.range_loop(out, d),
                3 => self.while_loop(out, d),
                4 => self.piecewise_case(out, d),
                _ => self.inert_stmt(out, d),
            }
            return;
        }
        if self.control && self.rng.chance(0.05) {
            return self.discrete_stmt(out, d);
        }
        match self.rng.below(100) {
            0..=44 => self.prim_stmt(out, d),
            45..=49 => {
                let x = self.rng.real(-2.0, 2.0);
                let k = self.lit(out, (x * 8.0).round() / 8.0, d);
                // A literal scaling a value right away: its derivative reads
                // the literal, and so does the value's recomputation when a
                // loop recomputes its body (U binds the literal again in the
                // residual; the two must not collide).
                if self.rng.chance(0.5) {
                    if let Some(v) = self.scalar() {
                        self.used.insert(k.clone());
                        self.prim(out, Prim::Mul, &[&k, &v], d);
                    }
                }
            }
            50..=57 => {
                let n = 1 + self.rng.below(3);
                let parts: Vec<Var> = (0..n).filter_map(|_| self.scalar()).collect();
                if !parts.is_empty() {
                    let t = Ty::Tuple(vec![F; parts.len()]);
                    self.bind(out, t, Expr::Tup(parts), d);
                }
            }
            58..=66 => {
                let tuples: Vec<(Var, Vec<Ty>)> = self
                    .pool
                    .iter()
                    .filter_map(|(v, t, _)| match t {
                        Ty::Tuple(ts) => Some((v.clone(), ts.clone())),
                        _ => None,
                    })
                    .collect();
                if let Some((v, ts)) = tuples.get(self.rng.below(tuples.len())).cloned() {
                    self.use_(&v);
                    let vars = self.fresh_binders(&ts, d);
                    out.push(Stmt::Unpack { vars, tuple: v });
                }
            }
            67..=80 if !self.funcs.is_empty() => self.call(out, d),
            81..=88 if d < 2 => {
                let n = 1 + self.rng.below(self.size / 2 + 1);
                let (e, ty) = self.block(d + 1, n, 1);
                let v = self.var();
                out.push(Stmt::Let {
                    nl: vec![Binder::new(v.clone(), ty[0].clone())],
                    lin: vec![],
                    rhs: e,
                });
                self.pool.push((v, ty[0].clone(), d));
            }
            89..=93 => {
                if let (Some(a), Some(b)) = (self.scalar(), self.scalar()) {
                    let (va, vb) = (self.var(), self.var());
                    out.push(Stmt::Let {
                        nl: vec![Binder::new(va.clone(), F), Binder::new(vb.clone(), F)],
                        lin: vec![],
                        rhs: Expr::Ret {
                            nl: vec![a, b],
                            lin: vec![],
                        },
                    });
                    self.pool.push((va, F, d));
                    self.pool.push((vb, F, d));
                }
            }
            _ => {
                if let Some(x) = self.scalar() {
                    let rhs = if self.rng.chance(0.5) {
                        Expr::var(x)
                    } else {
                        Expr::Prim {
                            prim: Prim::Sin,
                            args: vec![x],
                        }
                    };
                    out.push(Stmt::Let {
                        nl: vec![],
                        lin: vec![],
                        rhs: Expr::Drop(Box::new(rhs)),
                    });
                }
            }
        }
    }

    /// A block at depth `d` with about `n` statements returning `k` values;
    /// every variable it binds is used, by folding it into the first result
    /// or dropping it.
    fn block(&mut self, d: usize, n: usize, k: usize) -> (Expr, Vec<Ty>) {
        let mut out = Vec::new();
        for _ in 0..n {
            self.stmt(&mut out, d);
        }
        if self.scalar_count() == 0 {
            self.lit(&mut out, 1.25, d);
        }
        // Results: the most recent scalar first, then any recent values.
        let mut rets: Vec<Var> = Vec::new();
        let first = self
            .pool
            .iter()
            .rev()
            .find(|(_, t, _)| *t == F)
            .map(|(v, _, _)| v.clone())
            .unwrap_or_else(|| Var::new("?"));
        self.use_(&first);
        rets.push(first);
        let vectors: Vec<Var> = self
            .pool
            .iter()
            .filter(|(_, t, _)| t.is_vector())
            .map(|(v, _, _)| v.clone())
            .collect();
        for _ in 1..k {
            let v = vectors[vectors.len() - 1 - self.rng.below(vectors.len().min(3))].clone();
            self.use_(&v);
            rets.push(v);
        }
        self.finish_block(d, out, rets)
    }

    /// Folds into the first result, or drops, what the block at depth `d`
    /// bound and nobody read; then leaves the block's scope.
    fn finish_block(
        &mut self,
        d: usize,
        mut out: Vec<Stmt>,
        mut rets: Vec<Var>,
    ) -> (Expr, Vec<Ty>) {
        // Fold or drop what this block bound and nobody read.
        loop {
            let unused: Vec<(Var, Ty)> = self
                .pool
                .iter()
                .filter(|(v, _, dd)| *dd == d && !self.used.contains(v))
                .map(|(v, t, _)| (v.clone(), t.clone()))
                .collect();
            if unused.is_empty() {
                break;
            }
            for (v, t) in unused {
                self.used.insert(v.clone());
                match t {
                    // An array may go unread (invariant 11).
                    Ty::Array(..) => {}
                    Ty::Real(_) if self.rng.chance(0.8) && self.fold_ok(&rets) => {
                        let acc = rets[0].clone();
                        let s = self.prim(&mut out, Prim::Add, &[&acc, &v], d);
                        self.used.insert(s.clone());
                        rets[0] = s;
                    }
                    Ty::Tuple(ref ts) if self.rng.chance(0.5) => {
                        let vars = self.fresh_binders(ts, d);
                        out.push(Stmt::Unpack { vars, tuple: v });
                    }
                    _ => out.push(Stmt::Let {
                        nl: vec![],
                        lin: vec![],
                        rhs: Expr::Drop(Box::new(Expr::var(v))),
                    }),
                }
            }
        }
        let tys: Vec<Ty> = rets
            .iter()
            .map(|r| {
                self.pool
                    .iter()
                    .find(|(v, _, _)| v == r)
                    .map(|(_, t, _)| t.clone())
                    .unwrap_or(F)
            })
            .collect();
        self.pool.retain(|(_, _, dd)| *dd < d);
        (
            Expr::block(
                out,
                Expr::Ret {
                    nl: rets,
                    lin: vec![],
                },
            ),
            tys,
        )
    }

    /// A comparison of two scalars, a boolean operator, integer
    /// arithmetic, or a conversion: values with no derivative.
    fn discrete_stmt(&mut self, out: &mut Vec<Stmt>, d: usize) {
        let (Some(x), Some(y)) = (self.scalar(), self.scalar()) else {
            return;
        };
        let c = Cmp::ALL[self.rng.below(Cmp::ALL.len())];
        let b = self.bind(
            out,
            Ty::Bool,
            Expr::Prim {
                prim: Prim::Cmp(c),
                args: vec![x.clone(), y],
            },
            d,
        );
        if self.rng.chance(0.3) {
            self.use_(&b);
            self.bind(
                out,
                Ty::Bool,
                Expr::Prim {
                    prim: Prim::Not,
                    args: vec![b],
                },
                d,
            );
        }
        if self.rng.chance(0.4) {
            // A piecewise-constant real: f64(int(x) * 2 + 1).
            let i = self.bind(
                out,
                Ty::Int,
                Expr::Prim {
                    prim: Prim::ToInt,
                    args: vec![x],
                },
                d,
            );
            let two = self.bind(out, Ty::Int, Expr::Int(2), d);
            let one = self.bind(out, Ty::Int, Expr::Int(1), d);
            for v in [&i, &two, &one] {
                self.used.insert(v.clone());
            }
            let m = self.bind(
                out,
                Ty::Int,
                Expr::Prim {
                    prim: Prim::IMul,
                    args: vec![i, two],
                },
                d,
            );
            self.used.insert(m.clone());
            let s = self.bind(
                out,
                Ty::Int,
                Expr::Prim {
                    prim: Prim::IAdd,
                    args: vec![m, one],
                },
                d,
            );
            self.used.insert(s.clone());
            let s = self.bitwise(out, s, d);
            self.bind(
                out,
                F,
                Expr::Prim {
                    prim: Prim::ToReal(Float::F64),
                    args: vec![s],
                },
                d,
            );
        }
    }

    /// Sometimes `s op k` for a bitwise `op` and a small `k` (a valid
    /// shift amount), then sometimes `inot` of it; else `s` itself.
    fn bitwise(&mut self, out: &mut Vec<Stmt>, s: Var, d: usize) -> Var {
        if !self.rng.chance(0.5) {
            return s;
        }
        let bit = Bit::ALL[self.rng.below(Bit::ALL.len())];
        let amount = 1 + self.rng.below(3) as i64;
        let k = self.bind(out, Ty::Int, Expr::Int(amount), d);
        self.used.insert(k.clone());
        let args = vec![s, k];
        let t = self.bind(
            out,
            Ty::Int,
            Expr::Prim {
                prim: Prim::IBit(bit),
                args,
            },
            d,
        );
        self.used.insert(t.clone());
        if !self.rng.chance(0.3) {
            return t;
        }
        let args = vec![t];
        let u = self.bind(
            out,
            Ty::Int,
            Expr::Prim {
                prim: Prim::INot,
                args,
            },
            d,
        );
        self.used.insert(u.clone());
        u
    }

    /// `let (r..) = case (x < y) { true => .. | false => .. }`.
    fn case_stmt(&mut self, out: &mut Vec<Stmt>, d: usize) {
        let (Some(x), Some(y)) = (self.scalar(), self.scalar()) else {
            return;
        };
        let c = Cmp::ALL[self.rng.below(4)];
        let cond = self.bind(
            out,
            Ty::Bool,
            Expr::Prim {
                prim: Prim::Cmp(c),
                args: vec![x, y],
            },
            d,
        );
        self.use_(&cond);
        let want = self.result_types();
        let n = self.inner_size();
        let (t, _) = self.block_of(d + 1, n, &want, None);
        let n = self.inner_size();
        let (e, _) = self.block_of(d + 1, n, &want, None);
        let bs = self.fresh_binders(&want, d);
        out.push(Stmt::Let {
            nl: bs,
            lin: vec![],
            rhs: Expr::Case {
                scrut: cond,
                arms: vec![
                    Arm {
                        bind: None,
                        body: t,
                    },
                    Arm {
                        bind: None,
                        body: e,
                    },
                ],
            },
        });
    }

    /// Statements in an arm or loop body: bounded, so that nesting does
    /// not multiply program size.
    fn inner_size(&mut self) -> usize {
        1 + self.rng.below(self.size.min(12) / 2 + 1)
    }

    fn result_types(&mut self) -> Vec<Ty> {
        let mut want = vec![F];
        if self.rng.chance(0.3) {
            want.push(if self.rng.chance(0.5) {
                F
            } else {
                Ty::Tuple(vec![F, F])
            });
        }
        want
    }

    /// Real state carried by a loop, started from values in scope.
    fn state(&mut self, out: &mut Vec<Stmt>, d: usize) -> Vec<(Binder, Var)> {
        let tys = self.result_types();
        tys.iter()
            .map(|t| {
                let init = self.build(out, t, d);
                (Binder::new(self.var(), t.clone()), init)
            })
            .collect()
    }

    /// The real state a counted loop carries and its index, both in scope
    /// for the body (depth `d + 1`).
    fn counted_scope(&mut self, out: &mut Vec<Stmt>, d: usize) -> (Vec<(Binder, Var)>, Binder) {
        let state = self.state(out, d);
        let index = Binder::new(self.var(), Ty::Int);
        self.pool.push((index.var.clone(), Ty::Int, d + 1));
        for (b, _) in &state {
            self.pool.push((b.var.clone(), b.ty.clone(), d + 1));
        }
        (state, index)
    }

    /// `for i in (lo..hi).step_by(k)` (maybe reversed) carrying real state.
    fn range_loop(&mut self, out: &mut Vec<Stmt>, d: usize) {
        let arrays = self.arrays();
        if !arrays.is_empty() && self.rng.chance(0.5) {
            return self.array_loop(out, d, arrays);
        }
        let lo_x = self.rng.below(2) as i64;
        let lo = self.bind(out, Ty::Int, Expr::Int(lo_x), d);
        let hi_x = self.rng.below(5) as i64;
        let hi = self.bind(out, Ty::Int, Expr::Int(hi_x), d);
        let mut step_x = 1;
        let step = if self.rng.chance(0.3) {
            let s = {
                step_x = 1 + self.rng.below(2) as i64;
                self.bind(out, Ty::Int, Expr::Int(step_x), d)
            };
            self.use_(&s);
            Some(s)
        } else {
            None
        };
        self.use_(&lo);
        self.use_(&hi);
        // Half the loops declare their (literal) trip count, as the front
        // end does for literal ranges: their tapes have a known length.
        let trip = self.rng.chance(0.5).then(|| {
            if hi_x > lo_x {
                ((hi_x - lo_x - 1) / step_x + 1) as u64
            } else {
                0
            }
        });
        let (state, index) = self.counted_scope(out, d);
        // The body reads its index as a real (and maybe as an exponent).
        let mut pre = Vec::new();
        if self.rng.chance(0.6) {
            let i = self.use_(&index.var);
            if self.rng.chance(0.4) {
                // x^i with a run-time exponent, x in (-1.5, 1.5).
                if let Some(x) = self.scalar() {
                    let b = self.bounded(&mut pre, &x, 1.5, d + 1);
                    let p = Expr::Prim {
                        prim: Prim::PowiN,
                        args: vec![b, i.clone()],
                    };
                    self.bind(&mut pre, F, p, d + 1);
                }
            }
            let real = Expr::Prim {
                prim: Prim::ToReal(Float::F64),
                args: vec![i],
            };
            self.bind(&mut pre, F, real, d + 1);
        }
        let rev = self.rng.chance(0.4);
        let iter = Iter::Range {
            index,
            lo,
            hi,
            step,
            rev,
            trip,
        };
        self.loop_stmt(out, d, iter, state, pre, None);
    }

    /// A local array written in place: `y = fill(n, 0)`, then a loop
    /// `y[i] = v` (or `y[i] += v`, reading the old element) with `v` a
    /// function of an outer scalar and, where there is an input array to
    /// take the length from, of its element `a[i]`; sometimes one more
    /// write after the loop of an element read before it (`y[0] = y[0]²`).
    /// Sometimes the array grows instead: `y = fill(0, 0)`, pushed `v`
    /// in the loop (maybe under a condition), and pushed once more after
    /// it, so that it is never empty.
    /// The array then joins the pool for later reads. Returns whether
    /// there was a scalar to build from.
    fn local_array(&mut self, out: &mut Vec<Stmt>, d: usize) -> bool {
        let Some(w) = self.scalar() else { return false };
        let inputs: Vec<Var> = self
            .pool
            .iter()
            .filter(|(_, t, _)| matches!(t, Ty::Array(e, _) if **e == F))
            .map(|(v, _, _)| v.clone())
            .collect();
        let source = (!inputs.is_empty() && self.rng.chance(0.6))
            .then(|| inputs[self.rng.below(inputs.len())].clone());
        let (n, size) = match &source {
            Some(a) => {
                self.use_(a);
                (self.bind(out, Ty::Int, Expr::Len(a.clone()), d), None)
            }
            None => {
                let k = 1 + self.rng.below(3) as u64;
                let size = self.rng.chance(0.5).then_some(k);
                (self.bind(out, Ty::Int, Expr::Int(k as i64), d), size)
            }
        };
        let lo = self.bind(out, Ty::Int, Expr::Int(0), d);
        let c = self.lit(out, 0.0, d);
        for v in [&n, &lo, &c] {
            self.use_(v);
        }
        let grows = size.is_none() && self.rng.chance(0.3);
        let ty = Ty::Array(Box::new(F), size);
        let fill = Expr::Fill {
            len: if grows { lo.clone() } else { n.clone() },
            val: c,
            size,
        };
        let y0 = self.bind(out, ty.clone(), fill, d);
        self.pool.retain(|(v, _, _)| *v != y0);
        let (index, st) = (
            Binder::new(self.var(), Ty::Int),
            Binder::new(self.var(), ty.clone()),
        );
        let let_ = |v: &Var, ty: Ty, rhs: Expr| Stmt::Let {
            nl: vec![Binder::new(v.clone(), ty)],
            lin: vec![],
            rhs,
        };
        let op = |p: Prim, args: &[&Var]| Expr::Prim {
            prim: p,
            args: args.iter().map(|v| (*v).clone()).collect(),
        };
        let mut stmts = Vec::new();
        let x = self.var();
        match &source {
            Some(a) => stmts.push(let_(
                &x,
                F,
                Expr::Index {
                    arr: a.clone(),
                    idx: index.var.clone(),
                },
            )),
            None => stmts.push(let_(&x, F, op(Prim::ToReal(Float::F64), &[&index.var]))),
        }
        let prim = [Prim::Mul, Prim::Add, Prim::Sub][self.rng.below(3)];
        let mut v = self.var();
        stmts.push(let_(&v, F, op(prim, &[&w, &x])));
        if self.rng.chance(0.5) {
            let sx = self.var();
            stmts.push(let_(&sx, F, op(Prim::Sin, &[&v])));
            v = sx;
        }
        if !grows && self.rng.chance(0.4) {
            let (old, sum) = (self.var(), self.var());
            stmts.push(let_(
                &old,
                F,
                Expr::Index {
                    arr: st.var.clone(),
                    idx: index.var.clone(),
                },
            ));
            stmts.push(let_(&sum, F, op(Prim::Add, &[&old, &v])));
            v = sum;
        }
        let next = self.var();
        let at = (!grows).then(|| index.var.clone());
        let write = let_(&next, ty.clone(), write_at(&st.var, at.as_ref(), v));
        let next = if self.rng.chance(0.35) {
            self.conditional_write(&mut stmts, write, next, &x, &st.var, at.as_ref(), &ty)
        } else {
            stmts.push(write);
            next
        };
        let y = self.var();
        out.push(Stmt::Let {
            nl: vec![Binder::new(y.clone(), ty.clone())],
            lin: vec![],
            rhs: Expr::Loop(Box::new(Loop {
                iter: Iter::Range {
                    index,
                    lo,
                    hi: n,
                    step: None,
                    rev: self.rng.chance(0.3),
                    trip: size,
                },
                nl: vec![(st, y0)],
                lin: vec![],
                collect: vec![],
                zero_skip: false,
                body: Expr::block(stmts, Expr::var(next)),
            })),
        });
        let y = if grows {
            self.use_(&w);
            let y2 = self.var();
            out.push(let_(&y2, ty.clone(), write_at(&y, None, w)));
            y2
        } else if self.rng.chance(0.4) {
            self.overwrite_first(out, y, &ty, d)
        } else {
            y
        };
        self.pool.push((y, ty, d));
        true
    }

    /// The write `write` (binding `next`) under `if x > 0`: the other arm
    /// leaves the array `st` as it is or writes `x` at the same index
    /// (`y[i] = if x > 0 { v } else { x }` as two writes in two arms), or
    /// pushes `x` where `index` is `None`.
    /// Returns the case's result, the array after the write.
    #[allow(clippy::too_many_arguments)]
    fn conditional_write(
        &mut self,
        stmts: &mut Vec<Stmt>,
        write: Stmt,
        next: Var,
        x: &Var,
        st: &Var,
        index: Option<&Var>,
        ty: &Ty,
    ) -> Var {
        let (zero, cond, other, y) = (self.var(), self.var(), self.var(), self.var());
        let let_ = |v: &Var, ty: Ty, rhs: Expr| Stmt::Let {
            nl: vec![Binder::new(v.clone(), ty)],
            lin: vec![],
            rhs,
        };
        stmts.push(let_(
            &zero,
            F,
            Expr::Lit {
                value: 0.0,
                float: Float::F64,
            },
        ));
        stmts.push(let_(
            &cond,
            Ty::Bool,
            Expr::Prim {
                prim: Prim::Cmp(Cmp::Gt),
                args: vec![x.clone(), zero],
            },
        ));
        let else_arm = if self.rng.chance(0.5) {
            Expr::var(st.clone())
        } else {
            let set = write_at(st, index, x.clone());
            Expr::block(vec![let_(&other, ty.clone(), set)], Expr::var(other))
        };
        let arms = vec![
            Arm {
                bind: None,
                body: Expr::block(vec![write], Expr::var(next)),
            },
            Arm {
                bind: None,
                body: else_arm,
            },
        ];
        stmts.push(let_(&y, ty.clone(), Expr::Case { scrut: cond, arms }));
        y
    }

    /// `y[0] = y[0] * y[0]` after the loop that wrote `y`: a write of an
    /// element read before it. Returns the array written.
    fn overwrite_first(&mut self, out: &mut Vec<Stmt>, y: Var, ty: &Ty, d: usize) -> Var {
        let k = self.bind(out, Ty::Int, Expr::Int(0), d);
        self.use_(&k);
        let read = Expr::Index {
            arr: y.clone(),
            idx: k.clone(),
        };
        let e = self.bind(out, F, read, d);
        self.use_(&e);
        let sq = self.prim(out, Prim::Mul, &[&e, &e], d);
        self.use_(&sq);
        let y2 = self.var();
        out.push(Stmt::Let {
            nl: vec![Binder::new(y2.clone(), ty.clone())],
            lin: vec![],
            rhs: Expr::Set {
                arr: y,
                idx: k,
                val: sq,
            },
        });
        y2
    }

    /// `for i in 0..len(a)` (maybe reversed) reading `a[i]`, carrying real
    /// state: a reduction over an array.
    fn array_loop(&mut self, out: &mut Vec<Stmt>, d: usize, arrays: Vec<(Var, Ty)>) {
        let (a, t) = arrays[self.rng.below(arrays.len())].clone();
        let Ty::Array(elem, _) = t else { return };
        if *elem == F && self.rng.chance(0.3) {
            return self.weighted_sum(out, d, a);
        }
        self.use_(&a);
        let lo = self.bind(out, Ty::Int, Expr::Int(0), d);
        let hi = self.bind(out, Ty::Int, Expr::Len(a.clone()), d);
        self.use_(&lo);
        self.use_(&hi);
        let (state, index) = self.counted_scope(out, d);
        let mut pre = Vec::new();
        let i = self.use_(&index.var);
        self.bind(&mut pre, *elem, Expr::Index { arr: a, idx: i }, d + 1);
        let iter = Iter::Range {
            index,
            lo,
            hi,
            step: None,
            rev: self.rng.chance(0.3),
            trip: None,
        };
        self.loop_stmt(out, d, iter, state, pre, None);
    }

    /// `for i in 0..len(a) { s = s + w * a[i] }` with `w` from outside the
    /// loop: a body linear in what it reads, whose residual needs nothing
    /// per iteration but the index (it reads `a` again).
    fn weighted_sum(&mut self, out: &mut Vec<Stmt>, d: usize, a: Var) {
        self.use_(&a);
        let Some(w) = self.scalar() else { return };
        let lo = self.bind(out, Ty::Int, Expr::Int(0), d);
        let hi = self.bind(out, Ty::Int, Expr::Len(a.clone()), d);
        let s0 = self.lit(out, 0.0, d);
        for v in [&lo, &hi, &s0] {
            self.use_(v);
        }
        let (index, s) = (Binder::new(self.var(), Ty::Int), Binder::new(self.var(), F));
        let (x, p, r) = (self.var(), self.var(), self.var());
        let let_ = |v: &Var, ty: Ty, rhs: Expr| Stmt::Let {
            nl: vec![Binder::new(v.clone(), ty)],
            lin: vec![],
            rhs,
        };
        let mul = |a: &Var, b: &Var, p: Prim| Expr::Prim {
            prim: p,
            args: vec![a.clone(), b.clone()],
        };
        let arr = Expr::Index {
            arr: a,
            idx: index.var.clone(),
        };
        // Half of them through a non-linear function of the element: its
        // derivative is recomputed from the element in the reverse sweep
        // (the default policy) rather than saved per iteration.
        let mut stmts = vec![let_(&x, F, arr)];
        let read = if self.rng.chance(0.5) {
            let fx = self.var();
            let prim = [Prim::Sin, Prim::Tanh, Prim::Exp, Prim::Atan][self.rng.below(4)];
            stmts.push(let_(
                &fx,
                F,
                Expr::Prim {
                    prim,
                    args: vec![x.clone()],
                },
            ));
            fx
        } else {
            x
        };
        stmts.push(let_(&p, F, mul(&w, &read, Prim::Mul)));
        stmts.push(let_(&r, F, mul(&s.var, &p, Prim::Add)));
        let body = Expr::block(stmts, Expr::var(r));
        let total = self.var();
        out.push(Stmt::Let {
            nl: vec![Binder::new(total.clone(), F)],
            lin: vec![],
            rhs: Expr::Loop(Box::new(Loop {
                iter: Iter::Range {
                    index,
                    lo,
                    hi,
                    step: None,
                    rev: self.rng.chance(0.3),
                    trip: None,
                },
                nl: vec![(s, s0)],
                lin: vec![],
                collect: vec![],
                zero_skip: false,
                body,
            })),
        });
        self.pool.push((total, F, d));
    }

    /// `while k < n { k += 1; .. }` carrying an integer and real state.
    fn while_loop(&mut self, out: &mut Vec<Stmt>, d: usize) {
        let n = {
            let x = self.rng.below(4) as i64;
            self.bind(out, Ty::Int, Expr::Int(x), d)
        };
        let k0 = self.bind(out, Ty::Int, Expr::Int(0), d);
        self.use_(&n);
        self.use_(&k0);
        let mut state = vec![(Binder::new(self.var(), Ty::Int), k0)];
        state.extend(self.state(out, d));
        let k = state[0].0.var.clone();
        let cond = Expr::Prim {
            prim: Prim::Cmp(Cmp::Lt),
            args: vec![k.clone(), n],
        };
        for (b, _) in &state[1..] {
            self.pool.push((b.var.clone(), b.ty.clone(), d + 1));
        }
        let mut pre = Vec::new();
        let one = self.var();
        let k1 = self.var();
        pre.push(Stmt::Let {
            nl: vec![Binder::new(one.clone(), Ty::Int)],
            lin: vec![],
            rhs: Expr::Int(1),
        });
        pre.push(Stmt::Let {
            nl: vec![Binder::new(k1.clone(), Ty::Int)],
            lin: vec![],
            rhs: Expr::Prim {
                prim: Prim::IAdd,
                args: vec![k, one],
            },
        });
        self.loop_stmt(
            out,
            d,
            Iter::While {
                cond: Box::new(cond),
            },
            state,
            pre,
            Some(k1),
        );
    }

    /// Control flow whose tangents are zero on every path, as J sees
    /// them: an integer `while` loop (a count to `n`), a case returning an
    /// integer and a constant real, or a loop carrying beside real state
    /// a power of constants started from a literal (`p *= 1 + i/4`). The
    /// results join the pool as reals, so later code differentiates
    /// through them. They exercise U's rules for loops and cases without
    /// linear work and simplification's zero state (ZLoop, ZCase).
    fn inert_stmt(&mut self, out: &mut Vec<Stmt>, d: usize) {
        match self.rng.below(3) {
            0 => self.counting_while(out, d),
            1 => self.integer_case(out, d),
            _ => self.power_loop(out, d),
        }
    }

    /// `k = 0; while k < n { k += 1 }; f64(k)`: no real in the loop.
    fn counting_while(&mut self, out: &mut Vec<Stmt>, d: usize) {
        let n = self.rng.below(4) as i64;
        let n = self.bind(out, Ty::Int, Expr::Int(n), d);
        let k0 = self.bind(out, Ty::Int, Expr::Int(0), d);
        self.use_(&n);
        self.use_(&k0);
        let (k, one, k1) = (self.var(), self.var(), self.var());
        let body = Expr::block(
            vec![
                let_(&one, Ty::Int, Expr::Int(1)),
                let_(&k1, Ty::Int, iprim(Prim::IAdd, &k, &one)),
            ],
            Expr::var(k1),
        );
        let cond = Expr::Prim {
            prim: Prim::Cmp(Cmp::Lt),
            args: vec![k.clone(), n],
        };
        let iter = Iter::While {
            cond: Box::new(cond),
        };
        let count = self.bind(out, Ty::Int, carry(iter, vec![(k, Ty::Int, k0)], body), d);
        self.use_(&count);
        let real = Expr::Prim {
            prim: Prim::ToReal(Float::F64),
            args: vec![count],
        };
        self.bind(out, F, real, d);
    }

    /// `y = case x <= t { true => a + 0.5·x·x | false => a + f(x)·k }` for
    /// a unary `f` and literals `t`, `k`: a piecewise function of `x` (the
    /// Huber loss's shape), whose arms' derivatives scale the same tangents
    /// by different coefficients, which folding takes out of the case.
    fn piecewise_case(&mut self, out: &mut Vec<Stmt>, d: usize) {
        let (Some(x), Some(a)) = (self.scalar(), self.scalar()) else {
            return;
        };
        let t = self.rng.real(-1.0, 1.0);
        let t = self.lit(out, (t * 8.0).round() / 8.0, d);
        let cond = self.bind(
            out,
            Ty::Bool,
            Expr::Prim {
                prim: Prim::Cmp(Cmp::Le),
                args: vec![x.clone(), t],
            },
            d,
        );
        let mut near = vec![];
        let h = self.lit(&mut near, 0.5, d + 1);
        let hx = self.prim(&mut near, Prim::Mul, &[&h, &x], d + 1);
        let q = self.prim(&mut near, Prim::Mul, &[&hx, &x], d + 1);
        let y1 = self.prim(&mut near, Prim::Add, &[&a, &q], d + 1);
        let mut far = vec![];
        let f = [Prim::Sin, Prim::Tanh, Prim::Atan, Prim::Abs][self.rng.below(4)];
        let u = self.prim(&mut far, f, &[&x], d + 1);
        let k = self.rng.real(-2.0, 2.0);
        let k = self.lit(&mut far, (k * 8.0).round() / 8.0, d + 1);
        let v = self.prim(&mut far, Prim::Mul, &[&u, &k], d + 1);
        let y2 = self.prim(&mut far, Prim::Add, &[&a, &v], d + 1);
        self.pool.retain(|(_, _, dd)| *dd <= d);
        for v in [&x, &a, &cond] {
            self.use_(v);
        }
        let y = self.var();
        let arm = |stmts: Vec<Stmt>, r: Var| Arm {
            bind: None,
            body: Expr::block(stmts, Expr::var(r)),
        };
        out.push(let_(
            &y,
            F,
            Expr::Case {
                scrut: cond,
                arms: vec![arm(near, y1), arm(far, y2)],
            },
        ));
        self.pool.push((y, F, d));
    }

    /// `(k, s) = if x < y { (j + 1, a) } else { (j, b) }` for an integer
    /// `j` and literals `a`, `b`; then `f64(k)`.
    fn integer_case(&mut self, out: &mut Vec<Stmt>, d: usize) {
        let (Some(x), Some(y)) = (self.scalar(), self.scalar()) else {
            return;
        };
        let cond = Expr::Prim {
            prim: Prim::Cmp(Cmp::ALL[self.rng.below(4)]),
            args: vec![x, y],
        };
        let cond = self.bind(out, Ty::Bool, cond, d);
        let j = self.rng.below(3) as i64;
        let j = self.bind(out, Ty::Int, Expr::Int(j), d);
        self.use_(&cond);
        self.use_(&j);
        let (one, k1, a, b) = (self.var(), self.var(), self.var(), self.var());
        let lit = |v: &Var, x: f64| {
            let value = Expr::Lit {
                value: x,
                float: Float::F64,
            };
            let_(v, F, value)
        };
        let ret = |k: &Var, s: &Var| Expr::Ret {
            nl: vec![k.clone(), s.clone()],
            lin: vec![],
        };
        let taken = Expr::block(
            vec![
                let_(&one, Ty::Int, Expr::Int(1)),
                let_(&k1, Ty::Int, iprim(Prim::IAdd, &j, &one)),
                lit(&a, 0.75),
            ],
            ret(&k1, &a),
        );
        let other = Expr::block(vec![lit(&b, -1.25)], ret(&j, &b));
        let (k, s) = (self.var(), self.var());
        out.push(Stmt::Let {
            nl: vec![Binder::new(k.clone(), Ty::Int), Binder::new(s.clone(), F)],
            lin: vec![],
            rhs: Expr::Case {
                scrut: cond,
                arms: [taken, other].map(|body| Arm { bind: None, body }).into(),
            },
        });
        self.pool.push((s, F, d));
        self.use_(&k);
        let real = Expr::Prim {
            prim: Prim::ToReal(Float::F64),
            args: vec![k],
        };
        self.bind(out, F, real, d);
    }

    /// `for i in 0..m { a += y·p; p *= 1 + f64(i)/4 }` from `a = x`,
    /// `p = 1`: `p` is a power of constants, its tangent zero throughout.
    fn power_loop(&mut self, out: &mut Vec<Stmt>, d: usize) {
        let (Some(x), Some(y)) = (self.scalar(), self.scalar()) else {
            return;
        };
        let m = 1 + self.rng.below(4) as i64;
        let lo = self.bind(out, Ty::Int, Expr::Int(0), d);
        let hi = self.bind(out, Ty::Int, Expr::Int(m), d);
        let p0 = self.lit(out, 1.0, d);
        for v in [&lo, &hi, &p0] {
            self.use_(v);
        }
        let [i, a, p, ti, q, c, one, c1, b, a1, p1] = [(); 11].map(|_| self.var());
        let lit = |v: &Var, x: f64| {
            let value = Expr::Lit {
                value: x,
                float: Float::F64,
            };
            let_(v, F, value)
        };
        let real = |prim: Prim, l: &Var, r: &Var| Expr::Prim {
            prim,
            args: vec![l.clone(), r.clone()],
        };
        let body = Expr::block(
            vec![
                let_(
                    &ti,
                    F,
                    Expr::Prim {
                        prim: Prim::ToReal(Float::F64),
                        args: vec![i.clone()],
                    },
                ),
                lit(&q, 0.25),
                let_(&c, F, real(Prim::Mul, &ti, &q)),
                lit(&one, 1.0),
                let_(&c1, F, real(Prim::Add, &c, &one)),
                let_(&b, F, real(Prim::Mul, &y, &p)),
                let_(&a1, F, real(Prim::Add, &a, &b)),
                let_(&p1, F, real(Prim::Mul, &p, &c1)),
            ],
            Expr::Ret {
                nl: vec![a1, p1],
                lin: vec![],
            },
        );
        let iter = Iter::Range {
            index: Binder::new(i, Ty::Int),
            lo,
            hi,
            step: None,
            rev: false,
            trip: Some(m as u64),
        };
        let (sa, sp) = (self.var(), self.var());
        out.push(Stmt::Let {
            nl: vec![Binder::new(sa.clone(), F), Binder::new(sp.clone(), F)],
            lin: vec![],
            rhs: carry(iter, vec![(a, F, x), (p, F, p0)], body),
        });
        self.pool.push((sa, F, d));
        self.pool.push((sp, F, d));
    }

    /// A loop whose body starts with `pre`, returns (`first`, if any, then)
    /// the next real state, each squashed into (-2, 2) so that iterating
    /// stays finite.
    #[allow(clippy::too_many_arguments)]
    fn loop_stmt(
        &mut self,
        out: &mut Vec<Stmt>,
        d: usize,
        iter: Iter,
        state: Vec<(Binder, Var)>,
        pre: Vec<Stmt>,
        first: Option<Var>,
    ) {
        let reals: Vec<Ty> = state
            .iter()
            .skip(usize::from(first.is_some()))
            .map(|(b, _)| b.ty.clone())
            .collect();
        let n = self.inner_size();
        let (body, _) = self.block_of(d + 1, n, &reals, Some((pre, first)));
        let bs: Vec<Binder> = state
            .iter()
            .map(|(b, _)| Binder::new(self.var(), b.ty.clone()))
            .collect();
        for b in &bs {
            self.pool.push((b.var.clone(), b.ty.clone(), d));
        }
        out.push(Stmt::Let {
            nl: bs,
            lin: vec![],
            rhs: Expr::Loop(Box::new(Loop {
                iter,
                nl: state,
                lin: vec![],
                collect: vec![],
                zero_skip: false,
                body,
            })),
        });
    }

    /// A block at depth `d` of about `n` statements returning values of
    /// the types `want` (each real squashed by tanh if `squash` is given,
    /// after the statements `pre` and the value `first`).
    fn block_of(
        &mut self,
        d: usize,
        n: usize,
        want: &[Ty],
        squash: Option<(Vec<Stmt>, Option<Var>)>,
    ) -> (Expr, Vec<Ty>) {
        let (mut out, first) = match &squash {
            Some((pre, first)) => (pre.clone(), first.clone()),
            None => (Vec::new(), None),
        };
        for _ in 0..n {
            self.stmt(&mut out, d);
        }
        let mut rets: Vec<Var> = first.into_iter().collect();
        for t in want {
            let v = self.build(&mut out, t, d);
            let v = match (t, &squash) {
                (Ty::Real(_), Some(_)) => {
                    let th = self.prim(&mut out, Prim::Tanh, &[&v], d);
                    self.used.insert(th.clone());
                    let k = self.lit(&mut out, 1.9, d);
                    self.used.insert(k.clone());
                    self.prim(&mut out, Prim::Mul, &[&th, &k], d)
                }
                _ => v,
            };
            self.used.insert(v.clone());
            rets.push(v);
        }
        self.finish_block(d, out, rets)
    }

    fn scalar_count(&self) -> usize {
        self.pool.iter().filter(|(_, t, _)| *t == F).count()
    }

    /// Whether unused values may be added to the first result: it must be
    /// a real (a loop's first state component is an integer counter).
    fn fold_ok(&self, rets: &[Var]) -> bool {
        rets.first()
            .is_some_and(|r| self.pool.iter().any(|(v, t, _)| v == r && *t == F))
    }

    fn func(mut self, name: &str, index: usize) -> Func {
        let n = 1 + self.rng.below(3);
        let params: Vec<Binder> = (0..n)
            .map(|_| {
                let t = random_param_ty(self.rng);
                Binder::new(self.var(), t)
            })
            .collect();
        for b in &params {
            self.pool.push((b.var.clone(), b.ty.clone(), 0));
        }
        // Data (a `#[nondiff]` slice): an array with no tangent, read by
        // index and in loops like a parameter.
        let mut data = Vec::new();
        if self.rng.chance(0.3) {
            let name = data_name(index);
            let t = Ty::Array(Box::new(F), None);
            let rhs = Expr::Const {
                name,
                args: vec![],
                ty: t.clone(),
            };
            self.data = Some(self.bind(&mut data, t, rhs, 0));
        }
        let k = 1 + self.rng.below(2);
        let stmts = 2 + self.rng.below(self.size);
        let (mut body, rets) = self.block(0, stmts, k);
        if let Expr::Block { stmts, .. } = &mut body {
            stmts.splice(0..0, data);
        }
        Func {
            name: Var::new(name),
            nl_params: params,
            lin_params: vec![],
            nl_rets: rets,
            lin_rets: vec![],
            body,
        }
    }
}

// ---------------------------------------------------------------------------
// Dual numbers: the reference derivative, written independently of J.

#[derive(Clone, Debug)]
pub enum Dual {
    Real(f64, f64),
    Int(i64),
    Bool(bool),
    Tuple(Vec<Dual>),
}

impl Dual {
    pub fn from_values(x: &Value, dx: &Value) -> Dual {
        match (x, dx) {
            (Value::Real(a), Value::Real(b)) => Dual::Real(*a, *b),
            (Value::Tuple(a), Value::Tuple(b)) | (Value::Array(a), Value::Array(b)) => Dual::Tuple(
                a.iter()
                    .zip(b)
                    .map(|(x, d)| Dual::from_values(x, d))
                    .collect(),
            ),
            (Value::Int(n), _) => Dual::Int(*n),
            (Value::Bool(b), _) => Dual::Bool(*b),
            _ => Dual::Real(f64::NAN, f64::NAN),
        }
    }
    pub fn primal(&self) -> Value {
        match self {
            Dual::Real(a, _) => Value::Real(*a),
            Dual::Int(n) => Value::Int(*n),
            Dual::Bool(b) => Value::Bool(*b),
            Dual::Tuple(ds) => Value::Tuple(ds.iter().map(Dual::primal).collect()),
        }
    }
    /// The tangent, of the type J gives it (empty for integers and bools).
    pub fn tangent(&self) -> Value {
        match self {
            Dual::Real(_, d) => Value::Real(*d),
            Dual::Int(_) | Dual::Bool(_) => Value::Tuple(vec![]),
            Dual::Tuple(ds) => Value::Tuple(ds.iter().map(Dual::tangent).collect()),
        }
    }
}

fn dual_prim(p: Prim, a: &[(f64, f64)]) -> (f64, f64) {
    let (x, dx) = a[0];
    let (y, dy) = a.get(1).copied().unwrap_or((0.0, 0.0));
    let z = p.eval(&a.iter().map(|t| t.0).collect::<Vec<_>>());
    trace_piece(p, x, y, z);
    let d = match p {
        Prim::Add => dx + dy,
        Prim::Sub => dx - dy,
        Prim::Mul => x * dy + y * dx,
        Prim::Div => (dx * y - x * dy) / (y * y),
        Prim::Neg => -dx,
        Prim::Sin => x.cos() * dx,
        Prim::Cos => -x.sin() * dx,
        Prim::Tan => dx / (x.cos() * x.cos()),
        Prim::Asin => dx / (1.0 - x * x).sqrt(),
        Prim::Acos => -dx / (1.0 - x * x).sqrt(),
        Prim::Atan => dx / (1.0 + x * x),
        Prim::Atan2 => (y * dx - x * dy) / (x * x + y * y),
        Prim::Sinh => x.cosh() * dx,
        Prim::Cosh => x.sinh() * dx,
        // From the rounded result, as the rule and every AD tool compute it:
        // where tanh saturates (|x| > 10), z is within an ulp of ±1 and
        // 1/cosh²(x) differs from any formula in z by up to 1e-5 relative
        // (an absolute error below 1e-16). (1 - z)(1 + z) is not the rule's
        // 1 - z².
        Prim::Tanh => (1.0 - z) * (1.0 + z) * dx,
        Prim::Exp => x.exp() * dx,
        Prim::Exp2 => x.exp2() * std::f64::consts::LN_2 * dx,
        Prim::Ln => dx / x,
        Prim::Log2 => dx / (x * std::f64::consts::LN_2),
        Prim::Log10 => dx / (x * std::f64::consts::LN_10),
        Prim::Sqrt => dx / (2.0 * x.sqrt()),
        Prim::Cbrt => dx / (3.0 * x.cbrt().powi(2)),
        Prim::Powi(n) => f64::from(n) * x.powi(n - 1) * dx * if n == 0 { 0.0 } else { 1.0 },
        Prim::Powf => x.powf(y) * (dy * x.ln() + y * dx / x),
        Prim::Recip => -dx / (x * x),
        Prim::Abs => x.signum() * dx,
        Prim::Hypot => (x * dx + y * dy) / x.hypot(y),
        Prim::Min => {
            if x <= y {
                dx
            } else {
                dy
            }
        }
        Prim::Max => {
            if y <= x {
                dx
            } else {
                dy
            }
        }
        Prim::Signum | Prim::Le => 0.0,
        Prim::Floor | Prim::Ceil | Prim::Round | Prim::Trunc => 0.0,
        Prim::Ln1p => dx / (1.0 + x),
        Prim::ExpM1 => x.exp() * dx,
        Prim::Asinh => dx / (x * x + 1.0).sqrt(),
        Prim::Acosh => dx / (x * x - 1.0).sqrt(),
        Prim::Atanh => dx / (1.0 - x * x),
        Prim::Copysign => x.signum() * y.signum() * dx,
        // std's own quotients, independent of the rule's `round((x - z) / y)`.
        Prim::Rem => dx - (x / y).trunc() * dy,
        Prim::RemEuclid => dx - x.div_euclid(y) * dy,
        Prim::IAdd
        | Prim::ISub
        | Prim::IMul
        | Prim::IDiv
        | Prim::IRem
        | Prim::INeg
        | Prim::IBit(_)
        | Prim::INot
        | Prim::Cmp(_)
        | Prim::And
        | Prim::Or
        | Prim::Not
        | Prim::ToReal(_)
        | Prim::ToInt
        | Prim::PowiN => panic!("not a real primitive"),
    };
    (z, d)
}

/// Notes which smooth piece of `p` the operands `x`, `y` (result `z`) lie on,
/// for primitives that have more than one.
fn trace_piece(p: Prim, x: f64, y: f64, z: f64) {
    match p {
        Prim::Floor | Prim::Ceil | Prim::Round | Prim::Trunc => trace(z.to_bits()),
        Prim::Rem => trace((x / y).trunc().to_bits()),
        Prim::RemEuclid => trace(x.div_euclid(y).to_bits()),
        Prim::Min | Prim::Max | Prim::Le => trace(u64::from(x <= y)),
        Prim::Abs | Prim::Signum => trace(u64::from(x.is_sign_negative())),
        Prim::Copysign => {
            trace(u64::from(x.is_sign_negative()) * 2 + u64::from(y.is_sign_negative()))
        }
        Prim::Add
        | Prim::Sub
        | Prim::Mul
        | Prim::Div
        | Prim::Neg
        | Prim::Sin
        | Prim::Cos
        | Prim::Tan
        | Prim::Asin
        | Prim::Acos
        | Prim::Atan
        | Prim::Atan2
        | Prim::Sinh
        | Prim::Cosh
        | Prim::Tanh
        | Prim::Exp
        | Prim::Exp2
        | Prim::Ln
        | Prim::Log2
        | Prim::Log10
        | Prim::Sqrt
        | Prim::Cbrt
        | Prim::Powi(_)
        | Prim::Powf
        | Prim::Recip
        | Prim::Hypot
        | Prim::Ln1p
        | Prim::ExpM1
        | Prim::Asinh
        | Prim::Acosh
        | Prim::Atanh
        | Prim::IAdd
        | Prim::ISub
        | Prim::IMul
        | Prim::IDiv
        | Prim::IRem
        | Prim::INeg
        | Prim::IBit(_)
        | Prim::INot
        | Prim::Cmp(_)
        | Prim::And
        | Prim::Or
        | Prim::Not
        | Prim::ToReal(_)
        | Prim::ToInt
        | Prim::PowiN => {}
    }
}

/// A discrete primitive on dual numbers: computed on the primals, with a
/// zero tangent where the result is real.
fn dual_discrete(p: Prim, a: &[Dual]) -> Dual {
    let xs: Vec<Scalar> = a
        .iter()
        .map(|d| match d {
            Dual::Real(x, _) => Scalar::Real(*x),
            Dual::Int(n) => Scalar::Int(*n),
            Dual::Bool(b) => Scalar::Bool(*b),
            Dual::Tuple(_) => panic!("primitive on a tuple"),
        })
        .collect();
    match p.eval_scalars(&xs).expect("well-typed operands") {
        Scalar::Real(x) => {
            trace(x.to_bits());
            Dual::Real(x, 0.0)
        }
        Scalar::Int(n) => {
            trace(n as u64);
            Dual::Int(n)
        }
        Scalar::Bool(b) => {
            trace(u64::from(b));
            Dual::Bool(b)
        }
    }
}

thread_local! {
    /// The discrete outcomes of a traced dual run (see [`dual_run_traced`]).
    static TRACE: std::cell::RefCell<Option<Vec<u64>>> = const { std::cell::RefCell::new(None) };
}

/// Notes a discrete outcome when a traced run is in progress.
fn trace(bits: u64) {
    TRACE.with(|t| {
        if let Some(t) = t.borrow_mut().as_mut() {
            t.push(bits);
        }
    });
}

/// [`dual_run`], with the sequence of its discrete outcomes: every
/// comparison, integer result, rounding, quotient of a remainder and side
/// taken by `min`, `max`, `abs` or a sign. Two runs with equal traces lie
/// on one smooth piece of the program, so a finite difference between them
/// measures a derivative and not a jump. Checking the two ends of a step
/// is what makes this sound where comparing step sizes is not: a remainder
/// whose quotient is about 1e11 jumps every 1e-11, and differences over any
/// step then see a smooth staircase average whose slope AD rightly calls 0.
pub fn dual_run_traced(p: &Program, func: &str, args: Vec<Dual>) -> (Vec<Dual>, Vec<u64>) {
    let before = TRACE.with(|t| t.borrow_mut().replace(Vec::new()));
    let out = dual_run(p, func, args);
    let trace = TRACE.with(|t| std::mem::replace(&mut *t.borrow_mut(), before));
    (out, trace.unwrap_or_default())
}

/// Evaluates a non-linear function on dual numbers.
pub fn dual_run(p: &Program, func: &str, args: Vec<Dual>) -> Vec<Dual> {
    let f = p.func(func).expect("function exists");
    let mut env: HashMap<Var, Dual> = HashMap::new();
    for (b, a) in f.nl_params.iter().zip(args) {
        env.insert(b.var.clone(), a);
    }
    dual_expr(p, &f.body, &mut env)
}

fn dual_expr(p: &Program, e: &Expr, env: &mut HashMap<Var, Dual>) -> Vec<Dual> {
    let get = |env: &HashMap<Var, Dual>, v: &Var| env[v].clone();
    match e {
        Expr::Block { stmts, tail } => {
            for s in stmts {
                match s {
                    Stmt::Let { nl, rhs, .. } => {
                        let vs = dual_expr(p, rhs, env);
                        for (b, v) in nl.iter().zip(vs) {
                            env.insert(b.var.clone(), v);
                        }
                    }
                    Stmt::Unpack { vars, tuple } => {
                        let Dual::Tuple(parts) = get(env, tuple) else {
                            panic!("not a tuple")
                        };
                        for (b, v) in vars.iter().zip(parts) {
                            env.insert(b.var.clone(), v);
                        }
                    }
                    Stmt::LinUnpack { .. } => panic!("dual evaluation of a linear program"),
                }
            }
            dual_expr(p, tail, env)
        }
        Expr::Ret { nl, .. } => nl.iter().map(|v| get(env, v)).collect(),
        Expr::App { func, nl, .. } => {
            dual_run(p, func.as_str(), nl.iter().map(|v| get(env, v)).collect())
        }
        Expr::Lit { value, .. } => vec![Dual::Real(*value, 0.0)],
        Expr::Int(n) => vec![Dual::Int(*n)],
        Expr::Bool(b) => vec![Dual::Bool(*b)],
        Expr::Tup(vs) => vec![Dual::Tuple(vs.iter().map(|v| get(env, v)).collect())],
        Expr::Prim {
            prim: Prim::PowiN,
            args,
        } => match (get(env, &args[0]), get(env, &args[1])) {
            (Dual::Real(x, dx), Dual::Int(n)) => {
                let n = n as i32;
                vec![Dual::Real(x.powi(n), f64::from(n) * x.powi(n - 1) * dx)]
            }
            _ => panic!("powin of a non-real"),
        },
        Expr::Prim { prim, args } if !prim.is_real() => {
            let a: Vec<Dual> = args.iter().map(|v| get(env, v)).collect();
            vec![dual_discrete(*prim, &a)]
        }
        Expr::Case { scrut, arms } => {
            let Dual::Bool(b) = get(env, scrut) else {
                panic!("generated cases are on bools")
            };
            dual_expr(p, &arms[usize::from(!b)].body, env)
        }
        Expr::Loop(l) => dual_loop(p, l, env),
        Expr::Prim { prim, args } => {
            let a: Vec<(f64, f64)> = args
                .iter()
                .map(|v| match get(env, v) {
                    Dual::Real(x, d) => (x, d),
                    Dual::Int(_) | Dual::Bool(_) | Dual::Tuple(_) => {
                        panic!("real primitive on a non-real")
                    }
                })
                .collect();
            let (z, d) = dual_prim(*prim, &a);
            vec![Dual::Real(z, d)]
        }
        Expr::Drop(_) => vec![],
        Expr::Index { arr, idx } => match (get(env, arr), get(env, idx)) {
            (Dual::Tuple(vs), Dual::Int(i)) => vec![vs[i as usize].clone()],
            _ => panic!("index of a non-array"),
        },
        Expr::Len(arr) => match get(env, arr) {
            Dual::Tuple(vs) => vec![Dual::Int(vs.len() as i64)],
            _ => panic!("len of a non-array"),
        },
        Expr::Fill { len, val, .. } => match get(env, len) {
            Dual::Int(n) => vec![Dual::Tuple(vec![get(env, val); n as usize])],
            _ => panic!("fill of a non-integer length"),
        },
        Expr::Set { arr, idx, val } => match (get(env, arr), get(env, idx)) {
            (Dual::Tuple(mut vs), Dual::Int(i)) => {
                vs[i as usize] = get(env, val);
                vec![Dual::Tuple(vs)]
            }
            _ => panic!("set of a non-array"),
        },
        Expr::Push { arr, val } => match get(env, arr) {
            Dual::Tuple(mut vs) => {
                vs.push(get(env, val));
                vec![Dual::Tuple(vs)]
            }
            _ => panic!("push onto a non-array"),
        },
        Expr::Pop { arr } => match get(env, arr) {
            Dual::Tuple(mut vs) => {
                let last = vs.pop().expect("pop of a non-empty array");
                vec![Dual::Tuple(vs), last]
            }
            _ => panic!("pop of a non-array"),
        },
        Expr::Inj { .. }
        | Expr::LinPush { .. }
        | Expr::LinPop { .. }
        | Expr::LinIndex { .. }
        | Expr::LinAccum { .. }
        | Expr::LinZeros { .. }
        | Expr::LinSet { .. }
        | Expr::LinFree { .. }
        | Expr::LinZero(_)
        | Expr::LinTup(_)
        | Expr::LinAdd(..)
        | Expr::LinNeg(_)
        | Expr::LinScale(..)
        | Expr::Dup(_) => panic!("dual evaluation supports the non-linear fragment only"),
        // Data: constant, a zero tangent.
        Expr::Const { name, .. } => vec![constant_dual(&data_value(name))],
    }
}

/// `x` with a zero tangent.
fn constant_dual(x: &Value) -> Dual {
    match x {
        Value::Real(r) => Dual::Real(*r, 0.0),
        Value::Array(xs) | Value::Tuple(xs) => Dual::Tuple(xs.iter().map(constant_dual).collect()),
        _ => panic!("constants in generated programs hold reals"),
    }
}

fn dual_loop(p: &Program, l: &Loop, env: &mut HashMap<Var, Dual>) -> Vec<Dual> {
    let int = |env: &HashMap<Var, Dual>, v: &Var| match env[v] {
        Dual::Int(n) => n,
        _ => panic!("not an integer"),
    };
    let mut state: Vec<Dual> = l.nl.iter().map(|(_, v)| env[v].clone()).collect();
    let mut indices = None;
    if let Iter::Range {
        lo, hi, step, rev, ..
    } = &l.iter
    {
        let (lo, hi) = (int(env, lo), int(env, hi));
        let step = step.as_ref().map_or(1, |s| int(env, s));
        let mut v: Vec<i64> = (lo..hi).step_by(step as usize).collect();
        if *rev {
            v.reverse();
        }
        indices = Some(v.into_iter());
    }
    loop {
        for ((b, _), v) in l.nl.iter().zip(&state) {
            env.insert(b.var.clone(), v.clone());
        }
        match (&mut indices, &l.iter) {
            (Some(it), Iter::Range { index, .. }) => match it.next() {
                Some(i) => {
                    env.insert(index.var.clone(), Dual::Int(i));
                }
                None => break,
            },
            (None, Iter::While { cond }) => match dual_expr(p, cond, env).as_slice() {
                [Dual::Bool(true)] => {}
                _ => break,
            },
            _ => panic!("generated loops are range or while loops"),
        }
        state = dual_expr(p, &l.body, env);
    }
    state
}

/// |a - b| ≤ tol·(1 + |a| + |b|), scalar by scalar.
pub fn close(a: &[Value], b: &[Value], tol: f64) -> bool {
    let (mut xa, mut xb) = (Vec::new(), Vec::new());
    a.iter().for_each(|v| v.flatten(&mut xa));
    b.iter().for_each(|v| v.flatten(&mut xb));
    xa.len() == xb.len()
        && xa.iter().zip(&xb).all(|(x, y)| {
            (x - y).abs() <= tol * (1.0 + x.abs() + y.abs()) || (x.is_nan() && y.is_nan())
        })
}

/// Runs `one(seed, size)` on `cases` random programs (sizes 2 to 13), or
/// on the one program `LINEAR_CORE_SEED=seed,size` names; panics with
/// proptest's minimal failing input, or with the replayed program. Returns
/// whether the whole sample ran, so that a replay skips the caller's checks
/// on counts over the sample.
pub fn for_random_programs(
    cases: u32,
    one: impl Fn(u64, usize) -> Result<(), proptest::test_runner::TestCaseError>,
) -> bool {
    use proptest::prelude::*;
    if let Some((seed, size)) = std::env::var("LINEAR_CORE_SEED").ok().and_then(|s| {
        let (a, b) = s.split_once(',')?;
        Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
    }) {
        if let Err(e) = one(seed, size) {
            panic!("{e}\n{}", gen_program(seed, size));
        }
        return false;
    }
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    });
    if let Err(e) = runner.run(&(any::<u64>(), 2usize..14), |(seed, sz)| one(seed, sz)) {
        panic!("{e}");
    }
    true
}
