//! J: forward-mode differentiation (paper, section 5, Fig. 6).
//!
//! `jvp(P)` maps every function `f(v..;) -> (σ..;)` of a purely non-linear
//! program to `f.jvp(v..; v̇..) -> (σ..; σ..)`, whose non-linear results are
//! `f`'s and whose linear results are the directional derivative in the
//! direction `v̇..` (Thm 5.1). Tangent types equal primal types.
//!
//! Rules implemented, with what the figure leaves out made explicit:
//!
//! * JLet / JUnpackA / JUnpackB: a block is processed statement by
//!   statement. Before statement `i`, every free variable of `i` that is
//!   also free later in the block has its tangent split with `dup`: one copy
//!   for statement `i`, one for the rest. This is JLet's `dup` chain, and for
//!   an unpacked tuple that is used again it is JUnpackB.
//! * JRet, JApp, JTup and every primitive rule: operands repeated within
//!   one leaf (`x * x`, `(x, x;)`, `f(x, x;)`) get one tangent per
//!   occurrence through a `dup` chain, the "variants" the text mentions.
//!   An extern's constant parameters take no tangent: an argument read
//!   only there (the bounds of a part of an array) has its tangent
//!   dropped.
//! * JPrimMul on a square `x * x`: `2x ẋ`, one scaling instead of two and
//!   a sum (the operand's tangent is not duplicated).
//! * JLit, and constants: value with a linear zero tangent.
//! * JData: an array of reals bound to a Rust constant (`#[nondiff]` data)
//!   has no tangent at all: it is kept out of Σ like other arrays, and
//!   its reads have zero tangents. A zero array would cost O(n) to make
//!   and to read for nothing. Its reads are constants like literals: a
//!   loop body reading one bound outside makes its zero tangent inside
//!   rather than carrying it, so the simplifier removes the products with
//!   it, and U saves nothing for them.
//! * JDrop: `drop(J(e))`; for arrays see [`arrays`].
//! * JPrim for every [`Prim`]: the primal result is bound first and the
//!   partial derivatives are computed from it where that saves work
//!   (`exp`, `tan`, `sqrt`, …); piecewise-constant primitives (`signum`,
//!   `le`) drop their input tangents and return a zero tangent.
//!
//! * Tangent types: `Ty::tangent`, reals for reals and the empty tuple for
//!   integers and booleans, which have no derivative; for a sum (a
//!   branch's record, met when differentiating a VJP), the tuple of its
//!   alternatives' tangents. Lists have none: J refuses a loop that
//!   collects a list of reals (`passes::records` makes a VJP's records
//!   arrays first); a list parameter is held fixed, as an integer is.
//! * JInj: `inj(v, k)` has the tuple with `v̇` at `k` and zeros elsewhere as
//!   its tangent; JCase on a sum unpacks the scrutinee's tangent in every
//!   arm, binds component `k` to arm `k`'s value and drops the others. The
//!   discrete primitives (integer arithmetic, comparisons, boolean
//!   operators, conversions) and inactive Rust code (`const` with
//!   arguments) are piecewise constant: operand tangents dropped, a zero
//!   tangent for the result. `powin(x, n)` (a run-time exponent) has
//!   `n x^(n-1) ẋ`, computed under a case on `n ≠ 0` so that `x⁰` has a
//!   zero derivative at `x = 0` too.
//! * JCase: a case of the J'd arms on the same scrutinee. The tangents of
//!   the case's free variables are split once (`dup`) and consumed by every
//!   arm, which drops those it does not read; a boolean scrutinee's tangent
//!   is dropped (a sum's: JInj above). The derivative is that of the arm taken: at a branch point
//!   (`x < 0` at `x = 0`) it is the derivative of the branch the primal
//!   runs, as in JAX and Enzyme.
//! * JLoop: the loop carries its state's tangents beside the state, and the
//!   tangents of outer values its body reads as extra linear state, split
//!   by `dup` at the top of every iteration (one copy for the body, one
//!   carried on) and dropped after the loop. The body thus reads no outer
//!   linear variable, which T turns into accumulation: the transposed
//!   `dup` is an addition, so an outer value's cotangent sums over the
//!   reversed iterations. State whose tangent has no scalars (a counter) is
//!   not carried. Bounds, lists and `while` conditions are piecewise
//!   constant: the condition runs on primal values only.
//!
//! * Arrays (invariant 11 of [`crate::check`]). An array of reals (or
//!   tuples of them; or, for a VJP's records, tuples and sums holding reals
//!   beside integers: `Ty::has_tangent_array`) has a linear array as its
//!   tangent; it is kept out of
//!   Σ, never split or dropped, and read in place: JIndex is
//!   `index(a, i)` with tangent `lindex(ȧ, i)`, so k reads of an array
//!   are k element reads, not k copies. Loops and cases read it from
//!   where it is bound, which T turns into accumulation in place. `len(a)`
//!   and indices are piecewise constant. An array of integers or booleans
//!   has no tangent (the empty tuple) and follows the scalar rules.
//!
//! Input: a program that type-checks in Linear A and has no linear
//! parameters, results or expressions. Output: a program that type-checks
//! in Linear A, with one function per input function, calls renamed.
//! Every function of the output does at most a constant factor more work
//! than its source (Thm 5.1, claim 2): no rule emits more than 9 operations
//! per source operation.

mod arrays;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::PassError;
use crate::ir::{Arm, Binder, Expr, Extern, Float, Func, Iter, Loop, Prim, Program, Stmt, Ty, Var};
use crate::visit::{derived_name, free_vars, is_data, stmt_free_vars, Fresh};

/// Positions of parameters, by callee.
type Positions = HashMap<Var, Vec<usize>>;

/// Applies J to every function of `p`.
pub fn jvp(p: &Program) -> Result<Program, PassError> {
    let mut names = HashMap::default();
    for name in p
        .externs
        .iter()
        .map(|e| &e.name)
        .chain(p.funcs.iter().map(|f| &f.name))
    {
        names.insert(name.clone(), derived_name(p, name, "jvp"));
    }
    // An extern's derivative is another extern, with tangents of the same
    // types as its parameters and results (JDef on the signature); its
    // constant parameters have none and stay constant (so that J applied
    // again, at second order, gives them none either), and it borrows the
    // tangents of its arrays (see `Jvp::app_tangents`).
    let externs = p
        .externs
        .iter()
        .map(|e| {
            if !e.lin_params.is_empty() || !e.lin_rets.is_empty() {
                return Err(PassError::new(
                    &e.name,
                    "J applies to non-linear externs only",
                ));
            }
            let lin_params: Vec<Ty> = (0..e.nl_params.len())
                .filter(|k| !e.constant.contains(k))
                .map(|k| e.nl_params[k].tangent())
                .collect();
            let borrowed = (0..lin_params.len())
                .filter(|&k| matches!(lin_params[k], Ty::Array(..)))
                .collect();
            Ok(Extern {
                name: names[&e.name].clone(),
                nl_params: e.nl_params.clone(),
                lin_params,
                nl_rets: e.nl_rets.clone(),
                lin_rets: e.nl_rets.iter().map(Ty::tangent).collect(),
                constant: e.constant.clone(),
                borrowed,
                pinned: e.pinned,
            })
        })
        .collect::<Result<_, _>>()?;
    let rets: HashMap<Var, Vec<Ty>> = p
        .externs
        .iter()
        .map(|e| (e.name.clone(), e.nl_rets.clone()))
        .chain(p.funcs.iter().map(|f| (f.name.clone(), f.nl_rets.clone())))
        .collect();
    let constants: Positions = p
        .externs
        .iter()
        .filter(|e| !e.constant.is_empty())
        .map(|e| (e.name.clone(), e.constant.clone()))
        .collect();
    let funcs = p
        .funcs
        .iter()
        .map(|f| jvp_func(f, &names, (&rets, &constants)))
        .collect::<Result<_, _>>()?;
    Ok(Program { externs, funcs })
}

