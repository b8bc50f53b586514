//! L: linearity erasure (paper, section 4.5).
//!
//! `erase(P)` turns every linear variable and operation into a non-linear
//! one, following the section's five steps:
//!
//! * for every tuple type at which linear zero, addition, negation or
//!   scaling is used, a helper function doing it componentwise is defined
//!   (`zero.N`, `add.N`, `neg.N`, `scale.N`), once per type, ahead of the
//!   program; on scalars the operation becomes the primitive itself;
//! * every linear operation becomes a call to its helper (or primitive);
//! * every variable bound by `dup` is renamed to the `dup`'s operand;
//! * `dup`s are removed;
//! * all semicolons move to the right: parameters, results, binders, returns
//!   and call arguments list the non-linear ones first, then the formerly
//!   linear ones.
//!
//! Erasure preserves results and work exactly (Lemma 4.3): a helper spends
//! one primitive per scalar, as the linear operation it replaces is charged.
//! Arrays: `lindex` is `index`, `lset` is `set`, `lzeros` a `fill` of zero,
//! `lfree` a drop, `lpush` and `lpop` are `push` and `pop`, and `laccum(ȧ, i, v̇)` (never in J's output; the
//! simplifier's increments and T make it) the read, addition and write it
//! stands for, which costs more than the accumulation's one step.
//!
//! Input: a Linear A program that type-checks. Output: a purely non-linear
//! program that type-checks, with every function keeping its name.

use rustc_hash::FxHashMap as HashMap;

use super::PassError;
use crate::ir::{Arm, Binder, Expr, Extern, Float, Func, Loop, Prim, Program, Stmt, Ty, Var};

/// Applies L to every function of `p`.
pub fn erase(p: &Program) -> Result<Program, PassError> {
    let mut helpers = Helpers {
        p,
        funcs: Vec::new(),
        names: HashMap::default(),
    };
    let mut funcs = Vec::new();
    for f in &p.funcs {
        funcs.push(erase_func(f, &mut helpers)?);
    }
    let mut all = helpers.funcs;
    all.extend(funcs);
    let externs = p
        .externs
        .iter()
        .map(|e| {
            // A constant parameter stays constant (no tangent); nothing is
            // linear, so nothing is borrowed.
            Extern {
                constant: e.constant.clone(),
                pinned: e.pinned,
                ..Extern::plain(
                    e.name.clone(),
                    (
                        e.nl_params.iter().chain(&e.lin_params).cloned().collect(),
                        vec![],
                    ),
                    (
                        e.nl_rets.iter().chain(&e.lin_rets).cloned().collect(),
                        vec![],
                    ),
                )
            }
        })
        .collect();
    Ok(Program {
        externs,
        funcs: all,
    })
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Op {
    Zero,
    Add,
    Neg,
    Scale,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Zero => "zero",
            Op::Add => "add",
            Op::Neg => "neg",
            Op::Scale => "scale",
        }
    }
}

struct Helpers<'a> {
    p: &'a Program,
    funcs: Vec<Func>,
    names: HashMap<(Op, Ty), Var>,
}

/// The float of a type's scalars (f64 for a tuple with none).
fn float_of(t: &Ty) -> Float {
    match t {
        Ty::Real(f) => *f,
        Ty::Tuple(ts) => ts.first().map_or(Float::F64, float_of),
        Ty::Array(e, _) => float_of(e),
        Ty::Int | Ty::Bool | Ty::Sum(_) | Ty::List(..) | Ty::Tape(_) => Float::F64,
    }
}

