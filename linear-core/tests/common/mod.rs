//! Test support: a generator of random well-typed non-linear programs and a
//! dual-number evaluator used as the independent reference for derivatives.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet};

use linear_core::eval::Value;
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
        Ty::Tape(_) => Value::Tuple(vec![]),
    }
}

const F: Ty = Ty::Real(Float::F64);

/// A random program of 1 to 4 functions, each calling earlier ones, with
/// `size` bounding the statements drawn per block. The last function is the
/// entry point.
pub fn gen_program(seed: u64, size: usize) -> Program {
    let mut rng = Rng(seed);
    let n = 1 + rng.below(4);
    let mut p = Program::default();
    for i in 0..n {
        let f = FnGen::new(&mut rng, &p.funcs, size).func(&format!("f{i}"));
        p.funcs.push(f);
    }
    p
}

struct FnGen<'a> {
    rng: &'a mut Rng,
    funcs: &'a [Func],
    size: usize,
    next: usize,
    /// Variables in scope with their types and block depth.
    pool: Vec<(Var, Ty, usize)>,
    used: HashSet<Var>,
}

fn random_param_ty(rng: &mut Rng) -> Ty {
    match rng.below(8) {
        0 => Ty::Tuple(vec![F, F]),
        1 => Ty::Tuple(vec![Ty::Tuple(vec![F]), F]),
        _ => F,
    }
}

impl<'a> FnGen<'a> {
    fn new(rng: &'a mut Rng, funcs: &'a [Func], size: usize) -> Self {
        FnGen {
            rng,
            funcs,
            size: size.max(2),
            next: 0,
            pool: Vec::new(),
            used: HashSet::new(),
        }
    }

    fn var(&mut self) -> Var {
        self.next += 1;
        Var::new(&format!("x{}", self.next))
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
        if c.is_empty() {
            return None;
        }
        let v = c[self.rng.below(c.len())].clone();
        Some(self.use_(&v))
    }

    /// A value of type `t`, built from scalars in scope if need be.
    fn build(&mut self, out: &mut Vec<Stmt>, t: &Ty, depth: usize) -> Var {
        if self.rng.chance(0.6) {
            if let Some(v) = self.of_type(t) {
                return v;
            }
        }
        match t {
            // Generated programs have no externs, hence no tapes.
            Ty::Real(_) | Ty::Tape(_) => match self.scalar() {
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
            },
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
            Prim::Asin | Prim::Acos => vec![self.bounded(out, &x, 0.9, d)],
            Prim::Tan => vec![self.bounded(out, &x, 1.2, d)],
            Prim::Exp | Prim::Exp2 | Prim::Sinh | Prim::Cosh => vec![self.bounded(out, &x, 2.0, d)],
            Prim::Powi(n) if n < 0 => vec![self.positive(out, &x, d)],
            Prim::Powi(_) => vec![self.bounded(out, &x, 1.5, d)],
            Prim::Div | Prim::Atan2 | Prim::Hypot => vec![x.clone(), self.positive(out, &y, d)],
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
            | Prim::Signum => vec![x],
        };
        let refs: Vec<&Var> = args.iter().collect();
        self.prim(out, p, &refs, d);
    }