/// JDef: `f(v..;)` becomes `f.jvp(v..; v̇..)`. `names` maps each function
/// to the name of its derivative, `rets` to its non-linear result types.
pub fn jvp_func(
    f: &Func,
    names: &HashMap<Var, Var>,
    (rets, constants): (&HashMap<Var, Vec<Ty>>, &Positions),
) -> Result<Func, PassError> {
    if !f.is_nonlinear() {
        return Err(PassError::new(
            &f.name,
            "J applies to non-linear functions only (section 5.1); this one has linear parameters or results",
        ));
    }
    let mut j = Jvp {
        names,
        fresh: Fresh::for_func(f),
        types: HashMap::default(),
        constant: Default::default(),
        arrays: HashMap::default(),
        owned: HashSet::default(),
        data: HashSet::default(),
        rets,
        constants,
        func: &f.name,
    };
    let mut sigma = HashMap::default();
    let mut lin_params = Vec::new();
    for b in &f.nl_params {
        let d = j.tangent_of(&b.var);
        j.types.insert(b.var.clone(), b.ty.clone());
        if b.ty.has_tangent_array() {
            j.arrays.insert(b.var.clone(), d.clone());
        } else {
            sigma.insert(b.var.clone(), d.clone());
        }
        lin_params.push(Binder::new(d, b.ty.tangent()));
    }
    let body = j.expr(&f.body, sigma)?;
    Ok(Func {
        name: names[&f.name].clone(),
        nl_params: f.nl_params.clone(),
        lin_params,
        nl_rets: f.nl_rets.clone(),
        lin_rets: f.nl_rets.iter().map(Ty::tangent).collect(),
        body,
    })
}

struct Jvp<'a> {
    names: &'a HashMap<Var, Var>,
    fresh: Fresh,
    /// Types of the non-linear variables seen so far.
    types: HashMap<Var, Ty>,
    /// Variables whose tangent is zero by construction (literals, Rust
    /// constants, results of piecewise-constant primitives).
    constant: rustc_hash::FxHashSet<Var>,
    /// Arrays with a linear array tangent: primal to tangent. They are not
    /// in Σ: their tangents are read in place, never consumed.
    arrays: HashMap<Var, Var>,
    /// The arrays of `arrays` the function creates (not parameters) whose
    /// tangent is not consumed yet: see [`arrays`].
    owned: HashSet<Var>,
    /// Data: arrays of reals bound to a Rust constant (a `#[nondiff]`
    /// slice). They have no tangent at all, neither in Σ nor in `arrays`:
    /// their reads have a zero tangent and nothing is split or dropped.
    data: HashSet<Var>,
    /// Non-linear result types of every function and extern.
    rets: &'a HashMap<Var, Vec<Ty>>,
    /// The positions of the constant parameters of externs that have some.
    constants: &'a Positions,
    func: &'a Var,
}

/// Σ: primal variable to the tangent variable holding its (single, linear)
/// tangent. Always holds exactly the free variables of the expression being
/// differentiated.
type Sigma = HashMap<Var, Var>;

