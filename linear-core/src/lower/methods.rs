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
//! * `x.mul_add(a, b)`: `x * a + b`, rounded twice where std rounds once.

use super::{Lowerer, Shape, Val};
use crate::ir::{Expr, Float, Prim, Ty, Var};

/// The methods lowered here, and how many arguments each takes besides the
/// receiver.
pub(super) fn composed(method: &str) -> Option<usize> {
    match method {
        "to_radians" | "to_degrees" | "fract" | "sin_cos" => Some(0),
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
            _ => self.placeholder(),
        }
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