    fn stmt(&mut self, out: &mut Vec<Stmt>, d: usize) {
        match self.rng.below(100) {
            0..=44 => self.prim_stmt(out, d),
            45..=49 => {
                let x = self.rng.real(-2.0, 2.0);
                self.lit(out, (x * 8.0).round() / 8.0, d);
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
                        Ty::Real(_) | Ty::Tape(_) => None,
                    })
                    .collect();
                if let Some((v, ts)) = tuples.get(self.rng.below(tuples.len())).cloned() {
                    self.use_(&v);
                    let vars: Vec<Binder> = ts
                        .iter()
                        .map(|t| Binder::new(self.var(), t.clone()))
                        .collect();
                    for b in &vars {
                        self.pool.push((b.var.clone(), b.ty.clone(), d));
                    }
                    out.push(Stmt::Unpack { vars, tuple: v });
                }
            }
            67..=80 if !self.funcs.is_empty() => {
                let f = &self.funcs[self.rng.below(self.funcs.len())];
                let (params, rets) = (f.nl_params.clone(), f.nl_rets.clone());
                let name = f.name.clone();
                let args: Vec<Var> = params.iter().map(|b| self.build(out, &b.ty, d)).collect();
                let bs: Vec<Binder> = rets
                    .iter()
                    .map(|t| Binder::new(self.var(), t.clone()))
                    .collect();
                for b in &bs {
                    self.pool.push((b.var.clone(), b.ty.clone(), d));
                }
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
        for _ in 1..k {
            let (v, _, _) =
                self.pool[self.pool.len() - 1 - self.rng.below(self.pool.len().min(3))].clone();
            self.use_(&v);
            rets.push(v);
        }
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
                    Ty::Real(_) if self.rng.chance(0.8) => {
                        let acc = rets[0].clone();
                        let s = self.prim(&mut out, Prim::Add, &[&acc, &v], d);
                        self.used.insert(s.clone());
                        rets[0] = s;
                    }
                    Ty::Tuple(ref ts) if self.rng.chance(0.5) => {
                        let vars: Vec<Binder> = ts
                            .iter()
                            .map(|t| Binder::new(self.var(), t.clone()))
                            .collect();
                        for b in &vars {
                            self.pool.push((b.var.clone(), b.ty.clone(), d));
                        }
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

    fn scalar_count(&self) -> usize {
        self.pool.iter().filter(|(_, t, _)| *t == F).count()
    }

    fn func(mut self, name: &str) -> Func {
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
        let k = 1 + self.rng.below(2);
        let stmts = 2 + self.rng.below(self.size);
        let (body, rets) = self.block(0, stmts, k);
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
    Tuple(Vec<Dual>),
}

impl Dual {
    pub fn from_values(x: &Value, dx: &Value) -> Dual {
        match (x, dx) {
            (Value::Real(a), Value::Real(b)) => Dual::Real(*a, *b),
            (Value::Tuple(a), Value::Tuple(b)) => Dual::Tuple(
                a.iter()
                    .zip(b)
                    .map(|(x, d)| Dual::from_values(x, d))
                    .collect(),
            ),
            _ => Dual::Real(f64::NAN, f64::NAN),
        }
    }
    pub fn primal(&self) -> Value {
        match self {
            Dual::Real(a, _) => Value::Real(*a),
            Dual::Tuple(ds) => Value::Tuple(ds.iter().map(Dual::primal).collect()),
        }
    }
    pub fn tangent(&self) -> Value {
        match self {
            Dual::Real(_, d) => Value::Real(*d),
            Dual::Tuple(ds) => Value::Tuple(ds.iter().map(Dual::tangent).collect()),
        }
    }
}

fn dual_prim(p: Prim, a: &[(f64, f64)]) -> (f64, f64) {
    let (x, dx) = a[0];
    let (y, dy) = a.get(1).copied().unwrap_or((0.0, 0.0));
    let z = p.eval(&a.iter().map(|t| t.0).collect::<Vec<_>>());
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
        Prim::Tanh => dx / (x.cosh() * x.cosh()),
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
    };
    (z, d)
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
        Expr::Tup(vs) => vec![Dual::Tuple(vs.iter().map(|v| get(env, v)).collect())],
        Expr::Prim { prim, args } => {
            let a: Vec<(f64, f64)> = args
                .iter()
                .map(|v| match get(env, v) {
                    Dual::Real(x, d) => (x, d),
                    Dual::Tuple(_) => panic!("primitive on a tuple"),
                })
                .collect();
            let (z, d) = dual_prim(*prim, &a);
            vec![Dual::Real(z, d)]
        }
        Expr::Drop(_) => vec![],
        Expr::Const { .. }
        | Expr::LinZero(_)
        | Expr::LinTup(_)
        | Expr::LinAdd(..)
        | Expr::LinNeg(_)
        | Expr::LinScale(..)
        | Expr::Dup(_) => panic!("dual evaluation supports the non-linear fragment only"),
    }
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
