//! Folding: chains of linear scalings become one coefficient, computed in
//! the non-linear code.
//!
//! J applies the chain rule one operation at a time (section 5), so a
//! tangent that passes through several products is scaled once per
//! product (`ḃ = a·(c·ẏ)`), and a value read twice has its two tangents
//! scaled separately and added back (`a·ẋ₁ + b·ẋ₂`, with
//! `ẋ₁, ẋ₂ = dup(ẋ)`). After U those scalings run in every application of
//! the linear map and of its transpose, and each of their coefficients
//! takes a slot on the tape. This pass moves the arithmetic on
//! coefficients into the non-linear code, which U puts in the forward pass
//! (Thm 6.2), where it runs once:
//!
//! * chain: `ẋ = c·ẏ; ḃ = a·ẋ` becomes `k = a·c; ḃ = k·ẏ`;
//! * negation: `ẋ = -ẏ; ḃ = a·ẋ` becomes `k = -a; ḃ = k·ẏ`;
//!   `ẋ = c·ẏ; ḃ = -ẋ` becomes `k = -c; ḃ = k·ẏ`; `ẋ = -ẏ; ḃ = -ẋ`
//!   becomes the copy `ḃ = ẏ`;
//! * merge: `ẋ₁, ẋ₂ = dup(ẋ); ȧ = a·ẋ₁; ḃ = b·ẋ₂; ż = ȧ + ḃ` becomes
//!   `k = a + b; ż = k·ẋ`, where a term that is a half of the `dup` itself
//!   has coefficient 1 and a negated half −1.
//!
//! The rules apply as the block is read, so they compose: `s·(2s·ṡ) +
//! s²·ṡ`, J's derivative of `s·s·s`, becomes `(s·2s + s²)·ṡ`, one scaling.
//! Coefficients that are literals are multiplied, negated and added at
//! compile time (`2·(3·ẏ)` is `6·ẏ`), and a coefficient 1 is no
//! multiplication.
//!
//! Work (section 4.3). Each rewrite removes at least two linear operations
//! of cost n (n the scalars of the tangent, at least 1: a rewrite never
//! applies to an empty tuple or an array) and adds one non-linear
//! operation (cost 1, or 0 when its operands are literals) and at most one
//! linear operation of cost n, so the work never grows; the merge of two
//! bare halves, `ẋ₁ + ẋ₂` as `2·ẋ`, costs what the addition cost.
//! `tests/theorems.rs` checks it on random programs.
//!
//! Rounding. Folded results are J's up to rounding: `(a·c)·ẏ` for
//! `a·(c·ẏ)` and `(a + b)·ẋ` for `a·ẋ + b·ẋ` each round differently, by a
//! few units in the last place of the largest linear intermediate of J's
//! code (a merge of nearly opposite terms keeps J's absolute error, not
//! its relative one). A coefficient product can also overflow where J's
//! intermediates do not (`a·c` beyond the float range with `ẏ` tiny).
//! `#[differentiable(fold = false)]` keeps J's operation-by-operation
//! rounding.
//!
//! Scope: rewrites combine statements of one block (a statement list) on
//! linear variables read exactly once. A scaling outside a case and one
//! inside it are never combined: that would move work into every arm.
//! Loop bodies are not folded at all. There the tape is per iteration,
//! and the default checkpoint policy (`unzip::Checkpoint::Adjoint`)
//! keeps it small by recomputing in the reverse sweep every value that
//! costs one operation from what the loop keeps anyway; a folded
//! coefficient is a chain of such operations, which the policy would save
//! per iteration instead (an RK4 step's tape grew from one value to
//! several). Folding the same way under every policy keeps derivatives
//! equal bit for bit across policies.
//!
//! Across a case ([`arms`], in loop bodies too): a case whose arms only
//! scale and add tangents from outside it returns the coefficients in
//! which its arms differ, and one combination after it does the linear
//! work. Inside a loop this trades the arm's tag and residuals on the
//! per-iteration tape for the coefficients, and a branch per iteration
//! of the linear map and its transpose for none.
//!
//! Input: a Linear A program (J's output, simplified first so that nested
//! blocks are flattened). Output: a Linear A program with the same
//! signatures that computes the same non-linear results and the same
//! linear results up to rounding, with no more work. Literals whose reads
//! were folded away, and copies, are left for the simplifier to remove.