impl Helpers<'_> {
    /// The helper for `op` at tuple type `ty`, defined on first use along
    /// with the helpers of its component types.
    fn helper(&mut self, op: Op, ts: &[Ty]) -> Var {
        let ty = &Ty::Tuple(ts.to_vec());
        if let Some(v) = self.names.get(&(op, ty.clone())) {
            return v.clone();
        }
        let v = |s: &str, i: usize| Var::new(&format!("{s}.{i}"));
        let mut stmts = Vec::new();
        let (a, b, s) = (Var::new("a"), Var::new("b"), Var::new("s"));
        let parts_a: Vec<Binder> = ts
            .iter()
            .enumerate()
            .map(|(i, t)| Binder::new(v("a", i), t.clone()))
            .collect();
        let parts_b: Vec<Binder> = ts
            .iter()
            .enumerate()
            .map(|(i, t)| Binder::new(v("b", i), t.clone()))
            .collect();
        if op != Op::Zero {
            stmts.push(Stmt::Unpack {
                vars: parts_a.clone(),
                tuple: a.clone(),
            });
        }
        if op == Op::Add {
            stmts.push(Stmt::Unpack {
                vars: parts_b.clone(),
                tuple: b.clone(),
            });
        }
        let mut results = Vec::new();
        for (i, t) in ts.iter().enumerate() {
            let r = v("r", i);
            let (ai, bi) = (parts_a[i].var.clone(), parts_b[i].var.clone());
            let rhs = self.component(op, t, (ai, bi, s.clone()));
            stmts.push(Stmt::Let {
                nl: vec![Binder::new(r.clone(), t.clone())],
                lin: vec![],
                rhs,
            });
            results.push(r);
        }
        let mut params = Vec::new();
        if op == Op::Scale {
            params.push(Binder::new(s.clone(), Ty::Real(float_of(ty))));
        }
        if op != Op::Zero {
            params.push(Binder::new(a, ty.clone()));
        }
        if op == Op::Add {
            params.push(Binder::new(b, ty.clone()));
        }
        // A scaled empty tuple never reads its factor: drop it.
        if op == Op::Scale && ts.is_empty() {
            stmts.push(Stmt::Let {
                nl: vec![],
                lin: vec![],
                rhs: Expr::Drop(Box::new(Expr::var(s))),
            });
        }
        // Named once the helpers of the component types (defined by the
        // recursive calls above) have taken theirs.
        let name = self.free_name(op);
        self.funcs.push(Func {
            name: name.clone(),
            nl_params: params,
            lin_params: vec![],
            nl_rets: vec![ty.clone()],
            lin_rets: vec![],
            body: Expr::block(stmts, Expr::Tup(results)),
        });
        self.names.insert((op, ty.clone()), name.clone());
        name
    }

    /// `op` on one component `t` of a helper's tuple, whose parts are `a`
    /// and `b` (and the factor `s`): the primitive on a real, the
    /// component type's helper on a tuple.
    fn component(&mut self, op: Op, t: &Ty, (a, b, s): (Var, Var, Var)) -> Expr {
        match (op, t) {
            (Op::Zero, Ty::Real(f)) => Expr::Lit {
                value: 0.0,
                float: *f,
            },
            (Op::Add, Ty::Real(_)) => Expr::Prim {
                prim: Prim::Add,
                args: vec![a, b],
            },
            (Op::Neg, Ty::Real(_)) => Expr::Prim {
                prim: Prim::Neg,
                args: vec![a],
            },
            (Op::Scale, Ty::Real(_)) => Expr::Prim {
                prim: Prim::Mul,
                args: vec![s, a],
            },
            // Linear values are never of these types (the checker
            // forbids it): an ill-typed empty tuple, which the output's
            // check reports.
            (_, Ty::Tape(_) | Ty::Int | Ty::Bool | Ty::Sum(_) | Ty::List(..) | Ty::Array(..)) => {
                Expr::Tup(vec![])
            }
            (_, Ty::Tuple(inner)) => {
                let h = self.helper(op, inner);
                let nl = match op {
                    Op::Zero => vec![],
                    Op::Add => vec![a, b],
                    Op::Neg => vec![a],
                    Op::Scale => vec![s, a],
                };
                Expr::App {
                    func: h,
                    nl,
                    lin: vec![],
                }
            }
        }
    }

    /// `op.N` for the first `N` no function of the program or helper has.
    fn free_name(&self, op: Op) -> Var {
        let mut n = self.funcs.len() + 1;
        loop {
            let cand = Var::new(&format!("{}.{n}", op.name()));
            if self.p.func(cand.as_str()).is_none() && !self.funcs.iter().any(|f| f.name == cand) {
                return cand;
            }
            n += 1;
        }
    }
}

/// Erases one function.
fn erase_func(f: &Func, h: &mut Helpers) -> Result<Func, PassError> {
    let mut e = Erase {
        h,
        types: HashMap::default(),
        rename: HashMap::default(),
        func: &f.name,
        fresh: crate::visit::Fresh::for_func(f),
    };
    for b in f.nl_params.iter().chain(&f.lin_params) {
        e.types.insert(b.var.clone(), b.ty.clone());
    }
    let body = e.expr(&f.body)?;
    Ok(Func {
        name: f.name.clone(),
        nl_params: f.nl_params.iter().chain(&f.lin_params).cloned().collect(),
        lin_params: vec![],
        nl_rets: f.nl_rets.iter().chain(&f.lin_rets).cloned().collect(),
        lin_rets: vec![],
        body,
    })
}

struct Erase<'a, 'b> {
    h: &'a mut Helpers<'b>,
    types: HashMap<Var, Ty>,
    /// Variables bound by an erased `dup`, to the `dup`'s operand.
    rename: HashMap<Var, Var>,
    func: &'a Var,
    fresh: crate::visit::Fresh,
}