impl Jvp<'_> {
    fn tangent_of(&mut self, v: &Var) -> Var {
        let base = v.as_str().split('.').next().unwrap_or("v");
        self.fresh.var(&format!("d{base}"))
    }

    fn err(&self, msg: &str) -> PassError {
        PassError::new(self.func, msg)
    }

    fn tangent(&self, sigma: &mut Sigma, v: &Var) -> Result<Var, PassError> {
        sigma
            .remove(v)
            .ok_or_else(|| self.err(&format!("no tangent for `{v}` (is it bound?)")))
    }

    fn ty(&self, v: &Var) -> Result<Ty, PassError> {
        super::type_of(&self.types, self.func, v)
    }

    /// Whether `v`'s tangent is in Σ: neither an array with a linear array
    /// tangent nor data, which has none.
    fn in_sigma(&self, v: &Var) -> bool {
        !self.arrays.contains_key(v) && !self.data.contains(v)
    }

    /// JData: `s` binds a Rust constant array, which has no tangent; the
    /// tangents of its arguments (a loop index) are dropped.
    fn data_let(
        &mut self,
        s: &Stmt,
        out: &mut Vec<Stmt>,
        local: &mut Sigma,
    ) -> Result<(), PassError> {
        if let Stmt::Let {
            nl,
            rhs: Expr::Const { args, .. },
            ..
        } = s
        {
            let drops = self.occurrences(out, args, local)?;
            out.extend(drops.into_iter().map(drop_stmt));
            for b in nl {
                self.types.insert(b.var.clone(), b.ty.clone());
                self.data.insert(b.var.clone());
            }
        }
        out.push(s.clone());
        Ok(())
    }

    /// `dup(d)`, `d` the tangent of `v`: two copies, one to use now and
    /// one to keep.
    fn split(&mut self, out: &mut Vec<Stmt>, v: &Var, d: Var) -> Result<(Var, Var), PassError> {
        let ty = self.ty(v)?.tangent();
        let (a, b) = (self.fresh.var(d.as_str()), self.fresh.var(d.as_str()));
        out.push(Stmt::Let {
            nl: vec![],
            lin: vec![
                Binder::new(a.clone(), ty.clone()),
                Binder::new(b.clone(), ty),
            ],
            rhs: Expr::Dup(d),
        });
        Ok((a, b))
    }

    /// One tangent per occurrence in `vs`: a variable occurring k times has
    /// its tangent split by k-1 `dup`s.
    fn occurrences(
        &mut self,
        out: &mut Vec<Stmt>,
        vs: &[Var],
        sigma: &mut Sigma,
    ) -> Result<Vec<Var>, PassError> {
        let mut left: HashMap<&Var, usize> = HashMap::default();
        for v in vs {
            *left.entry(v).or_insert(0) += 1;
        }
        if let Some(a) = vs
            .iter()
            .find(|v| self.arrays.contains_key(*v) && (!self.owned.contains(*v) || left[v] > 1))
        {
            return Err(self.err(&format!(
                "array `{a}` is used as a value; J reads arrays by index only, and passes on only arrays the function creates, once"
            )));
        }
        let mut cur: HashMap<Var, Var> = HashMap::default();
        let mut ds = Vec::with_capacity(vs.len());
        for v in vs {
            if self.owned.contains(v) {
                ds.push(self.take_owned(v)?);
                continue;
            }
            let d = match cur.remove(v) {
                Some(d) => d,
                None => self.tangent(sigma, v)?,
            };
            let n = left.get_mut(v).map(|n| {
                *n -= 1;
                *n
            });
            if n.unwrap_or(0) > 0 {
                let (a, b) = self.split(out, v, d)?;
                ds.push(a);
                cur.insert(v.clone(), b);
            } else {
                ds.push(d);
            }
        }
        Ok(ds)
    }

    /// J of an expression whose free variables are exactly Σ's keys.
    fn expr(&mut self, e: &Expr, mut sigma: Sigma) -> Result<Expr, PassError> {
        match e {
            Expr::Block { stmts, tail } => self.block(stmts, tail, sigma),
            Expr::Ret { nl, lin } => {
                if !lin.is_empty() {
                    return Err(self.err("J applies to non-linear expressions only"));
                }
                let mut out = Vec::new();
                let ds = self.occurrences(&mut out, nl, &mut sigma)?;
                Ok(Expr::block(
                    out,
                    Expr::Ret {
                        nl: nl.clone(),
                        lin: ds,
                    },
                ))
            }
            Expr::App { func, nl, lin } => {
                if !lin.is_empty() {
                    return Err(self.err("J applies to non-linear expressions only"));
                }
                let Some(fj) = self.names.get(func) else {
                    return Err(self.err(&format!("call to unknown function `{func}`")));
                };
                let fj = fj.clone();
                let mut out = Vec::new();
                let ds = self.app_tangents(&mut out, func, nl, &mut sigma)?;
                // An argument read only at constant positions (the bounds
                // of a part of an array) passes no tangent: it is dropped.
                for k in self.constants.get(func).cloned().unwrap_or_default() {
                    if let Some(d) = nl.get(k).and_then(|v| sigma.remove(v)) {
                        out.push(drop_stmt(d));
                    }
                }
                Ok(Expr::block(
                    out,
                    Expr::App {
                        func: fj,
                        nl: nl.clone(),
                        lin: ds,
                    },
                ))
            }
            Expr::Lit { float, .. } => Ok(self.with_zero_tangent(e.clone(), Ty::Real(*float))),
            Expr::Const { ty, args, .. } => {
                // Inactive Rust code: its arguments' tangents are dropped.
                let mut out = Vec::new();
                let ds = self.occurrences(&mut out, args, &mut sigma)?;
                out.extend(ds.into_iter().map(drop_stmt));
                Ok(Expr::block(
                    out,
                    self.with_zero_tangent(e.clone(), ty.clone()),
                ))
            }
            Expr::Tup(vs) => {
                let mut out = Vec::new();
                let ds = self.occurrences(&mut out, vs, &mut sigma)?;
                let tys = vs
                    .iter()
                    .map(|v| self.ty(v))
                    .collect::<Result<Vec<_>, _>>()?;
                let ty = Ty::Tuple(tys);
                let (t, dt) = (self.fresh.var("t"), self.fresh.var("dt"));
                out.push(Stmt::Let {
                    nl: vec![Binder::new(t.clone(), ty.clone())],
                    lin: vec![],
                    rhs: Expr::Tup(vs.clone()),
                });
                out.push(Stmt::Let {
                    nl: vec![],
                    lin: vec![Binder::new(dt.clone(), ty.tangent())],
                    rhs: Expr::LinTup(ds),
                });
                Ok(Expr::block(
                    out,
                    Expr::Ret {
                        nl: vec![t],
                        lin: vec![dt],
                    },
                ))
            }
            Expr::Prim {
                prim: Prim::PowiN,
                args,
            } => self.powin(args, sigma),
            Expr::Prim { prim, args } if !prim.is_real() => {
                // Piecewise constant: the operands' tangents are dropped and
                // the result's tangent is zero (empty for integers and
                // booleans, a real zero for `f64(i)`).
                let mut out = Vec::new();
                let ds = self.occurrences(&mut out, args, &mut sigma)?;
                out.extend(ds.into_iter().map(drop_stmt));
                let first = match args.first() {
                    Some(a) => Some(self.ty(a)?),
                    None => None,
                };
                let ty = prim.result_ty(first.as_ref());
                Ok(Expr::block(out, self.with_zero_tangent(e.clone(), ty)))
            }
            Expr::Int(_) => Ok(self.with_zero_tangent(e.clone(), Ty::Int)),
            Expr::Bool(_) => Ok(self.with_zero_tangent(e.clone(), Ty::Bool)),
            Expr::Inj { sum, tag, val } => self.inj(e, sum, *tag, val, sigma),
            Expr::Case { scrut, arms } => self.case(scrut, arms, sigma),
            Expr::Loop(l) => self.loop_(l, sigma),
            Expr::Prim { prim, args } => {
                let float = match args.first() {
                    Some(a) => self.ty(a)?.float().unwrap_or(Float::F64),
                    None => Float::F64,
                };
                let mut out = Vec::new();
                // A square `x * x` reads `x` once: its rule needs one tangent.
                let square = *prim == Prim::Mul && args.len() == 2 && args[0] == args[1];
                let read = if square { &args[..1] } else { &args[..] };
                let ds = self.occurrences(&mut out, read, &mut sigma)?;
                let mut b = Builder {
                    out,
                    fresh: &mut self.fresh,
                    float,
                };
                let (z, dz) = jvp_prim(&mut b, *prim, args, &ds);
                Ok(Expr::block(
                    b.out,
                    Expr::Ret {
                        nl: vec![z],
                        lin: vec![dz],
                    },
                ))
            }
            Expr::Drop(inner) => self.drop(inner, sigma),
            Expr::Index { arr, idx } => self.index(e, arr, idx, sigma),
            Expr::Fill { len, val, size } => self.fill(e, len, val, *size, sigma),
            Expr::Set { arr, idx, val } => self.set(e, arr, Some(idx), val, sigma),
            Expr::Push { arr, val } => self.set(e, arr, None, val, sigma),
            Expr::Pop { arr } => self.pop(e, arr, sigma),
            Expr::Len(arr) => {
                let mut out = Vec::new();
                if self.in_sigma(arr) {
                    let ds = self.occurrences(&mut out, std::slice::from_ref(arr), &mut sigma)?;
                    out.extend(ds.into_iter().map(drop_stmt));
                }
                Ok(Expr::block(out, self.with_zero_tangent(e.clone(), Ty::Int)))
            }
            Expr::LinIndex { .. }
            | Expr::LinAccum { .. }
            | Expr::LinZeros { .. }
            | Expr::LinSet { .. }
            | Expr::LinFree { .. }
            | Expr::LinPush { .. }
            | Expr::LinPop { .. } => Err(self.err(
                "J applies to non-linear expressions only; this one contains a linear operation",
            )),
            Expr::LinZero(_)
            | Expr::LinTup(_)
            | Expr::LinAdd(..)
            | Expr::LinNeg(_)
            | Expr::LinScale(..)
            | Expr::Dup(_) => Err(self.err(
                "J applies to non-linear expressions only; this one contains a linear operation",
            )),
        }
    }

    fn with_zero_tangent(&mut self, e: Expr, ty: Ty) -> Expr {
        let (c, z) = (self.fresh.var("c"), self.fresh.var("dc"));
        let dty = ty.tangent();
        Expr::block(
            vec![
                Stmt::Let {
                    nl: vec![Binder::new(c.clone(), ty.clone())],
                    lin: vec![],
                    rhs: e,
                },
                Stmt::Let {
                    nl: vec![],
                    lin: vec![Binder::new(z.clone(), dty.clone())],
                    rhs: Expr::LinZero(dty),
                },
            ],
            Expr::Ret {
                nl: vec![c],
                lin: vec![z],
            },
        )
    }

    /// JLet and JUnpack over a run of statements.
    fn block(&mut self, stmts: &[Stmt], tail: &Expr, mut sigma: Sigma) -> Result<Expr, PassError> {
        // Index of the last statement (stmts.len() for the tail) reading each
        // variable: a tangent must be split before statement i iff its
        // variable is read after i.
        let mut last: HashMap<Var, usize> = HashMap::default();
        let mut frees = Vec::with_capacity(stmts.len());
        for (i, s) in stmts.iter().enumerate() {
            let fv = stmt_free_vars(s);
            if !fv.lin.is_empty() {
                return Err(self.err("J applies to non-linear expressions only"));
            }
            for v in &fv.nl {
                last.insert(v.clone(), i);
            }
            frees.push(fv.nl);
        }
        for v in crate::visit::free_vars(tail).nl {
            last.insert(v, stmts.len());
        }

        let mut out = Vec::new();
        // Owned arrays bound here, freed after their last read (JFree).
        let mut scope: Vec<Var> = Vec::new();
        for (i, (s, fv)) in stmts.iter().zip(frees).enumerate() {
            let mut local = Sigma::default();
            let fv: Vec<Var> = fv.into_iter().filter(|v| self.in_sigma(v)).collect();
            for v in fv {
                let d = self.tangent(&mut sigma, &v)?;
                if last.get(&v).copied().unwrap_or(0) > i {
                    let (a, b) = self.split(&mut out, &v, d)?;
                    local.insert(v.clone(), a);
                    sigma.insert(v, b);
                } else {
                    local.insert(v, d);
                }
            }
            match s {
                Stmt::Let { nl, lin, rhs } if lin.is_empty() && is_data(nl, rhs) => {
                    self.data_let(s, &mut out, &mut local)?;
                }
                Stmt::Let { nl, lin, rhs } => {
                    if !lin.is_empty() {
                        return Err(self.err("J applies to non-linear bindings only"));
                    }
                    // A read of data (a `#[nondiff]` array) is as constant
                    // as a literal: a loop reading it from outside makes a
                    // zero tangent inside, instead of carrying one, so no
                    // product with it survives to put its partner on the
                    // tape.
                    let data_read =
                        matches!(rhs, Expr::Index { arr, .. } if self.data.contains(arr));
                    // A tuple or sum of constants (the empty records
                    // `passes::records` starts arrays with) is one too.
                    let of_constants = match rhs {
                        Expr::Tup(vs) => vs.iter().all(|v| self.constant.contains(v)),
                        Expr::Inj { val, .. } => self.constant.contains(val),
                        _ => false,
                    };
                    if is_constant(rhs) || data_read || of_constants {
                        self.constant.extend(nl.iter().map(|b| b.var.clone()));
                    }
                    // Types first: the right-hand side's nested blocks may
                    // refer to nothing bound here, but the tangents need them.
                    let rhs = self.expr(rhs, local)?;
                    let mut dl = Vec::with_capacity(nl.len());
                    for b in nl {
                        let d = self.tangent_of(&b.var);
                        self.bind_tangent(&mut sigma, b, d.clone());
                        if b.ty.has_tangent_array() {
                            scope.push(b.var.clone());
                        }
                        dl.push(Binder::new(d, b.ty.tangent()));
                    }
                    out.push(Stmt::Let {
                        nl: nl.clone(),
                        lin: dl,
                        rhs,
                    });
                }
                Stmt::Unpack { vars, tuple } => {
                    let dt = self.tangent(&mut local, tuple)?;
                    let mut dvars = Vec::with_capacity(vars.len());
                    for b in vars {
                        let d = self.tangent_of(&b.var);
                        self.types.insert(b.var.clone(), b.ty.clone());
                        sigma.insert(b.var.clone(), d.clone());
                        dvars.push(Binder::new(d, b.ty.tangent()));
                    }
                    out.push(s.clone());
                    out.push(Stmt::LinUnpack {
                        vars: dvars,
                        tuple: dt,
                    });
                }
                Stmt::LinUnpack { .. } => {
                    return Err(self.err("J applies to non-linear expressions only"));
                }
            }
            self.free_done(
                &mut scope,
                |a| last.get(a).is_none_or(|l| *l <= i),
                &mut out,
            );
        }
        let jtail = self.expr(tail, sigma)?;
        let jtail = self.free_after_tail(tail, jtail, scope)?;
        Ok(Expr::block(out, jtail))
    }
}

