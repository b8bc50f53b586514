//! Folding across a case: arms whose linear code only combines tangents
//! from outside the case become coefficients that the arms compute, and
//! one linear combination after the case.
//!
//! J differentiates each arm of a branch on its own (section 5), so a
//! piecewise function such as the Huber loss gets a case whose arms scale
//! and add the same incoming tangents with different coefficients:
//! `ḋ = ṫ + r·ṙ` in one arm, `ḋ = ṫ + sign(r)·ṙ` in the other. After U
//! the case stays in the linear code, so the tape records which arm ran
//! and that arm's residuals (a tagged value), and every application of
//! the linear map and of its transpose branches on the tag again, a
//! mispredicted branch per record where the data decides. This rule
//! evaluates each arm's linear code symbolically, as a combination
//! `Σ kⱼ·ẋⱼ` of the case's free linear variables per linear result, and
//! rewrites
//!
//! ```text
//! let y; ẏ = case c { a => { s_a; (y_a; ẏ_a) } | .. }
//! ```
//!
//! into a case that returns the coefficients in which the arms differ,
//! and the combination after it, shared by all arms:
//!
//! ```text
//! let y, k; = case c { a => { s_a (non-linear); k_a = ..; (y_a, k_a;) } | .. }
//! ẏ = ṫ + k·ṙ
//! ```
//!
//! A coefficient equal in every arm (a literal, or a variable bound outside
//! the case) is not returned; a coefficient 1 is no scaling; a source that
//! no arm reads is dropped after the case.
//!
//! When it applies: every linear result of the case is a real scalar, and
//! each arm's statements are non-linear (reading no linear variable) or
//! one of `dup`, scaling, negation, addition, zero, a copy or a `drop` of
//! linear variables, its tail a tuple. Anything else (a call, a loop, an
//! array or a nested case with linear results) leaves the case as it is.
//!
//! Work (section 4.3): the rewrite is made only if, in every arm, the
//! coefficient arithmetic it adds to the arm plus the shared combination
//! costs no more than the arm's own linear operations, and the returned
//! coefficients are no more than the scalings of the arm with the most (a
//! coefficient is a residual, as a scaling's operand was). The case's
//! non-linear results are unchanged; its linear ones round as
//! [folding](super) documents.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::ir::{Arm, Binder, Expr, Float, Prim, Stmt, Ty, Var};
use crate::visit::{for_each_bind, free_vars, Fresh};

/// Folds the cases of `e` (inner ones first) whose arms combine tangents
/// from outside, as the module doc says.
/// `types` holds the type of every variable of `e` and of its function's
/// parameters.
pub(super) fn hoist(e: &mut Expr, fresh: &mut Fresh, types: &HashMap<Var, Ty>) {
    let mut h = Hoister {
        fresh,
        types,
        lits: HashMap::default(),
    };
    h.expr(e);
}

/// A coefficient: a literal, or a non-linear variable.
#[derive(Clone, PartialEq)]
enum Coef {
    Lit(f64),
    Var(Var),
}

/// A linear value as a combination of the case's free linear variables:
/// each with its coefficient, in order of first use.
type Comb = Vec<(Var, Coef)>;

/// One arm, evaluated symbolically.
struct Plan {
    /// The arm's non-linear statements, then the coefficient arithmetic.
    stmts: Vec<Stmt>,
    /// The arm's non-linear results.
    nl: Vec<Var>,
    /// Each linear result as a combination.
    outs: Vec<Comb>,
    /// The arm's linear operations (what it cost) and scalings.
    cost: usize,
    scales: usize,
    /// Non-linear operations added for coefficients.
    added: usize,
}

/// How a term of the shared combination is scaled.
enum Term {
    /// Not at all (coefficient 1 in every arm).
    One,
    /// By a literal, or a variable from outside the case, in every arm.
    Same(Coef),
    /// By a coefficient the case returns.
    Returned(Var),
}

struct Hoister<'a> {
    fresh: &'a mut Fresh,
    types: &'a HashMap<Var, Ty>,
    /// Variables bound to real literals.
    lits: HashMap<Var, f64>,
}

