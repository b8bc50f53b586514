//! Inlining: a function's calls of the program's other functions replaced
//! by their bodies.
//!
//! The pipeline's composites are built from calls: the second-order
//! adjoint (`passes::hvp`) calls U's forward pass, then T's transpose of
//! the residual; J's output calls other functions' `.jvp`; and L defines
//! its componentwise helpers (`add.N`, …) as functions. Code generation
//! prints one function at a time and leaves calls to the driver's calling
//! convention, so a composite is inlined whole before it is
//! differentiated again and printed.
//!
//! A call `let r..; ṙ.. = g(a..; ȧ..)` becomes the block
//! `{ let p..; ṗ.. = (a..; ȧ..); body_g }` with every variable bound in
//! the copy of `body_g` (its parameters `p` among them) renamed to a name
//! fresh in the caller, so binders stay unique within the function. A
//! linear array `g` borrows (reads in place, [`Program::borrowed`]) is not
//! bound: its parameter is renamed to the caller's array, which the
//! caller reads again after the call. The
//! copies are the simplifier's to remove. Calls inside the inlined body
//! are inlined in turn; calls of externs are kept.
//!
//! Work: the same operations run, the parameter copies cost nothing
//! (section 4.3), so work is preserved exactly. Input: a program that
//! type-checks (in Linear A or B) whose calls are not recursive. Output:
//! the function, with its signature, calling no function of the program;
//! it type-checks where the input did.

use rustc_hash::FxHashMap as HashMap;

use super::PassError;
use crate::ir::{Arm, Binder, Expr, Func, Iter, Loop, Program, Stmt, Var};
use crate::visit::{rename_all, Fresh};

/// Calls nested deeper than this are taken for recursion.
const MAX_DEPTH: usize = 64;

/// `name` of `p` with every call of another function of `p` inlined.
pub fn inline(p: &Program, name: &str) -> Result<Func, PassError> {
    let f = p
        .func(name)
        .ok_or_else(|| PassError::new(&Var::new(name), "no such function to inline into"))?;
    let mut fresh = Fresh::for_func(f);
    let mut inl = Inliner {
        p,
        fresh: &mut fresh,
        caller: &f.name,
    };
    let body = inl.expr(&f.body, 0)?;
    Ok(f.with_body(body))
}

struct Inliner<'a> {
    p: &'a Program,
    fresh: &'a mut Fresh,
    caller: &'a Var,
}

impl Inliner<'_> {
    fn expr(&mut self, e: &Expr, depth: usize) -> Result<Expr, PassError> {
        Ok(match e {
            Expr::Block { stmts, tail } => {
                let mut out = Vec::with_capacity(stmts.len());
                for s in stmts {
                    out.push(match s {
                        Stmt::Let { nl, lin, rhs } => Stmt::Let {
                            nl: nl.clone(),
                            lin: lin.clone(),
                            rhs: self.expr(rhs, depth)?,
                        },
                        Stmt::Unpack { .. } | Stmt::LinUnpack { .. } => s.clone(),
                    });
                }
                Expr::Block {
                    stmts: out,
                    tail: Box::new(self.expr(tail, depth)?),
                }
            }
            Expr::App { func, nl, lin } => match self.p.func(func.as_str()) {
                Some(g) => self.call(g, nl, lin, depth)?,
                None => e.clone(),
            },
            Expr::Drop(inner) => Expr::Drop(Box::new(self.expr(inner, depth)?)),
            Expr::Case { scrut, arms } => Expr::Case {
                scrut: scrut.clone(),
                arms: arms
                    .iter()
                    .map(|a| {
                        Ok(Arm {
                            bind: a.bind.clone(),
                            body: self.expr(&a.body, depth)?,
                        })
                    })
                    .collect::<Result<_, PassError>>()?,
            },
            Expr::Loop(l) => Expr::Loop(Box::new(self.loop_(l, depth)?)),
            Expr::Ret { .. }
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
            | Expr::LinPop { .. } => e.clone(),
        })
    }

    fn loop_(&mut self, l: &Loop, depth: usize) -> Result<Loop, PassError> {
        let iter = match &l.iter {
            Iter::While { cond } => Iter::While {
                cond: Box::new(self.expr(cond, depth)?),
            },
            Iter::Replay {
                state,
                init,
                count,
                next,
                snapshots,
                rev,
            } => Iter::Replay {
                state: state.clone(),
                init: init.clone(),
                count: count.clone(),
                next: Box::new(self.expr(next, depth)?),
                snapshots: *snapshots,
                rev: *rev,
            },
            Iter::Range { .. } | Iter::Each { .. } | Iter::Zip { .. } => l.iter.clone(),
        };
        Ok(Loop {
            iter,
            body: self.expr(&l.body, depth)?,
            ..l.clone()
        })
    }

    /// The block standing for `g(nl; lin)`.
    fn call(&mut self, g: &Func, nl: &[Var], lin: &[Var], depth: usize) -> Result<Expr, PassError> {
        if depth >= MAX_DEPTH {
            let msg = format!("calls of `{}` nest too deep to inline (recursion?)", g.name);
            return Err(PassError::new(self.caller, &msg));
        }
        // Parameters and binders of the copy get names fresh in the caller;
        // a borrowed array is read in place, so its parameter names the
        // caller's array itself, which the caller reads again after.
        let mut map: HashMap<Var, Var> = HashMap::default();
        let borrowed = self.p.borrowed(g.name.as_str());
        for (k, b) in g.lin_params.iter().enumerate() {
            if borrowed.contains(&k) {
                map.insert(b.var.clone(), lin[k].clone());
            }
        }
        for b in g.nl_params.iter().chain(&g.lin_params) {
            map.entry(b.var.clone())
                .or_insert_with(|| self.fresh.var(b.var.as_str()));
        }
        crate::visit::for_each_bind(&g.body, &mut |v, _| {
            map.entry(v.clone())
                .or_insert_with(|| self.fresh.var(v.as_str()));
        });
        let mut body = g.body.clone();
        rename_all(&mut body, &map);
        let body = self.expr(&body, depth + 1)?;
        let renamed = |bs: &[(usize, &Binder)]| -> Vec<Binder> {
            bs.iter()
                .map(|(_, b)| Binder::new(map[&b.var].clone(), b.ty.clone()))
                .collect()
        };
        let nl_params: Vec<(usize, &Binder)> = g.nl_params.iter().enumerate().collect();
        let lin_params: Vec<(usize, &Binder)> = g
            .lin_params
            .iter()
            .enumerate()
            .filter(|(k, _)| !borrowed.contains(k))
            .collect();
        let bind = Stmt::Let {
            nl: renamed(&nl_params),
            lin: renamed(&lin_params),
            rhs: Expr::Ret {
                nl: nl.to_vec(),
                lin: lin_params.iter().map(|(k, _)| lin[*k].clone()).collect(),
            },
        };
        Ok(Expr::block(vec![bind], body))
    }
}