fn drop_stmt(d: Var) -> Stmt {
    Stmt::Let {
        nl: vec![],
        lin: vec![],
        rhs: Expr::Drop(Box::new(Expr::lin_var(d))),
    }
}

fn nl_vars(fv: crate::visit::FreeVars, bound: &[&Var]) -> Vec<Var> {
    fv.nl.into_iter().filter(|v| !bound.contains(&v)).collect()
}

impl Jvp<'_> {
    /// JInj: the tangent of alternative `tag` of a sum is the tuple of the
    /// alternatives' tangents, the value's at `tag` and zeros elsewhere.
    fn inj(
        &mut self,
        e: &Expr,
        sum: &Ty,
        tag: usize,
        val: &Var,
        mut sigma: Sigma,
    ) -> Result<Expr, PassError> {
        let Ty::Sum(alts) = sum else {
            return Err(self.err(&format!("injection into {sum}, which is not a sum")));
        };
        let mut out = Vec::new();
        let mut dval = self
            .occurrences(&mut out, std::slice::from_ref(val), &mut sigma)?
            .into_iter()
            .next();
        let mut comps = Vec::with_capacity(alts.len());
        for (i, t) in alts.iter().enumerate() {
            match dval.take_if(|_| i == tag) {
                Some(d) => comps.push(d),
                None => {
                    let (z, st) = self.zero_let("dalt", t.tangent());
                    out.push(st);
                    comps.push(z);
                }
            }
        }
        out.extend(dval.map(drop_stmt));
        let (t, dt) = (self.fresh.var("s"), self.fresh.var("ds"));
        out.push(Stmt::Let {
            nl: vec![Binder::new(t.clone(), sum.clone())],
            lin: vec![],
            rhs: e.clone(),
        });
        out.push(Stmt::Let {
            nl: vec![],
            lin: vec![Binder::new(dt.clone(), sum.tangent())],
            rhs: Expr::LinTup(comps),
        });
        Ok(Expr::block(
            out,
            Expr::Ret {
                nl: vec![t],
                lin: vec![dt],
            },
        ))
    }

    /// In arm `k` of a case on a sum whose tangent is `d`: `d` unpacked,
    /// every component but the `k`-th dropped, that one returned.
    fn alternative(
        &mut self,
        d: &Var,
        alts: &[Ty],
        k: usize,
        stmts: &mut Vec<Stmt>,
    ) -> Result<Var, PassError> {
        let comps: Vec<Binder> = alts
            .iter()
            .map(|t| Binder::new(self.fresh.var("dalt"), t.tangent()))
            .collect();
        stmts.push(Stmt::LinUnpack {
            vars: comps.clone(),
            tuple: d.clone(),
        });
        let mut taken = None;
        for (i, c) in comps.into_iter().enumerate() {
            if i == k {
                taken = Some(c.var);
            } else {
                stmts.push(drop_stmt(c.var));
            }
        }
        taken.ok_or_else(|| {
            self.err(&format!(
                "arm {k} of a case on a sum of {} alternatives",
                alts.len()
            ))
        })
    }

    /// JCase: a case of the J'd arms. A boolean scrutinee's tangent (empty)
    /// is dropped; a sum's is unpacked in every arm, whose bound value
    /// takes its component and drops the others. Every arm consumes the
    /// tangents of the case's free variables, dropping those of variables
    /// only other arms read. An outer
    /// array some arm writes or returns is consumed by every arm: an arm
    /// that does not frees its tangent (JFree), so that the arms agree.
    fn case(&mut self, scrut: &Var, arms: &[Arm], mut sigma: Sigma) -> Result<Expr, PassError> {
        let mut frees: Vec<Vec<Var>> = Vec::new();
        let mut union: Vec<Var> = Vec::new();
        for a in arms {
            let bound: Vec<&Var> = a.bind.iter().map(|b| &b.var).collect();
            let fv: Vec<Var> = nl_vars(free_vars(&a.body), &bound)
                .into_iter()
                .filter(|v| self.in_sigma(v))
                .collect();
            for v in &fv {
                if !union.contains(v) {
                    union.push(v.clone());
                }
            }
            frees.push(fv);
        }
        let mut out = Vec::new();
        let mut needed = vec![scrut.clone()];
        needed.extend(union.iter().cloned());
        let mut ds = self.occurrences(&mut out, &needed, &mut sigma)?.into_iter();
        // A sum's tangent is the tuple of its alternatives' tangents: arm
        // k takes component k as its bound value's tangent and drops the
        // others (zeros, by JInj).
        let alts = match self.ty(scrut)? {
            Ty::Sum(alts) => Some(alts),
            _ => None,
        };
        let dscrut = match (ds.next(), &alts) {
            (Some(d), Some(_)) => Some(d),
            (Some(d), None) => {
                out.push(drop_stmt(d));
                None
            }
            (None, _) => None,
        };
        let tangents: HashMap<Var, Var> = union.iter().cloned().zip(ds).collect();
        let mut new_arms = Vec::new();
        // Outer arrays an arm writes or returns (consumes): each arm starts
        // from the same owned arrays, and those some arm consumes but
        // another does not are freed at the end of that other arm.
        let outer = self.owned_arrays();
        let mut consumed: Vec<Vec<Var>> = Vec::new();
        for (k, (a, fv)) in arms.iter().zip(frees).enumerate() {
            self.own_again(&outer, |_| true);
            let mut stmts = Vec::new();
            let mut local = Sigma::default();
            for v in &union {
                if fv.contains(v) {
                    local.insert(v.clone(), tangents[v].clone());
                } else {
                    stmts.push(drop_stmt(tangents[v].clone()));
                }
            }
            let mut bound_d = match (&dscrut, &alts) {
                (Some(d), Some(alts)) => Some(self.alternative(d, alts, k, &mut stmts)?),
                _ => None,
            };
            if let Some(b) = &a.bind {
                self.types.insert(b.var.clone(), b.ty.clone());
                let d = match bound_d.take() {
                    Some(d) => d,
                    None => {
                        let (z, st) = self.zero_let(&format!("d{}", base(&b.var)), b.ty.tangent());
                        stmts.push(st);
                        z
                    }
                };
                if fv_contains(&a.body, &b.var) {
                    self.bind_tangent(&mut local, b, d);
                } else {
                    stmts.push(drop_stmt(d));
                }
            }
            stmts.extend(bound_d.map(drop_stmt));
            let body = self.expr(&a.body, local)?;
            consumed.push(
                outer
                    .iter()
                    .filter(|(y, _)| !self.owned.contains(y))
                    .map(|(y, _)| y.clone())
                    .collect(),
            );
            new_arms.push(Arm {
                bind: a.bind.clone(),
                body: Expr::block(stmts, body),
            });
        }
        self.settle_case_arrays(&mut new_arms, arms, &consumed, &outer)?;
        Ok(Expr::block(
            out,
            Expr::Case {
                scrut: scrut.clone(),
                arms: new_arms,
            },
        ))
    }

    /// JLoop: the loop carries the tangents of its state beside it, and the
    /// tangents of the outer values its body reads as extra linear state
    /// (split by `dup` each iteration, dropped after the loop), so the body
    /// reads no outer linear variable and T accumulates their cotangents.
    /// The header's own values (bounds, list, condition) are piecewise
    /// constant: their tangents are dropped, and the index's is zero.
    ///
    /// A replay (only in U's output, met when differentiating again) is
    /// first rewritten into a loop computing its states into an array and
    /// a loop over them ([`super::records::unreplayed`]), which these rules
    /// differentiate through the states.
    fn loop_(&mut self, l: &Loop, sigma: Sigma) -> Result<Expr, PassError> {
        if let Some(e) = super::records::unreplayed(l, self.func, &mut self.fresh, &mut self.types)?
        {
            return self.expr(&e, sigma);
        }
        if !l.lin.is_empty() {
            return Err(self.err("J applies to non-linear loops only"));
        }
        // A list has no tangent: one of reals made here would be
        // differentiated as a constant (`passes::records` makes records
        // arrays first). A list parameter is one, as an integer is: the
        // derivative holds it fixed, as its empty tangent type says.
        if l.collect.iter().any(Ty::has_reals) {
            return Err(
                self.err("J gives lists no tangent, and this loop collects a list of reals")
            );
        }
        for b in l
            .iter
            .binders()
            .into_iter()
            .chain(l.nl.iter().map(|(b, _)| b))
        {
            self.types.insert(b.var.clone(), b.ty.clone());
        }
        let mut out = Vec::new();
        let (init_ds, invariant) = self.loop_tangents(l, sigma, &mut out)?;
        // State whose tangent has no scalars (integers, booleans) is not
        // carried: its tangent is a zero wherever one is needed.
        let carried: Vec<bool> = l.nl.iter().map(|(b, _)| !trivial(&b.ty)).collect();
        let new = self.loop_body(l, init_ds, invariant, &carried, &mut out)?;
        self.after_loop(l, new, &carried, out)
    }

    /// The tangents a loop consumes, split by role: those of its bounds,
    /// list and `while`-only reads are dropped; those of its initial state
    /// and of the outer values its body reads are returned.
    #[allow(clippy::type_complexity)]
    fn loop_tangents(
        &mut self,
        l: &Loop,
        mut sigma: Sigma,
        out: &mut Vec<Stmt>,
    ) -> Result<(Vec<Var>, Vec<(Var, Var)>), PassError> {
        let mut bound: Vec<&Var> = l.nl.iter().map(|(b, _)| &b.var).collect();
        bound.extend(l.iter.binders().into_iter().map(|b| &b.var));
        let invariant: Vec<Var> = nl_vars(free_vars(&l.body), &bound)
            .into_iter()
            .filter(|v| self.in_sigma(v))
            .collect();
        let mut cond_only = Vec::new();
        if let Iter::While { cond } = &l.iter {
            cond_only.extend(
                nl_vars(free_vars(cond), &bound)
                    .into_iter()
                    .filter(|v| !invariant.contains(v) && self.in_sigma(v)),
            );
        }
        let header = l.iter.outer_vars();
        let inits: Vec<Var> = l.nl.iter().map(|(_, v)| v.clone()).collect();
        let mut needed = header.clone();
        needed.extend(inits.iter().cloned());
        needed.extend(invariant.iter().cloned());
        needed.extend(cond_only.iter().cloned());
        let mut ds = self.occurrences(out, &needed, &mut sigma)?.into_iter();
        out.extend(ds.by_ref().take(header.len()).map(drop_stmt));
        let init_ds: Vec<Var> = ds.by_ref().take(inits.len()).collect();
        let inv: Vec<(Var, Var)> = invariant.into_iter().zip(ds.by_ref()).collect();
        out.extend(ds.map(drop_stmt));
        Ok((init_ds, inv))
    }

    /// `let ; d: τ̇ = zero(τ̇)` for a fresh `d`.
    fn zero_let(&mut self, hint: &str, t: Ty) -> (Var, Stmt) {
        let z = self.fresh.var(hint);
        let s = Stmt::Let {
            nl: vec![],
            lin: vec![Binder::new(z.clone(), t.clone())],
            rhs: Expr::LinZero(t),
        };
        (z, s)
    }

    /// The J'd loop: state tangents carried beside the state, the index's
    /// zero tangent, outer values' tangents carried and split each
    /// iteration (those known to be zero replaced by local zeros).
    fn loop_body(
        &mut self,
        l: &Loop,
        init_ds: Vec<Var>,
        invariant: Vec<(Var, Var)>,
        carried: &[bool],
        out: &mut Vec<Stmt>,
    ) -> Result<Loop, PassError> {
        let body_fv = free_vars(&l.body).nl;
        let (mut stmts, mut local, mut lin) = (Vec::new(), Sigma::default(), Vec::new());
        let mut owned_state = Vec::new();
        for (((b, _), d0), keep) in l.nl.iter().zip(init_ds).zip(carried) {
            let hint = format!("d{}", base(&b.var));
            let d = if *keep {
                let d = self.fresh.var(&hint);
                lin.push((Binder::new(d.clone(), b.ty.tangent()), d0));
                d
            } else {
                out.push(drop_stmt(d0));
                let (d, z) = self.zero_let(&hint, b.ty.tangent());
                stmts.push(z);
                d
            };
            if b.ty.has_tangent_array() {
                // An array state is the body's to consume (JFree if only
                // read); its tangent is kept out of Σ.
                self.bind_tangent(&mut local, b, d);
                owned_state.push(b.var.clone());
            } else if body_fv.contains(&b.var) {
                local.insert(b.var.clone(), d);
            } else {
                stmts.push(drop_stmt(d));
            }
        }
        for b in l.iter.binders() {
            if body_fv.contains(&b.var) {
                let (z, st) = self.zero_let(&format!("d{}", base(&b.var)), b.ty.tangent());
                stmts.push(st);
                local.insert(b.var.clone(), z);
            }
        }
        let mut next_inv = Vec::new();
        for (v, d0) in invariant {
            let t = self.ty(&v)?.tangent();
            // No tangent to carry: a zero inside the body will do.
            if trivial(&self.ty(&v)?) || self.constant.contains(&v) {
                out.push(drop_stmt(d0));
                let (z, st) = self.zero_let(&format!("d{}", base(&v)), t);
                stmts.push(st);
                local.insert(v, z);
                continue;
            }
            let c = self.fresh.var(&format!("d{}", base(&v)));
            let (use_, keep) = (self.fresh.var(c.as_str()), self.fresh.var(c.as_str()));
            stmts.push(Stmt::Let {
                nl: vec![],
                lin: vec![
                    Binder::new(use_.clone(), t.clone()),
                    Binder::new(keep.clone(), t.clone()),
                ],
                rhs: Expr::Dup(c.clone()),
            });
            lin.push((Binder::new(c, t), d0));
            local.insert(v, use_);
            next_inv.push(keep);
        }
        let body = self.expr(&l.body, local)?;
        let body = self.free_after_tail(&l.body, body, owned_state)?;
        let r: Vec<Binder> =
            l.nl.iter()
                .map(|(b, _)| &b.ty)
                .chain(&l.collect)
                .map(|t| Binder::new(self.fresh.var("r"), t.clone()))
                .collect();
        let dr: Vec<Binder> = r
            .iter()
            .map(|b| Binder::new(self.fresh.var("dr"), b.ty.tangent()))
            .collect();
        stmts.push(Stmt::Let {
            nl: r.clone(),
            lin: dr.clone(),
            rhs: body,
        });
        // Collected values' tangents are empty; untracked state's dropped.
        stmts.extend(dr[l.nl.len()..].iter().map(|b| drop_stmt(b.var.clone())));
        let mut ret_lin = Vec::new();
        for (b, keep) in dr[..l.nl.len()].iter().zip(carried) {
            if *keep {
                ret_lin.push(b.var.clone());
            } else {
                stmts.push(drop_stmt(b.var.clone()));
            }
        }
        ret_lin.extend(next_inv);
        Ok(Loop {
            iter: l.iter.clone(),
            nl: l.nl.clone(),
            lin,
            collect: l.collect.clone(),
            // The JVP of a loop linear in its reals is linear in them and
            // their tangents together: zero, it adds nothing (invariant 12).
            zero_skip: l.zero_skip,
            body: Expr::block(
                stmts,
                Expr::Ret {
                    nl: r.iter().map(|b| b.var.clone()).collect(),
                    lin: ret_lin,
                },
            ),
        })
    }

    /// Binds the J'd loop's results; drops the carried invariants; gives
    /// untracked state and collected lists zero tangents.
    fn after_loop(
        &mut self,
        l: &Loop,
        new: Loop,
        carried: &[bool],
        mut out: Vec<Stmt>,
    ) -> Result<Expr, PassError> {
        let (res_nl, res_lin) = new.result_types();
        let fin: Vec<Binder> = res_nl
            .iter()
            .map(|t| Binder::new(self.fresh.var("s"), t.clone()))
            .collect();
        let dfin: Vec<Binder> = res_lin
            .iter()
            .map(|t| Binder::new(self.fresh.var("ds"), t.clone()))
            .collect();
        out.push(Stmt::Let {
            nl: fin.clone(),
            lin: dfin.clone(),
            rhs: Expr::Loop(Box::new(new)),
        });
        let kept = carried.iter().filter(|k| **k).count();
        out.extend(dfin[kept..].iter().map(|b| drop_stmt(b.var.clone())));
        let mut state_ds = dfin[..kept].iter();
        let mut ret = Vec::new();
        for ((b, _), keep) in l.nl.iter().zip(carried) {
            match if *keep { state_ds.next() } else { None } {
                Some(d) => ret.push(d.var.clone()),
                None => {
                    let (z, st) = self.zero_let(&format!("d{}", base(&b.var)), b.ty.tangent());
                    out.push(st);
                    ret.push(z);
                }
            }
        }
        for t in &l.collect {
            let (z, st) = self.zero_let("dl", Ty::List(Box::new(t.clone()), None).tangent());
            out.push(st);
            ret.push(z);
        }
        Ok(Expr::block(
            out,
            Expr::Ret {
                nl: fin.iter().map(|b| b.var.clone()).collect(),
                lin: ret,
            },
        ))
    }
}