impl Hoister<'_> {
    fn expr(&mut self, e: &mut Expr) {
        match e {
            Expr::Block { stmts, tail } => {
                self.block(stmts);
                self.expr(tail);
                self.tail(stmts, tail);
            }
            Expr::Case { arms, .. } => {
                for arm in arms {
                    self.expr(&mut arm.body);
                }
            }
            Expr::Loop(l) => self.expr(&mut l.body),
            Expr::Drop(inner) => self.expr(inner),
            Expr::Ret { .. }
            | Expr::App { .. }
            | Expr::Lit { .. }
            | Expr::Const { .. }
            | Expr::Tup(_)
            | Expr::Prim { .. }
            | Expr::LinZero(_)
            | Expr::LinTup(_)
            | Expr::LinAdd(..)
            | Expr::LinNeg(_)
            | Expr::LinScale(..)
            | Expr::Dup(_)
            | Expr::Int(_)
            | Expr::Bool(_)
            | Expr::Inj { .. }
            | Expr::Index { .. }
            | Expr::Len(_)
            | Expr::LinIndex { .. }
            | Expr::LinAccum { .. }
            | Expr::Fill { .. }
            | Expr::Set { .. }
            | Expr::LinZeros { .. }
            | Expr::LinSet { .. }
            | Expr::LinFree { .. }
            | Expr::Push { .. }
            | Expr::Pop { .. }
            | Expr::LinPush { .. }
            | Expr::LinPop { .. } => {}
        }
    }

    fn block(&mut self, stmts: &mut Vec<Stmt>) {
        for mut s in std::mem::take(stmts) {
            if let Stmt::Let { nl, rhs, .. } = &mut s {
                self.expr(rhs);
                if let ([b], Expr::Lit { value, .. }) = (nl.as_slice(), &*rhs) {
                    self.lits.insert(b.var.clone(), *value);
                }
            }
            match self.case(&s) {
                Some(new) => stmts.extend(new),
                None => stmts.push(s),
            }
        }
    }

    /// A case in a block's tail (a function or arm that ends in a branch),
    /// folded as a statement binding its results, which become the tail.
    fn tail(&mut self, stmts: &mut Vec<Stmt>, tail: &mut Box<Expr>) {
        let Expr::Case { arms, .. } = &**tail else {
            return;
        };
        let first = match arms.first().map(|a| &a.body) {
            Some(Expr::Block { tail, .. }) => &**tail,
            Some(other) => other,
            None => return,
        };
        let Expr::Ret { nl, lin } = first else {
            return;
        };
        let binders = |vs: &[Var], fresh: &mut Fresh| {
            vs.iter()
                .map(|v| {
                    Some(Binder::new(
                        fresh.var(v.as_str()),
                        self.types.get(v)?.clone(),
                    ))
                })
                .collect::<Option<Vec<_>>>()
        };
        let (Some(nl), Some(lin)) = (binders(nl, self.fresh), binders(lin, self.fresh)) else {
            return;
        };
        let s = Stmt::Let {
            nl,
            lin,
            rhs: (**tail).clone(),
        };
        let Some(new) = self.case(&s) else {
            return;
        };
        let Stmt::Let { nl, lin, .. } = s else {
            return;
        };
        stmts.extend(new);
        **tail = Expr::Ret {
            nl: nl.into_iter().map(|b| b.var).collect(),
            lin: lin.into_iter().map(|b| b.var).collect(),
        };
    }

    /// The statements that replace `s`, if it is a case this rule folds.
    fn case(&mut self, s: &Stmt) -> Option<Vec<Stmt>> {
        let Stmt::Let { nl, lin, rhs } = s else {
            return None;
        };
        let Expr::Case { scrut, arms } = rhs else {
            return None;
        };
        let float = lin.first()?.ty.float()?;
        if !lin.iter().all(|b| b.ty == Ty::Real(float)) {
            return None;
        }
        let mut plans = arms
            .iter()
            .map(|a| self.arm(a, float))
            .collect::<Option<Vec<_>>>()?;
        let mut inside = HashSet::default();
        for_each_bind(rhs, &mut |v, _| {
            inside.insert(v.clone());
        });
        let terms = self.terms(&mut plans, lin.len(), &inside, float);
        let shared: usize = terms
            .iter()
            .map(|ts| {
                let scales = ts.iter().filter(|(_, t)| !matches!(t, Term::One)).count();
                scales + ts.len().saturating_sub(1)
            })
            .sum();
        let returned: Vec<Var> = terms
            .iter()
            .flatten()
            .filter_map(|(_, t)| match t {
                Term::Returned(k) => Some(k.clone()),
                Term::One | Term::Same(_) => None,
            })
            .collect();
        let most_scales = plans.iter().map(|p| p.scales).max().unwrap_or(0);
        if plans.iter().any(|p| p.added + shared > p.cost) || returned.len() > most_scales {
            return None;
        }
        let mut out_nl = nl.clone();
        out_nl.extend(
            returned
                .iter()
                .map(|k| Binder::new(k.clone(), Ty::Real(float))),
        );
        let new_arms = arms
            .iter()
            .zip(plans)
            .map(|(a, p)| Arm {
                bind: a.bind.clone(),
                body: Expr::Block {
                    stmts: p.stmts,
                    tail: Box::new(Expr::Ret {
                        nl: p.nl,
                        lin: vec![],
                    }),
                },
            })
            .collect();
        let mut out = vec![Stmt::Let {
            nl: out_nl,
            lin: vec![],
            rhs: Expr::Case {
                scrut: scrut.clone(),
                arms: new_arms,
            },
        }];
        let free = free_vars(rhs).lin;
        self.combine(&mut out, &free, terms, lin, float);
        Some(out)
    }

    /// Evaluates one arm's linear code symbolically; `None` if it does more
    /// than combine linear variables.
    fn arm(&mut self, arm: &Arm, float: Float) -> Option<Plan> {
        let (stmts, tail) = match &arm.body {
            Expr::Block { stmts, tail } => (stmts.as_slice(), &**tail),
            other => (&[][..], other),
        };
        let Expr::Ret { nl, lin } = tail else {
            return None;
        };
        let mut p = Plan {
            stmts: Vec::with_capacity(stmts.len()),
            nl: nl.clone(),
            outs: vec![],
            cost: 0,
            scales: 0,
            added: 0,
        };
        let mut env: HashMap<Var, Comb> = HashMap::default();
        for s in stmts {
            match s {
                Stmt::Let {
                    nl: b,
                    lin: bl,
                    rhs,
                    ..
                } if bl.is_empty() && free_vars(rhs).lin.is_empty() => {
                    if let ([b], Expr::Lit { value, .. }) = (b.as_slice(), rhs) {
                        self.lits.insert(b.var.clone(), *value);
                    }
                    p.stmts.push(s.clone());
                }
                Stmt::Unpack { .. } => p.stmts.push(s.clone()),
                Stmt::Let { nl: b, lin, rhs } if b.is_empty() => {
                    self.linear(&mut p, &mut env, lin, rhs, float)?
                }
                Stmt::Let { .. } | Stmt::LinUnpack { .. } => return None,
            }
        }
        p.outs = lin.iter().map(|v| comb(&env, v)).collect();
        Some(p)
    }

    /// One linear statement of an arm, binding `lin` to `rhs`.
    fn linear(
        &mut self,
        p: &mut Plan,
        env: &mut HashMap<Var, Comb>,
        lin: &[Binder],
        rhs: &Expr,
        float: Float,
    ) -> Option<()> {
        let real = |b: &Binder| b.ty == Ty::Real(float);
        let c = match (lin, rhs) {
            ([a, b], Expr::Dup(x)) => {
                let c = comb(env, x);
                env.insert(a.var.clone(), c.clone());
                env.insert(b.var.clone(), c);
                return Some(());
            }
            ([], Expr::Drop(inner)) if matches!(&**inner, Expr::Ret { .. }) => return Some(()),
            ([b], Expr::LinScale(k, x)) if real(b) => {
                p.cost += 1;
                p.scales += 1;
                let k = self.coef(k);
                comb(env, x)
                    .into_iter()
                    .map(|(s, c)| (s, self.mul(p, &k, &c, float)))
                    .collect()
            }
            ([b], Expr::LinNeg(x)) if real(b) => {
                p.cost += 1;
                comb(env, x)
                    .into_iter()
                    .map(|(s, c)| (s, self.neg(p, &c, float)))
                    .collect()
            }
            ([b], Expr::LinAdd(x, y)) if real(b) => {
                p.cost += 1;
                let mut c = comb(env, x);
                for (s, k) in comb(env, y) {
                    match c.iter().position(|(t, _)| *t == s) {
                        Some(i) => c[i].1 = self.add(p, &c[i].1.clone(), &k, float),
                        None => c.push((s, k)),
                    }
                }
                c
            }
            ([b], Expr::LinZero(t)) if real(b) && *t == b.ty => vec![],
            ([b], Expr::Ret { nl, lin: xs }) if real(b) && nl.is_empty() && xs.len() == 1 => {
                comb(env, &xs[0])
            }
            _ => return None,
        };
        env.insert(lin[0].var.clone(), c);
        Some(())
    }

    /// Per linear result, its terms: each source any arm reads, with how
    /// it is scaled. Coefficients that differ between arms become fresh
    /// variables that each arm returns.
    fn terms(
        &mut self,
        plans: &mut [Plan],
        outs: usize,
        inside: &HashSet<Var>,
        float: Float,
    ) -> Vec<Vec<(Var, Term)>> {
        let mut all = Vec::with_capacity(outs);
        for i in 0..outs {
            let mut sources: Vec<Var> = vec![];
            for p in plans.iter() {
                for (s, _) in &p.outs[i] {
                    if !sources.contains(s) {
                        sources.push(s.clone());
                    }
                }
            }
            let mut terms = vec![];
            for s in sources {
                let coefs: Vec<Coef> = plans
                    .iter()
                    .map(|p| {
                        p.outs[i]
                            .iter()
                            .find(|(t, _)| *t == s)
                            .map_or(Coef::Lit(0.0), |(_, c)| c.clone())
                    })
                    .collect();
                let same = coefs.iter().all(|c| *c == coefs[0]);
                let term = match &coefs[0] {
                    Coef::Lit(x) if same && *x == 0.0 => continue,
                    Coef::Lit(x) if same && *x == 1.0 => Term::One,
                    Coef::Lit(_) if same => Term::Same(coefs[0].clone()),
                    Coef::Var(v) if same && !inside.contains(v) => Term::Same(coefs[0].clone()),
                    Coef::Lit(_) | Coef::Var(_) => {
                        let k = self.fresh.var("k");
                        for (p, c) in plans.iter_mut().zip(coefs) {
                            let v = self.var_of(p, &c, float);
                            p.nl.push(v);
                        }
                        Term::Returned(k)
                    }
                };
                terms.push((s, term));
            }
            all.push(terms);
        }
        all
    }

    /// After the case: each source duplicated once per term that reads it
    /// (or dropped if none does), then each linear result as the sum of
    /// its terms.
    fn combine(
        &mut self,
        out: &mut Vec<Stmt>,
        free: &[Var],
        terms: Vec<Vec<(Var, Term)>>,
        lin: &[Binder],
        float: Float,
    ) {
        let ty = Ty::Real(float);
        let mut copies: HashMap<Var, Vec<Var>> = HashMap::default();
        for s in free {
            let n = terms.iter().flatten().filter(|(t, _)| t == s).count();
            if n == 0 {
                out.push(let_lin(vec![], Expr::Drop(Box::new(ret_lin(s.clone())))));
                continue;
            }
            let mut cur = s.clone();
            let mut vs = Vec::with_capacity(n);
            for _ in 1..n {
                let (a, b) = (self.fresh.var("d"), self.fresh.var("d"));
                out.push(let_lin(
                    vec![
                        Binder::new(a.clone(), ty.clone()),
                        Binder::new(b.clone(), ty.clone()),
                    ],
                    Expr::Dup(cur),
                ));
                vs.push(a);
                cur = b;
            }
            vs.push(cur);
            vs.reverse();
            copies.insert(s.clone(), vs);
        }
        for (ts, b) in terms.into_iter().zip(lin) {
            let mut parts = Vec::with_capacity(ts.len());
            let last = ts.len().saturating_sub(1);
            for (j, (s, t)) in ts.into_iter().enumerate() {
                let x = copies.get_mut(&s).and_then(Vec::pop).unwrap_or(s);
                // The one term of a result binds the result itself.
                let v = if j == last && last == 0 {
                    b.var.clone()
                } else {
                    self.fresh.var("d")
                };
                let rhs = match t {
                    Term::One => ret_lin(x),
                    Term::Same(c) => Expr::LinScale(self.outside(out, &c, float), x),
                    Term::Returned(k) => Expr::LinScale(k, x),
                };
                out.push(let_lin(vec![Binder::new(v.clone(), ty.clone())], rhs));
                parts.push(v);
            }
            let Some(mut acc) = parts.first().cloned() else {
                out.push(let_lin(vec![b.clone()], Expr::LinZero(ty.clone())));
                continue;
            };
            for (j, v) in parts.into_iter().enumerate().skip(1) {
                let sum = if j == last {
                    b.var.clone()
                } else {
                    self.fresh.var("d")
                };
                out.push(let_lin(
                    vec![Binder::new(sum.clone(), ty.clone())],
                    Expr::LinAdd(acc, v),
                ));
                acc = sum;
            }
        }
    }

    fn coef(&self, k: &Var) -> Coef {
        match self.lits.get(k) {
            Some(x) => Coef::Lit(*x),
            None => Coef::Var(k.clone()),
        }
    }

    /// `a·c`, computed at compile time where both are literals.
    fn mul(&mut self, p: &mut Plan, a: &Coef, c: &Coef, float: Float) -> Coef {
        match (a, c) {
            (Coef::Lit(x), Coef::Lit(y)) => Coef::Lit(x * y),
            (Coef::Lit(one), k) | (k, Coef::Lit(one)) if *one == 1.0 => k.clone(),
            (Coef::Lit(_) | Coef::Var(_), Coef::Lit(_) | Coef::Var(_)) => {
                self.op(p, Prim::Mul, &[a, c], float)
            }
        }
    }

    fn neg(&mut self, p: &mut Plan, c: &Coef, float: Float) -> Coef {
        match c {
            Coef::Lit(x) => Coef::Lit(-x),
            Coef::Var(_) => self.op(p, Prim::Neg, &[c], float),
        }
    }

    fn add(&mut self, p: &mut Plan, a: &Coef, c: &Coef, float: Float) -> Coef {
        match (a, c) {
            (Coef::Lit(x), Coef::Lit(y)) => Coef::Lit(x + y),
            (Coef::Lit(_) | Coef::Var(_), Coef::Lit(_) | Coef::Var(_)) => {
                self.op(p, Prim::Add, &[a, c], float)
            }
        }
    }

    /// A non-linear operation on coefficients, appended to the arm.
    fn op(&mut self, p: &mut Plan, prim: Prim, args: &[&Coef], float: Float) -> Coef {
        let args = args.iter().map(|c| self.var_of(p, c, float)).collect();
        let k = self.fresh.var("k");
        p.stmts.push(Stmt::Let {
            nl: vec![Binder::new(k.clone(), Ty::Real(float))],
            lin: vec![],
            rhs: Expr::Prim { prim, args },
        });
        p.added += 1;
        Coef::Var(k)
    }

    /// `c` as a variable of the arm: a literal is bound to one.
    fn var_of(&mut self, p: &mut Plan, c: &Coef, float: Float) -> Var {
        match c {
            Coef::Var(v) => v.clone(),
            Coef::Lit(x) => {
                let v = self.literal(&mut p.stmts, *x, float);
                self.lits.insert(v.clone(), *x);
                v
            }
        }
    }

    /// `c` as a variable after the case.
    fn outside(&mut self, out: &mut Vec<Stmt>, c: &Coef, float: Float) -> Var {
        match c {
            Coef::Var(v) => v.clone(),
            Coef::Lit(x) => self.literal(out, *x, float),
        }
    }

    fn literal(&mut self, stmts: &mut Vec<Stmt>, value: f64, float: Float) -> Var {
        let v = self.fresh.var("c");
        stmts.push(Stmt::Let {
            nl: vec![Binder::new(v.clone(), Ty::Real(float))],
            lin: vec![],
            rhs: Expr::Lit { value, float },
        });
        v
    }
}

/// `x` as a combination: what the arm made of it, or itself with
/// coefficient 1 when it comes from outside the case.
fn comb(env: &HashMap<Var, Comb>, x: &Var) -> Comb {
    env.get(x)
        .cloned()
        .unwrap_or_else(|| vec![(x.clone(), Coef::Lit(1.0))])
}

fn let_lin(lin: Vec<Binder>, rhs: Expr) -> Stmt {
    Stmt::Let {
        nl: vec![],
        lin,
        rhs,
    }
}

fn ret_lin(x: Var) -> Expr {
    Expr::Ret {
        nl: vec![],
        lin: vec![x],
    }
}
