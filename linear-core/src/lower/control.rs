//! Lowering of Rust control flow to Linear A's `case` and `loop`.
//!
//! * `if c { a } else { b }`, `else if`, `if` without `else`: the
//!   condition becomes a `bool`, the arms a case. Every `let mut` variable
//!   declared outside and assigned in an arm (found by a syntactic
//!   pre-scan, [`assigned`]) is merged: each arm returns its value, and the
//!   variable is rebound to the case's result (SSA).
//! * `a && b`, `a || b`: cases, so that `b` runs only when Rust would run
//!   it (`i < n && xs[i] > 0.0` must not index out of bounds).
//! * `match` on an integer or a bool, with literal, range, `|`, binding and
//!   wildcard patterns and guards, and `match` and `if let` on constant
//!   data of any type with any pattern (`pattern.rs`): a chain of cases;
//!   the last arm is the final `else` (rustc checks exhaustiveness on the
//!   original function).
//! * `for i in a..b`, `a..=b`, `(a..b).rev()`, `.step_by(k)` (also
//!   `.step_by(k).rev()`): a range loop whose state is every outer
//!   variable the body assigns; `while c { .. }`: a `while` loop whose
//!   condition reads that state.
//!
//! Inside an arm or a loop body (`depth > 0`) inactive code runs in place
//! (see `inactive.rs`), never in the prelude, so that it runs exactly when
//! Rust would run it.

use proc_macro2::Span;
use quote::{quote, ToTokens};
use rustc_hash::FxHashMap as HashMap;
use syn::spanned::Spanned;
use syn::visit::Visit;

use super::pattern::{ir_pattern, split_guard, Scrut};
use super::{Binding, Lowerer, Shape, Val};
use crate::ir::{Arm, Binder, Expr, Iter, Loop, Prim, Stmt, Ty, Var};

/// Calls `found` on every place a block assigns: the left side of `=`
/// and `op=`, and the receiver of `push` (which assigns the `Vec`),
/// outside closures and nested items.
struct Targets<F>(F);

impl<'ast, F: FnMut(&syn::Expr)> Visit<'ast> for Targets<F> {
    fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
        (self.0)(&a.left);
        syn::visit::visit_expr_assign(self, a);
    }
    fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
        if compound_assign(&b.op) {
            (self.0)(&b.left);
        }
        syn::visit::visit_expr_binary(self, b);
    }
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if m.method == "push" {
            (self.0)(&m.receiver);
        }
        syn::visit::visit_expr_method_call(self, m);
    }
    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