/// Whether an expression's value has a zero tangent by construction.
fn is_constant(e: &Expr) -> bool {
    match e {
        Expr::Lit { .. } | Expr::Const { .. } | Expr::Int(_) | Expr::Bool(_) => true,
        Expr::Prim { prim, .. } => !prim.is_real() && *prim != Prim::PowiN,
        _ => false,
    }
}

/// Whether values of this type have a tangent with no scalars (an array
/// of reals has one: its scalars are only known at run time).
fn trivial(t: &Ty) -> bool {
    t.tangent().scalars() == 0 && !t.has_tangent_array()
}

impl Jvp<'_> {
    /// `powin(x, n)`: `n x^(n-1) ẋ`, and `0` when `n = 0` (`x^0 = 1` for
    /// every `x`; `0·x^(-1)` would be NaN at `x = 0`), as a case on `n ≠ 0`;
    /// the exponent's (empty) tangent is dropped.
    fn powin(&mut self, args: &[Var], mut sigma: Sigma) -> Result<Expr, PassError> {
        let [x, n] = args else {
            return Err(self.err("`powin` takes two operands"));
        };
        let float = self.ty(x)?.float().unwrap_or(Float::F64);
        let real = Ty::Real(float);
        let mut out = Vec::new();
        let ds = self.occurrences(&mut out, args, &mut sigma)?;
        out.push(drop_stmt(ds[1].clone()));
        let z = self.fresh.var("z");
        let (zero, nz, c) = (
            self.fresh.var("zero"),
            self.fresh.var("nz"),
            self.fresh.var("c"),
        );
        let (one, m, nf, p, c1, c0) = (
            self.fresh.var("one"),
            self.fresh.var("m"),
            self.fresh.var("nf"),
            self.fresh.var("p"),
            self.fresh.var("c"),
            self.fresh.var("c"),
        );
        let nl = |v: &Var, ty: Ty, rhs: Expr| Stmt::Let {
            nl: vec![Binder::new(v.clone(), ty)],
            lin: vec![],
            rhs,
        };
        let prim = |prim: Prim, args: Vec<Var>| Expr::Prim { prim, args };
        out.push(nl(
            &z,
            real.clone(),
            prim(Prim::PowiN, vec![x.clone(), n.clone()]),
        ));
        out.push(nl(&zero, Ty::Int, Expr::Int(0)));
        out.push(nl(
            &nz,
            Ty::Bool,
            prim(Prim::Cmp(crate::ir::Cmp::Ne), vec![n.clone(), zero]),
        ));
        let nonzero = Expr::block(
            vec![
                nl(&one, Ty::Int, Expr::Int(1)),
                nl(&m, Ty::Int, prim(Prim::ISub, vec![n.clone(), one])),
                nl(
                    &nf,
                    real.clone(),
                    prim(Prim::ToReal(float), vec![n.clone()]),
                ),
                nl(&p, real.clone(), prim(Prim::PowiN, vec![x.clone(), m])),
                nl(&c1, real.clone(), prim(Prim::Mul, vec![nf, p])),
            ],
            Expr::var(c1),
        );
        let zero_arm = Expr::block(
            vec![nl(&c0, real.clone(), Expr::Lit { value: 0.0, float })],
            Expr::var(c0),
        );
        out.push(nl(
            &c,
            real.clone(),
            Expr::Case {
                scrut: nz,
                arms: vec![
                    Arm {
                        bind: None,
                        body: nonzero,
                    },
                    Arm {
                        bind: None,
                        body: zero_arm,
                    },
                ],
            },
        ));
        let dz = self.fresh.var("dz");
        out.push(Stmt::Let {
            nl: vec![],
            lin: vec![Binder::new(dz.clone(), real)],
            rhs: Expr::LinScale(c, ds[0].clone()),
        });
        Ok(Expr::block(
            out,
            Expr::Ret {
                nl: vec![z],
                lin: vec![dz],
            },
        ))
    }
}

