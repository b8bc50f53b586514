//! The type checker of Linear A (paper, Fig. 3) and the Linear B
//! restriction (Def. 6.1).
//!
//! Invariants checked, each reported with the function and variable at
//! fault:
//!
//! 1. Every function calls only functions defined before it (no recursion),
//!    with the right number and types of non-linear and linear arguments.
//!    An extern (another Rust function's generated code) is declared once,
//!    and its linear parameters and results are vectors or linear arrays
//!    (a callee's `Vec` result), never tapes.
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
//! 6. Integer, boolean, sum and list values are non-linear only. Each
//!    primitive gets operands of its kinds ([`crate::ir::Prim::kinds`]):
//!    integer arithmetic on integers, comparisons on two reals of one float
//!    type or two integers, boolean operators on booleans, conversions
//!    between integers and reals.
//! 7. A case scrutinises a `bool` (two arms, binding nothing) or a
//!    `sum(τ..)` (one arm per alternative, binding a value of its type);
//!    all arms return the same types and consume the same linear variables
//!    (the error names the variable and the arm). An injection names a
//!    sum type, an alternative of it and a value of that alternative's type.
//! 8. A loop's range bounds and step are integers and its index an
//!    integer (a declared trip count, `range(lo, hi; n)`, depends on
//!    values: the interpreter checks it); a list loop's element has the
//!    list's element type, whatever the list's declared length; a
//!    zipped loop is both (that the list has one element per index
//!    depends on values: the interpreter checks it); a
//!    `while` condition returns one bool and reads no linear variable; a
//!    replay starts from a value of its state's type, counts with an int,
//!    keeps at least one snapshot, and its `next`, which sees the state
//!    but not the carried values, returns one state and reads no linear
//!    variable. The
//!    initial values have the carried types; the body returns the next
//!    state (non-linear, then the collected values, then linear) and reads
//!    no linear variable from outside the loop (outer linear values are
//!    carried instead).
//!
//! 11. Arrays. `index(a, i)` and `len(a)` read a non-linear array with an
//!     integer index. A linear variable may have an array type only if
//!     the elements are vectors (`array(f64)`, `array((f64, f64); 3)`):
//!     a *linear array*. It is consumed at most once, like any linear
//!     value, but `lindex(ȧ, i)` reads it in place without consuming it,
//!     any number of times, anywhere in its scope (in loop bodies and
//!     case arms too) until it is consumed; reading it after that is an
//!     error. A non-linear array may go unread (discarding it touches no
//!     element, and the cost model charges elements touched). Only a
//!     linear parameter may be left unconsumed (borrowed):
//!     T gives its transpose an accumulator for it. A linear array is never
//!     duplicated, dropped, added, negated, scaled, put in a tuple or
//!     zeroed (there is no `zero(array(..))`): its cotangent is a buffer
//!     created once by the caller and threaded through the transposed code
//!     by `laccum(ā, i, v̇)`, which consumes `ā` and `v̇` and returns the
//!     buffer with `v̇` added at `i`. Reading in place is the non-linear
//!     part of fan-out: `k` reads of one array transpose to `k`
//!     accumulations into one buffer, where a `dup` per read would
//!     transpose to `k` additions of whole arrays. In the sense the paper
//!     needs (Thm 7.1: every linear value's cotangent is the sum of the
//!     cotangents of its uses) each `lindex` is a use, and T sums their
//!     cotangents in place.
//!
//!     Local arrays. `fill(n, v)` makes an array of `n` copies of `v`
//!     (`n` an int); `set(a, i, v)` writes element `i`, consuming `a`:
//!     nothing reads `a` after it (a case's arms each may), and `a` is
//!     bound in the innermost loop body or is its carried state, so
//!     generated Rust stores in place. Their linear counterparts are
//!     `lzeros(τ, n)`, a buffer of zeros (the one way to create a linear
//!     array); `lset(ȧ, i, v̇)`, consuming both; and `lfree(ȧ, n)`, which
//!     consumes a buffer of length `n`. `lzeros` and `lfree` are each
//!     other's transposes; `lset`'s transpose reads the cotangent at `i`
//!     and writes a zero there.
//!
//!     Growing arrays. `push(a, v)` appends `v` to an array of run-time
//!     length (`array(τ)`), consuming `a` as `set` does; `pop(a)` returns
//!     `a` without its last element and that element (L's form of
//!     `lpop`). Their linear counterparts `lpush(ȧ, v̇)` (consuming both)
//!     and `lpop(ā)` (two linear results) are each other's transposes.
//!
//!     Calls. An extern's borrowed linear parameters (`borrow τ̇`, the
//!     tangents of the arrays another differentiable function is passed)
//!     are read in place as `lindex` reads, not consumed, and so are a
//!     function's linear array parameters its body does not consume
//!     ([`crate::visit::borrowed_params`]); a call lends an array once (a
//!     second lending would need a second accumulator in the transpose),
//!     and the transposed call takes its accumulator and returns it (see
//!     [`crate::ir::Extern`]).
//!
//!     Data. An array bound to a Rust constant (`let d: array(f64) =
//!     const(..)`, a `#[nondiff]` slice) is an ordinary non-linear array
//!     here; the passes read the binding as data
//!     ([`crate::visit::is_data`]): J gives it no tangent, and U reads it
//!     again in the residual, as it does an array parameter, instead of
//!     saving its elements.
//!
//! 12. A loop marked `zeroskip` ([`crate::ir::Loop::zero_skip`]) collects
//!     nothing, is not a `while` loop, and carries reals and arrays only,
//!     at least one real: skipping it leaves its state as it came in,
//!     which is right only if that state is the loop's result whenever
//!     the reals are zero. The checker cannot see that a body only
//!     accumulates into its arrays and is linear in its reals; T marks
//!     the loops for which it holds by construction (the reverse of a
//!     loop carrying linear reals), J keeps the mark (the loop's JVP is
//!     linear in the reals and their tangents together), L, inlining and
//!     the simplifier keep it, and U drops it (a forward loop skipped
//!     would leave its residual's records out).
//!
//! With [`Mode::LinearB`] two more (Def. 6.1):
//!
//! 9. No function and no expression returns both non-linear and linear
//!    results.
//! 10. An expression with a non-linear result reads no linear variable, not
//!     even to drop it (an in-place `lindex` read included).
//!
//! The checker is total and never panics; passes call it on their output in
//! debug builds and in tests.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::fmt;

