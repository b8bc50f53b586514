//! The text form of Linear A, printed close to the paper's notation.
//!
//! ```text
//! def f.jvp(u: f64; u.d: f64) -> (f64; f64) =
//!   let v: f64; = sin(u) in
//!   let du: f64; = cos(u) in
//!   let ; v.d: f64 = du * u.d in
//!   let w: f64; = -v in
//!   let ; w.d: f64 = -v.d in
//!   (w; w.d)
//! ```
//!
//! The semicolon separates non-linear from linear positions everywhere: in
//! parameter lists, result types, binders, returns and calls. Linear
//! operations are written like their non-linear twins (`+`, `-`, `*`,
//! `tup`); the parser tells them apart by the linearity of the operands,
//! which the binders declare. `tup(; ..)` is a linear tuple. A nested block
//! is written in braces. [`crate::parse`] reads this form back: printing
//! then parsing yields the same program.
//!
//! Control flow and the discrete types:
//!
//! ```text
//! types      int  bool  sum(τ0 | τ1)  list(τ)  list(τ; 3)
//! literals   3i  -2i  true  false
//! injection  inj(v, 1, sum((f64,) | ()))
//! case       case c { true => e1 | false => e2 }
//!            case t { a: (f64,) => e1 | b: () => e2 }
//! loops      loop for i: int in range(lo, hi, step) rev carry(s: f64 = s0; ds: f64 = ds0) collect((f64,)) e
//!            loop for i: int in range(lo, hi; 3) carry(..) collect((f64,)) e   (3 iterations, known)
//!            loop each t: (f64,) in ts rev carry(; c: f64 = c0) collect() e
//!            loop while e carry(i: int = i0;) collect() e
//!            loop replay s: (int, f64) from s0 count n keep 8 next e rev carry(; c: f64 = c0) collect() e
//!            loop each t: (f64,) in ts rev carry(; c: f64 = c0, ā: array(f64) = a0) collect() zeroskip e
//!                       (skipped while `c0` is zero: `Loop::zero_skip`)
//! ```
//!
//! Arrays:
//!
//! ```text
//! types      array(f64)  array((f64, f64); 3)
//! reads      index(a, i)  len(a)       (non-linear)
//! linear     lindex(da, i)             (reads da in place, does not consume it)
//!            laccum(ca, i, dv)         (ca with dv added at i; consumes ca and dv)
//! ```

use std::fmt::{self, Write};

use crate::ir::{Binder, Expr, Extern, Float, Func, Iter, Loop, Prim, Program, Stmt, Ty, Var};

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Real(fl) => f.write_str(fl.name()),
            Ty::Tuple(ts) => {
                f.write_str("(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                if ts.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
            Ty::Tape(name) => write!(f, "tape({name})"),
            Ty::Int => f.write_str("int"),
            Ty::Bool => f.write_str("bool"),
            Ty::Sum(ts) => {
                f.write_str("sum(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" | ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(")")
            }
            Ty::List(t, None) => write!(f, "list({t})"),
            Ty::List(t, Some(n)) => write!(f, "list({t}; {n})"),
            Ty::Array(t, None) => write!(f, "array({t})"),
            Ty::Array(t, Some(n)) => write!(f, "array({t}; {n})"),
        }
    }
}

impl fmt::Display for Extern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        let pinned = if self.pinned { "pinned " } else { "" };
        let _ = write!(out, "extern {pinned}{}(", self.name);
        marked_list(&mut out, &self.nl_params, &self.constant, "const ");
        out.push(';');
        if !self.lin_params.is_empty() {
            out.push(' ');
            marked_list(&mut out, &self.lin_params, &self.borrowed, "borrow ");
        }
        out.push_str(") -> (");
        list(&mut out, &self.nl_rets);
        out.push(';');
        if !self.lin_rets.is_empty() {
            out.push(' ');
            list(&mut out, &self.lin_rets);
        }
        out.push_str(")\n");
        f.write_str(&out)
    }
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for e in &self.externs {
            write!(f, "{e}")?;
        }
        if !self.externs.is_empty() && !self.funcs.is_empty() {
            f.write_str("\n")?;
        }
        for (i, func) in self.funcs.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{func}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Func {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        write!(out, "def {}(", self.name)?;
        binders(&mut out, &self.nl_params, &self.lin_params);
        out.push_str(") -> (");
        list(&mut out, &self.nl_rets);
        out.push(';');
        if !self.lin_rets.is_empty() {
            out.push(' ');
            list(&mut out, &self.lin_rets);
        }
        out.push_str(") =\n");
        block_lines(&mut out, &self.body, 1);
        out.push('\n');
        f.write_str(&out)
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        expr(&mut out, self, 0);
        f.write_str(&out)
    }
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn list<T: fmt::Display>(out: &mut String, items: &[T]) {
    for (i, t) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{t}");
    }
}

