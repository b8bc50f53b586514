//! The type checker of Linear A (paper, Fig. 3) and the Linear B
//! restriction (Def. 6.1).
//!
//! Invariants checked, each reported with the function and variable at
//! fault:
//!
//! 1. Every function calls only functions defined before it (no recursion),
//!    with the right number and types of non-linear and linear arguments.
//! 2. Every variable is bound once per function (parameters included) and
//!    referenced only in the scope of its binding.
//! 3. Non-linear variables are used at least once (rule TypeLet's `Γ1 ∪ Γ2`
//!    with the leaf rules' exact environments); linear variables exactly
//!    once (`Γ̇1 ⊎ Γ̇2`), up to explicit `dup` and `drop`.
//! 4. A variable is referenced only in positions of its own linearity:
//!    non-linear primitives, tuples and the scaling factor of `v * v̇` read
//!    non-linear variables; linear addition, negation, tuples, `dup` and the
//!    scaled operand read linear ones.
//! 5. Primitives take scalars of one float type; linear addition takes two
//!    operands of one type; scaling multiplies by a scalar of the operand's
//!    float type; bindings, unpackings, returns and results agree with the
//!    declared types.
//!
//! With [`Mode::LinearB`] two more (Def. 6.1):
//!
//! 6. No function and no expression returns both non-linear and linear
//!    results.
//! 7. An expression with a non-linear result reads no linear variable, not
//!    even to drop it.
//!
//! The checker is total and never panics; passes call it on their output in
//! debug builds and in tests.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::fmt;

use crate::ir::{Binder, Expr, Extern, Float, Func, Program, Sig, Stmt, Ty, Var};
use crate::visit::free_vars;

#[derive(Clone, Debug, PartialEq)]
pub struct TypeError {
    pub func: Var,
    pub msg: String,
}

impl fmt::Display for TypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "in `{}`: {}", self.func, self.msg)
    }
}

impl std::error::Error for TypeError {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Fig. 3.
    LinearA,
    /// Fig. 3 plus Def. 6.1.
    LinearB,
}

/// Type-checks a whole program in Linear A.
pub fn check(p: &Program) -> Result<(), TypeError> {
    check_mode(p, Mode::LinearA)
}

/// Type-checks a whole program in Linear B.
pub fn check_linear_b(p: &Program) -> Result<(), TypeError> {
    check_mode(p, Mode::LinearB)
}

pub fn check_mode(p: &Program, mode: Mode) -> Result<(), TypeError> {
    let mut sigs: HashMap<Var, &Func> = HashMap::default();
    for (i, e) in p.externs.iter().enumerate() {
        let linear_tape = e
            .lin_params
            .iter()
            .chain(&e.lin_rets)
            .any(|t| !t.is_vector());
        if linear_tape || p.externs[..i].iter().any(|o| o.name == e.name) {
            return Err(TypeError {
                func: e.name.clone(),
                msg: "extern declared twice, or with a tape in a linear position".into(),
            });
        }
    }
    for f in &p.funcs {
        let err = |msg: String| TypeError {
            func: f.name.clone(),
            msg,
        };
        if sigs.contains_key(&f.name) {
            return Err(err(format!("function `{}` is defined twice", f.name)));
        }
        Checker {
            sigs: &sigs,
            externs: &p.externs,
            mode,
            env: HashMap::default(),
            bound: HashSet::default(),
            uses: HashMap::default(),
            lin_reads: 0,
        }
        .func(f)
        .map_err(err)?;
        sigs.insert(f.name.clone(), f);
    }
    Ok(())
}

type Res<T> = Result<T, String>;

struct Checker<'a> {
    sigs: &'a HashMap<Var, &'a Func>,
    externs: &'a [Extern],
    mode: Mode,
    /// Variables in scope: type and linearity.
    env: HashMap<Var, (Ty, bool)>,
    /// Every variable bound so far in this function, with its linearity.
    bound: HashSet<Var>,
    uses: HashMap<Var, usize>,
    /// Count of linear reads so far: an expression read a linear variable
    /// iff the count moved while checking it.
    lin_reads: usize,
}

