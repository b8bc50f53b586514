//! The program transformations, one module each, as free functions from
//! [`Program`](crate::ir::Program) to `Program`.

pub mod erase;
pub mod fold;
pub mod forward_vjp;
pub mod hvp;
pub mod inline;
pub mod jvp;
pub mod records;
pub mod simplify;
pub mod through;
pub mod transpose;
pub mod unzip;

use std::fmt;

use rustc_hash::FxHashMap as HashMap;

use crate::ir::{Expr, Ty, Var};

/// The type a pass recorded for `v` in function `func`, or an error naming
/// it (a pass given ill-typed input, or a bug: never a panic).
pub(crate) fn type_of(types: &HashMap<Var, Ty>, func: &Var, v: &Var) -> Result<Ty, PassError> {
    types
        .get(v)
        .cloned()
        .ok_or_else(|| PassError::new(func, &format!("no type for `{v}`")))
}

/// The result types of a non-linear leaf expression (a literal, a
/// constant, a tuple, a return, a primitive, an array operation), with
/// `types` giving its variables' types; `None` for any other expression.
pub(crate) fn leaf_types(
    types: &HashMap<Var, Ty>,
    func: &Var,
    e: &Expr,
) -> Result<Option<Vec<Ty>>, PassError> {
    let ty = |v: &Var| type_of(types, func, v);
    Ok(Some(match e {
        Expr::Lit { float, .. } => vec![Ty::Real(*float)],
        Expr::Const { ty, .. } => vec![ty.clone()],
        Expr::Int(_) | Expr::Len(_) => vec![Ty::Int],
        Expr::Bool(_) => vec![Ty::Bool],
        Expr::Inj { sum, .. } => vec![sum.clone()],
        Expr::Tup(vs) => vec![Ty::Tuple(vs.iter().map(ty).collect::<Result<_, _>>()?)],
        Expr::Ret { nl, .. } => nl.iter().map(ty).collect::<Result<_, _>>()?,
        Expr::Prim { prim, args } => {
            let first = match args.first() {
                Some(a) => Some(ty(a)?),
                None => None,
            };
            vec![prim.result_ty(first.as_ref())]
        }
        Expr::Index { arr, .. } => match ty(arr)? {
            Ty::Array(e, _) => vec![*e],
            t => return Err(PassError::new(func, &format!("`index` of `{arr}: {t}`"))),
        },
        Expr::Fill { val, size, .. } => vec![Ty::Array(Box::new(ty(val)?), *size)],
        Expr::Set { arr, .. } | Expr::Push { arr, .. } => vec![ty(arr)?],
        Expr::Pop { arr } => match ty(arr)? {
            Ty::Array(e, n) => vec![Ty::Array(e.clone(), n), *e],
            t => return Err(PassError::new(func, &format!("`pop` of `{arr}: {t}`"))),
        },
        Expr::Block { .. }
        | Expr::App { .. }
        | Expr::Case { .. }
        | Expr::Loop(_)
        | Expr::Drop(_)
        | Expr::LinZero(_)
        | Expr::LinTup(_)
        | Expr::LinAdd(..)
        | Expr::LinNeg(_)
        | Expr::LinScale(..)
        | Expr::Dup(_)
        | Expr::LinIndex { .. }
        | Expr::LinAccum { .. }
        | Expr::LinZeros { .. }
        | Expr::LinSet { .. }
        | Expr::LinFree { .. }
        | Expr::LinPush { .. }
        | Expr::LinPop { .. } => return Ok(None),
    }))
}

/// A pass was given input outside its domain (for example J applied to a
/// linear function). Passes never panic on such input.
#[derive(Clone, Debug, PartialEq)]
pub struct PassError {
    pub func: Var,
    pub msg: String,
}

impl PassError {
    pub fn new(func: &Var, msg: &str) -> PassError {
        PassError {
            func: func.clone(),
            msg: msg.to_string(),
        }
    }
}

impl fmt::Display for PassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "in `{}`: {}", self.func, self.msg)
    }
}

impl std::error::Error for PassError {}

/// A replay loop as the loops J and U have rules for: one loop computes
/// the `count` states and collects them, a list loop runs the body over
/// them (reversed if the replay was). Replays appear only in U's output
/// under binomial checkpointing; J and U meet them when a program is
/// differentiated again (L keeps them), and the states they stored lazily
/// are then simply stored. Returns the desugared expression and records the
/// types of the binders it introduces in `types`. `None` if `l` is not a
/// replay.
pub(crate) fn unreplay(
    l: &crate::ir::Loop,
    fresh: &mut crate::visit::Fresh,
    types: &mut HashMap<Var, Ty>,
) -> Option<crate::ir::Expr> {
    use crate::ir::{Binder, Expr, Iter, Loop, Stmt};
    let Iter::Replay {
        state,
        init,
        count,
        next,
        rev,
        ..
    } = &l.iter
    else {
        return None;
    };
    let b = |v: Var, t: &Ty| Binder::new(v, t.clone());
    let (zero, k, s, s_next, s_fin, states) = (
        fresh.var("zero"),
        fresh.var("k"),
        fresh.var("s"),
        fresh.var("s"),
        fresh.var("s"),
        fresh.var("states"),
    );
    let mut next = (**next).clone();
    let map = [(state.var.clone(), s.clone())].into_iter().collect();
    crate::visit::rename_all(&mut next, &map);
    let drop = Stmt::drop_nl;
    let states_ty = Ty::List(Box::new(state.ty.clone()), None);
    let compute = Loop {
        iter: Iter::Range {
            index: b(k.clone(), &Ty::Int),
            lo: zero.clone(),
            hi: count.clone(),
            step: None,
            rev: false,
            trip: None,
        },
        nl: vec![(b(s.clone(), &state.ty), init.clone())],
        lin: vec![],
        collect: vec![state.ty.clone()],
        zero_skip: false,
        body: Expr::block(
            vec![
                drop(&k),
                Stmt::Let {
                    nl: vec![b(s_next.clone(), &state.ty)],
                    lin: vec![],
                    rhs: next,
                },
            ],
            Expr::Ret {
                nl: vec![s_next, s],
                lin: vec![],
            },
        ),
    };
    let each = Loop {
        iter: Iter::Each {
            elem: state.clone(),
            list: states.clone(),
            rev: *rev,
        },
        nl: l.nl.clone(),
        lin: l.lin.clone(),
        collect: l.collect.clone(),
        zero_skip: l.zero_skip,
        body: l.body.clone(),
    };
    let e = Expr::block(
        vec![
            Stmt::Let {
                nl: vec![b(zero, &Ty::Int)],
                lin: vec![],
                rhs: Expr::Int(0),
            },
            Stmt::Let {
                nl: vec![b(s_fin.clone(), &state.ty), b(states, &states_ty)],
                lin: vec![],
                rhs: Expr::Loop(Box::new(compute)),
            },
            drop(&s_fin),
        ],
        Expr::Loop(Box::new(each)),
    );
    crate::visit::for_each_binder(&e, &mut |b, _| {
        types.insert(b.var.clone(), b.ty.clone());
    });
    Some(e)
}