impl Erase<'_, '_> {
    fn r(&self, v: &Var) -> Var {
        let mut v = v;
        while let Some(w) = self.rename.get(v) {
            v = w;
        }
        v.clone()
    }
    fn rs(&self, vs: &[Var]) -> Vec<Var> {
        vs.iter().map(|v| self.r(v)).collect()
    }
    fn ty(&self, v: &Var) -> Result<Ty, PassError> {
        super::type_of(&self.types, self.func, &self.r(v))
    }

    /// `laccum(ȧ, i, v̇)` is `set(a, i, index(a, i) + v)`.
    fn accum(&mut self, arr: &Var, idx: &Var, val: &Var) -> Result<Expr, PassError> {
        let t = self.ty(val)?;
        let (arr, idx, val) = (self.r(arr), self.r(idx), self.r(val));
        let (old, sum) = (self.fresh.var("old"), self.fresh.var("sum"));
        let add = self.op(Op::Add, &t, vec![old.clone(), val]);
        let read = Expr::Index {
            arr: arr.clone(),
            idx: idx.clone(),
        };
        Ok(Expr::block(
            vec![
                Stmt::Let {
                    nl: vec![Binder::new(old, t.clone())],
                    lin: vec![],
                    rhs: read,
                },
                Stmt::Let {
                    nl: vec![Binder::new(sum.clone(), t)],
                    lin: vec![],
                    rhs: add,
                },
            ],
            Expr::Set { arr, idx, val: sum },
        ))
    }

    fn op(&mut self, op: Op, ty: &Ty, args: Vec<Var>) -> Expr {
        match ty {
            Ty::Real(float) => match op {
                Op::Zero => Expr::Lit {
                    value: 0.0,
                    float: *float,
                },
                Op::Add => Expr::Prim {
                    prim: Prim::Add,
                    args,
                },
                Op::Neg => Expr::Prim {
                    prim: Prim::Neg,
                    args,
                },
                Op::Scale => Expr::Prim {
                    prim: Prim::Mul,
                    args,
                },
            },
            Ty::Tape(_) | Ty::Int | Ty::Bool | Ty::Sum(_) | Ty::List(..) | Ty::Array(..) => {
                Expr::Tup(vec![])
            }
            Ty::Tuple(ts) => Expr::App {
                func: self.h.helper(op, ts),
                nl: args,
                lin: vec![],
            },
        }
    }