fn kind(linear: bool) -> &'static str {
    if linear {
        "linear"
    } else {
        "non-linear"
    }
}

fn all_float(t: &Ty, f: Float) -> bool {
    match t {
        Ty::Real(g) => *g == f,
        Ty::Tuple(ts) => ts.iter().all(|t| all_float(t, f)),
        Ty::Tape(_) => false,
    }
}

fn show(ts: &[Ty]) -> String {
    let v: Vec<String> = ts.iter().map(|t| t.to_string()).collect();
    v.join(", ")
}

impl Checker<'_> {
    /// A callee defined before this function, or an extern.
    fn sig(&self, func: &Var) -> Option<Sig> {
        if let Some(f) = self.sigs.get(func) {
            return Some(f.sig());
        }
        self.externs.iter().find(|e| &e.name == func).map(|e| Sig {
            nl_params: e.nl_params.clone(),
            lin_params: e.lin_params.clone(),
            nl_rets: e.nl_rets.clone(),
            lin_rets: e.lin_rets.clone(),
        })
    }

    fn bind(&mut self, b: &Binder, linear: bool) -> Res<()> {
        if !self.bound.insert(b.var.clone()) {
            return Err(format!(
                "variable `{}` is bound twice; bindings must be unique within a function",
                b.var
            ));
        }
        if linear && !b.ty.is_vector() {
            return Err(format!(
                "linear variable `{}` has type {}, which has no zero, sum or scaling",
                b.var, b.ty
            ));
        }
        self.env.insert(b.var.clone(), (b.ty.clone(), linear));
        self.uses.insert(b.var.clone(), 0);
        Ok(())
    }

    /// Leaves the scope of `bs`, checking how often each was used.
    fn unbind(&mut self, bs: &[(Var, bool)]) -> Res<()> {
        for (v, linear) in bs {
            self.env.remove(v);
            let n = self.uses.get(v).copied().unwrap_or(0);
            if *linear && n != 1 {
                return Err(if n == 0 {
                    format!(
                        "linear variable `{v}` is never used; every linear variable is consumed exactly once (use `drop` to discard it)"
                    )
                } else {
                    format!(
                        "linear variable `{v}` is used {n} times; every linear variable is consumed exactly once (use `dup` to fan it out)"
                    )
                });
            }
            if !*linear && n == 0 {
                return Err(format!(
                    "non-linear variable `{v}` is never used; every non-linear variable is used at least once (use `drop` to discard it)"
                ));
            }
        }
        Ok(())
    }

    fn use_var(&mut self, v: &Var, linear: bool) -> Res<Ty> {
        let Some((ty, is_lin)) = self.env.get(v).cloned() else {
            return Err(if self.bound.contains(v) {
                format!("variable `{v}` is used outside the block that binds it")
            } else {
                format!("variable `{v}` is not bound")
            });
        };
        if is_lin != linear {
            return Err(format!(
                "{} variable `{v}` is used where a {} value is expected",
                kind(is_lin),
                kind(linear)
            ));
        }
        if linear {
            self.lin_reads += 1;
        }
        *self.uses.entry(v.clone()).or_insert(0) += 1;
        Ok(ty)
    }

    fn scalar(&mut self, v: &Var, what: &str) -> Res<Float> {
        match self.use_var(v, false)? {
            Ty::Real(f) => Ok(f),
            t => Err(format!("{what} takes a scalar, but `{v}` has type {t}")),
        }
    }

    fn func(&mut self, f: &Func) -> Res<()> {
        if self.mode == Mode::LinearB && !f.nl_rets.is_empty() && !f.lin_rets.is_empty() {
            return Err(
                "function returns both non-linear and linear results, which Linear B forbids (Def. 6.1)"
                    .into(),
            );
        }
        let mut params = Vec::new();
        for b in &f.nl_params {
            self.bind(b, false)?;
            params.push((b.var.clone(), false));
        }
        for b in &f.lin_params {
            self.bind(b, true)?;
            params.push((b.var.clone(), true));
        }
        let (nl, lin) = self.expr(&f.body)?;
        if nl != f.nl_rets || lin != f.lin_rets {
            return Err(format!(
                "body returns ({}; {}) but the function declares ({}; {})",
                show(&nl),
                show(&lin),
                show(&f.nl_rets),
                show(&f.lin_rets)
            ));
        }
        self.unbind(&params)
    }

    /// Checks an expression, returning its non-linear and linear result
    /// types; in Linear B mode also enforces invariants 6 and 7 on it.
    fn expr(&mut self, e: &Expr) -> Res<(Vec<Ty>, Vec<Ty>)> {
        let reads_before = self.lin_reads;
        let out = self.expr_inner(e)?;
        if self.mode == Mode::LinearB {
            if !out.0.is_empty() && !out.1.is_empty() {
                return Err(format!(
                    "expression returns both non-linear and linear results, which Linear B forbids (Def. 6.1): {}",
                    first_line(e)
                ));
            }
            if !out.0.is_empty() && self.lin_reads != reads_before {
                let fv = free_vars(e);
                let names: Vec<String> = fv.lin.iter().map(|v| format!("`{v}`")).collect();
                return Err(format!(
                    "non-linear expression reads linear variable {}, which Linear B forbids (Def. 6.1): {}",
                    names.join(", "),
                    first_line(e)
                ));
            }
        }
        Ok(out)
    }

    fn expr_inner(&mut self, e: &Expr) -> Res<(Vec<Ty>, Vec<Ty>)> {
        match e {
            Expr::Block { stmts, tail } => {
                let mut scope = Vec::new();
                for s in stmts {
                    self.stmt(s, &mut scope)?;
                }
                let out = self.expr(tail)?;
                self.unbind(&scope)?;
                Ok(out)
            }
            Expr::Ret { nl, lin } => {
                let nl = nl
                    .iter()
                    .map(|v| self.use_var(v, false))
                    .collect::<Res<Vec<_>>>()?;
                let lin = lin
                    .iter()
                    .map(|v| self.use_var(v, true))
                    .collect::<Res<Vec<_>>>()?;
                Ok((nl, lin))
            }
            Expr::App { func, nl, lin } => {
                let Some(callee) = self.sig(func) else {
                    return Err(format!(
                        "call to `{func}`, which is not defined before this function"
                    ));
                };
                if nl.len() != callee.nl_params.len() || lin.len() != callee.lin_params.len() {
                    return Err(format!(
                        "`{func}` takes {} non-linear and {} linear arguments, given {} and {}",
                        callee.nl_params.len(),
                        callee.lin_params.len(),
                        nl.len(),
                        lin.len()
                    ));
                }
                for (args, params, linear) in [
                    (nl, &callee.nl_params, false),
                    (lin, &callee.lin_params, true),
                ] {
                    for (k, (a, p)) in args.iter().zip(params.iter()).enumerate() {
                        let t = self.use_var(a, linear)?;
                        if &t != p {
                            return Err(format!(
                                "argument `{a}` of type {t} passed to {} parameter {} of `{func}`, of type {p}",
                                kind(linear),
                                k + 1
                            ));
                        }
                    }
                }
                Ok((callee.nl_rets.clone(), callee.lin_rets.clone()))
            }
            Expr::Lit { float, .. } => Ok((vec![Ty::Real(*float)], vec![])),
            Expr::Const { ty, .. } => Ok((vec![ty.clone()], vec![])),
            Expr::Tup(vs) => {
                let ts = vs
                    .iter()
                    .map(|v| self.use_var(v, false))
                    .collect::<Res<Vec<_>>>()?;
                Ok((vec![Ty::Tuple(ts)], vec![]))
            }
            Expr::Prim { prim, args } => {
                if args.len() != prim.arity() {
                    return Err(format!(
                        "`{}` takes {} operand(s), given {}",
                        prim.name(),
                        prim.arity(),
                        args.len()
                    ));
                }
                let mut float = None;
                for a in args {
                    let f = self.scalar(a, &format!("`{}`", prim.name()))?;
                    if float.is_some_and(|g| g != f) {
                        return Err(format!(
                            "`{}` mixes f32 and f64 operands (`{a}`)",
                            prim.name()
                        ));
                    }
                    float = Some(f);
                }
                Ok((vec![Ty::Real(float.unwrap_or(Float::F64))], vec![]))
            }
            Expr::LinZero(t) => Ok((vec![], vec![t.clone()])),
            Expr::LinTup(vs) => {
                let ts = vs
                    .iter()
                    .map(|v| self.use_var(v, true))
                    .collect::<Res<Vec<_>>>()?;
                Ok((vec![], vec![Ty::Tuple(ts)]))
            }
            Expr::LinAdd(a, b) => {
                let ta = self.use_var(a, true)?;
                let tb = self.use_var(b, true)?;
                if ta != tb {
                    return Err(format!(
                        "linear addition of `{a}: {ta}` and `{b}: {tb}`, which differ in type"
                    ));
                }
                Ok((vec![], vec![ta]))
            }
            Expr::LinNeg(a) => Ok((vec![], vec![self.use_var(a, true)?])),
            Expr::LinScale(s, a) => {
                let f = self.scalar(s, "the scaling factor of `*`")?;
                let t = self.use_var(a, true)?;
                if !all_float(&t, f) {
                    return Err(format!(
                        "scaling `{a}: {t}` by `{s}: {}` mixes float types",
                        f.name()
                    ));
                }
                Ok((vec![], vec![t]))
            }
            Expr::Dup(a) => {
                let t = self.use_var(a, true)?;
                Ok((vec![], vec![t.clone(), t]))
            }
            Expr::Drop(e) => {
                self.expr(e)?;
                Ok((vec![], vec![]))
            }
        }
    }

    fn stmt(&mut self, s: &Stmt, scope: &mut Vec<(Var, bool)>) -> Res<()> {
        match s {
            Stmt::Let { nl, lin, rhs } => {
                let (tn, tl) = self.expr(rhs)?;
                let bn: Vec<Ty> = nl.iter().map(|b| b.ty.clone()).collect();
                let bl: Vec<Ty> = lin.iter().map(|b| b.ty.clone()).collect();
                if bn != tn || bl != tl {
                    let names: Vec<String> = nl
                        .iter()
                        .chain(lin)
                        .map(|b| format!("`{}`", b.var))
                        .collect();
                    return Err(format!(
                        "let binding {} declares ({}; {}) but its right-hand side returns ({}; {})",
                        if names.is_empty() {
                            "of nothing".to_string()
                        } else {
                            names.join(", ")
                        },
                        show(&bn),
                        show(&bl),
                        show(&tn),
                        show(&tl)
                    ));
                }
                for b in nl {
                    self.bind(b, false)?;
                    scope.push((b.var.clone(), false));
                }
                for b in lin {
                    self.bind(b, true)?;
                    scope.push((b.var.clone(), true));
                }
            }
            Stmt::Unpack { vars, tuple } | Stmt::LinUnpack { vars, tuple } => {
                let linear = matches!(s, Stmt::LinUnpack { .. });
                let t = self.use_var(tuple, linear)?;
                let want = Ty::Tuple(vars.iter().map(|b| b.ty.clone()).collect());
                if t != want {
                    return Err(format!(
                        "unpacking `{tuple}: {t}` into binders of type {want}"
                    ));
                }
                for b in vars {
                    self.bind(b, linear)?;
                    scope.push((b.var.clone(), linear));
                }
            }
        }
        Ok(())
    }
}

fn first_line(e: &Expr) -> String {
    let s = e.to_string();
    let line = s.lines().next().unwrap_or("").trim().to_string();
    if s.contains('\n') {
        format!("{line} …")
    } else {
        line
    }
}
