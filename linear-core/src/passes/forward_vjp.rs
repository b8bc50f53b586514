//! The VJP by forward mode: `f.vjp(x.., w..) -> (y.., x̄..)` from the
//! directional derivative `d = L(J(f))` ([`super::hvp::directional`]), one
//! call of `d` per real of the inputs, for `order = 2`'s derived `f_vjp`
//! where the composed VJP ([`super::hvp::first_vjp`]) cannot be
//! differentiated.
//!
//! The composed VJP reads U's tape, which J cannot differentiate where it
//! holds a callee's tape with no path through the callee's own VJP (a
//! method of another `impl` block, whose signature a caller cannot see),
//! or records J cannot carry. `d` holds no tape: its calls are calls of
//! the callees' `.jvp`, which `order = 2` callees differentiate again. So
//! with `e_k` the k-th unit direction of the inputs' reals,
//!
//! `x̄_k = ⟨w, f'(x)·e_k⟩ = Σ_m ⟨w_m, ẏ_m⟩` where `(y.., ẏ..) = d(x.., e_k)`,
//!
//! and the function built here is that sum for every `k`, `d` inlined at
//! each call: a non-linear function of Linear A, which the first-order
//! pipeline (J, U, T) differentiates as it does any other. No derivative
//! rule is written here; the result inherits `d`'s (Thm 5.1 for J, and L
//! and inlining, which preserve work).
//!
//! Cost: `n` runs of `d` for `n` reals in the inputs, each a constant
//! times `f`'s work (the primal inside each run is not shared: LLVM
//! merges what it can prove pure), where the composed VJP costs one.
//! It is used only for the derivatives of `f_vjp` (`f_vjp_jvp`, `_lin`,
//! `_vjp`), never for `f_vjp` itself, and only up to [`MAX_DIRECTIONS`]
//! reals. Inputs or results that hold arrays, whose length the function
//! cannot know, are refused (`None`).
//!
//! Input: `d`, one non-linear function whose parameters are `x..` then
//! their tangents `v..` and whose results are `y..` then their tangents,
//! type-checking with `externs`. Output: a function of `x..` and one
//! cotangent per result, returning `y..` then a cotangent per parameter
//! (the tangent type of each, `()` for integers and booleans), with the
//! signature [`super::hvp::first_vjp`] gives; inlined, simplified, and
//! type-checking with `externs`.

use super::{inline::inline, simplify::simplify, PassError};
use crate::check::check;
use crate::ir::{Binder, Expr, Extern, Float, Func, Prim, Program, Stmt, Ty, Var};
use crate::visit::Fresh;

/// Inputs with more reals than this get no forward-mode VJP: its code
/// grows with one copy of `d` per real.
pub const MAX_DIRECTIONS: usize = 32;