/// The names a block assigns (`x = ..`, `x op= ..`, `x.push(..)`),
/// outside closures and nested items.
pub(super) fn assigned(node: &impl ToTokens) -> Vec<String> {
    // An element write `a[i] = ..` assigns the array `a`, a part write
    // `t.0 = ..` the tuple `t`.
    fn root(e: &syn::Expr) -> Option<String> {
        match e {
            syn::Expr::Index(ix) => root(&ix.expr),
            syn::Expr::Field(f) => root(&f.base),
            syn::Expr::Paren(p) => root(&p.expr),
            syn::Expr::Path(p) => p.path.get_ident().map(ToString::to_string),
            _ => None,
        }
    }
    let mut names: Vec<String> = Vec::new();
    let mut t = Targets(|e: &syn::Expr| {
        if let Some(n) = root(e) {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    });
    if let Ok(e) = syn::parse2::<syn::Expr>(node.to_token_stream()) {
        t.visit_expr(&e);
    } else if let Ok(b) = syn::parse2::<syn::Block>(quote!({ #node })) {
        t.visit_block(&b);
    }
    names
}

/// Whether `op` assigns its left operand (`+=`, `<<=`, ...).
pub(super) fn compound_assign(op: &syn::BinOp) -> bool {
    matches!(
        op,
        syn::BinOp::AddAssign(_)
            | syn::BinOp::SubAssign(_)
            | syn::BinOp::MulAssign(_)
            | syn::BinOp::DivAssign(_)
            | syn::BinOp::RemAssign(_)
            | syn::BinOp::BitAndAssign(_)
            | syn::BinOp::BitOrAssign(_)
            | syn::BinOp::BitXorAssign(_)
            | syn::BinOp::ShlAssign(_)
            | syn::BinOp::ShrAssign(_)
    )
}

/// The names whose elements a function body writes at an index computed
/// at run time (`a[i] = ..`, `a[i] op= ..`; `a[1] = ..` writes a part of
/// a value, as `t.1 = ..` does), outside closures and nested items.
pub(super) fn index_written(block: &syn::Block) -> Vec<String> {
    let mut names = Vec::new();
    Targets(|e: &syn::Expr| {
        let syn::Expr::Index(ix) = e else { return };
        if matches!(&*ix.index, syn::Expr::Lit(_)) {
            return;
        }
        if let syn::Expr::Path(p) = &*ix.expr {
            names.extend(p.path.get_ident().map(ToString::to_string));
        }
    })
    .visit_block(block);
    names
}

/// The names a block pushes a struct literal onto (`out.push(Body { .. })`),
/// with the struct's path, the first push of each: the element type of
/// a `Vec` made without an annotation (`let mut out = Vec::new();`).
pub(super) fn pushed_structs(block: &syn::Block) -> Vec<(String, syn::Path)> {
    struct Pushes(Vec<(String, syn::Path)>);
    impl<'ast> Visit<'ast> for Pushes {
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            let args: Vec<&syn::Expr> = m.args.iter().collect();
            if let (true, syn::Expr::Path(r), [syn::Expr::Struct(s)]) =
                (m.method == "push", &*m.receiver, &args[..])
            {
                if let Some(name) = r.path.get_ident().map(ToString::to_string) {
                    if !self.0.iter().any(|(n, _)| *n == name) {
                        self.0.push((name, s.path.clone()));
                    }
                }
            }
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut p = Pushes(Vec::new());
    p.visit_block(block);
    p.0
}

/// One arm as lowered: its statements, its value (if the case has one),
/// and the merged variables' values at its end.
struct LoweredArm {
    stmts: Vec<Stmt>,
    value: Option<(Val, Span)>,
    state: Vec<(Var, Ty)>,
}

/// What one arm of a case lowers.
pub(super) enum ArmSrc<'s> {
    /// A block (`if` arm, loop-free).
    Block(&'s syn::Block),
    /// The block of `if let p = s`, under the pattern's bindings.
    LetBlock(&'s syn::Pat, Scrut, &'s syn::Block),
    /// An expression (`else if`, a `match` arm, the right of `&&`).
    Expr(&'s syn::Expr),
    /// A boolean constant.
    Bool(bool),
    /// The arms of `m` from `from` on, on the scrutinee `scrut`.
    Match(&'s syn::ExprMatch, usize, Scrut),
    /// A `match` arm's body with its pattern's bindings.
    MatchBody(&'s syn::Arm, Scrut),
    /// A match guard, under its pattern's bindings.
    Guard(&'s syn::Arm, Scrut),
}

impl Lowerer<'_> {
    /// The IR variables of the outer `let mut` variables among `names`,
    /// each made an IR variable first if it was a prelude value.
    /// A local array written in place is state like any other: a loop
    /// carries it, a branch returns it from every arm.
    pub(super) fn state_of(&mut self, names: &[String], span: Span) -> Vec<(String, Var, Ty)> {
        let mut out = Vec::new();
        for n in names {
            match self.lookup(n).cloned() {
                Some(Binding::Active(v, t, true)) => out.push((n.clone(), v, t)),
                Some(Binding::Inactive(id, true)) => {
                    let Some(t) = self.inactive_types.get(&id.to_string()).cloned() else {
                        let msg = if n.starts_with(super::array::ACCUMULATOR) {
                            "cannot tell the type of this reduction's accumulator: give its initial value a type (`0.0_f64`, or a variable declared with one)".to_string()
                        } else {
                            format!("cannot tell the type of {}, which this loop or branch assigns: annotate its `let` (`let mut {n}: f64 = ..;` or an integer type)", shown(n))
                        };
                        self.errs.push(span, msg);
                        // Reported once: its reads inside are not again.
                        self.set(n.clone(), Binding::Poisoned);
                        continue;
                    };
                    // An array annotated as one is a tuple in the IR: read
                    // through a prelude copy of it as one.
                    let shape = self.inactive_shapes.get(&id.to_string()).cloned();
                    let source = match &shape {
                        Some(s) if matches!(s, Shape::Array(..)) => {
                            let tuple = self.new_inactive_name(n);
                            let value = super::inactive::arrays_as_tuples(quote!(#id), s, &mut 0);
                            self.prelude.push(quote!(let #tuple = #value;));
                            tuple
                        }
                        _ => id.clone(),
                    };
                    let v = self.emit_nd(
                        n,
                        t.clone(),
                        Expr::Const {
                            name: Var::new(&source.to_string()),
                            args: vec![],
                            ty: t.clone(),
                        },
                    );
                    if let Some(shape) = shape {
                        self.shapes.insert(v.clone(), shape);
                    }
                    self.set_existing(n, Binding::Active(v.clone(), t.clone(), true));
                    out.push((n.clone(), v, t));
                }
                // Not mutable, a parameter, or declared inside: rustc or
                // the assignment itself reports it.
                _ => {}
            }
        }
        out
    }

    /// Lowers a condition to a `bool` variable.
    pub(super) fn cond(&mut self, e: &syn::Expr) -> Var {
        let v = self.expr(e, "c");
        self.materialize(v, &Ty::Bool, e.span())
    }

    /// Lowers an integer (a bound, a step, a scrutinee).
    pub(super) fn int(&mut self, e: &syn::Expr) -> Var {
        let v = self.expr(e, "n");
        self.materialize(v, &Ty::Int, e.span())
    }

    fn lower_arm(&mut self, src: &ArmSrc, value: bool) -> Option<(Val, Span)> {
        match src {
            ArmSrc::Block(b) if value => self.block_body(&b.stmts, false),
            ArmSrc::Block(b) => {
                self.stmts(&b.stmts);
                None
            }
            ArmSrc::LetBlock(p, s, b) => {
                self.bind_match(p, s);
                self.lower_arm(&ArmSrc::Block(b), value)
            }
            ArmSrc::Expr(e) if !value => {
                self.expr_stmt(e);
                None
            }
            ArmSrc::Expr(e) => {
                self.context = self.value_type.clone();
                Some((self.expr(e, "r"), e.span()))
            }
            ArmSrc::Bool(b) => Some((Val::Inactive(quote!(#b)), Span::call_site())),
            ArmSrc::Match(m, from, s) => self.match_from(m, *from, s.clone()),
            ArmSrc::MatchBody(arm, s) => {
                self.bind_match(&arm.pat, s);
                if value {
                    self.context = self.value_type.clone();
                    Some((self.expr(&arm.body, "r"), arm.body.span()))
                } else {
                    // A statement (`0 => s += x,`): its value is `()`.
                    self.expr_stmt(&arm.body);
                    None
                }
            }
            ArmSrc::Guard(arm, s) => {
                self.bind_match(&arm.pat, s);
                let (_, g) = split_guard(&arm.pat);
                let g = g?;
                Some((self.expr(g, "c"), g.span()))
            }
        }
    }

    /// A case on `cond` with the given arms (arm 0 when it is true),
    /// merging the outer variables named in `merged`. Returns the case's
    /// value if `value` (the arms' tails), else `None`.
    pub(super) fn case(
        &mut self,
        cond: Var,
        arms: [ArmSrc; 2],
        merged: &[String],
        value: bool,
        span: Span,
    ) -> Option<Val> {
        let state = self.state_of(merged, span);
        let lowered = self.lower_arms(&arms, &state, value);
        let poisoned = |l: &Self| {
            lowered
                .iter()
                .any(|a| a.value.as_ref().is_some_and(|(v, _)| l.is_poison(v)))
        };
        if poisoned(self) {
            return value.then(|| self.placeholder());
        }
        let vty = value.then(|| self.value_type(&lowered));
        // A struct value keeps its fields (Rust gives every arm one type),
        // not its origin: which parameter it is depends on the branch.
        let vshape = lowered.iter().find_map(|a| match &a.value {
            Some((Val::Active(v, _), _)) => match self.shapes.get(v) {
                Some(s @ Shape::Struct(_)) => Some(s.clone()),
                _ => None,
            },
            _ => None,
        });
        let (ir_arms, nondiff) = self.arm_bodies(lowered, vty.as_ref(), &state, span);
        let result = self.bind_case(cond, ir_arms, vty, &nondiff, &state);
        if let (Some(Val::Active(r, _)), Some(shape)) = (&result, vshape) {
            self.shapes.insert(r.clone(), shape);
        }
        result
    }

    /// Lowers each arm in the scope the case starts from.
    fn lower_arms(
        &mut self,
        arms: &[ArmSrc],
        state: &[(String, Var, Ty)],
        value: bool,
    ) -> Vec<LoweredArm> {
        let outer = self.scopes.clone();
        let outer_unpacked = self.unpacked.clone();
        let mut lowered = Vec::new();
        for src in arms {
            self.scopes = outer.clone();
            self.unpacked = outer_unpacked.clone();
            let saved = std::mem::take(&mut self.out);
            self.depth += 1;
            self.scopes.push(HashMap::default());
            let v = self.lower_arm(src, value);
            self.scopes.pop();
            let state_vals: Vec<(Var, Ty)> = state
                .iter()
                .map(|(n, v0, t0)| match self.lookup(n) {
                    Some(Binding::Active(v, t, _)) => (v.clone(), t.clone()),
                    _ => (v0.clone(), t0.clone()),
                })
                .collect();
            self.depth -= 1;
            let stmts = std::mem::replace(&mut self.out, saved);
            lowered.push(LoweredArm {
                stmts,
                value: v,
                state: state_vals,
            });
        }
        self.scopes = outer;
        self.unpacked = outer_unpacked;
        lowered
    }

    /// The type of a case's value: an IR arm's, else what the tokens say.
    fn value_type(&self, lowered: &[LoweredArm]) -> Ty {
        let active = lowered.iter().find_map(|a| match &a.value {
            Some((Val::Active(_, t), _)) => Some(t.clone()),
            _ => None,
        });
        let inferred = || {
            lowered.iter().find_map(|a| match &a.value {
                Some((Val::Inactive(t), _)) => self.infer_tokens(t),
                _ => None,
            })
        };
        active.or_else(inferred).unwrap_or(Ty::Real(self.float()))
    }

    /// Each arm's IR: its statements returning its value (materialized in
    /// the arm) and the merged variables; and, per result, whether every
    /// arm's is free of derivatives.
    fn arm_bodies(
        &mut self,
        lowered: Vec<LoweredArm>,
        vty: Option<&Ty>,
        state: &[(String, Var, Ty)],
        span: Span,
    ) -> (Vec<Arm>, Vec<bool>) {
        let mut ir_arms = Vec::new();
        let mut nondiff = vec![true; usize::from(vty.is_some()) + state.len()];
        for arm in lowered {
            let saved = std::mem::replace(&mut self.out, arm.stmts);
            self.depth += 1;
            let mut ret = Vec::new();
            if let (Some(t), Some((v, sp))) = (vty, arm.value) {
                ret.push(self.materialize(v, t, sp));
            }
            for ((v, t), (n, _, t0)) in arm.state.iter().zip(state) {
                if t != t0 {
                    // A `[T; N]` built in a local array against one of
                    // N values (a literal, or `Default` of an early exit).
                    let local_and_values = matches!(
                        (t, t0),
                        (Ty::Array(_, Some(_)), Ty::Tuple(_))
                            | (Ty::Tuple(_), Ty::Array(_, Some(_)))
                    );
                    let advice = if local_and_values {
                        ": a fixed-size array built in a local array (`let mut y = [0.0; N];`, written by index) and one written as its elements cannot meet yet; build it the same way in both, or return a `Vec`"
                    } else {
                        ""
                    };
                    self.errs.push_once(
                        span,
                        format!(
                            "{} has type {t} in one branch and {t0} in the other{advice}",
                            shown(n)
                        ),
                    );
                }
                ret.push(v.clone());
            }
            for (nd, v) in nondiff.iter_mut().zip(&ret) {
                *nd &= self.nondiff.contains(v);
            }
            self.depth -= 1;
            let stmts = std::mem::replace(&mut self.out, saved);
            ir_arms.push(Arm {
                bind: None,
                body: Expr::block(
                    stmts,
                    Expr::Ret {
                        nl: ret,
                        lin: vec![],
                    },
                ),
            });
        }
        (ir_arms, nondiff)
    }

    /// Binds the case's results and rebinds the merged variables to them.
    fn bind_case(
        &mut self,
        cond: Var,
        arms: Vec<Arm>,
        vty: Option<Ty>,
        nondiff: &[bool],
        state: &[(String, Var, Ty)],
    ) -> Option<Val> {
        let value = vty.is_some();
        let mut binders = Vec::new();
        let result = vty.map(|t| {
            let r = self.fresh.var("r");
            binders.push(Binder::new(r.clone(), t.clone()));
            (r, t)
        });
        for (n, v, t) in state {
            let b = self.fresh.var(n);
            let shape = self.shape_of(v);
            self.shapes.insert(b.clone(), shape);
            binders.push(Binder::new(b, t.clone()));
        }
        for (b, nd) in binders.iter().zip(nondiff) {
            self.types.insert(b.var.clone(), b.ty.clone());
            if *nd {
                self.nondiff.insert(b.var.clone());
            }
        }
        let merged_vars: Vec<Var> = binders
            .iter()
            .skip(usize::from(value))
            .map(|b| b.var.clone())
            .collect();
        self.out.push(Stmt::Let {
            nl: binders,
            lin: vec![],
            rhs: Expr::Case { scrut: cond, arms },
        });
        for ((n, _, t), v) in state.iter().zip(merged_vars) {
            self.set_existing(n, Binding::Active(v, t.clone(), true));
        }
        result.map(|(r, t)| Val::Active(r, t))
    }

    /// `if` as an expression (`value`) or a statement.
    pub(super) fn if_expr(&mut self, e: &syn::ExprIf, value: bool) -> Option<Val> {
        let (c, then) = match &*e.cond {
            syn::Expr::Let(l) if self.mentions_diff(l.expr.to_token_stream()) => {
                self.errs.spanned(
                    l,
                    "`if let` on a differentiable value is not supported: use `if` or `match` (on constant data, `if let` and `match` take any pattern)",
                );
                return value.then(|| self.placeholder());
            }
            syn::Expr::Let(l) => {
                let s = Scrut::Const(super::rename_tokens(self, l.expr.to_token_stream()));
                let c = self.pattern_test(&l.pat, &s);
                let Some(c) = c else {
                    return value.then(|| self.placeholder());
                };
                (c, ArmSrc::LetBlock(&l.pat, s, &e.then_branch))
            }
            cond => (self.cond(cond), ArmSrc::Block(&e.then_branch)),
        };
        let merged = assigned(e);
        let els = match &e.else_branch {
            Some((_, b)) => ArmSrc::Expr(b),
            None => {
                if value {
                    // rustc reports the missing `else` on the original.
                    self.errs.rustc_reports();
                    return Some(self.placeholder());
                }
                ArmSrc::Bool(false)
            }
        };
        // A statement `if` without `else`: the second arm does nothing.
        let has_value = value && e.else_branch.is_some();
        self.case(c, [then, els], &merged, has_value, e.span())
    }

    /// `a && b` and `a || b` as cases: `b` runs only if needed.
    pub(super) fn logical(&mut self, b: &syn::ExprBinary, and: bool) -> Val {
        let a = self.cond(&b.left);
        let arms = if and {
            [ArmSrc::Expr(&b.right), ArmSrc::Bool(false)]
        } else {
            [ArmSrc::Bool(true), ArmSrc::Expr(&b.right)]
        };
        let merged = assigned(&b.right);
        self.case(a, arms, &merged, true, b.span())
            .unwrap_or_else(|| self.placeholder())
    }

    /// `match` as a chain of cases, on an integer or a bool the IR
    /// computes or on a constant of any type (`pattern.rs`).
    pub(super) fn match_expr(&mut self, m: &syn::ExprMatch, value: bool) -> Option<Val> {
        let constant = !self.mentions_diff(m.expr.to_token_stream());
        if constant && !m.arms.iter().all(|a| ir_pattern(&a.pat)) {
            // Any pattern: the scrutinee is read again by each test and
            // binding, in place (it may read a loop index).
            let t = super::rename_tokens(self, m.expr.to_token_stream());
            return self.match_arms(m, Scrut::Const(t), value);
        }
        let s = self.expr(&m.expr, "s");
        let ty = match &s {
            Val::Active(_, t) => Some(t.clone()),
            Val::Inactive(t) => self.infer_tokens(t),
        };
        let s = match (s, ty) {
            (Val::Inactive(t), ty)
                if !matches!(ty, Some(Ty::Int | Ty::Bool))
                    || !m.arms.iter().all(|a| ir_pattern(&a.pat)) =>
            {
                Scrut::Const(t)
            }
            (s, Some(ty @ (Ty::Int | Ty::Bool))) => {
                Scrut::Ir(self.materialize(s, &ty, m.expr.span()))
            }
            (s, _) => {
                if !self.is_poison(&s) {
                    self.errs.spanned(&m.expr, "`match` on a differentiable value must be on an integer or a bool: compare floats with `if`; a constant (`#[nondiff]` data, an enum) may be matched with any pattern");
                }
                return value.then(|| self.placeholder());
            }
        };
        self.match_arms(m, s, value)
    }

    /// The arms of `m` on the scrutinee `s`, as a chain of cases.
    fn match_arms(&mut self, m: &syn::ExprMatch, s: Scrut, value: bool) -> Option<Val> {
        if m.arms.is_empty() {
            self.errs.spanned(m, "a `match` without arms");
            return value.then(|| self.placeholder());
        }
        let saved = self.match_value;
        self.match_value = value;
        let r = self.match_from(m, 0, s);
        self.match_value = saved;
        if value {
            r.map(|(v, _)| v)
        } else {
            None
        }
    }

    /// Arms `from..` of a match on `s`.
    fn match_from(&mut self, m: &syn::ExprMatch, from: usize, s: Scrut) -> Option<(Val, Span)> {
        let arm = &m.arms[from];
        let value = self.match_value;
        if from + 1 == m.arms.len() {
            return self.lower_arm(&ArmSrc::MatchBody(arm, s), value);
        }
        let (pat, guard) = split_guard(&arm.pat);
        let test = self.pattern_test(pat, &s)?;
        let test = match guard {
            None => test,
            Some(_) => {
                let g = self.case(
                    test,
                    [ArmSrc::Guard(arm, s.clone()), ArmSrc::Bool(false)],
                    &[],
                    true,
                    arm.span(),
                )?;
                self.materialize(g, &Ty::Bool, arm.span())
            }
        };
        let mut merged: Vec<String> = Vec::new();
        for name in m.arms[from..].iter().flat_map(|a| assigned(&a.body)) {
            // Once each, though several arms assign it.
            if !merged.contains(&name) {
                merged.push(name);
            }
        }
        let v = self.case(
            test,
            [
                ArmSrc::MatchBody(arm, s.clone()),
                ArmSrc::Match(m, from + 1, s),
            ],
            &merged,
            value,
            arm.span(),
        );
        Some((v.unwrap_or(Val::Inactive(quote!(()))), m.span()))
    }

    /// The range a `for` loop iterates: bounds, step, direction.
    fn range(&mut self, e: &syn::Expr) -> Option<(Var, Var, Option<Var>, bool)> {
        match e {
            syn::Expr::Paren(p) => self.range(&p.expr),
            syn::Expr::Group(g) => self.range(&g.expr),
            syn::Expr::Range(r) => {
                let (Some(a), Some(b)) = (&r.start, &r.end) else {
                    self.errs.spanned(
                        r,
                        "a `for` loop's range needs both bounds (`a..b` or `a..=b`)",
                    );
                    return None;
                };
                let lo = self.int(a);
                let mut hi = self.int(b);
                if let syn::RangeLimits::Closed(_) = r.limits {
                    let one = self.emit_nd("one", Ty::Int, Expr::Int(1));
                    hi = self.emit_nd(
                        "hi",
                        Ty::Int,
                        Expr::Prim {
                            prim: Prim::IAdd,
                            args: vec![hi, one],
                        },
                    );
                }
                Some((lo, hi, None, false))
            }
            syn::Expr::MethodCall(m) if m.method == "rev" && m.args.is_empty() => {
                let (lo, hi, step, rev) = self.range(&m.receiver)?;
                Some((lo, hi, step, !rev))
            }
            syn::Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 => {
                let (lo, hi, step, rev) = self.range(&m.receiver)?;
                if rev || step.is_some() {
                    self.errs.spanned(m, "`.step_by(k)` after `.rev()` or another `.step_by` is not supported: write `(a..b).step_by(k).rev()`");
                    return None;
                }
                let k = self.int(&m.args[0]);
                Some((lo, hi, Some(k), false))
            }
            other => {
                self.errs.spanned(other, "`for` loops in differentiable functions iterate over integer ranges (`a..b`, `a..=b`, `(a..b).rev()`, `(a..b).step_by(k)`) or over arrays and parts of them (`a.iter()`, `&a`, `a[1..].iter()`, with `.copied()`, `.enumerate()`, `.zip(b.iter())`, `.rev()`, `.skip(s)`, `.take(t)`, `.step_by(k)`, `.chain(..)`, `.filter(|v| ..)`; not `enumerate`, `zip`, `skip`, `take` or `step_by` after a `filter`), their chunks (`a.chunks(k)`) or windows (`a.windows(k)`)");
                None
            }
        }
    }

    /// The state a loop body carries: bound in a new scope, one binder per
    /// outer variable the body assigns.
    fn enter_loop(&mut self, state: &[(String, Var, Ty)]) -> Vec<(Binder, Var)> {
        let mut scope = HashMap::default();
        let mut carry = Vec::new();
        for (n, v, t) in state {
            let b = self.fresh.var(n);
            self.types.insert(b.clone(), t.clone());
            let shape = self.shape_of(v);
            self.shapes.insert(b.clone(), shape);
            if self.nondiff.contains(v) && !matches!(t, Ty::Real(_) | Ty::Tuple(_)) {
                self.nondiff.insert(b.clone());
            }
            scope.insert(n.clone(), Binding::Active(b.clone(), t.clone(), true));
            carry.push((Binder::new(b, t.clone()), v.clone()));
        }
        self.scopes.push(scope);
        self.depth += 1;
        carry
    }

    /// Ends a loop body: its statements returning the next state.
    fn leave_loop(&mut self, state: &[(String, Var, Ty)], saved: Vec<Stmt>) -> Expr {
        let next: Vec<Var> = state
            .iter()
            .map(|(n, v, _)| match self.lookup(n) {
                Some(Binding::Active(v, _, _)) => v.clone(),
                _ => v.clone(),
            })
            .collect();
        self.scopes.pop();
        self.depth -= 1;
        let stmts = std::mem::replace(&mut self.out, saved);
        Expr::block(
            stmts,
            Expr::Ret {
                nl: next,
                lin: vec![],
            },
        )
    }

    /// Binds a loop's results to its state's names.
    fn finish_loop(&mut self, state: &[(String, Var, Ty)], l: Loop) {
        let bs: Vec<Binder> = state
            .iter()
            .map(|(n, _, t)| Binder::new(self.fresh.var(n), t.clone()))
            .collect();
        for (b, (_, v, _)) in bs.iter().zip(state) {
            self.types.insert(b.var.clone(), b.ty.clone());
            let shape = self.shape_of(v);
            self.shapes.insert(b.var.clone(), shape);
            if self.nondiff.contains(v) && !matches!(b.ty, Ty::Real(_) | Ty::Tuple(_)) {
                self.nondiff.insert(b.var.clone());
            }
        }
        self.out.push(Stmt::Let {
            nl: bs.clone(),
            lin: vec![],
            rhs: Expr::Loop(Box::new(l)),
        });
        for (b, (n, _, t)) in bs.into_iter().zip(state) {
            self.set_existing(n, Binding::Active(b.var, t.clone(), true));
        }
    }

    pub(super) fn for_loop(&mut self, f: &syn::ExprForLoop) {
        if let Some(l) = &f.label {
            self.errs.spanned(
                l,
                "labelled loops are not supported yet in differentiable functions",
            );
            return;
        }
        // Chains in bodies not lowered as the function's own (closures'
        // bodies, reductions' loops) split here; `split_chains` split the
        // others before early exits were desugared.
        if let Some((a, b)) = super::iter::split_chain(&f.expr) {
            if super::iter::breaks(&f.body) {
                self.errs.spanned(&f.expr, "a `for` loop over `.chain(..)` cannot `break` here: write a loop over each part");
                return;
            }
            for part in [a, b] {
                let mut one = f.clone();
                *one.expr = part;
                self.for_loop(&one);
            }
            return;
        }
        match self.array_for(f) {
            Some(Ok(indexed)) => return self.for_loop(&indexed),
            Some(Err(())) => return,
            None => {}
        }
        let Some((lo, hi, step, rev)) = self.range(&f.expr) else {
            return;
        };
        let written = assigned(&f.body);
        let views = self.views_before();
        self.view_indexed_arrays((None, &f.body), &written);
        let state = self.state_of(&written, f.span());
        let outer_unpacked = self.unpacked.clone();
        let index = Binder::new(self.fresh.var("i"), Ty::Int);
        self.types.insert(index.var.clone(), Ty::Int);
        self.nondiff.insert(index.var.clone());
        let carry = self.enter_loop(&state);
        match &*f.pat {
            syn::Pat::Ident(i) => self.set(
                i.ident.to_string(),
                Binding::Active(index.var.clone(), Ty::Int, false),
            ),
            syn::Pat::Wild(_) => {}
            other => self
                .errs
                .spanned(other, "a `for` loop over a range binds a name or `_`"),
        }
        let saved = std::mem::take(&mut self.out);
        self.stmts(&f.body.stmts);
        let body = self.leave_loop(&state, saved);
        self.unpacked = outer_unpacked;
        let l = Loop {
            iter: Iter::Range {
                index,
                lo,
                hi,
                step,
                rev,
                trip: literal_trip(&f.expr),
            },
            nl: carry,
            lin: vec![],
            collect: vec![],
            zero_skip: false,
            body,
        };
        self.finish_loop(&state, l);
        if let Some(v) = views {
            self.views = v;
        }
    }

    pub(super) fn while_loop(&mut self, w: &syn::ExprWhile) {
        if let Some(l) = &w.label {
            self.errs.spanned(
                l,
                "labelled loops are not supported yet in differentiable functions",
            );
            return;
        }
        if let syn::Expr::Let(l) = &*w.cond {
            self.errs.spanned(
                l,
                "`while let` is not supported in differentiable functions: use `while`",
            );
            return;
        }
        let written = assigned(&w.body);
        let views = self.views_before();
        self.view_indexed_arrays((Some(&w.cond), &w.body), &written);
        let state = self.state_of(&written, w.span());
        let outer_unpacked = self.unpacked.clone();
        let carry = self.enter_loop(&state);
        let saved = std::mem::take(&mut self.out);
        let c = self.cond(&w.cond);
        let cond_stmts = std::mem::take(&mut self.out);
        let cond = Expr::block(cond_stmts, Expr::var(c));
        self.stmts(&w.body.stmts);
        let body = self.leave_loop(&state, saved);
        self.unpacked = outer_unpacked;
        let l = Loop {
            iter: Iter::While {
                cond: Box::new(cond),
            },
            nl: carry,
            lin: vec![],
            collect: vec![],
            zero_skip: false,
            body,
        };
        self.finish_loop(&state, l);
        if let Some(v) = views {
            self.views = v;
        }
    }
}

/// The number of iterations of a range written with integer literals only
/// (`0..3`, `(1..=9).step_by(2).rev()`): its tape can be a fixed-size
/// array. `None` for anything else.
fn literal_trip(e: &syn::Expr) -> Option<u64> {
    fn lit(e: &syn::Expr) -> Option<i128> {
        match e {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => i.base10_parse().ok(),
            syn::Expr::Unary(syn::ExprUnary {
                op: syn::UnOp::Neg(_),
                expr,
                ..
            }) => lit(expr).map(|v| -v),
            syn::Expr::Paren(p) => lit(&p.expr),
            syn::Expr::Group(g) => lit(&g.expr),
            _ => None,
        }
    }
    // (lo, hi exclusive, step)
    fn range(e: &syn::Expr) -> Option<(i128, i128, i128)> {
        match e {
            syn::Expr::Paren(p) => range(&p.expr),
            syn::Expr::Group(g) => range(&g.expr),
            syn::Expr::Range(r) => {
                let lo = lit(r.start.as_deref()?)?;
                let hi = lit(r.end.as_deref()?)?;
                let hi = match r.limits {
                    syn::RangeLimits::Closed(_) => hi + 1,
                    syn::RangeLimits::HalfOpen(_) => hi,
                };
                Some((lo, hi, 1))
            }
            syn::Expr::MethodCall(m) if m.method == "rev" && m.args.is_empty() => {
                range(&m.receiver)
            }
            syn::Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 => {
                let (lo, hi, _) = range(&m.receiver)?;
                Some((lo, hi, lit(&m.args[0])?))
            }
            _ => None,
        }
    }
    let (lo, hi, step) = range(e)?;
    if step <= 0 {
        return None;
    }
    let n = if hi > lo { (hi - lo - 1) / step + 1 } else { 0 };
    u64::try_from(n).ok()
}

/// A variable as the user knows it: the result of a function with early
/// exits is the desugaring's `__ret` (see `exits.rs`).
fn shown(n: &str) -> String {
    if n == "__ret" {
        "the function's result (given by `return` or the tail)".to_string()
    } else {
        format!("`{n}`")
    }
}