use crate::ir::{
    Arm, Binder, Expr, Extern, Float, Func, Iter, Kind, Loop, Prim, Program, Sig, Stmt, Ty, Var,
};
use crate::visit::{binder_count, free_vars};

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
            .any(|t| !t.can_be_linear());
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
            vars: HashMap::default(),
            lin_reads: 0,
            written: HashSet::default(),
            loops: 0,
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
    /// Every variable bound so far in this function. One map, not one
    /// per property: a binding is then one insertion, which in an
    /// unoptimised macro costs about 2,000 instructions.
    vars: HashMap<Var, Slot>,
    /// Count of linear reads so far: an expression read a linear variable
    /// iff the count moved while checking it.
    lin_reads: usize,
    /// Non-linear arrays consumed by `set`: written in place, so nothing
    /// reads them again (invariant 11).
    written: HashSet<Var>,
    /// The current loop nesting depth.
    loops: usize,
}

/// What the checker knows of one bound variable.
struct Slot {
    ty: Ty,
    linear: bool,
    /// Whether the block that binds it is still being checked.
    in_scope: bool,
    uses: usize,
    /// The loop nesting depth at which it was bound: `set` writes only
    /// arrays bound in the innermost loop body (or carried state), never
    /// one a later iteration would read again.
    depth: usize,
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
        Ty::Int | Ty::Bool | Ty::Sum(_) | Ty::List(..) | Ty::Array(..) | Ty::Tape(_) => false,
    }
}

type Uses = Vec<(Var, usize)>;

/// Non-linear and linear result types of an expression.
type Results = (Vec<Ty>, Vec<Ty>);

fn show(ts: &[Ty]) -> String {
    let v: Vec<String> = ts.iter().map(|t| t.to_string()).collect();
    v.join(", ")
}