/// A list of types, each at a position in `marked` preceded by `mark`.
fn marked_list(out: &mut String, items: &[Ty], marked: &[usize], mark: &str) {
    for (i, t) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if marked.contains(&i) {
            out.push_str(mark);
        }
        let _ = write!(out, "{t}");
    }
}

fn binder_list(out: &mut String, bs: &[Binder]) {
    for (i, b) in bs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{}: {}", b.var, b.ty);
    }
}

fn binders(out: &mut String, nl: &[Binder], lin: &[Binder]) {
    binder_list(out, nl);
    out.push(';');
    if !lin.is_empty() {
        out.push(' ');
        binder_list(out, lin);
    }
}

fn vars(out: &mut String, nl: &[Var], lin: &[Var]) {
    list(out, nl);
    out.push(';');
    if !lin.is_empty() {
        out.push(' ');
        list(out, lin);
    }
}

/// Prints `e` as the lines of a block body at `depth`, without a trailing
/// newline.
fn block_lines(out: &mut String, e: &Expr, depth: usize) {
    if let Expr::Block { stmts, tail } = e {
        for s in stmts {
            indent(out, depth);
            stmt(out, s, depth);
            out.push('\n');
        }
        block_lines(out, tail, depth);
    } else {
        indent(out, depth);
        expr(out, e, depth);
    }
}

fn stmt(out: &mut String, s: &Stmt, depth: usize) {
    match s {
        Stmt::Let { nl, lin, rhs } => {
            out.push_str("let ");
            binders(out, nl, lin);
            out.push_str(" = ");
            expr(out, rhs, depth);
            out.push_str(" in");
        }
        Stmt::Unpack { vars, tuple } => {
            out.push_str("unpack (");
            binder_list(out, vars);
            let _ = write!(out, ") = {tuple} in");
        }
        Stmt::LinUnpack { vars, tuple } => {
            out.push_str("unpack ; (");
            binder_list(out, vars);
            let _ = write!(out, ") = {tuple} in");
        }
    }
}

pub(crate) fn lit(out: &mut String, value: f64, float: Float) {
    // `{:?}` prints the shortest text that parses back to the same value.
    let _ = write!(out, "{value:?}");
    match float {
        Float::F32 => out.push_str("f32"),
        Float::Generic => out.push_str("float"),
        Float::F64 => {}
    }
}

fn expr(out: &mut String, e: &Expr, depth: usize) {
    match e {
        Expr::Block { .. } => {
            out.push_str("{\n");
            block_lines(out, e, depth + 1);
            out.push('\n');
            indent(out, depth);
            out.push('}');
        }
        Expr::Ret { nl, lin } => {
            out.push('(');
            vars(out, nl, lin);
            out.push(')');
        }
        Expr::App { func, nl, lin } => {
            let _ = write!(out, "{func}(");
            vars(out, nl, lin);
            out.push(')');
        }
        Expr::Lit { value, float } => lit(out, *value, *float),
        Expr::Const { name, args, ty } => {
            let _ = write!(out, "const({name}");
            if !args.is_empty() {
                out.push('(');
                list(out, args);
                out.push(')');
            }
            let _ = write!(out, ": {ty})");
        }
        Expr::Tup(vs) => {
            out.push_str("tup(");
            list(out, vs);
            out.push(')');
        }
        Expr::LinTup(vs) => {
            out.push_str("tup(;");
            if !vs.is_empty() {
                out.push(' ');
                list(out, vs);
            }
            out.push(')');
        }
        Expr::Prim { prim, args } => match prim {
            Prim::Add | Prim::Sub | Prim::Mul | Prim::Div => {
                let op = match prim {
                    Prim::Add => "+",
                    Prim::Sub => "-",
                    Prim::Mul => "*",
                    _ => "/",
                };
                let _ = write!(out, "{} {op} {}", args[0], args[1]);
            }
            Prim::Neg => {
                let _ = write!(out, "-{}", args[0]);
            }
            Prim::Powi(n) => {
                let _ = write!(out, "powi({}, {n})", args[0]);
            }
            _ => {
                let _ = write!(out, "{}(", prim.name());
                list(out, args);
                out.push(')');
            }
        },
        Expr::LinZero(t) => {
            let _ = write!(out, "zero({t})");
        }
        Expr::LinAdd(a, b) => {
            let _ = write!(out, "{a} + {b}");
        }
        Expr::LinNeg(a) => {
            let _ = write!(out, "-{a}");
        }
        Expr::LinScale(s, a) => {
            let _ = write!(out, "{s} * {a}");
        }
        Expr::Dup(a) => {
            let _ = write!(out, "dup({a})");
        }
        Expr::Drop(e) => {
            out.push_str("drop(");
            expr(out, e, depth);
            out.push(')');
        }
        Expr::Int(n) => {
            let _ = write!(out, "{n}i");
        }
        Expr::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Expr::Inj { sum, tag, val } => {
            let _ = write!(out, "inj({val}, {tag}, {sum})");
        }
        Expr::Case { scrut, arms } => {
            let _ = writeln!(out, "case {scrut} {{");
            for (k, a) in arms.iter().enumerate() {
                indent(out, depth + 1);
                if k > 0 {
                    out.push_str("| ");
                }
                match &a.bind {
                    Some(b) => {
                        let _ = write!(out, "{}: {} => ", b.var, b.ty);
                    }
                    None => out.push_str(if k == 0 { "true => " } else { "false => " }),
                }
                expr(out, &a.body, depth + 1);
                out.push('\n');
            }
            indent(out, depth);
            out.push('}');
        }
        Expr::Loop(l) => loop_(out, l, depth),
        Expr::Index { arr, idx } => {
            let _ = write!(out, "index({arr}, {idx})");
        }
        Expr::Len(arr) => {
            let _ = write!(out, "len({arr})");
        }
        Expr::LinIndex { arr, idx } => {
            let _ = write!(out, "lindex({arr}, {idx})");
        }
        Expr::LinAccum { arr, idx, val } => {
            let _ = write!(out, "laccum({arr}, {idx}, {val})");
        }
        Expr::Fill { len, val, size } => {
            let _ = match size {
                Some(n) => write!(out, "fill({len}, {val}; {n})"),
                None => write!(out, "fill({len}, {val})"),
            };
        }
        Expr::Set { arr, idx, val } => {
            let _ = write!(out, "set({arr}, {idx}, {val})");
        }
        Expr::LinZeros { ty, len } => {
            let _ = write!(out, "lzeros({ty}, {len})");
        }
        Expr::LinSet { arr, idx, val } => {
            let _ = write!(out, "lset({arr}, {idx}, {val})");
        }
        Expr::LinFree { arr, len } => {
            let _ = write!(out, "lfree({arr}, {len})");
        }
        Expr::Push { arr, val } => {
            let _ = write!(out, "push({arr}, {val})");
        }
        Expr::Pop { arr } => {
            let _ = write!(out, "pop({arr})");
        }
        Expr::LinPush { arr, val } => {
            let _ = write!(out, "lpush({arr}, {val})");
        }
        Expr::LinPop { arr } => {
            let _ = write!(out, "lpop({arr})");
        }
    }
}