pub mod arms;

use rustc_hash::FxHashMap as HashMap;

use crate::ir::{Binder, Expr, Float, Func, Prim, Program, Stmt, Ty, Var};
use crate::visit::{binder_types, use_counts, Fresh};

/// Folds the scalings of every function of `p`.
pub fn fold(p: &Program) -> Program {
    Program {
        externs: p.externs.clone(),
        funcs: p.funcs.iter().map(fold_func).collect(),
    }
}

/// Folds the scalings of one function.
pub fn fold_func(f: &Func) -> Func {
    let mut folder = Folder {
        types: binder_types(f),
        uses: use_counts(&f.body),
        lits: HashMap::default(),
        fresh: Fresh::for_func(f),
    };
    let mut g = f.clone();
    folder.expr(&mut g.body);
    arms::hoist(&mut g.body, &mut folder.fresh, &folder.types);
    g
}

struct Folder {
    types: HashMap<Var, Ty>,
    uses: HashMap<Var, usize>,
    /// Variables bound to real literals.
    lits: HashMap<Var, f64>,
    fresh: Fresh,
}

/// How a linear variable of the current block was computed.
#[derive(Clone)]
enum Def {
    /// `c · ẏ`.
    Scale(Var, Var),
    /// `-ẏ`.
    Neg(Var),
}

/// A coefficient of a term of a sum.
#[derive(Clone)]
enum Coef {
    Var(Var),
    One,
    MinusOne,
}

/// A sum of two multiples of the halves of one `dup`.
struct Merge {
    p: Coef,
    q: Coef,
    /// The `dup`'s position in the block.
    dup_at: usize,
}

/// The statements of one block as they are rewritten.
#[derive(Default)]
struct Scope {
    out: Vec<Option<Stmt>>,
    /// Linear variables bound in this block by a scaling or negation: the
    /// statement's position in `out` and what it computes.
    defs: HashMap<Var, (usize, Def)>,
    /// Each half of a `dup` of this block: the statement's position, the
    /// duplicated variable, the other half.
    halves: HashMap<Var, (usize, Var, Var)>,
}