/// `f.vjp` by forward mode (see the module doc); `None` where the inputs
/// or results hold arrays or the inputs more than [`MAX_DIRECTIONS`]
/// reals.
pub fn forward_vjp(d: &Func, externs: &[Extern], f: &str) -> Result<Option<Func>, PassError> {
    let name = Var::new(&format!("{f}.jvp.nl.vjp"));
    let Some(leaves) = directions(d, &name)? else {
        return Ok(None);
    };
    let (n, k) = (d.nl_params.len() / 2, d.nl_rets.len() / 2);
    let ((xs, dirs), (ys, dys)) = (d.nl_params.split_at(n), d.nl_rets.split_at(k));
    let mut fresh = Fresh::for_func(d);
    let mut b = Builder {
        fresh: &mut fresh,
        stmts: Vec::new(),
    };
    let params: Vec<Binder> = xs
        .iter()
        .map(|x| Binder::new(b.fresh.var("x"), x.ty.clone()))
        .collect();
    let ws: Vec<Binder> = dys
        .iter()
        .map(|t| Binder::new(b.fresh.var("w"), t.clone()))
        .collect();
    let args =
        |dir: Vec<Var>| -> Vec<Var> { params.iter().map(|p| p.var.clone()).chain(dir).collect() };
    // Each direction's `⟨w, ẏ⟩`; the results `y..` of the first run (of a
    // run along zero where the inputs hold no reals).
    let mut result: Option<Vec<Var>> = None;
    let mut cots = Vec::new();
    for (i, path) in &leaves {
        let dir = b.direction(dirs, Some((*i, path)));
        let (y, dy) = b.call(&d.name, args(dir), (ys, dys));
        b.keep_first(&mut result, y);
        let float = float_at(&dirs[*i].ty, path).unwrap_or(Float::F64);
        cots.push(b.dot(&ws, &dy, float));
    }
    if result.is_none() {
        let dir = b.direction(dirs, None);
        let (y, dy) = b.call(&d.name, args(dir), (ys, dys));
        dy.iter().for_each(|v| b.stmts.push(Stmt::drop_nl(v)));
        result = Some(y);
    }
    // A cotangent no run reads: of a result of no reals, or of every
    // result where the inputs hold none.
    for w in &ws {
        if leaves.is_empty() || real_paths(&w.ty).is_empty() {
            b.stmts.push(Stmt::drop_nl(&w.var));
        }
    }
    let mut cots = cots.into_iter();
    let bars: Vec<Var> = dirs
        .iter()
        .map(|v| b.assemble(&v.ty, &mut cots))
        .collect::<Option<_>>()
        .ok_or_else(|| PassError::new(&name, "fewer cotangents than reals in the inputs"))?;
    let mut rets = result.unwrap_or_default();
    rets.extend(bars);
    let vjp = Func {
        name: name.clone(),
        nl_params: params.into_iter().chain(ws).collect(),
        lin_params: vec![],
        nl_rets: ys
            .iter()
            .chain(dirs.iter().map(|v| &v.ty))
            .cloned()
            .collect(),
        lin_rets: vec![],
        body: Expr::block(
            b.stmts,
            Expr::Ret {
                nl: rets,
                lin: vec![],
            },
        ),
    };
    inlined(d, vjp, externs).map(Some)
}

/// A unit direction: the input, and the path (tuple positions, outermost
/// first) to the real in it that is 1.
type Direction = (usize, Vec<usize>);

/// The unit directions `d`'s inputs take (the input, and the path to a
/// real in it), after checking `d`'s layout (inputs then their tangents,
/// results then theirs); `None` where the inputs or results hold arrays,
/// or the inputs more than [`MAX_DIRECTIONS`] reals.
fn directions(d: &Func, name: &Var) -> Result<Option<Vec<Direction>>, PassError> {
    let err = |msg: &str| PassError::new(name, msg);
    let (n, k) = (d.nl_params.len() / 2, d.nl_rets.len() / 2);
    if d.nl_params.len() != 2 * n || d.nl_rets.len() != 2 * k || !d.lin_params.is_empty() {
        return Err(err(
            "the directional derivative takes other than inputs and their tangents",
        ));
    }
    let ((xs, dirs), (ys, dys)) = (d.nl_params.split_at(n), d.nl_rets.split_at(k));
    let tangents = xs.iter().zip(dirs).all(|(x, v)| x.ty.tangent() == v.ty)
        && ys.iter().zip(dys).all(|(y, t)| y.tangent() == *t);
    if !tangents {
        return Err(err(
            "the directional derivative's tangents do not follow its inputs and results",
        ));
    }
    if xs.iter().any(|b| has_array(&b.ty)) || ys.iter().any(has_array) {
        return Ok(None);
    }
    let leaves: Vec<Direction> = dirs
        .iter()
        .enumerate()
        .flat_map(|(i, b)| real_paths(&b.ty).into_iter().map(move |p| (i, p)))
        .collect();
    Ok((leaves.len() <= MAX_DIRECTIONS).then_some(leaves))
}

/// `vjp` with `d` inlined at each call, simplified, checked before and
/// after.
fn inlined(d: &Func, vjp: Func, externs: &[Extern]) -> Result<Func, PassError> {
    let name = vjp.name.clone();
    let err = |msg: &str| PassError::new(&name, msg);
    let program = Program {
        externs: externs.to_vec(),
        funcs: vec![d.clone(), vjp],
    };
    check(&program).map_err(|e| err(&format!("the forward-mode VJP {e}")))?;
    let out = simplify(&Program {
        externs: externs.to_vec(),
        funcs: vec![inline(&program, name.as_str())?],
    });
    check(&out).map_err(|e| err(&format!("the inlined forward-mode VJP {e}")))?;
    out.funcs
        .into_iter()
        .next()
        .ok_or_else(|| err("no function"))
}