impl Checker<'_> {
    /// A callee defined before this function, or an extern.
    fn sig(&self, func: &Var) -> Option<Sig> {
        if let Some(f) = self.sigs.get(func) {
            return Some(Sig {
                borrowed: self.borrowed(func),
                ..f.sig()
            });
        }
        self.externs.iter().find(|e| &e.name == func).map(|e| Sig {
            nl_params: e.nl_params.clone(),
            lin_params: e.lin_params.clone(),
            nl_rets: e.nl_rets.clone(),
            lin_rets: e.lin_rets.clone(),
            borrowed: e.borrowed.clone(),
        })
    }

    /// The linear parameters callee `func` borrows (a function defined
    /// before this one, or an extern).
    fn borrowed(&self, func: &Var) -> Vec<usize> {
        match (
            self.sigs.get(func),
            self.externs.iter().find(|e| &e.name == func),
        ) {
            (Some(f), _) => crate::visit::borrowed_params(f, &|g| self.borrowed(g)),
            (None, Some(e)) => e.borrowed.clone(),
            (None, None) => Vec::new(),
        }
    }

    fn bind(&mut self, b: &Binder, linear: bool) -> Res<()> {
        if linear && !b.ty.can_be_linear() {
            return Err(format!(
                "linear variable `{}` has type {}, which has no zero, sum or scaling and is not an array of such values",
                b.var, b.ty
            ));
        }
        let slot = Slot {
            ty: b.ty.clone(),
            linear,
            in_scope: true,
            uses: 0,
            depth: self.loops,
        };
        if self.vars.insert(b.var.clone(), slot).is_some() {
            return Err(format!(
                "variable `{}` is bound twice; bindings must be unique within a function",
                b.var
            ));
        }
        Ok(())
    }

    /// The slot of `v` if it is in scope.
    fn in_scope(&self, v: &Var) -> Option<&Slot> {
        self.vars.get(v).filter(|s| s.in_scope)
    }

    fn uses_of(&self, v: &Var) -> usize {
        self.vars.get(v).map_or(0, |s| s.uses)
    }

    /// Leaves the scope of `bs`, checking how often each was used.
    fn unbind(&mut self, bs: &[(Var, bool)]) -> Res<()> {
        self.unbind_as(bs, false)
    }

    /// [`Checker::unbind`]; `params` if `bs` are a function's parameters,
    /// which may leave a linear array unconsumed (invariant 11).
    fn unbind_as(&mut self, bs: &[(Var, bool)], params: bool) -> Res<()> {
        for (v, linear) in bs {
            let (array, n) = match self.vars.get_mut(v) {
                Some(s) => {
                    s.in_scope = false;
                    (matches!(s.ty, Ty::Array(..)), s.uses)
                }
                None => (false, 0),
            };
            let borrowed = params && array;
            if *linear && borrowed && n <= 1 {
                continue;
            }
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
            // An array may go unread: discarding it touches no element,
            // which is all the cost model charges (invariant 11).
            if !*linear && n == 0 && !array {
                return Err(format!(
                    "non-linear variable `{v}` is never used; every non-linear variable is used at least once (use `drop` to discard it)"
                ));
            }
        }
        Ok(())
    }

    fn use_var(&mut self, v: &Var, linear: bool) -> Res<Ty> {
        let Some((ty, is_lin)) = self.in_scope(v).map(|s| (s.ty.clone(), s.linear)) else {
            return Err(if self.vars.contains_key(v) {
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
        if self.written.contains(v) {
            return Err(format!(
                "array `{v}` is read after `set` wrote it in place; read the array `set` returns"
            ));
        }
        if linear {
            self.lin_reads += 1;
        }
        if let Some(s) = self.vars.get_mut(v) {
            s.uses += 1;
        }
        Ok(ty)
    }

    /// A linear variable that is not a linear array (invariant 11), for
    /// the operations of vector spaces.
    fn vector(&mut self, v: &Var, what: &str) -> Res<Ty> {
        let t = self.use_var(v, true)?;
        if t.is_linear_array() {
            return Err(format!(
                "{what} of linear array `{v}: {t}`; a linear array is only read in place (`lindex`) and accumulated into (`laccum`)"
            ));
        }
        Ok(t)
    }

    /// The non-linear integer index `i` of an array operation.
    fn index(&mut self, i: &Var) -> Res<()> {
        match self.use_var(i, false)? {
            Ty::Int => Ok(()),
            t => Err(format!("array index `{i}` has type {t}, not int")),
        }
    }

    /// Invariant 11 for `lindex(ȧ, i)`: a read in place of a linear array
    /// not consumed yet; it counts as a linear read (Def. 6.1), not a use.
    fn read_in_place(&mut self, a: &Var) -> Res<Ty> {
        let Some((t, true)) = self.in_scope(a).map(|s| (s.ty.clone(), s.linear)) else {
            return Err(format!(
                "`lindex` reads `{a}`, which is not a linear array in scope"
            ));
        };
        let Ty::Array(elem, _) = &t else {
            return Err(format!("`lindex` reads `{a}: {t}`, which is not an array"));
        };
        if self.uses_of(a) > 0 {
            return Err(format!(
                "linear array `{a}` is read after it was consumed; in-place reads come before the array is consumed"
            ));
        }
        self.lin_reads += 1;
        Ok((**elem).clone())
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
        // Sized once (see `visit::binder_count`).
        self.vars
            .reserve(f.nl_params.len() + f.lin_params.len() + binder_count(&f.body));
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
        self.unbind_as(&params, true)
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
                        // A borrowed array is read in place, as `lindex`
                        // reads it (invariant 11).
                        let t = if linear && callee.borrowed.contains(&k) {
                            let again = callee.borrowed.iter().any(|&j| j < k && args[j] == *a);
                            if again {
                                return Err(format!("linear array `{a}` is lent twice to `{func}`; a call borrows an array once"));
                            }
                            self.read_in_place(a)?;
                            self.in_scope(a).map(|s| s.ty.clone()).unwrap_or(Ty::Int)
                        } else {
                            self.use_var(a, linear)?
                        };
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
            Expr::Const { ty, args, .. } => {
                for a in args {
                    self.use_var(a, false)?;
                }
                Ok((vec![ty.clone()], vec![]))
            }
            Expr::Tup(vs) => {
                let ts = vs
                    .iter()
                    .map(|v| self.use_var(v, false))
                    .collect::<Res<Vec<_>>>()?;
                Ok((vec![Ty::Tuple(ts)], vec![]))
            }
            Expr::Prim { prim, args } => Ok((vec![self.prim(*prim, args)?], vec![])),
            Expr::Int(_) => Ok((vec![Ty::Int], vec![])),
            Expr::Bool(_) => Ok((vec![Ty::Bool], vec![])),
            Expr::Inj { sum, tag, val } => {
                let t = self.use_var(val, false)?;
                match sum {
                    Ty::Sum(ts) if ts.get(*tag) == Some(&t) => Ok((vec![sum.clone()], vec![])),
                    _ => Err(format!(
                        "injecting `{val}: {t}` as alternative {tag} of {sum}, which is not a sum with such an alternative"
                    )),
                }
            }
            Expr::Case { scrut, arms } => self.case(scrut, arms),
            Expr::Loop(l) => self.loop_(l),
            Expr::LinZero(t) => {
                if !t.is_vector() {
                    return Err(format!(
                        "zero of type {t}, which has none (a linear array's zero is a buffer its caller creates)"
                    ));
                }
                Ok((vec![], vec![t.clone()]))
            }
            Expr::LinTup(vs) => {
                let ts = vs
                    .iter()
                    .map(|v| self.vector(v, "a tuple"))
                    .collect::<Res<Vec<_>>>()?;
                Ok((vec![], vec![Ty::Tuple(ts)]))
            }
            Expr::LinAdd(a, b) => {
                let ta = self.vector(a, "addition")?;
                let tb = self.vector(b, "addition")?;
                if ta != tb {
                    return Err(format!(
                        "linear addition of `{a}: {ta}` and `{b}: {tb}`, which differ in type"
                    ));
                }
                Ok((vec![], vec![ta]))
            }
            Expr::LinNeg(a) => Ok((vec![], vec![self.vector(a, "negation")?])),
            Expr::LinScale(s, a) => {
                let f = self.scalar(s, "the scaling factor of `*`")?;
                let t = self.vector(a, "scaling")?;
                if !all_float(&t, f) {
                    return Err(format!(
                        "scaling `{a}: {t}` by `{s}: {}` mixes float types",
                        f.name()
                    ));
                }
                Ok((vec![], vec![t]))
            }
            Expr::Dup(a) => {
                let t = self.vector(a, "`dup`")?;
                Ok((vec![], vec![t.clone(), t]))
            }
            Expr::Drop(e) => {
                self.not_dropping_arrays(e)?;
                self.expr(e)?;
                Ok((vec![], vec![]))
            }
            Expr::Index { arr, idx } => self.array_read(arr, idx),
            Expr::Len(arr) => match self.use_var(arr, false)? {
                Ty::Array(..) => Ok((vec![Ty::Int], vec![])),
                t => Err(format!("`len` of `{arr}: {t}`, which is not an array")),
            },
            Expr::LinIndex { arr, idx } => {
                let elem = self.read_in_place(arr)?;
                self.index(idx)?;
                Ok((vec![], vec![elem]))
            }
            Expr::LinAccum { arr, idx, val } => self.accumulation(arr, idx, val),
            Expr::Fill { len, val, size } => {
                self.index(len)?;
                let t = self.use_var(val, false)?;
                Ok((vec![Ty::Array(Box::new(t), *size)], vec![]))
            }
            Expr::Set { arr, idx, val } => self.write(arr, idx, val),
            Expr::LinZeros { ty, len } => {
                self.index(len)?;
                if !ty.is_linear_array() {
                    return Err(format!(
                        "`lzeros` of type {ty}, which is not a linear array type"
                    ));
                }
                Ok((vec![], vec![ty.clone()]))
            }
            Expr::LinSet { arr, idx, val } => {
                let t = self.use_var(arr, true)?;
                self.index(idx)?;
                let tv = self.vector(val, "`lset`'s value")?;
                match &t {
                    Ty::Array(elem, _) if **elem == tv => Ok((vec![], vec![t])),
                    _ => Err(format!(
                        "`lset` writes `{val}: {tv}` into `{arr}: {t}`, which is not an array of {tv}"
                    )),
                }
            }
            Expr::LinFree { arr, len } => {
                let t = self.use_var(arr, true)?;
                self.index(len)?;
                if !t.is_linear_array() {
                    return Err(format!(
                        "`lfree` of `{arr}: {t}`, which is not a linear array"
                    ));
                }
                Ok((vec![], vec![]))
            }
            Expr::Push { arr, val } => {
                let t = self.use_var(arr, false)?;
                let tv = self.use_var(val, false)?;
                if !matches!(&t, Ty::Array(elem, None) if **elem == tv) {
                    return Err(format!("`push` appends `{val}: {tv}` to `{arr}: {t}`, which is not an array of {tv} of run-time length"));
                }
                self.in_place(arr, "push")?;
                Ok((vec![t], vec![]))
            }
            Expr::Pop { arr } => {
                let t = self.use_var(arr, false)?;
                let Ty::Array(elem, None) = &t else {
                    return Err(format!(
                        "`pop` of `{arr}: {t}`, which is not an array of run-time length"
                    ));
                };
                let elem = (**elem).clone();
                self.in_place(arr, "pop")?;
                Ok((vec![t, elem], vec![]))
            }
            Expr::LinPush { arr, val } => {
                let t = self.use_var(arr, true)?;
                let tv = self.vector(val, "`lpush`'s value")?;
                match &t {
                    Ty::Array(elem, None) if **elem == tv => Ok((vec![], vec![t])),
                    _ => Err(format!("`lpush` appends `{val}: {tv}` to `{arr}: {t}`, which is not an array of {tv} of run-time length")),
                }
            }
            Expr::LinPop { arr } => {
                let t = self.use_var(arr, true)?;
                match &t {
                    Ty::Array(elem, None) if t.is_linear_array() => {
                        let elem = (**elem).clone();
                        Ok((vec![], vec![t, elem]))
                    }
                    _ => Err(format!(
                        "`lpop` of `{arr}: {t}`, which is not a linear array of run-time length"
                    )),
                }
            }
        }
    }

    /// Invariant 11 for the writes in place (`set`, `push`, `pop`): the
    /// array is bound in the innermost loop body (or carried by it), and
    /// nothing reads it afterwards.
    fn in_place(&mut self, arr: &Var, what: &str) -> Res<()> {
        if self.vars.get(arr).map_or(0, |s| s.depth) < self.loops {
            return Err(format!(
                "`{what}` writes `{arr}`, which is bound outside the loop; carry it as loop state"
            ));
        }
        self.written.insert(arr.clone());
        Ok(())
    }

    /// Invariant 11 for `set(a, i, v)`: `a` is an array of `v`'s type,
    /// bound in the innermost loop body, and nothing reads it afterwards.
    fn write(&mut self, arr: &Var, idx: &Var, val: &Var) -> Res<Results> {
        let t = self.use_var(arr, false)?;
        self.index(idx)?;
        let tv = self.use_var(val, false)?;
        if !matches!(&t, Ty::Array(elem, _) if **elem == tv) {
            return Err(format!(
                "`set` writes `{val}: {tv}` into `{arr}: {t}`, which is not an array of {tv}"
            ));
        }
        self.in_place(arr, "set")?;
        Ok((vec![t], vec![]))
    }

    /// Invariant 11: `drop(e)` consumes no linear array.
    fn not_dropping_arrays(&self, e: &Expr) -> Res<()> {
        let mut arrays = Vec::new();
        let borrowed = |g: &Var| self.sig(g).map(|s| s.borrowed).unwrap_or_default();
        crate::visit::for_each_consumed_in(e, &borrowed, &mut |v| {
            if self
                .in_scope(v)
                .is_some_and(|s| s.linear && s.ty.is_linear_array())
            {
                arrays.push(v.clone());
            }
        });
        match arrays.first() {
            Some(v) => Err(format!(
                "`drop` consumes linear array `{v}`; a linear array is never dropped (its cotangent is a buffer only its caller can create)"
            )),
            None => Ok(()),
        }
    }

    /// Invariant 11 for `index(a, i)`.
    fn array_read(&mut self, arr: &Var, idx: &Var) -> Res<Results> {
        let t = self.use_var(arr, false)?;
        self.index(idx)?;
        match t {
            Ty::Array(elem, _) => Ok((vec![*elem], vec![])),
            t => Err(format!("`index` reads `{arr}: {t}`, which is not an array")),
        }
    }

    /// Invariant 11 for `laccum(ā, i, v̇)`.
    fn accumulation(&mut self, arr: &Var, idx: &Var, val: &Var) -> Res<Results> {
        let t = self.use_var(arr, true)?;
        self.index(idx)?;
        let tv = self.vector(val, "`laccum`'s value")?;
        match &t {
            Ty::Array(elem, _) if **elem == tv => Ok((vec![], vec![t])),
            _ => Err(format!(
                "`laccum` adds `{val}: {tv}` into `{arr}: {t}`, which is not an array of {tv}"
            )),
        }
    }

    fn prim(&mut self, prim: Prim, args: &[Var]) -> Res<Ty> {
        let name = prim.name();
        if args.len() != prim.arity() {
            return Err(format!(
                "`{name}` takes {} operand(s), given {}",
                prim.arity(),
                args.len()
            ));
        }
        let mut tys = Vec::new();
        for a in args {
            tys.push(self.use_var(a, false)?);
        }
        let (operands, _) = prim.kinds();
        let float = tys.first().and_then(Ty::float);
        let ints = tys.iter().all(|t| *t == Ty::Int);
        for (k, (a, t)) in args.iter().zip(&tys).enumerate() {
            let fits = match operands {
                Kind::RealInt if k == 0 => t.float().is_some(),
                Kind::RealInt => *t == Ty::Int,
                Kind::Real => t.float().is_some(),
                Kind::Int => *t == Ty::Int,
                Kind::Bool => *t == Ty::Bool,
                Kind::Ordered => t.float().is_some() || (*t == Ty::Int && ints),
                Kind::RealOf(_) => false,
            };
            if !fits {
                let want = match operands {
                    Kind::Real | Kind::RealOf(_) => "a real scalar",
                    Kind::RealInt if k == 0 => "a real scalar",
                    Kind::RealInt => "an integer",
                    Kind::Int => "an integer",
                    Kind::Bool => "a bool",
                    Kind::Ordered => "two reals or two integers",
                };
                return Err(format!("`{name}` takes {want}, but `{a}` has type {t}"));
            }
            if t.float().is_some() && t.float() != float {
                return Err(format!("`{name}` mixes f32 and f64 operands (`{a}`)"));
            }
        }
        Ok(prim.result_ty(tys.first()))
    }

    /// The use counts of the linear variables in scope.
    fn linear_uses(&self) -> Uses {
        let mut u: Uses = self
            .vars
            .iter()
            .filter(|(_, s)| s.in_scope && s.linear)
            .map(|(v, s)| (v.clone(), s.uses))
            .collect();
        u.sort();
        u
    }

    fn restore_uses(&mut self, u: &Uses) {
        for (v, n) in u {
            if let Some(s) = self.vars.get_mut(v) {
                s.uses = *n;
            }
        }
    }

    /// Invariant 7.
    fn case(&mut self, scrut: &Var, arms: &[Arm]) -> Res<(Vec<Ty>, Vec<Ty>)> {
        let t = self.use_var(scrut, false)?;
        let binds: Vec<Option<Ty>> = match &t {
            Ty::Bool => vec![None, None],
            Ty::Sum(ts) => ts.iter().cloned().map(Some).collect(),
            other => {
                return Err(format!(
                    "case on `{scrut}: {other}`, which is neither a bool nor a sum"
                ))
            }
        };
        if binds.len() != arms.len() {
            return Err(format!(
                "case on `{scrut}: {t}` has {} arms where {} are needed",
                arms.len(),
                binds.len()
            ));
        }
        let before = self.linear_uses();
        let written = self.written.clone();
        let mut all_written = written.clone();
        let mut first: Option<(Results, Uses)> = None;
        for (k, (arm, want)) in arms.iter().zip(binds).enumerate() {
            self.restore_uses(&before);
            all_written.extend(std::mem::replace(&mut self.written, written.clone()));
            let mut scope = Vec::new();
            match (&arm.bind, want) {
                (None, None) => {}
                (Some(b), Some(w)) if b.ty == w => {
                    self.bind(b, false)?;
                    scope.push((b.var.clone(), false));
                }
                (b, w) => {
                    return Err(format!(
                        "arm {} of the case on `{scrut}` binds {} where the scrutinee's alternative is {}",
                        k + 1,
                        b.as_ref().map_or("nothing".to_string(), |b| b.ty.to_string()),
                        w.map_or("nothing".to_string(), |w| w.to_string())
                    ))
                }
            }
            let out = self.expr(&arm.body)?;
            self.unbind(&scope)?;
            let after = self.linear_uses();
            match &first {
                None => first = Some((out, after)),
                Some((out0, after0)) => {
                    if &out != out0 {
                        return Err(format!(
                            "arm {} of the case on `{scrut}` returns ({}; {}) but arm 1 returns ({}; {})",
                            k + 1,
                            show(&out.0),
                            show(&out.1),
                            show(&out0.0),
                            show(&out0.1)
                        ));
                    }
                    if let Some(((v, n0), (_, n))) =
                        after0.iter().zip(&after).find(|(a, b)| a.1 != b.1)
                    {
                        let (used, unused) = if n0 > n { (1, k + 1) } else { (k + 1, 1) };
                        return Err(format!(
                            "linear variable `{v}` is consumed in arm {used} but not in arm {unused} of the case on `{scrut}`; every arm must consume the same linear variables (use `drop` in the other arm)"
                        ));
                    }
                }
            }
        }
        let Some((out, after)) = first else {
            return Err(format!("case on `{scrut}` has no arms"));
        };
        all_written.extend(std::mem::take(&mut self.written));
        self.written = all_written;
        self.restore_uses(&after);
        Ok(out)
    }

    /// Invariant 8 for a loop header's values read outside the body.
    fn loop_header(&mut self, iter: &Iter) -> Res<()> {
        match iter {
            Iter::Range {
                index,
                lo,
                hi,
                step,
                ..
            } => self.range(index, [lo, hi].into_iter().chain(step))?,
            Iter::Each { elem, list, .. } => self.list(elem, list)?,
            Iter::Zip {
                index,
                lo,
                hi,
                step,
                elem,
                list,
                ..
            } => {
                self.range(index, [lo, hi].into_iter().chain(step))?;
                self.list(elem, list)?;
            }
            Iter::While { .. } => {}
            Iter::Replay {
                state,
                init,
                count,
                snapshots,
                ..
            } => {
                let t = self.use_var(init, false)?;
                if t != state.ty {
                    return Err(format!(
                        "replay of `{}: {}` starts from `{init}: {t}`",
                        state.var, state.ty
                    ));
                }
                let t = self.use_var(count, false)?;
                if t != Ty::Int {
                    return Err(format!("replay count `{count}` has type {t}, not int"));
                }
                if *snapshots == 0 {
                    return Err("a replay keeps at least one snapshot (its initial state)".into());
                }
            }
        }
        Ok(())
    }

    /// A range header: int bounds and step, an int index.
    fn range<'v>(&mut self, index: &Binder, bounds: impl Iterator<Item = &'v Var>) -> Res<()> {
        for v in bounds {
            let t = self.use_var(v, false)?;
            if t != Ty::Int {
                return Err(format!("loop bound or step `{v}` has type {t}, not int"));
            }
        }
        if index.ty != Ty::Int {
            return Err(format!("loop index `{}` must have type int", index.var));
        }
        Ok(())
    }

    /// A list header: the element binder has the list's element type.
    fn list(&mut self, elem: &Binder, list: &Var) -> Res<()> {
        let t = self.use_var(list, false)?;
        if !matches!(&t, Ty::List(e, _) if **e == elem.ty) {
            return Err(format!(
                "loop over `{list}: {t}` binds `{}: {}`",
                elem.var, elem.ty
            ));
        }
        Ok(())
    }

    /// Invariant 8.
    fn loop_(&mut self, l: &Loop) -> Res<(Vec<Ty>, Vec<Ty>)> {
        let mut scope = Vec::new();
        self.loop_header(&l.iter)?;
        if l.zero_skip
            && (!l.collect.is_empty()
                || matches!(l.iter, Iter::While { .. })
                || !l.skippable_state())
        {
            return Err("a `zeroskip` loop collects nothing, is not a `while` loop, and carries reals and arrays only, at least one real (invariant 12)".into());
        }
        for ((b, v), linear) in
            l.nl.iter()
                .map(|c| (c, false))
                .chain(l.lin.iter().map(|c| (c, true)))
        {
            let t = self.use_var(v, linear)?;
            if t != b.ty {
                return Err(format!(
                    "loop state `{}: {}` starts from `{v}: {t}`",
                    b.var, b.ty
                ));
            }
        }
        let outer = self.linear_uses();
        self.loops += 1;
        for b in l.iter.binders() {
            self.bind(b, false)?;
            scope.push((b.var.clone(), false));
        }
        if let Iter::Replay { state, next, .. } = &l.iter {
            let reads = self.lin_reads;
            let (nl, lin) = self.expr(next)?;
            if nl != [state.ty.clone()] || !lin.is_empty() || self.lin_reads != reads {
                return Err(format!(
                    "a replay's `next` must return one {} and read no linear variable",
                    state.ty
                ));
            }
        }
        for (b, _) in &l.nl {
            self.bind(b, false)?;
            scope.push((b.var.clone(), false));
        }
        if let Iter::While { cond } = &l.iter {
            let reads = self.lin_reads;
            let (nl, lin) = self.expr(cond)?;
            if nl != [Ty::Bool] || !lin.is_empty() || self.lin_reads != reads {
                return Err(
                    "a `while` condition must return one bool and read no linear variable".into(),
                );
            }
        }
        for (b, _) in &l.lin {
            self.bind(b, true)?;
            scope.push((b.var.clone(), true));
        }
        let (nl, lin) = self.expr(&l.body)?;
        self.loops -= 1;
        if let Some((v, _)) = self
            .linear_uses()
            .iter()
            .find(|(v, n)| outer.iter().any(|(w, m)| w == v && m != n))
        {
            return Err(format!(
                "the loop body reads linear variable `{v}` from outside the loop; a loop body runs many times, so outer linear values must be carried in its state"
            ));
        }
        self.unbind(&scope)?;
        let (mut want_nl, want_lin) = l.result_types();
        want_nl.truncate(l.nl.len());
        want_nl.extend(l.collect.iter().cloned());
        if nl != want_nl || lin != want_lin {
            return Err(format!(
                "the loop body returns ({}; {}) but the loop's state and collected values are ({}; {})",
                show(&nl),
                show(&lin),
                show(&want_nl),
                show(&want_lin)
            ));
        }
        Ok(l.result_types())
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