    fn expr(&mut self, e: &Expr) -> Result<Expr, PassError> {
        Ok(match e {
            Expr::Block { stmts, tail } => {
                let mut out = Vec::new();
                for s in stmts {
                    match s {
                        Stmt::Let {
                            nl,
                            lin,
                            rhs: Expr::Dup(a),
                        } if nl.is_empty() && lin.len() == 2 => {
                            let a = self.r(a);
                            for b in lin {
                                self.rename.insert(b.var.clone(), a.clone());
                            }
                        }
                        Stmt::Let { nl, lin, rhs } => {
                            let rhs = self.expr(rhs)?;
                            for b in nl.iter().chain(lin) {
                                self.types.insert(b.var.clone(), b.ty.clone());
                            }
                            out.push(Stmt::Let {
                                nl: nl.iter().chain(lin).cloned().collect(),
                                lin: vec![],
                                rhs,
                            });
                        }
                        Stmt::Unpack { vars, tuple } | Stmt::LinUnpack { vars, tuple } => {
                            for b in vars {
                                self.types.insert(b.var.clone(), b.ty.clone());
                            }
                            out.push(Stmt::Unpack {
                                vars: vars.clone(),
                                tuple: self.r(tuple),
                            });
                        }
                    }
                }
                Expr::block(out, self.expr(tail)?)
            }
            Expr::Ret { nl, lin } => Expr::Ret {
                nl: self.rs(nl).into_iter().chain(self.rs(lin)).collect(),
                lin: vec![],
            },
            Expr::App { func, nl, lin } => Expr::App {
                func: func.clone(),
                nl: self.rs(nl).into_iter().chain(self.rs(lin)).collect(),
                lin: vec![],
            },
            Expr::Lit { .. } => e.clone(),
            Expr::Const { name, args, ty } => Expr::Const {
                name: name.clone(),
                args: self.rs(args),
                ty: ty.clone(),
            },
            Expr::Tup(vs) | Expr::LinTup(vs) => Expr::Tup(self.rs(vs)),
            Expr::Prim { prim, args } => Expr::Prim {
                prim: *prim,
                args: self.rs(args),
            },
            Expr::LinZero(t) => self.op(Op::Zero, t, vec![]),
            Expr::LinAdd(a, b) => {
                let t = self.ty(a)?;
                let args = vec![self.r(a), self.r(b)];
                self.op(Op::Add, &t, args)
            }
            Expr::LinNeg(a) => {
                let t = self.ty(a)?;
                let args = vec![self.r(a)];
                self.op(Op::Neg, &t, args)
            }
            Expr::LinScale(s, a) => {
                let t = self.ty(a)?;
                let args = vec![self.r(s), self.r(a)];
                self.op(Op::Scale, &t, args)
            }
            Expr::Dup(a) => {
                let a = self.r(a);
                Expr::Ret {
                    nl: vec![a.clone(), a],
                    lin: vec![],
                }
            }
            Expr::Drop(inner) => Expr::Drop(Box::new(self.expr(inner)?)),
            Expr::Int(_) | Expr::Bool(_) => e.clone(),
            Expr::Index { arr, idx } | Expr::LinIndex { arr, idx } => Expr::Index {
                arr: self.r(arr),
                idx: self.r(idx),
            },
            Expr::Len(arr) => Expr::Len(self.r(arr)),
            Expr::LinAccum { arr, idx, val } => self.accum(arr, idx, val)?,
            Expr::Fill { len, val, size } => Expr::Fill {
                len: self.r(len),
                val: self.r(val),
                size: *size,
            },
            Expr::Set { arr, idx, val } | Expr::LinSet { arr, idx, val } => Expr::Set {
                arr: self.r(arr),
                idx: self.r(idx),
                val: self.r(val),
            },
            // `lzeros(τ, n)` is `fill(n, 0)`, `lfree` a drop.
            Expr::LinZeros { ty, len } => {
                let Ty::Array(elem, size) = ty else {
                    return Err(PassError::new(self.func, "`lzeros` of a non-array type"));
                };
                let z = self.fresh.var("zero");
                let rhs = self.op(Op::Zero, elem, vec![]);
                Expr::block(
                    vec![Stmt::Let {
                        nl: vec![Binder::new(z.clone(), (**elem).clone())],
                        lin: vec![],
                        rhs,
                    }],
                    Expr::Fill {
                        len: self.r(len),
                        val: z,
                        size: *size,
                    },
                )
            }
            Expr::Push { arr, val } | Expr::LinPush { arr, val } => Expr::Push {
                arr: self.r(arr),
                val: self.r(val),
            },
            Expr::Pop { arr } | Expr::LinPop { arr } => Expr::Pop { arr: self.r(arr) },
            Expr::LinFree { arr, len } => Expr::Drop(Box::new(Expr::Ret {
                nl: vec![self.r(arr), self.r(len)],
                lin: vec![],
            })),
            Expr::Inj { sum, tag, val } => Expr::Inj {
                sum: sum.clone(),
                tag: *tag,
                val: self.r(val),
            },
            Expr::Case { scrut, arms } => Expr::Case {
                scrut: self.r(scrut),
                arms: arms
                    .iter()
                    .map(|a| {
                        if let Some(b) = &a.bind {
                            self.types.insert(b.var.clone(), b.ty.clone());
                        }
                        Ok(Arm {
                            bind: a.bind.clone(),
                            body: self.expr(&a.body)?,
                        })
                    })
                    .collect::<Result<_, PassError>>()?,
            },
            Expr::Loop(l) => Expr::Loop(Box::new(self.loop_(l)?)),
        })
    }

    /// A loop with its linear state carried as non-linear state (after the
    /// non-linear state and before nothing: the body returns the state,
    /// then the collected values, so the formerly linear state moves
    /// between them).
    fn loop_(&mut self, l: &Loop) -> Result<Loop, PassError> {
        for b in l.iter.binders() {
            self.types.insert(b.var.clone(), b.ty.clone());
        }
        for (b, _) in l.nl.iter().chain(&l.lin) {
            self.types.insert(b.var.clone(), b.ty.clone());
        }
        let mut iter = l.iter.rename_vars(|v| self.r(v));
        if let Some(e) = iter.header_expr_mut() {
            *e = self.expr(e)?;
        }
        let nl =
            l.nl.iter()
                .chain(&l.lin)
                .map(|(b, v)| (b.clone(), self.r(v)))
                .collect();
        let body = self.expr(&l.body)?;
        if !l.collect.is_empty() && !l.lin.is_empty() {
            return Err(PassError::new(
                self.func,
                "erasing a loop with both linear state and collected values",
            ));
        }
        Ok(Loop {
            iter,
            nl,
            lin: vec![],
            collect: l.collect.clone(),
            zero_skip: l.zero_skip,
            body,
        })
    }
}