/// Whether values of `t` hold an array (or a list or tape): a length the
/// function cannot know statically.
fn has_array(t: &Ty) -> bool {
    match t {
        Ty::Real(_) | Ty::Int | Ty::Bool => false,
        Ty::Tuple(ts) | Ty::Sum(ts) => ts.iter().any(has_array),
        Ty::Array(..) | Ty::List(..) | Ty::Tape(_) => true,
    }
}

/// The paths (tuple positions, outermost first) to the reals of a
/// tangent type, in order.
fn real_paths(t: &Ty) -> Vec<Vec<usize>> {
    match t {
        Ty::Real(_) => vec![vec![]],
        Ty::Tuple(ts) => ts
            .iter()
            .enumerate()
            .flat_map(|(i, t)| {
                real_paths(t).into_iter().map(move |mut p| {
                    p.insert(0, i);
                    p
                })
            })
            .collect(),
        Ty::Int | Ty::Bool | Ty::Sum(_) | Ty::Array(..) | Ty::List(..) | Ty::Tape(_) => vec![],
    }
}

/// The float type of the real at `path` in a value of type `t`.
fn float_at(t: &Ty, path: &[usize]) -> Option<Float> {
    match (t, path.split_first()) {
        (Ty::Real(f), None) => Some(*f),
        (Ty::Tuple(ts), Some((i, rest))) => float_at(ts.get(*i)?, rest),
        _ => None,
    }
}

/// Statements of the function being built, and its supply of names.
struct Builder<'a> {
    fresh: &'a mut Fresh,
    stmts: Vec<Stmt>,
}