/// `for i: T in range(lo, hi[, step][; trip])`.
fn range(
    out: &mut String,
    index: &Binder,
    (lo, hi, step): (&Var, &Var, Option<&Var>),
    trip: Option<u64>,
) {
    let _ = write!(out, "for {}: {} in range({lo}, {hi}", index.var, index.ty);
    if let Some(s) = step {
        let _ = write!(out, ", {s}");
    }
    if let Some(n) = trip {
        let _ = write!(out, "; {n}");
    }
    out.push(')');
}

fn loop_(out: &mut String, l: &Loop, depth: usize) {
    out.push_str("loop ");
    let rev = |out: &mut String, rev: bool| {
        if rev {
            out.push_str(" rev");
        }
    };
    match &l.iter {
        Iter::Range {
            index,
            lo,
            hi,
            step,
            rev: r,
            trip,
        } => {
            range(out, index, (lo, hi, step.as_ref()), *trip);
            rev(out, *r);
        }
        Iter::Zip {
            index,
            lo,
            hi,
            step,
            desc,
            elem,
            list,
            rev: r,
        } => {
            range(out, index, (lo, hi, step.as_ref()), None);
            rev(out, *desc);
            let _ = write!(out, " zip {}: {} in {list}", elem.var, elem.ty);
            rev(out, *r);
        }
        Iter::Each { elem, list, rev: r } => {
            let _ = write!(out, "each {}: {} in {list}", elem.var, elem.ty);
            rev(out, *r);
        }
        Iter::While { cond } => {
            out.push_str("while ");
            expr(out, cond, depth);
        }
        Iter::Replay {
            state,
            init,
            count,
            next,
            snapshots,
            rev: r,
        } => {
            let _ = write!(
                out,
                "replay {}: {} from {init} count {count} keep {snapshots} next ",
                state.var, state.ty
            );
            expr(out, next, depth);
            rev(out, *r);
        }
    }
    out.push_str(" carry(");
    let carry = |out: &mut String, cs: &[(Binder, Var)]| {
        for (i, (b, v)) in cs.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "{}: {} = {v}", b.var, b.ty);
        }
    };
    carry(out, &l.nl);
    out.push(';');
    if !l.lin.is_empty() {
        out.push(' ');
        carry(out, &l.lin);
    }
    out.push_str(") collect(");
    list(out, &l.collect);
    out.push_str(") ");
    if l.zero_skip {
        out.push_str("zeroskip ");
    }
    expr(out, &l.body, depth);
}
