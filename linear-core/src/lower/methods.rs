//! Float methods with no primitive of their own: each is lowered to the
//! primitives its standard-library definition computes, so the generated
//! primal is what `f` computes and the derivative follows by J.
//!
//! * `x.to_radians()`, `x.to_degrees()`: `x` times the constant std uses;
//! * `x.log(b)`: `ln(x) / ln(b)`;
//! * `x.fract()`: `x - trunc(x)`;
//! * `x.clamp(lo, hi)`: `min(max(x, lo), hi)` (std's comparisons, but for
//!   a NaN `x`, which std returns and this replaces by `lo`);
//! * `x.sin_cos()`: the tuple `(sin(x), cos(x))`;
//! * `x.mul_add(a, b)`: `x * a + b`, rounded twice where std rounds once;
//! * the predicates, comparisons that hold exactly where std's bit tests
//!   do, for `f32`, `f64` and a generic float alike: `x.is_nan()` is
//!   `x != x`; `x.is_finite()` is `x - x == 0` (`∞ - ∞` and NaN are NaN);
//!   `x.is_infinite()` is `x == x && x - x != 0`; `x.is_sign_negative()`
//!   is `copysign(1, x) < 0` (true for `-0.0` and a NaN with its sign bit
//!   set, as std's), `x.is_sign_positive()` its `> 0`. Their results are
//!   bools, so they carry no derivative.

use super::{Lowerer, Shape, Val};
use crate::ir::{Cmp, Expr, Float, Prim, Ty, Var};

/// The methods lowered here, and how many arguments each takes besides the
/// receiver.
pub(super) fn composed(method: &str) -> Option<usize> {
    match method {
        "to_radians" | "to_degrees" | "fract" | "sin_cos" => Some(0),
        "is_nan" | "is_finite" | "is_infinite" | "is_sign_negative" | "is_sign_positive" => Some(0),
        "log" => Some(1),
        "clamp" | "mul_add" => Some(2),
        _ => None,
    }
}

impl Lowerer<'_> {
    /// `x.method(args..)` for a [`composed`] method, its operands lowered.
    pub(super) fn composed_method(
        &mut self,
        method: &str,
        x: Var,
        args: Vec<Var>,
        hint: &str,
    ) -> Val {
        let f = self
            .types
            .get(&x)
            .and_then(Ty::float)
            .unwrap_or(self.float());
        let arg = |k: usize| args.get(k).cloned();
        match (method, arg(0), arg(1)) {
            ("to_radians", ..) => {
                let k = self.real_lit(
                    f,
                    std::f64::consts::PI / 180.0,
                    std::f32::consts::PI / 180.0,
                );
                self.prim(Prim::Mul, vec![x, k], hint)
            }
            ("to_degrees", ..) => {
                let k = self.real_lit(f, 180.0 / std::f64::consts::PI, 57.295_78_f32);
                self.prim(Prim::Mul, vec![x, k], hint)
            }
            ("log", Some(b), _) => {
                let (lx, lb) = (
                    self.prim_var(Prim::Ln, vec![x], hint),
                    self.prim_var(Prim::Ln, vec![b], hint),
                );
                self.prim(Prim::Div, vec![lx, lb], hint)
            }
            ("fract", ..) => {
                let t = self.prim_var(Prim::Trunc, vec![x.clone()], hint);
                self.prim(Prim::Sub, vec![x, t], hint)
            }
            ("clamp", Some(lo), Some(hi)) => {
                let m = self.prim_var(Prim::Max, vec![x, lo], hint);
                self.prim(Prim::Min, vec![m, hi], hint)
            }
            ("mul_add", Some(a), Some(b)) => {
                let p = self.prim_var(Prim::Mul, vec![x, a], hint);
                self.prim(Prim::Add, vec![p, b], hint)
            }
            ("sin_cos", ..) => {
                let s = self.prim_var(Prim::Sin, vec![x.clone()], hint);
                let c = self.prim_var(Prim::Cos, vec![x], hint);
                let ty = Ty::Tuple(vec![Ty::Real(f), Ty::Real(f)]);
                let v = self.emit(hint, ty.clone(), Expr::Tup(vec![s, c]));
                self.shapes.insert(
                    v.clone(),
                    Shape::Tuple(vec![Shape::Float(f), Shape::Float(f)]),
                );
                Val::Active(v, ty)
            }
            ("is_nan", ..) => self.compared(Cmp::Ne, x.clone(), x),
            ("is_finite", ..) => {
                let (d, zero) = (self.self_difference(&x, hint), self.real_lit(f, 0.0, 0.0));
                self.compared(Cmp::Eq, d, zero)
            }
            ("is_infinite", ..) => {
                let (d, zero) = (self.self_difference(&x, hint), self.real_lit(f, 0.0, 0.0));
                let inf_or_nan = self.compared_var(Cmp::Ne, d, zero);
                let number = self.compared_var(Cmp::Eq, x.clone(), x);
                let v = self.emit_nd(
                    "c",
                    Ty::Bool,
                    Expr::Prim {
                        prim: Prim::And,
                        args: vec![number, inf_or_nan],
                    },
                );
                Val::Active(v, Ty::Bool)
            }
            ("is_sign_negative" | "is_sign_positive", ..) => {
                let one = self.real_lit(f, 1.0, 1.0);
                let sign = self.prim_var(Prim::Copysign, vec![one, x], hint);
                let zero = self.real_lit(f, 0.0, 0.0);
                let c = if method == "is_sign_negative" {
                    Cmp::Lt
                } else {
                    Cmp::Gt
                };
                self.compared(c, sign, zero)
            }
            _ => self.placeholder(),
        }
    }

    /// `x - x`: zero for a finite `x`, NaN otherwise.
    fn self_difference(&mut self, x: &Var, hint: &str) -> Var {
        self.prim_var(Prim::Sub, vec![x.clone(), x.clone()], hint)
    }

    /// The comparison `a c b` of two reals, a bool.
    fn compared(&mut self, c: Cmp, a: Var, b: Var) -> Val {
        Val::Active(self.compared_var(c, a, b), Ty::Bool)
    }

    fn compared_var(&mut self, c: Cmp, a: Var, b: Var) -> Var {
        let rhs = Expr::Prim {
            prim: Prim::Cmp(c),
            args: vec![a, b],
        };
        self.emit_nd("c", Ty::Bool, rhs)
    }

    /// A primitive's result as a variable.
    fn prim_var(&mut self, p: Prim, args: Vec<Var>, hint: &str) -> Var {
        match self.prim(p, args, hint) {
            Val::Active(v, _) => v,
            Val::Inactive(_) => self.placeholder_var(),
        }
    }

    /// A real literal of float type `f`, with the value std multiplies by
    /// for `f32` (computed in `f32`) and for `f64`.
    fn real_lit(&mut self, f: Float, value: f64, value_f32: f32) -> Var {
        let value = match f {
            Float::F32 => f64::from(value_f32),
            Float::F64 | Float::Generic => value,
        };
        self.emit("k", Ty::Real(f), Expr::Lit { value, float: f })
    }
}