fn base(v: &Var) -> &str {
    v.as_str().split('.').next().unwrap_or("v")
}

fn fv_contains(e: &Expr, v: &Var) -> bool {
    free_vars(e).nl.contains(v)
}

/// Emits non-linear and linear bindings for primitive rules.
struct Builder<'a> {
    out: Vec<Stmt>,
    fresh: &'a mut Fresh,
    float: Float,
}

impl Builder<'_> {
    fn real(&self) -> Ty {
        Ty::Real(self.float)
    }
    fn nl(&mut self, hint: &str, rhs: Expr) -> Var {
        let v = self.fresh.var(hint);
        let ty = self.real();
        self.out.push(Stmt::Let {
            nl: vec![Binder::new(v.clone(), ty)],
            lin: vec![],
            rhs,
        });
        v
    }
    fn lin(&mut self, hint: &str, rhs: Expr) -> Var {
        let v = self.fresh.var(hint);
        let ty = self.real();
        self.out.push(Stmt::Let {
            nl: vec![],
            lin: vec![Binder::new(v.clone(), ty)],
            rhs,
        });
        v
    }
    fn prim(&mut self, prim: Prim, args: &[&Var]) -> Var {
        let hint = if prim == Prim::Neg { "n" } else { "c" };
        self.nl(
            hint,
            Expr::Prim {
                prim,
                args: args.iter().map(|v| (*v).clone()).collect(),
            },
        )
    }
    fn lit(&mut self, value: f64) -> Var {
        let float = self.float;
        self.nl("k", Expr::Lit { value, float })
    }
    fn scale(&mut self, s: &Var, d: Var) -> Var {
        self.lin("dz", Expr::LinScale(s.clone(), d))
    }
    fn add(&mut self, a: Var, b: Var) -> Var {
        self.lin("dz", Expr::LinAdd(a, b))
    }
    fn neg(&mut self, a: Var) -> Var {
        self.lin("dz", Expr::LinNeg(a))
    }
    fn zero(&mut self) -> Var {
        let ty = self.real();
        self.lin("dz", Expr::LinZero(ty))
    }
    fn drop(&mut self, d: Var) {
        self.out.push(Stmt::Let {
            nl: vec![],
            lin: vec![],
            rhs: Expr::Drop(Box::new(Expr::lin_var(d))),
        });
    }
}