impl Builder<'_> {
    /// A fresh variable bound to `rhs`, of type `ty`.
    fn bind(&mut self, hint: &str, ty: Ty, rhs: Expr) -> Var {
        let v = self.fresh.var(hint);
        self.stmts.push(Stmt::Let {
            nl: vec![Binder::new(v.clone(), ty)],
            lin: vec![],
            rhs,
        });
        v
    }

    fn lit(&mut self, value: f64, float: Float) -> Var {
        self.bind("e", Ty::Real(float), Expr::Lit { value, float })
    }

    /// A value of the tangent type `t`: zero, or the unit along `unit`.
    fn value(&mut self, t: &Ty, unit: Option<&[usize]>) -> Var {
        match t {
            Ty::Real(f) => self.lit(if unit.is_some() { 1.0 } else { 0.0 }, *f),
            Ty::Tuple(ts) => {
                let parts: Vec<Var> = ts
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        let inner = unit.and_then(|p| p.split_first()).filter(|(j, _)| **j == i);
                        self.value(t, inner.map(|(_, rest)| rest))
                    })
                    .collect();
                self.bind("e", t.clone(), Expr::Tup(parts))
            }
            // Tangent types are reals and tuples only.
            Ty::Int | Ty::Bool | Ty::Sum(_) | Ty::Array(..) | Ty::List(..) | Ty::Tape(_) => {
                self.bind("e", Ty::Tuple(vec![]), Expr::Tup(vec![]))
            }
        }
    }

    /// A value per tangent parameter of `dirs`: zero, or for `(i, path)`,
    /// the unit along `path` in the `i`-th (fresh values each time, since
    /// each is read once).
    fn direction(&mut self, dirs: &[Binder], unit: Option<(usize, &Vec<usize>)>) -> Vec<Var> {
        dirs.iter()
            .enumerate()
            .map(|(j, v)| {
                let path = unit.filter(|(i, _)| *i == j).map(|(_, p)| p.as_slice());
                self.value(&v.ty, path)
            })
            .collect()
    }

    /// `let (y..; ẏ..) = d(args)`: the fresh results.
    fn call(&mut self, d: &Var, args: Vec<Var>, (ys, dys): (&[Ty], &[Ty])) -> (Vec<Var>, Vec<Var>) {
        let y: Vec<Binder> = ys
            .iter()
            .map(|t| Binder::new(self.fresh.var("y"), t.clone()))
            .collect();
        let dy: Vec<Binder> = dys
            .iter()
            .map(|t| Binder::new(self.fresh.var("dy"), t.clone()))
            .collect();
        self.stmts.push(Stmt::Let {
            nl: y.iter().chain(&dy).cloned().collect(),
            lin: vec![],
            rhs: Expr::App {
                func: d.clone(),
                nl: args,
                lin: vec![],
            },
        });
        let vars = |bs: Vec<Binder>| bs.into_iter().map(|b| b.var).collect();
        (vars(y), vars(dy))
    }

    /// Keeps `y` as the results if none are kept yet; else drops it.
    fn keep_first(&mut self, kept: &mut Option<Vec<Var>>, y: Vec<Var>) {
        match kept {
            None => *kept = Some(y),
            Some(_) => y.iter().for_each(|v| self.stmts.push(Stmt::drop_nl(v))),
        }
    }

    /// `Σ_m ⟨w_m, ẏ_m⟩` over the reals of the cotangents `ws`, of the
    /// input real's type `float` (zero if the results hold no reals).
    fn dot(&mut self, ws: &[Binder], dy: &[Var], float: Float) -> Var {
        let mut terms = Vec::new();
        for (w, t) in ws.iter().zip(dy) {
            match real_paths(&w.ty).is_empty() {
                // The parameter `w` itself is dropped once, at the end.
                true => self.stmts.push(Stmt::drop_nl(t)),
                false => self.products(&w.var, t, &w.ty, &mut terms),
            }
        }
        let mut terms = terms.into_iter();
        let Some(first) = terms.next() else {
            return self.lit(0.0, float);
        };
        terms.fold(first, |acc, t| {
            let args = vec![acc, t];
            self.bind(
                "s",
                Ty::Real(float),
                Expr::Prim {
                    prim: Prim::Add,
                    args,
                },
            )
        })
    }

    /// The products of the reals of `w` and `t` (both of type `ty`), into
    /// `out`; components of no reals are dropped (a whole cotangent of no
    /// reals is not passed here: [`forward_vjp`] drops it once).
    fn products(&mut self, w: &Var, t: &Var, ty: &Ty, out: &mut Vec<Var>) {
        match ty {
            Ty::Real(_) => {
                let p = self.bind(
                    "p",
                    ty.clone(),
                    Expr::Prim {
                        prim: Prim::Mul,
                        args: vec![w.clone(), t.clone()],
                    },
                );
                out.push(p);
            }
            Ty::Tuple(ts) if !ts.is_empty() => {
                let (wp, tp) = (self.unpack(w, ts), self.unpack(t, ts));
                for ((a, b), ty) in wp.iter().zip(&tp).zip(ts) {
                    self.products(a, b, ty, out);
                }
            }
            Ty::Tuple(_)
            | Ty::Int
            | Ty::Bool
            | Ty::Sum(_)
            | Ty::Array(..)
            | Ty::List(..)
            | Ty::Tape(_) => {
                self.stmts.push(Stmt::drop_nl(w));
                self.stmts.push(Stmt::drop_nl(t));
            }
        }
    }

    /// The components of the tuple `v` of types `ts`, unpacked.
    fn unpack(&mut self, v: &Var, ts: &[Ty]) -> Vec<Var> {
        let vars: Vec<Binder> = ts
            .iter()
            .map(|t| Binder::new(self.fresh.var("c"), t.clone()))
            .collect();
        self.stmts.push(Stmt::Unpack {
            vars: vars.clone(),
            tuple: v.clone(),
        });
        vars.into_iter().map(|b| b.var).collect()
    }

    /// A value of the tangent type `t` whose reals are the next of `cots`;
    /// `None` if they run out.
    fn assemble(&mut self, t: &Ty, cots: &mut impl Iterator<Item = Var>) -> Option<Var> {
        match t {
            Ty::Real(_) => cots.next(),
            Ty::Tuple(ts) => {
                let parts = ts
                    .iter()
                    .map(|t| self.assemble(t, cots))
                    .collect::<Option<Vec<_>>>()?;
                Some(self.bind("ct", t.clone(), Expr::Tup(parts)))
            }
            Ty::Int | Ty::Bool | Ty::Sum(_) | Ty::Array(..) | Ty::List(..) | Ty::Tape(_) => {
                Some(self.bind("ct", Ty::Tuple(vec![]), Expr::Tup(vec![])))
            }
        }
    }
}