impl Folder {
    fn expr(&mut self, e: &mut Expr) {
        match e {
            Expr::Block { stmts, tail } => {
                self.block(stmts);
                self.expr(tail);
            }
            Expr::Case { arms, .. } => {
                for arm in arms {
                    self.expr(&mut arm.body);
                }
            }
            // Loop bodies are left as J wrote them: see the module doc.
            Expr::Loop(_) => {}
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
        let mut scope = Scope {
            out: Vec::with_capacity(stmts.len()),
            ..Scope::default()
        };
        for mut s in stmts.drain(..) {
            if let Stmt::Let { rhs, .. } = &mut s {
                self.expr(rhs);
            }
            self.stmt(&mut scope, s);
        }
        *stmts = scope.out.into_iter().flatten().collect();
    }

    fn stmt(&mut self, scope: &mut Scope, s: Stmt) {
        let Stmt::Let { nl, lin, rhs } = &s else {
            return scope.out.push(Some(s));
        };
        match (nl.as_slice(), lin.as_slice(), rhs) {
            ([b], [], Expr::Lit { value, .. }) => {
                self.lits.insert(b.var.clone(), *value);
            }
            ([], [b1, b2], Expr::Dup(x)) => {
                let at = scope.out.len();
                scope
                    .halves
                    .insert(b1.var.clone(), (at, x.clone(), b2.var.clone()));
                scope
                    .halves
                    .insert(b2.var.clone(), (at, x.clone(), b1.var.clone()));
            }
            ([], [b], Expr::LinScale(a, x)) if self.foldable(&b.ty) => {
                return self.scale(scope, b.clone(), a.clone(), x.clone());
            }
            ([], [b], Expr::LinNeg(x)) if self.foldable(&b.ty) => {
                return self.neg(scope, b.clone(), x.clone());
            }
            ([], [b], Expr::LinAdd(p, q)) if self.foldable(&b.ty) => {
                return self.add_terms(scope, b.clone(), p.clone(), q.clone());
            }
            // Every other statement is kept as it is: folding is an
            // optimisation, and a form it does not know (a new one
            // included) is correctly left alone, which is why this match,
            // unlike the passes' rules, has a catch-all arm.
            _ => {}
        }
        scope.out.push(Some(s));
    }

    /// Whether tangents of type `t` may be rewritten: vectors of at least
    /// one scalar, so that each removed operation costs at least 1.
    fn foldable(&self, t: &Ty) -> bool {
        t.is_vector() && t.scalars() >= 1
    }

    /// `b = a · x`.
    fn scale(&mut self, scope: &mut Scope, b: Binder, a: Var, x: Var) {
        let (k, y) = match self.take(scope, &x) {
            Some(Def::Scale(c, y)) => (self.mul(scope, &a, &c), y),
            Some(Def::Neg(y)) => (self.negate(scope, &a), y),
            None => (a, x),
        };
        self.emit_scale(scope, b, k, y);
    }

    /// `b = -x`.
    fn neg(&mut self, scope: &mut Scope, b: Binder, x: Var) {
        match self.take(scope, &x) {
            Some(Def::Scale(c, y)) => {
                let k = self.negate(scope, &c);
                self.emit_scale(scope, b, k, y);
            }
            Some(Def::Neg(y)) => scope.out.push(Some(Stmt::Let {
                nl: vec![],
                lin: vec![b],
                rhs: Expr::Ret {
                    nl: vec![],
                    lin: vec![y],
                },
            })),
            None => {
                let at = scope.out.len();
                scope.defs.insert(b.var.clone(), (at, Def::Neg(x.clone())));
                scope.out.push(Some(Stmt::Let {
                    nl: vec![],
                    lin: vec![b],
                    rhs: Expr::LinNeg(x),
                }));
            }
        }
    }

    /// `b = p + q`: one scaling of the duplicated variable if `p` and `q`
    /// are multiples of the two halves of one `dup` of this block.
    fn add_terms(&mut self, scope: &mut Scope, b: Binder, p: Var, q: Var) {
        let Some((m, src, float)) = self.merge(scope, &p, &q) else {
            scope.out.push(Some(Stmt::Let {
                nl: vec![],
                lin: vec![b],
                rhs: Expr::LinAdd(p, q),
            }));
            return;
        };
        for v in [&p, &q] {
            if let Some((at, _)) = scope.defs.remove(v) {
                scope.out[at] = None;
            }
        }
        scope.out[m.dup_at] = None;
        let k = self.add(scope, &m.p, &m.q, float);
        self.emit_scale(scope, b, k, src);
    }

    /// The coefficients of `p` and `q` if they are multiples of the two
    /// halves of one `dup` of this block, with the duplicated variable and
    /// the float type of the coefficients.
    fn merge(&self, scope: &Scope, p: &Var, q: &Var) -> Option<(Merge, Var, Float)> {
        let (cp, hp) = self.term(scope, p);
        let (cq, hq) = self.term(scope, q);
        let (dup_at, src, other) = scope.halves.get(&hp)?.clone();
        if other != hq || self.uses.get(&hp) != Some(&1) || self.uses.get(&hq) != Some(&1) {
            return None;
        }
        let float = [&cp, &cq]
            .into_iter()
            .find_map(|c| match c {
                Coef::Var(v) => self.types.get(v)?.float(),
                Coef::One | Coef::MinusOne => None,
            })
            .or_else(|| self.types.get(&src)?.float())?;
        Some((
            Merge {
                p: cp,
                q: cq,
                dup_at,
            },
            src,
            float,
        ))
    }

    /// A term of a sum as a coefficient times a variable: the operand of
    /// its scaling or negation if this block computed it so, else itself.
    fn term(&self, scope: &Scope, v: &Var) -> (Coef, Var) {
        match scope.defs.get(v) {
            Some((_, d)) if self.uses.get(v) == Some(&1) => match d {
                Def::Scale(c, y) => (Coef::Var(c.clone()), y.clone()),
                Def::Neg(y) => (Coef::MinusOne, y.clone()),
            },
            Some(_) | None => (Coef::One, v.clone()),
        }
    }

    /// The definition of `x` if this block computed it by a scaling or
    /// negation and nothing else reads it; its statement is removed.
    fn take(&self, scope: &mut Scope, x: &Var) -> Option<Def> {
        if self.uses.get(x) != Some(&1) {
            return None;
        }
        let (at, d) = scope.defs.remove(x)?;
        scope.out[at] = None;
        Some(d)
    }

    fn emit_scale(&mut self, scope: &mut Scope, b: Binder, k: Var, y: Var) {
        let at = scope.out.len();
        scope
            .defs
            .insert(b.var.clone(), (at, Def::Scale(k.clone(), y.clone())));
        scope.out.push(Some(Stmt::Let {
            nl: vec![],
            lin: vec![b],
            rhs: Expr::LinScale(k, y),
        }));
    }

    /// `a · c`, a literal if both are.
    fn mul(&mut self, scope: &mut Scope, a: &Var, c: &Var) -> Var {
        let float = self.float(a);
        match (self.lits.get(a).copied(), self.lits.get(c).copied()) {
            (Some(x), Some(y)) => self.literal(scope, x * y, float),
            (Some(1.0), None) => c.clone(),
            (None, Some(1.0)) => a.clone(),
            (Some(_) | None, Some(_) | None) => {
                self.prim(scope, Prim::Mul, vec![a.clone(), c.clone()], float)
            }
        }
    }

    /// `-a`, a literal if `a` is.
    fn negate(&mut self, scope: &mut Scope, a: &Var) -> Var {
        let float = self.float(a);
        match self.lits.get(a).copied() {
            Some(x) => self.literal(scope, -x, float),
            None => self.prim(scope, Prim::Neg, vec![a.clone()], float),
        }
    }

    /// `p + q`, a literal if both are known.
    fn add(&mut self, scope: &mut Scope, p: &Coef, q: &Coef, float: Float) -> Var {
        let known = |c: &Coef| match c {
            Coef::Var(v) => self.lits.get(v).copied(),
            Coef::One => Some(1.0),
            Coef::MinusOne => Some(-1.0),
        };
        if let (Some(x), Some(y)) = (known(p), known(q)) {
            return self.literal(scope, x + y, float);
        }
        // At least one is a variable; a ±1 beside it is a literal operand,
        // and the sum keeps its order (`a + b`, `1 + b`, `b - 1`).
        let (prim, args) = match (p, q) {
            (Coef::Var(a), Coef::Var(b)) => (Prim::Add, vec![a.clone(), b.clone()]),
            (Coef::Var(a), Coef::One) => {
                (Prim::Add, vec![a.clone(), self.literal(scope, 1.0, float)])
            }
            (Coef::One, Coef::Var(b)) => {
                (Prim::Add, vec![self.literal(scope, 1.0, float), b.clone()])
            }
            (Coef::Var(a), Coef::MinusOne) | (Coef::MinusOne, Coef::Var(a)) => {
                (Prim::Sub, vec![a.clone(), self.literal(scope, 1.0, float)])
            }
            (Coef::One | Coef::MinusOne, Coef::One | Coef::MinusOne) => {
                let unit = |c: &Coef| {
                    if matches!(c, Coef::MinusOne) {
                        -1.0
                    } else {
                        1.0
                    }
                };
                return self.literal(scope, unit(p) + unit(q), float);
            }
        };
        self.prim(scope, prim, args, float)
    }

    fn float(&self, v: &Var) -> Float {
        self.types.get(v).and_then(Ty::float).unwrap_or(Float::F64)
    }

    fn literal(&mut self, scope: &mut Scope, value: f64, float: Float) -> Var {
        let k = self.fresh.var("c");
        self.lits.insert(k.clone(), value);
        self.types.insert(k.clone(), Ty::Real(float));
        scope.out.push(Some(Stmt::Let {
            nl: vec![Binder::new(k.clone(), Ty::Real(float))],
            lin: vec![],
            rhs: Expr::Lit { value, float },
        }));
        k
    }

    fn prim(&mut self, scope: &mut Scope, prim: Prim, args: Vec<Var>, float: Float) -> Var {
        let k = self.fresh.var("k");
        self.types.insert(k.clone(), Ty::Real(float));
        scope.out.push(Some(Stmt::Let {
            nl: vec![Binder::new(k.clone(), Ty::Real(float))],
            lin: vec![],
            rhs: Expr::Prim { prim, args },
        }));
        k
    }
}