/// The rule for one primitive: binds `z = prim(args)` and returns `z` and
/// its tangent built from the operand tangents `ds` (one per operand).
fn jvp_prim(b: &mut Builder, prim: Prim, args: &[Var], ds: &[Var]) -> (Var, Var) {
    let z = b.nl(
        "z",
        Expr::Prim {
            prim,
            args: args.to_vec(),
        },
    );
    let x = &args[0];
    let dx = ds[0].clone();
    let dz = match prim {
        Prim::Add => b.add(dx, ds[1].clone()),
        Prim::Sub => {
            let n = b.neg(ds[1].clone());
            b.add(dx, n)
        }
        Prim::Mul if ds.len() == 1 => {
            // A square: 2x ẋ, one scaling where JPrimMul would spend two and
            // a sum (the caller passes one tangent for the repeated operand).
            let c = b.prim(Prim::Add, &[x, x]);
            b.scale(&c, dx)
        }
        Prim::Mul => {
            // JPrimMul: x * ẏ + y * ẋ.
            let a = b.scale(x, ds[1].clone());
            let c = b.scale(&args[1], dx);
            b.add(a, c)
        }
        Prim::Div => {
            // d(x/y) = ẋ / y - (z / y) ẏ.
            let r = b.prim(Prim::Recip, &[&args[1]]);
            let a = b.scale(&r, dx);
            let q = b.prim(Prim::Mul, &[&z, &r]);
            let nq = b.prim(Prim::Neg, &[&q]);
            let c = b.scale(&nq, ds[1].clone());
            b.add(a, c)
        }
        Prim::Neg => b.neg(dx),
        Prim::Sin
        | Prim::Cos
        | Prim::Tan
        | Prim::Asin
        | Prim::Acos
        | Prim::Atan
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
        | Prim::Recip
        | Prim::Abs
        | Prim::Ln1p
        | Prim::ExpM1
        | Prim::Asinh
        | Prim::Acosh
        | Prim::Atanh => {
            // A unary function: its slope at x times the tangent.
            match slope(b, prim, x, &z) {
                Some(c) => b.scale(&c, dx),
                None => {
                    b.drop(dx);
                    b.zero()
                }
            }
        }
        Prim::Atan2 => {
            // atan2(y, x): (x ẏ - y ẋ) / (x² + y²), with args = [y, x].
            let (y, xx) = (&args[0], &args[1]);
            let u = b.prim(Prim::Mul, &[y, y]);
            let v = b.prim(Prim::Mul, &[xx, xx]);
            let w = b.prim(Prim::Add, &[&u, &v]);
            let r = b.prim(Prim::Recip, &[&w]);
            let cy = b.prim(Prim::Mul, &[xx, &r]);
            let py = b.prim(Prim::Mul, &[y, &r]);
            let cx = b.prim(Prim::Neg, &[&py]);
            let a = b.scale(&cy, dx);
            let c = b.scale(&cx, ds[1].clone());
            b.add(a, c)
        }
        Prim::Powi(0) => {
            b.drop(dx);
            b.zero()
        }
        Prim::Powi(n) => {
            // n x^(n-1).
            let p = b.prim(Prim::Powi(n - 1), &[x]);
            let k = b.lit(f64::from(n));
            let c = b.prim(Prim::Mul, &[&k, &p]);
            b.scale(&c, dx)
        }
        Prim::Powf => {
            // y x^(y-1) ẋ + z ln(x) ẏ.
            let y = &args[1];
            let one = b.lit(1.0);
            let ym1 = b.prim(Prim::Sub, &[y, &one]);
            let p = b.prim(Prim::Powf, &[x, &ym1]);
            let cx = b.prim(Prim::Mul, &[y, &p]);
            let l = b.prim(Prim::Ln, &[x]);
            let cy = b.prim(Prim::Mul, &[&z, &l]);
            let a = b.scale(&cx, dx);
            let c = b.scale(&cy, ds[1].clone());
            b.add(a, c)
        }
        Prim::Hypot => {
            let r = b.prim(Prim::Recip, &[&z]);
            let cx = b.prim(Prim::Mul, &[x, &r]);
            let cy = b.prim(Prim::Mul, &[&args[1], &r]);
            let a = b.scale(&cx, dx);
            let c = b.scale(&cy, ds[1].clone());
            b.add(a, c)
        }
        Prim::Min | Prim::Max => {
            // The tangent of the selected operand: m = [x selected].
            let m = if prim == Prim::Min {
                b.prim(Prim::Le, &[x, &args[1]])
            } else {
                b.prim(Prim::Le, &[&args[1], x])
            };
            let one = b.lit(1.0);
            let n = b.prim(Prim::Sub, &[&one, &m]);
            let a = b.scale(&m, dx);
            let c = b.scale(&n, ds[1].clone());
            b.add(a, c)
        }
        Prim::Signum | Prim::Floor | Prim::Ceil | Prim::Round | Prim::Trunc => {
            b.drop(dx);
            b.zero()
        }
        Prim::Copysign => {
            // signum(x)·signum(s) in x; constant in s.
            let sx = b.prim(Prim::Signum, &[x]);
            let ss = b.prim(Prim::Signum, &[&args[1]]);
            let c = b.prim(Prim::Mul, &[&sx, &ss]);
            b.drop(ds[1].clone());
            b.scale(&c, dx)
        }
        Prim::Rem | Prim::RemEuclid => {
            // z = x - q·y: ẋ - q·ẏ. The quotient q, an integer, comes back
            // from the result: (x - z) / y is q up to one rounding, and
            // rounding to the nearest integer removes it, where x / y
            // truncated could be off by one near a multiple of y.
            let d = b.prim(Prim::Sub, &[x, &z]);
            let q = b.prim(Prim::Div, &[&d, &args[1]]);
            let q = b.prim(Prim::Round, &[&q]);
            let c = b.prim(Prim::Neg, &[&q]);
            let a = b.scale(&c, ds[1].clone());
            b.add(dx, a)
        }
        Prim::Le => {
            b.drop(dx);
            b.drop(ds[1].clone());
            b.zero()
        }
        // Handled before reaching here (their results are not reals of the
        // operands' type); the same piecewise-constant rule.
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
        | Prim::PowiN => {
            for d in ds {
                b.drop(d.clone());
            }
            b.zero()
        }
    };
    (z, dz)
}

/// The derivative at `x` of a smooth unary primitive with value `z`
/// there (the coefficient its JVP scales the tangent by); `None` for the
/// others, whose rules are in [`jvp_prim`].
fn slope(b: &mut Builder, prim: Prim, x: &Var, z: &Var) -> Option<Var> {
    use std::f64::consts::{LN_10, LN_2};
    match prim {
        Prim::Sin => Some(b.prim(Prim::Cos, &[x])),
        Prim::Cos => {
            let s = b.prim(Prim::Sin, &[x]);
            Some(b.prim(Prim::Neg, &[&s]))
        }
        Prim::Tan => {
            // 1 + tan².
            let t = b.prim(Prim::Mul, &[z, z]);
            let one = b.lit(1.0);
            Some(b.prim(Prim::Add, &[&one, &t]))
        }
        Prim::Asin | Prim::Acos => {
            // ±1 / sqrt(1 - x²).
            let t = b.prim(Prim::Mul, &[x, x]);
            let one = b.lit(1.0);
            let u = b.prim(Prim::Sub, &[&one, &t]);
            let s = b.prim(Prim::Sqrt, &[&u]);
            let mut c = b.prim(Prim::Recip, &[&s]);
            if prim == Prim::Acos {
                c = b.prim(Prim::Neg, &[&c]);
            }
            Some(c)
        }
        Prim::Atan => {
            let t = b.prim(Prim::Mul, &[x, x]);
            let one = b.lit(1.0);
            let u = b.prim(Prim::Add, &[&one, &t]);
            Some(b.prim(Prim::Recip, &[&u]))
        }
        Prim::Sinh => Some(b.prim(Prim::Cosh, &[x])),
        Prim::Cosh => Some(b.prim(Prim::Sinh, &[x])),
        Prim::Tanh => {
            let t = b.prim(Prim::Mul, &[z, z]);
            let one = b.lit(1.0);
            Some(b.prim(Prim::Sub, &[&one, &t]))
        }
        Prim::Exp => Some(z.clone()),
        Prim::Exp2 => {
            let l = b.lit(LN_2);
            Some(b.prim(Prim::Mul, &[z, &l]))
        }
        Prim::Ln => Some(b.prim(Prim::Recip, &[x])),
        Prim::Log2 | Prim::Log10 => {
            let l = b.lit(if prim == Prim::Log2 { LN_2 } else { LN_10 });
            let u = b.prim(Prim::Mul, &[x, &l]);
            Some(b.prim(Prim::Recip, &[&u]))
        }
        Prim::Sqrt => {
            // 1 / (2 sqrt x), as 0.5 · (1 / sqrt x): the same value to the
            // last bit (doubling and halving are exact), and the reciprocal
            // is the one a division by the root computes (`f / sqrt(g)`),
            // which the optimiser then computes once.
            let r = b.prim(Prim::Recip, &[z]);
            let half = b.lit(0.5);
            Some(b.prim(Prim::Mul, &[&half, &r]))
        }
        Prim::Cbrt => {
            // 1 / (3 cbrt(x)²).
            let t = b.prim(Prim::Mul, &[z, z]);
            let three = b.lit(3.0);
            let u = b.prim(Prim::Mul, &[&three, &t]);
            Some(b.prim(Prim::Recip, &[&u]))
        }
        Prim::Recip => {
            let t = b.prim(Prim::Mul, &[z, z]);
            Some(b.prim(Prim::Neg, &[&t]))
        }
        Prim::Abs => Some(b.prim(Prim::Signum, &[x])),
        Prim::Ln1p => {
            // 1 / (1 + x).
            let one = b.lit(1.0);
            let u = b.prim(Prim::Add, &[&one, x]);
            Some(b.prim(Prim::Recip, &[&u]))
        }
        Prim::ExpM1 => {
            // exp(x) = z + 1.
            let one = b.lit(1.0);
            Some(b.prim(Prim::Add, &[z, &one]))
        }
        Prim::Asinh | Prim::Acosh => {
            // 1 / sqrt(x² ± 1).
            let t = b.prim(Prim::Mul, &[x, x]);
            let one = b.lit(1.0);
            let op = if prim == Prim::Asinh {
                Prim::Add
            } else {
                Prim::Sub
            };
            let u = b.prim(op, &[&t, &one]);
            let s = b.prim(Prim::Sqrt, &[&u]);
            Some(b.prim(Prim::Recip, &[&s]))
        }
        Prim::Atanh => {
            // 1 / (1 - x²).
            let t = b.prim(Prim::Mul, &[x, x]);
            let one = b.lit(1.0);
            let u = b.prim(Prim::Sub, &[&one, &t]);
            Some(b.prim(Prim::Recip, &[&u]))
        }
        Prim::Add
        | Prim::Sub
        | Prim::Mul
        | Prim::Div
        | Prim::Neg
        | Prim::Atan2
        | Prim::Powi(_)
        | Prim::Powf
        | Prim::Hypot
        | Prim::Min
        | Prim::Max
        | Prim::Signum
        | Prim::Le
        | Prim::Floor
        | Prim::Ceil
        | Prim::Round
        | Prim::Trunc
        | Prim::Copysign
        | Prim::Rem
        | Prim::RemEuclid
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
        | Prim::PowiN => None,
    }
}
