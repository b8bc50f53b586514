//! The Linear A intermediate representation (paper, Fig. 2).
//!
//! A program is an ordered list of first-order function definitions; a
//! function may only call functions defined before it, so there is no
//! recursion and every transformation can proceed by induction on the
//! program, as the paper's proofs do.
//!
//! Expressions are in A-normal form: every operand is a variable. Every
//! expression returns some number of non-linear results followed by some
//! number of linear results (the paper's `e^{m,n}`).
//!
//! Two departures from the figure's grammar, both representation only:
//!
//! * The paper nests `let`s (`let v = e1 in e2`). Here a run of bindings is a
//!   [`Expr::Block`]: a vector of [`Stmt`]s followed by a tail expression.
//!   `let v = e1 in let w = e2 in e3` is `Block { stmts: [v = e1, w = e2],
//!   tail: e3 }`. The right-hand side of a binding is still an arbitrary
//!   expression (possibly another block), exactly as in the paper. Passes
//!   therefore loop over statements instead of recursing once per binding,
//!   which keeps functions of tens of thousands of statements off the stack.
//! * Variables and the paper's multi-value return are one form: a variable
//!   `v` is `Ret { nl: [v], lin: [] }`, a linear variable `v̇` is
//!   `Ret { nl: [], lin: [v̇] }`.
//!
//! Within one function every variable is bound exactly once (parameters
//! included). The verifier ([`crate::check`]) enforces this; the passes rely
//! on it to hoist bindings out of nested blocks without renaming.
//!
//! Control flow (beyond the paper, following Dex and JAX):
//!
//! * [`Expr::Case`] selects one of several blocks: on a `bool` (`if`), or on
//!   the tag of a sum value (the tape of a conditional after U). Every arm
//!   returns the same types and consumes the same linear variables.
//! * [`Expr::Loop`] is a scan: a header ([`Iter`]: an integer range, the
//!   elements of a list, or a `while` condition), carried state (non-linear
//!   and linear), and per-iteration non-linear outputs collected into
//!   lists (the tape of a loop after U). A loop body reads no linear
//!   variable from outside: J carries the tangents of the outer values it
//!   reads, so T accumulates their cotangents across the reversed
//!   iterations.
//!
//! Integers and booleans are non-linear scalars with no tangent (their
//! tangent type is the empty tuple); sums and lists are non-linear only.

use std::fmt;

/// The floating-point type a real is computed in. The interpreter always
/// computes in f64; code generation emits the named Rust type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Float {
    F32,
    F64,
    /// The float type parameter of a generic function (`T:
    /// num_traits::Float`), written `float`: one per function, spelled
    /// by code generation with the user's name for it
    /// ([`crate::codegen::FloatParam`]).
    Generic,
}

impl Float {
    pub fn name(self) -> &'static str {
        match self {
            Float::F32 => "f32",
            Float::F64 => "f64",
            Float::Generic => "float",
        }
    }
}

/// Types: reals and (nested) tuples of types (paper, Fig. 2), integers,
/// booleans, sums and lists (non-linear only), and the opaque tape of an
/// external function.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    Real(Float),
    /// An integer: a loop index, a count. Computed in i64 by the
    /// interpreter; generated Rust lets the compiler infer its width.
    Int,
    Bool,
    Tuple(Vec<Ty>),
    /// A tagged union `sum(τ0 | τ1 | ..)`: the tape of a conditional
    /// records which arm ran and that arm's residuals only.
    Sum(Vec<Ty>),
    /// A list `list(τ)` of per-iteration values: the tape of a loop;
    /// `list(τ; n)` when it has exactly `n` elements, known at compile time
    /// (the tape of a loop with a constant trip count), which generated
    /// Rust may keep inline instead of on the heap.
    List(Box<Ty>, Option<u64>),
    /// An array `array(τ)` of user data (a Rust slice, `Vec` or fixed
    /// array), `array(τ; n)` when its length `n` is known at compile time.
    /// Unlike a list it can be linear when its elements can: its tangent
    /// is an array of the elements' tangents. A linear array is never
    /// duplicated, dropped or added: it is read in place ([`Expr::LinIndex`],
    /// which does not consume it) and, transposed, accumulated into in
    /// place ([`Expr::LinAccum`]); see [`crate::check`], invariant 11.
    Array(Box<Ty>, Option<u64>),
    /// The tape returned by the forward pass of external function `f`
    /// (`f.nl` for an extern `f` after U): its contents are the callee's
    /// business. It is non-linear, is never unpacked, and carries no
    /// scalars the cost model sees. Written `tape(f)`.
    Tape(Var),
}

impl Ty {
    pub const F64: Ty = Ty::Real(Float::F64);
    pub const F32: Ty = Ty::Real(Float::F32);

    /// Number of real scalars in a value of this type: the unit the cost
    /// model (section 4.3) charges `drop` and linear operations by.
    /// Integers and booleans count 1; sums and lists, whose size is only
    /// known at run time, 0 (the interpreter charges their values).
    pub fn scalars(&self) -> u64 {
        match self {
            Ty::Real(_) | Ty::Int | Ty::Bool => 1,
            Ty::Tuple(ts) => ts.iter().map(Ty::scalars).sum(),
            Ty::Sum(_) | Ty::List(..) | Ty::Array(..) | Ty::Tape(_) => 0,
        }
    }

    /// Whether this is an array whose elements can be linear: the type of
    /// a linear array (an accumulator once transposed).
    pub fn is_linear_array(&self) -> bool {
        matches!(self, Ty::Array(e, _) if e.is_vector())
    }

    /// Whether a value of this type holds reals, at any depth: whether J
    /// gives it a tangent with scalars.
    pub fn has_reals(&self) -> bool {
        match self {
            Ty::Real(_) => true,
            Ty::Tuple(ts) | Ty::Sum(ts) => ts.iter().any(Ty::has_reals),
            Ty::List(e, _) | Ty::Array(e, _) => e.has_reals(),
            Ty::Int | Ty::Bool | Ty::Tape(_) => false,
        }
    }

    /// Whether this is an array J gives a linear array as its tangent: of
    /// reals, tuples of them, or (a loop's records, `passes::records`)
    /// tuples and sums holding reals beside integers and booleans.
    pub fn has_tangent_array(&self) -> bool {
        matches!(self, Ty::Array(e, _) if e.has_reals() && e.tangent().is_vector())
    }

    /// Whether values of this type can be bound to linear variables: vector
    /// types and linear arrays.
    pub fn can_be_linear(&self) -> bool {
        self.is_vector() || self.is_linear_array()
    }

    /// Whether values of this type can be linear (have a zero, a sum and a
    /// scaling): reals and tuples of them, nothing else.
    pub fn is_vector(&self) -> bool {
        match self {
            Ty::Real(_) => true,
            Ty::Tuple(ts) => ts.iter().all(Ty::is_vector),
            Ty::Int | Ty::Bool | Ty::Sum(_) | Ty::List(..) | Ty::Array(..) | Ty::Tape(_) => false,
        }
    }

    /// The type of the tangents of values of this type (J): reals for
    /// reals, the empty tuple for integers and booleans (they have no
    /// derivative), componentwise for tuples, the tuple of the
    /// alternatives' tangents for a sum (the alternative taken has its
    /// tangent there, the others a zero), an array of the elements'
    /// tangents for an array holding reals. Lists have none: J refuses
    /// lists of reals (`passes::records` makes them arrays first).
    pub fn tangent(&self) -> Ty {
        match self {
            Ty::Real(_) => self.clone(),
            Ty::Tuple(ts) | Ty::Sum(ts) => Ty::Tuple(ts.iter().map(Ty::tangent).collect()),
            Ty::Array(e, n) if self.has_tangent_array() => Ty::Array(Box::new(e.tangent()), *n),
            Ty::Int | Ty::Bool | Ty::List(..) | Ty::Array(..) | Ty::Tape(_) => Ty::Tuple(vec![]),
        }
    }

    /// The float type of a scalar, `None` for anything else.
    pub fn float(&self) -> Option<Float> {
        match self {
            Ty::Real(f) => Some(*f),
            Ty::Int
            | Ty::Bool
            | Ty::Tuple(_)
            | Ty::Sum(_)
            | Ty::List(..)
            | Ty::Array(..)
            | Ty::Tape(_) => None,
        }
    }
}

/// A variable or function name. Names produced by passes contain a `.`,
/// which no Rust identifier can, so they never collide with names lowered
/// from user code.
///
/// Names are interned: a `Var` is one pointer to its name's only copy,
/// which holds the name's hash. Passes and code generation keep maps and
/// sets keyed by variables, and hashing a name byte by byte, with the
/// reference count of a shared string moved on every clone, was a fifth
/// of the macro's time in a debug build. Equality compares pointers and
/// hashing writes the stored hash (computed from the text, so the order
/// of hash maps does not depend on addresses), while order is by text, as
/// before. Interned names live as long as the process: a proc macro's, or
/// the language server's, holds only as many as the distinct names it
/// has seen.
///
/// Its clone, equality, hash and number are `#[inline(always)]`: maps
/// keyed by variables are most of an unoptimised macro's work (the one
/// `cargo build` runs), and rustc inlines nothing else at `opt-level = 0`.
pub struct Var(&'static Name);

impl Clone for Var {
    #[inline(always)]
    fn clone(&self) -> Var {
        Var(self.0)
    }
}

/// An interned name ([`Var`]).
struct Name {
    text: &'static str,
    hash: u64,
    /// `N` for a name `base.N` ([`Var::number`]).
    number: u64,
}

impl Var {
    pub fn new(name: &str) -> Var {
        use std::sync::{Mutex, OnceLock};
        type Table = Mutex<rustc_hash::FxHashMap<&'static str, &'static Name>>;
        static NAMES: OnceLock<Table> = OnceLock::new();
        let table = NAMES.get_or_init(Table::default);
        // A poisoned lock only means another thread panicked while
        // holding it; the table is never left half-updated.
        let mut table = table.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = table.get(name) {
            return Var(n);
        }
        let text: &'static str = Box::leak(name.into());
        let hash = {
            use std::hash::{BuildHasher, BuildHasherDefault};
            BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(text)
        };
        let number = match text.rsplit_once('.') {
            Some((_, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                n.parse().unwrap_or(0)
            }
            _ => 0,
        };
        let n: &'static Name = Box::leak(Box::new(Name { text, hash, number }));
        table.insert(text, n);
        Var(n)
    }
    pub fn as_str(&self) -> &str {
        self.0.text
    }

    /// The number after the last `.` if that is all the name has after
    /// it (as in the names [`crate::visit::Fresh`] makes), else 0: a
    /// supply of fresh names numbers its names past every number the
    /// function already has, with no set of the names taken.
    #[inline(always)]
    pub fn number(&self) -> u64 {
        self.0.number
    }
}

impl PartialEq for Var {
    #[inline(always)]
    fn eq(&self, other: &Var) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for Var {}

impl std::hash::Hash for Var {
    #[inline(always)]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.0.hash)
    }
}

impl PartialOrd for Var {
    fn partial_cmp(&self, other: &Var) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Var {
    fn cmp(&self, other: &Var) -> std::cmp::Ordering {
        self.0.text.cmp(other.0.text)
    }
}

impl fmt::Debug for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.text)
    }
}

impl fmt::Display for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.text)
    }
}

impl From<&str> for Var {
    fn from(s: &str) -> Var {
        Var::new(s)
    }
}

/// A variable together with its type, as bound by `let`, unpacking, or a
/// parameter list.
#[derive(Clone, Debug, PartialEq)]
pub struct Binder {
    pub var: Var,
    pub ty: Ty,
}

impl Binder {
    pub fn new(var: Var, ty: Ty) -> Binder {
        Binder { var, ty }
    }
}

/// A comparison, of two reals of one float type or of two integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// A bitwise operator on two integers (shifts by a non-negative amount
/// below the bit width).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bit {
    And,
    Or,
    Xor,
    Shl,
    Shr,
}

impl Bit {
    pub const ALL: [Bit; 5] = [Bit::And, Bit::Or, Bit::Xor, Bit::Shl, Bit::Shr];

    /// The Rust operator.
    pub fn symbol(self) -> &'static str {
        match self {
            Bit::And => "&",
            Bit::Or => "|",
            Bit::Xor => "^",
            Bit::Shl => "<<",
            Bit::Shr => ">>",
        }
    }

    /// `x op y` on the interpreter's `i64`s; `None` for a shift amount
    /// outside `0..64`, where Rust panics in debug builds.
    pub fn apply(self, x: i64, y: i64) -> Option<i64> {
        let amount = || u32::try_from(y).ok().filter(|a| *a < 64);
        Some(match self {
            Bit::And => x & y,
            Bit::Or => x | y,
            Bit::Xor => x ^ y,
            Bit::Shl => x << amount()?,
            Bit::Shr => x >> amount()?,
        })
    }
}

impl Cmp {
    pub const ALL: [Cmp; 6] = [Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge, Cmp::Eq, Cmp::Ne];

    pub fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
        }
    }

    /// The Rust operator.
    pub fn symbol(self) -> &'static str {
        match self {
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
        }
    }
}

/// What a primitive's operands and result are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Reals of one float type (the result has the operands' type).
    Real,
    Int,
    Bool,
    /// Reals of one float type, or integers (comparisons).
    Ordered,
    /// A real of the named type.
    RealOf(Float),
    /// A real, then an integer (`powin`).
    RealInt,
}

/// The non-linear primitives. Each costs 1 (section 4.3). The real ones take
/// and return scalars of one float type (`Powi` carries its integer
/// exponent); the others compute on integers and booleans, compare, or
/// convert between integers and reals ([`Prim::kinds`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prim {
    Add,
    Sub,
    Mul,
    Div,
    Neg,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Atan2,
    Sinh,
    Cosh,
    Tanh,
    Exp,
    Exp2,
    Ln,
    Log2,
    Log10,
    Sqrt,
    Cbrt,
    Powi(i32),
    Powf,
    Recip,
    Abs,
    Hypot,
    Min,
    Max,
    Ln1p,
    ExpM1,
    Asinh,
    Acosh,
    Atanh,
    /// `floor`, `ceil`, `round`, `trunc`: piecewise constant, derivative
    /// zero (where it exists).
    Floor,
    Ceil,
    Round,
    Trunc,
    /// `copysign(x, s)`: `|x|` with the sign of `s`; differentiable in `x`
    /// (`signum(x)·signum(s)`), piecewise constant in `s`.
    Copysign,
    /// `x % y` on reals (truncated: the sign of `x`) and `x.rem_euclid(y)`
    /// (never negative). Both are `x - q·y` for an integer `q` that is
    /// piecewise constant: the derivative is `ẋ - q·ẏ`.
    Rem,
    RemEuclid,
    /// `signum(x)`: ±1 (Rust's convention: `signum(±0.0) = ±1.0`). Piecewise
    /// constant; it appears in the derivative of `abs`.
    Signum,
    /// `le(a, b)`: 1 if `a <= b`, else 0. Piecewise constant; it selects the
    /// active branch in the derivatives of `min` and `max`.
    Le,
    /// Integer arithmetic (wrapping, as i64, in the interpreter; division
    /// and remainder by zero are errors).
    IAdd,
    ISub,
    IMul,
    IDiv,
    IRem,
    INeg,
    /// Bitwise operators on integers (`&`, `|`, `^`, `<<`, `>>`, and `!`
    /// as `inot`), as i64 in the interpreter.
    IBit(Bit),
    INot,
    /// A comparison, giving a bool.
    Cmp(Cmp),
    And,
    Or,
    Not,
    /// An integer as a real of the given type (`i as f64`).
    ToReal(Float),
    /// A real truncated to an integer (`x as i64`): piecewise constant.
    ToInt,
    /// `powin(x, n)`: `x.powi(n)` with an integer exponent computed at run
    /// time (a real; differentiable in `x`).
    PowiN,
}

impl Prim {
    /// Every real primitive, for tests that must cover them all.
    pub const ALL: [Prim; 43] = [
        Prim::Add,
        Prim::Sub,
        Prim::Mul,
        Prim::Div,
        Prim::Neg,
        Prim::Sin,
        Prim::Cos,
        Prim::Tan,
        Prim::Asin,
        Prim::Acos,
        Prim::Atan,
        Prim::Atan2,
        Prim::Sinh,
        Prim::Cosh,
        Prim::Tanh,
        Prim::Exp,
        Prim::Exp2,
        Prim::Ln,
        Prim::Log2,
        Prim::Log10,
        Prim::Sqrt,
        Prim::Cbrt,
        Prim::Powi(3),
        Prim::Powf,
        Prim::Recip,
        Prim::Abs,
        Prim::Hypot,
        Prim::Min,
        Prim::Max,
        Prim::Signum,
        Prim::Le,
        Prim::Ln1p,
        Prim::ExpM1,
        Prim::Asinh,
        Prim::Acosh,
        Prim::Atanh,
        Prim::Floor,
        Prim::Ceil,
        Prim::Round,
        Prim::Trunc,
        Prim::Copysign,
        Prim::Rem,
        Prim::RemEuclid,
    ];

    /// The primitives on integers and booleans, comparisons and
    /// conversions, and `powin` (reals with an integer operand).
    pub const DISCRETE: [Prim; 24] = [
        Prim::IAdd,
        Prim::ISub,
        Prim::IMul,
        Prim::IDiv,
        Prim::IRem,
        Prim::INeg,
        Prim::IBit(Bit::And),
        Prim::IBit(Bit::Or),
        Prim::IBit(Bit::Xor),
        Prim::IBit(Bit::Shl),
        Prim::IBit(Bit::Shr),
        Prim::INot,
        Prim::Cmp(Cmp::Lt),
        Prim::Cmp(Cmp::Le),
        Prim::Cmp(Cmp::Gt),
        Prim::Cmp(Cmp::Ge),
        Prim::Cmp(Cmp::Eq),
        Prim::Cmp(Cmp::Ne),
        Prim::And,
        Prim::Or,
        Prim::Not,
        Prim::ToReal(Float::F64),
        Prim::ToInt,
        Prim::PowiN,
    ];

    /// The kinds of the operands and of the result.
    pub fn kinds(self) -> (Kind, Kind) {
        match self {
            Prim::IAdd
            | Prim::ISub
            | Prim::IMul
            | Prim::IDiv
            | Prim::IRem
            | Prim::INeg
            | Prim::IBit(_)
            | Prim::INot => (Kind::Int, Kind::Int),
            Prim::Cmp(_) => (Kind::Ordered, Kind::Bool),
            Prim::And | Prim::Or | Prim::Not => (Kind::Bool, Kind::Bool),
            Prim::ToReal(f) => (Kind::Int, Kind::RealOf(f)),
            Prim::ToInt => (Kind::Real, Kind::Int),
            Prim::PowiN => (Kind::RealInt, Kind::Real),
            Prim::Add
            | Prim::Sub
            | Prim::Mul
            | Prim::Div
            | Prim::Neg
            | Prim::Sin
            | Prim::Cos
            | Prim::Tan
            | Prim::Asin
            | Prim::Acos
            | Prim::Atan
            | Prim::Atan2
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
            | Prim::Powi(_)
            | Prim::Powf
            | Prim::Recip
            | Prim::Abs
            | Prim::Hypot
            | Prim::Min
            | Prim::Max
            | Prim::Signum
            | Prim::Le
            | Prim::Ln1p
            | Prim::ExpM1
            | Prim::Asinh
            | Prim::Acosh
            | Prim::Atanh
            | Prim::Floor
            | Prim::Ceil
            | Prim::Round
            | Prim::Trunc
            | Prim::Copysign
            | Prim::Rem
            | Prim::RemEuclid => (Kind::Real, Kind::Real),
        }
    }

    /// The result type, given the type of the first operand (which fixes
    /// the float type of real results).
    pub fn result_ty(self, first: Option<&Ty>) -> Ty {
        let real = || {
            first
                .cloned()
                .filter(|t| t.float().is_some())
                .unwrap_or(Ty::F64)
        };
        match self.kinds().1 {
            Kind::Int => Ty::Int,
            Kind::Bool | Kind::Ordered => Ty::Bool,
            Kind::RealOf(f) => Ty::Real(f),
            Kind::Real | Kind::RealInt => real(),
        }
    }

    /// Whether this primitive computes on reals to a real (the ones J has a
    /// derivative rule for; the others are piecewise constant).
    pub fn is_real(self) -> bool {
        self.kinds() == (Kind::Real, Kind::Real)
    }

    /// Number of operands.
    pub fn arity(self) -> usize {
        match self {
            Prim::Add
            | Prim::Sub
            | Prim::Mul
            | Prim::Div
            | Prim::Atan2
            | Prim::Powf
            | Prim::Hypot
            | Prim::Min
            | Prim::Max
            | Prim::Le
            | Prim::Copysign
            | Prim::Rem
            | Prim::RemEuclid
            | Prim::IAdd
            | Prim::ISub
            | Prim::IMul
            | Prim::IDiv
            | Prim::IRem
            | Prim::IBit(_)
            | Prim::Cmp(_)
            | Prim::And
            | Prim::Or
            | Prim::PowiN => 2,
            Prim::Neg
            | Prim::INeg
            | Prim::INot
            | Prim::Not
            | Prim::ToReal(_)
            | Prim::ToInt
            | Prim::Sin
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
            | Prim::Powi(_)
            | Prim::Recip
            | Prim::Abs
            | Prim::Signum
            | Prim::Ln1p
            | Prim::ExpM1
            | Prim::Asinh
            | Prim::Acosh
            | Prim::Atanh
            | Prim::Floor
            | Prim::Ceil
            | Prim::Round
            | Prim::Trunc => 1,
        }
    }

    /// The name used by the text syntax for primitives written as calls
    /// (`sin(x)`); the arithmetic operators are written infix.
    pub fn name(self) -> &'static str {
        match self {
            Prim::Add => "add",
            Prim::Sub => "sub",
            Prim::Mul => "mul",
            Prim::Div => "div",
            Prim::Neg => "neg",
            Prim::Sin => "sin",
            Prim::Cos => "cos",
            Prim::Tan => "tan",
            Prim::Asin => "asin",
            Prim::Acos => "acos",
            Prim::Atan => "atan",
            Prim::Atan2 => "atan2",
            Prim::Sinh => "sinh",
            Prim::Cosh => "cosh",
            Prim::Tanh => "tanh",
            Prim::Exp => "exp",
            Prim::Exp2 => "exp2",
            Prim::Ln => "ln",
            Prim::Log2 => "log2",
            Prim::Log10 => "log10",
            Prim::Sqrt => "sqrt",
            Prim::Cbrt => "cbrt",
            Prim::Powi(_) => "powi",
            Prim::Powf => "powf",
            Prim::Recip => "recip",
            Prim::Abs => "abs",
            Prim::Hypot => "hypot",
            Prim::Min => "min",
            Prim::Max => "max",
            Prim::Signum => "signum",
            Prim::Ln1p => "ln_1p",
            Prim::ExpM1 => "exp_m1",
            Prim::Asinh => "asinh",
            Prim::Acosh => "acosh",
            Prim::Atanh => "atanh",
            Prim::Floor => "floor",
            Prim::Ceil => "ceil",
            Prim::Round => "round",
            Prim::Trunc => "trunc",
            Prim::Copysign => "copysign",
            Prim::Rem => "rem",
            Prim::RemEuclid => "rem_euclid",
            Prim::Le => "le",
            Prim::IAdd => "iadd",
            Prim::ISub => "isub",
            Prim::IMul => "imul",
            Prim::IDiv => "idiv",
            Prim::IRem => "irem",
            Prim::INeg => "ineg",
            Prim::IBit(Bit::And) => "iand",
            Prim::IBit(Bit::Or) => "ior",
            Prim::IBit(Bit::Xor) => "ixor",
            Prim::IBit(Bit::Shl) => "ishl",
            Prim::IBit(Bit::Shr) => "ishr",
            Prim::INot => "inot",
            Prim::Cmp(Cmp::Lt) => "lt",
            Prim::Cmp(Cmp::Le) => "leq",
            Prim::Cmp(Cmp::Gt) => "gt",
            Prim::Cmp(Cmp::Ge) => "geq",
            Prim::Cmp(Cmp::Eq) => "eq",
            Prim::Cmp(Cmp::Ne) => "ne",
            Prim::And => "and",
            Prim::Or => "or",
            Prim::Not => "not",
            Prim::ToReal(Float::F64) => "f64",
            Prim::ToReal(Float::F32) => "f32",
            Prim::ToReal(Float::Generic) => "float",
            Prim::ToInt => "int",
            Prim::PowiN => "powin",
        }
    }

    /// The primitive written `name(..)` in the text syntax, if any. `powi`
    /// is parsed separately because of its integer operand.
    pub fn from_call_name(name: &str) -> Option<Prim> {
        if name == "f32" {
            return Some(Prim::ToReal(Float::F32));
        }
        if name == "float" {
            return Some(Prim::ToReal(Float::Generic));
        }
        Prim::ALL
            .iter()
            .chain(&Prim::DISCRETE)
            .copied()
            .find(|p| p.name() == name && !matches!(p, Prim::Powi(_)))
    }

    /// Evaluates the primitive on scalar operands of the right kinds;
    /// `None` on operands of the wrong kinds or an integer division by zero.
    pub fn eval_scalars(self, a: &[Scalar]) -> Option<Scalar> {
        use Scalar::{Bool as B, Int as I, Real as R};
        Some(match (self, a) {
            (Prim::IAdd, [I(x), I(y)]) => I(x.wrapping_add(*y)),
            (Prim::ISub, [I(x), I(y)]) => I(x.wrapping_sub(*y)),
            (Prim::IMul, [I(x), I(y)]) => I(x.wrapping_mul(*y)),
            (Prim::IDiv, [I(x), I(y)]) => I(x.checked_div(*y)?),
            (Prim::IRem, [I(x), I(y)]) => I(x.checked_rem(*y)?),
            (Prim::INeg, [I(x)]) => I(x.wrapping_neg()),
            (Prim::IBit(b), [I(x), I(y)]) => I(b.apply(*x, *y)?),
            (Prim::INot, [I(x)]) => I(!x),
            (Prim::Cmp(c), [R(x), R(y)]) => B(c.holds(x, y)),
            (Prim::Cmp(c), [I(x), I(y)]) => B(c.holds(x, y)),
            (Prim::And, [B(x), B(y)]) => B(*x && *y),
            (Prim::Or, [B(x), B(y)]) => B(*x || *y),
            (Prim::Not, [B(x)]) => B(!x),
            (Prim::ToReal(_), [I(x)]) => R(*x as f64),
            (Prim::ToInt, [R(x)]) => I(*x as i64),
            (Prim::PowiN, [R(x), I(n)]) => R(x.powi(i32::try_from(*n).ok()?)),
            (p, _) if p.is_real() => {
                let xs = a
                    .iter()
                    .map(|s| match s {
                        R(x) => Some(*x),
                        I(_) | B(_) => None,
                    })
                    .collect::<Option<Vec<f64>>>()?;
                if xs.len() != p.arity() {
                    return None;
                }
                R(p.eval(&xs))
            }
            _ => return None,
        })
    }

    /// Evaluates a real primitive on f64 operands (NaN for the others,
    /// which [`Prim::eval_scalars`] computes).
    pub fn eval(self, a: &[f64]) -> f64 {
        match self {
            Prim::Add => a[0] + a[1],
            Prim::Sub => a[0] - a[1],
            Prim::Mul => a[0] * a[1],
            Prim::Div => a[0] / a[1],
            Prim::Neg => -a[0],
            Prim::Sin => a[0].sin(),
            Prim::Cos => a[0].cos(),
            Prim::Tan => a[0].tan(),
            Prim::Asin => a[0].asin(),
            Prim::Acos => a[0].acos(),
            Prim::Atan => a[0].atan(),
            Prim::Atan2 => a[0].atan2(a[1]),
            Prim::Sinh => a[0].sinh(),
            Prim::Cosh => a[0].cosh(),
            Prim::Tanh => a[0].tanh(),
            Prim::Exp => a[0].exp(),
            Prim::Exp2 => a[0].exp2(),
            Prim::Ln => a[0].ln(),
            Prim::Log2 => a[0].log2(),
            Prim::Log10 => a[0].log10(),
            Prim::Sqrt => a[0].sqrt(),
            Prim::Cbrt => a[0].cbrt(),
            Prim::Powi(n) => a[0].powi(n),
            Prim::Powf => a[0].powf(a[1]),
            Prim::Recip => a[0].recip(),
            Prim::Abs => a[0].abs(),
            Prim::Hypot => a[0].hypot(a[1]),
            Prim::Min => a[0].min(a[1]),
            Prim::Max => a[0].max(a[1]),
            Prim::Signum => a[0].signum(),
            Prim::Ln1p => a[0].ln_1p(),
            Prim::ExpM1 => a[0].exp_m1(),
            Prim::Asinh => a[0].asinh(),
            Prim::Acosh => a[0].acosh(),
            Prim::Atanh => a[0].atanh(),
            Prim::Floor => a[0].floor(),
            Prim::Ceil => a[0].ceil(),
            Prim::Round => a[0].round(),
            Prim::Trunc => a[0].trunc(),
            Prim::Copysign => a[0].copysign(a[1]),
            Prim::Rem => a[0] % a[1],
            Prim::RemEuclid => a[0].rem_euclid(a[1]),
            Prim::Le => {
                if a[0] <= a[1] {
                    1.0
                } else {
                    0.0
                }
            }
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
            | Prim::PowiN => f64::NAN,
        }
    }
}

/// A scalar value, as primitives see it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Real(f64),
    Int(i64),
    Bool(bool),
}

/// One binding in a block (paper: the binding half of `let` and of the two
/// unpacking forms).
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `let v..: τ..; v̇..: τ̇.. = rhs in …`, the multi-value let.
    Let {
        nl: Vec<Binder>,
        lin: Vec<Binder>,
        rhs: Expr,
    },
    /// `let ⊗(w..): ⊗(τ..); = v in …`, unpacking a non-linear tuple.
    Unpack { vars: Vec<Binder>, tuple: Var },
    /// `let ;⊗(ẇ..): ⊗(τ̇..) = v̇ in …`, unpacking a linear tuple.
    LinUnpack { vars: Vec<Binder>, tuple: Var },
}

/// Expressions (paper, Fig. 2), in A-normal form.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A run of bindings and the expression they scope over.
    Block { stmts: Vec<Stmt>, tail: Box<Expr> },
    /// Multi-value return `(v..; v̇..)`; also plain variables.
    Ret { nl: Vec<Var>, lin: Vec<Var> },
    /// `f(v..; v̇..)`.
    App {
        func: Var,
        nl: Vec<Var>,
        lin: Vec<Var>,
    },
    /// A real literal.
    Lit { value: f64, float: Float },
    /// A non-linear value computed outside the IR: an inactive Rust
    /// expression, referred to by name (a prelude variable, or code kept in
    /// place by lowering), reading the non-linear variables `args` (none for
    /// a prelude value). It has a zero tangent; with no arguments it behaves
    /// as a literal (cost 0), with arguments as a primitive (cost 1).
    Const { name: Var, args: Vec<Var>, ty: Ty },
    /// Non-linear tuple constructor `⊗(v..)`.
    Tup(Vec<Var>),
    /// A non-linear primitive applied to variables.
    Prim { prim: Prim, args: Vec<Var> },
    /// The linear zero `0̇_τ`.
    LinZero(Ty),
    /// Linear tuple constructor `⊗(v̇..)`.
    LinTup(Vec<Var>),
    /// Linear addition `v̇1 + v̇2`.
    LinAdd(Var, Var),
    /// Linear negation `-v̇` (scaling by -1; kept as a form of its own so
    /// that subtraction costs what it costs).
    LinNeg(Var),
    /// Right-linear scaling `v * v̇` by a non-linear scalar.
    LinScale(Var, Var),
    /// Explicit linear fan-out `dup(v̇)`, two linear results.
    Dup(Var),
    /// Explicit `drop(e)`, no results.
    Drop(Box<Expr>),
    /// An integer literal.
    Int(i64),
    /// A boolean literal.
    Bool(bool),
    /// Injection of `val` as alternative `tag` of the sum type `sum`.
    Inj { sum: Ty, tag: usize, val: Var },
    /// Selection: on a `bool` scrutinee, arm 0 runs if it is true and arm 1
    /// if it is false (neither binds anything); on a `sum(τ..)` scrutinee,
    /// arm k runs on alternative k and binds its value.
    Case { scrut: Var, arms: Vec<Arm> },
    /// A loop (a scan); see [`Loop`].
    Loop(Box<Loop>),
    /// `arr[idx]`: the element of a non-linear array at an integer index
    /// (out of bounds is an error, a panic in generated Rust).
    Index { arr: Var, idx: Var },
    /// `len(arr)`: the length of a non-linear array, an integer.
    Len(Var),
    /// `lindex(ȧ, i)`: the element of linear array `ȧ` at index `i`. It
    /// reads `ȧ` in place without consuming it (invariant 11), so any
    /// number of reads cost one operation each; its transpose is an
    /// accumulation into the array's cotangent at `i`.
    LinIndex { arr: Var, idx: Var },
    /// `laccum(ā, i, v̇)`: the linear array `ā` with `v̇` added to its
    /// element `i`, consuming both; an in-place `ā[i] += v̇` in generated
    /// Rust. Its transpose reads the cotangent at `i` ([`Expr::LinIndex`]).
    LinAccum { arr: Var, idx: Var, val: Var },
    /// `fill(n, v)`: a fresh array of `n` copies of the non-linear value
    /// `v` (`vec![v; n]` in Rust), of type `array(τ)`; `fill(n, v; N)`, of
    /// type `array(τ; N)`, when `n` is the constant `N` (`[v; N]`). An
    /// owned, local array, which [`Expr::Set`] then writes in place.
    Fill {
        len: Var,
        val: Var,
        size: Option<u64>,
    },
    /// `set(a, i, v)`: the array `a` with element `i` replaced by `v`. It
    /// consumes `a`, which nothing reads afterwards (invariant 11), so
    /// generated Rust writes `a[i] = v` in place.
    Set { arr: Var, idx: Var, val: Var },
    /// `lzeros(τ, n)`: a linear array of type `τ` (an array of vectors) of `n` zeros, the
    /// tangent of a fresh array. Its transpose frees the cotangent
    /// ([`Expr::LinFree`]).
    LinZeros { ty: Ty, len: Var },
    /// `lset(ȧ, i, v̇)`: the linear array `ȧ` with element `i` replaced by
    /// `v̇`, consuming both (the old element is discarded, as a linear
    /// `drop`). Its transpose reads the cotangent at `i` and zeroes it
    /// there: `v̄ = lindex(ā, i); ā = lset(ā, i, 0)`.
    LinSet { arr: Var, idx: Var, val: Var },
    /// `lfree(ȧ, n)`: consumes a linear array of length `n` and returns
    /// nothing: the end of a local array's tangent. Its transpose creates
    /// the accumulator, `lzeros(τ, n)`, which is why it keeps the length.
    LinFree { arr: Var, len: Var },
    /// `push(a, v)`: the local array `a` with `v` appended, consuming `a`
    /// (as [`Expr::Set`] does): `Vec::push` in place in generated Rust.
    Push { arr: Var, val: Var },
    /// `pop(a)`: two results, `a` without its last element and that
    /// element, consuming `a`. L's form of [`Expr::LinPop`]; no surface
    /// syntax lowers to it.
    Pop { arr: Var },
    /// `lpush(ȧ, v̇)`: the tangent of `push`, consuming both. Its
    /// transpose is [`Expr::LinPop`].
    LinPush { arr: Var, val: Var },
    /// `lpop(ā)`: two linear results, `ā` without its last element and
    /// that element, consuming `ā`: the transpose of `lpush`, whose
    /// transpose it is in turn. Reversed pushes pop the cotangents off the
    /// buffer in reverse order, as a hand-written adjoint of a loop that
    /// pushes does.
    LinPop { arr: Var },
}

/// One arm of a [`Expr::Case`].
#[derive(Clone, Debug, PartialEq)]
pub struct Arm {
    /// The alternative's value, for a case on a sum.
    pub bind: Option<Binder>,
    pub body: Expr,
}

/// A loop: `iter` runs `body` with the carried state bound, once per
/// iteration. The body returns the next state's non-linear values, then one
/// value per collected output, then the next state's linear values; the
/// loop returns the final state's non-linear values, one list per collected
/// output (the per-iteration values in iteration order), then the final
/// linear values.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    pub iter: Iter,
    /// Carried non-linear state: binder inside the body, initial value.
    pub nl: Vec<(Binder, Var)>,
    /// Carried linear state: binder inside the body, initial value.
    pub lin: Vec<(Binder, Var)>,
    /// Types of the per-iteration non-linear outputs collected into lists.
    pub collect: Vec<Ty>,
    /// The loop is the identity on its state whenever every carried real
    /// (every state component of type `real`; the others are arrays) is
    /// zero on entry, so it need not run: generated code and the
    /// interpreter skip it then. T sets it on the reverse of a loop whose
    /// linear state is all reals: the reversed body is linear in their
    /// cotangents and only accumulates into the arrays it carries, so
    /// zero cotangents add nothing (a cotangent that is zero at run time,
    /// as a `min` or a branch leaves it, skips the whole reversed loop).
    /// Written `zeroskip` after `collect(..)`; see [`crate::check`],
    /// invariant 12, for what passes must keep.
    pub zero_skip: bool,
    pub body: Expr,
}

/// How a loop iterates.
#[derive(Clone, Debug, PartialEq)]
pub enum Iter {
    /// `index` over `(lo..hi).step_by(step)` (step 1 if `None`), in
    /// reverse order if `rev`; the bounds and step are integers. `trip` is
    /// the number of iterations where the front end knows it at compile
    /// time (literal bounds and step): the lists the loop collects then
    /// have that length in their type.
    Range {
        index: Binder,
        lo: Var,
        hi: Var,
        step: Option<Var>,
        rev: bool,
        trip: Option<u64>,
    },
    /// `elem` over the elements of a list, in reverse order if `rev`.
    Each { elem: Binder, list: Var, rev: bool },
    /// `index` over a range, as [`Iter::Range`] (descending if `desc`), in
    /// step with `elem` over a list of one element per index: the list's
    /// k-th element goes with the range's k-th index in the range's
    /// order; the pairs are visited in reverse order if `rev`. U makes the
    /// residual of a range loop one, so that a per-iteration record need
    /// not hold the index: it comes from the range again.
    Zip {
        index: Binder,
        lo: Var,
        hi: Var,
        step: Option<Var>,
        desc: bool,
        elem: Binder,
        list: Var,
        rev: bool,
    },
    /// As long as `cond` (a non-linear expression of the carried
    /// non-linear state and outer non-linear variables, returning a bool)
    /// holds.
    While { cond: Box<Expr> },
    /// `state` over the `count` states `s0 = init`, `s(k+1) = next(sk)`,
    /// in reverse order if `rev`: a list loop whose list is recomputed
    /// instead of stored. `next` is a non-linear expression of `state` and
    /// outer non-linear variables returning one value of `state`'s type.
    /// U's binomial checkpointing makes a loop's residual iterate its
    /// carried state this way; run in reverse, generated code keeps at most
    /// `snapshots` states (the initial one included) and recomputes the
    /// others by Griewank's binomial schedule (`linear_ad`'s `Replay`).
    Replay {
        state: Binder,
        init: Var,
        count: Var,
        next: Box<Expr>,
        snapshots: u32,
        rev: bool,
    },
}

impl Iter {
    /// For a range or a zip without a step: its index, its bounds `lo`
    /// and `hi`, and whether it visits the indices downwards.
    pub fn unit_range(&self) -> Option<(&Var, &Var, &Var, bool)> {
        match self {
            Iter::Range {
                index,
                lo,
                hi,
                step: None,
                rev,
                ..
            } => Some((&index.var, lo, hi, *rev)),
            Iter::Zip {
                index,
                lo,
                hi,
                step: None,
                desc,
                rev,
                ..
            } => Some((&index.var, lo, hi, *desc != *rev)),
            Iter::Range { .. }
            | Iter::Zip { .. }
            | Iter::Each { .. }
            | Iter::While { .. }
            | Iter::Replay { .. } => None,
        }
    }

    /// The header's variables read outside the body, in order.
    pub fn outer_vars(&self) -> Vec<Var> {
        match self {
            Iter::Range { lo, hi, step, .. } => {
                let mut v = vec![lo.clone(), hi.clone()];
                v.extend(step.iter().cloned());
                v
            }
            Iter::Each { list, .. } => vec![list.clone()],
            Iter::Zip {
                lo, hi, step, list, ..
            } => {
                let mut v = vec![lo.clone(), hi.clone()];
                v.extend(step.iter().cloned());
                v.push(list.clone());
                v
            }
            Iter::While { .. } => vec![],
            Iter::Replay { init, count, .. } => vec![init.clone(), count.clone()],
        }
    }

    /// The variables the header binds for the body: none, one, or a
    /// zipped loop's index and element.
    pub fn binders(&self) -> Vec<&Binder> {
        match self {
            Iter::Range { index, .. } => vec![index],
            Iter::Each { elem, .. } => vec![elem],
            Iter::Zip { index, elem, .. } => vec![index, elem],
            Iter::While { .. } => vec![],
            Iter::Replay { state, .. } => vec![state],
        }
    }

    /// The expression the header evaluates per iteration: a `while`
    /// loop's condition (in the scope of the carried non-linear state) or a
    /// replay's `next` (in the scope of its state binder only).
    pub fn header_expr(&self) -> Option<&Expr> {
        match self {
            Iter::While { cond } => Some(cond),
            Iter::Replay { next, .. } => Some(next),
            Iter::Range { .. } | Iter::Each { .. } | Iter::Zip { .. } => None,
        }
    }

    /// [`Iter::header_expr`], mutably.
    pub fn header_expr_mut(&mut self) -> Option<&mut Expr> {
        match self {
            Iter::While { cond } => Some(cond),
            Iter::Replay { next, .. } => Some(next),
            Iter::Range { .. } | Iter::Each { .. } | Iter::Zip { .. } => None,
        }
    }

    /// The header with the variables it reads renamed by `var` (binders
    /// and the header expression kept as they are).
    pub fn rename_vars(&self, var: impl Fn(&Var) -> Var) -> Iter {
        match self {
            Iter::Range {
                index,
                lo,
                hi,
                step,
                rev,
                trip,
            } => Iter::Range {
                index: index.clone(),
                lo: var(lo),
                hi: var(hi),
                step: step.as_ref().map(&var),
                rev: *rev,
                trip: *trip,
            },
            Iter::Each { elem, list, rev } => Iter::Each {
                elem: elem.clone(),
                list: var(list),
                rev: *rev,
            },
            Iter::Zip {
                index,
                lo,
                hi,
                step,
                desc,
                elem,
                list,
                rev,
            } => Iter::Zip {
                index: index.clone(),
                lo: var(lo),
                hi: var(hi),
                step: step.as_ref().map(&var),
                desc: *desc,
                elem: elem.clone(),
                list: var(list),
                rev: *rev,
            },
            Iter::While { cond } => Iter::While { cond: cond.clone() },
            Iter::Replay { .. } => {
                let mut it = self.clone();
                if let Iter::Replay { init, count, .. } = &mut it {
                    *init = var(init);
                    *count = var(count);
                }
                it
            }
        }
    }

    /// The same iteration in the opposite order, if it has one (a `while`
    /// loop runs forwards only).
    pub fn reversed(&self) -> Option<Iter> {
        match self {
            Iter::Range {
                index,
                lo,
                hi,
                step,
                rev,
                trip,
            } => Some(Iter::Range {
                index: index.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                step: step.clone(),
                rev: !rev,
                trip: *trip,
            }),
            Iter::Each { elem, list, rev } => Some(Iter::Each {
                elem: elem.clone(),
                list: list.clone(),
                rev: !rev,
            }),
            Iter::Zip { .. } => {
                let mut it = self.clone();
                if let Iter::Zip { rev, .. } = &mut it {
                    *rev = !*rev;
                }
                Some(it)
            }
            Iter::While { .. } => None,
            Iter::Replay { .. } => {
                let mut it = self.clone();
                if let Iter::Replay { rev, .. } = &mut it {
                    *rev = !*rev;
                }
                Some(it)
            }
        }
    }
}

impl Loop {
    /// Whether a [`Loop::zero_skip`] loop's state is all reals or arrays
    /// with at least one real: what its skipping condition reads.
    pub fn skippable_state(&self) -> bool {
        let tys = || self.nl.iter().chain(&self.lin).map(|(b, _)| &b.ty);
        tys().all(|t| matches!(t, Ty::Real(_) | Ty::Array(..)))
            && tys().any(|t| matches!(t, Ty::Real(_)))
    }

    /// Result types: final non-linear state and collected lists; final
    /// linear state.
    pub fn result_types(&self) -> (Vec<Ty>, Vec<Ty>) {
        let mut nl: Vec<Ty> = self.nl.iter().map(|(b, _)| b.ty.clone()).collect();
        let trip = match &self.iter {
            Iter::Range { trip, .. } => *trip,
            Iter::Each { .. } | Iter::Zip { .. } | Iter::While { .. } | Iter::Replay { .. } => None,
        };
        nl.extend(
            self.collect
                .iter()
                .map(|t| Ty::List(Box::new(t.clone()), trip)),
        );
        (nl, self.lin.iter().map(|(b, _)| b.ty.clone()).collect())
    }
}

impl Stmt {
    /// `let ; = drop(v)`, for a non-linear `v` nothing else reads.
    pub fn drop_nl(v: &Var) -> Stmt {
        Stmt::Let {
            nl: vec![],
            lin: vec![],
            rhs: Expr::Drop(Box::new(Expr::var(v.clone()))),
        }
    }
}

impl Expr {
    pub fn var(v: Var) -> Expr {
        Expr::Ret {
            nl: vec![v],
            lin: vec![],
        }
    }
    pub fn lin_var(v: Var) -> Expr {
        Expr::Ret {
            nl: vec![],
            lin: vec![v],
        }
    }
    /// A block in canonical form: an empty statement list yields the tail
    /// itself, and a tail that is a block is merged into this one (the text
    /// form cannot tell the two apart, so every pass builds blocks here).
    pub fn block(mut stmts: Vec<Stmt>, tail: Expr) -> Expr {
        match tail {
            Expr::Block { stmts: inner, tail } => {
                stmts.extend(inner);
                Expr::Block { stmts, tail }
            }
            tail if stmts.is_empty() => tail,
            tail => Expr::Block {
                stmts,
                tail: Box::new(tail),
            },
        }
    }
}

/// A function definition `def f(v..: τ..; v̇..: τ̇..) -> (σ..; σ̇..) = e`.
#[derive(Clone, Debug, PartialEq)]
pub struct Func {
    pub name: Var,
    pub nl_params: Vec<Binder>,
    pub lin_params: Vec<Binder>,
    pub nl_rets: Vec<Ty>,
    pub lin_rets: Vec<Ty>,
    pub body: Expr,
}

impl Func {
    /// This function's signature with another body (without copying the
    /// old body).
    pub fn with_body(&self, body: Expr) -> Func {
        Func {
            name: self.name.clone(),
            nl_params: self.nl_params.clone(),
            lin_params: self.lin_params.clone(),
            nl_rets: self.nl_rets.clone(),
            lin_rets: self.lin_rets.clone(),
            body,
        }
    }

    /// A function with no linear parameters or results: the input J
    /// accepts.
    pub fn is_nonlinear(&self) -> bool {
        self.lin_params.is_empty() && self.lin_rets.is_empty()
    }

    pub fn sig(&self) -> Sig {
        Sig {
            nl_params: self.nl_params.iter().map(|b| b.ty.clone()).collect(),
            lin_params: self.lin_params.iter().map(|b| b.ty.clone()).collect(),
            nl_rets: self.nl_rets.clone(),
            lin_rets: self.lin_rets.clone(),
            borrowed: Vec::new(),
        }
    }
}

/// A function defined outside the program (another `#[differentiable]`
/// function, compiled separately): only its signature is known, and the
/// passes map it to the signatures of its derived functions. Written
/// `extern f(τ..; τ̇..) -> (σ..; σ̇..)`.
///
/// Arrays cross by reference (`expand::calls`). A non-linear array
/// parameter may be `constant` (written `const τ`): a `#[nondiff]` array
/// of the callee, which J gives no tangent. A linear array parameter may
/// be `borrowed` (written `borrow τ̇`): the extern reads it in place and
/// does not consume it, as `lindex` does (invariant 11 of
/// [`crate::check`]), and its transpose takes an accumulator for it, after
/// the results' cotangents, and returns it accumulated in the parameter's
/// position among its results. An extern may be `pinned` (written
/// `extern pinned f(..)`): its call also passes Rust values of the
/// caller's prelude, so U never recomputes it in the residual.
#[derive(Clone, Debug, PartialEq)]
pub struct Extern {
    pub name: Var,
    pub nl_params: Vec<Ty>,
    pub lin_params: Vec<Ty>,
    pub nl_rets: Vec<Ty>,
    pub lin_rets: Vec<Ty>,
    /// The positions of the constant non-linear parameters.
    pub constant: Vec<usize>,
    /// The positions of the borrowed linear parameters.
    pub borrowed: Vec<usize>,
    /// Whether its call also passes Rust values the caller's prelude
    /// holds (constants, the origins of structs with constant fields),
    /// which the residual cannot name: U never recomputes it there
    /// (`extern pinned` in text).
    pub pinned: bool,
}

impl Extern {
    /// An extern with no constant or borrowed parameter.
    pub fn plain(
        name: Var,
        (nl_params, lin_params): (Vec<Ty>, Vec<Ty>),
        (nl_rets, lin_rets): (Vec<Ty>, Vec<Ty>),
    ) -> Extern {
        Extern {
            name,
            nl_params,
            lin_params,
            nl_rets,
            lin_rets,
            constant: Vec::new(),
            borrowed: Vec::new(),
            pinned: false,
        }
    }
}

/// The signature of a callee, defined or external.
#[derive(Clone, Debug, PartialEq)]
pub struct Sig {
    pub nl_params: Vec<Ty>,
    pub lin_params: Vec<Ty>,
    pub nl_rets: Vec<Ty>,
    pub lin_rets: Vec<Ty>,
    /// The positions of the linear parameters read in place, not
    /// consumed (an extern's borrowed arrays; none for a function).
    pub borrowed: Vec<usize>,
}

/// An ordered list of definitions, each calling only earlier ones or
/// externs.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Program {
    pub externs: Vec<Extern>,
    pub funcs: Vec<Func>,
}

impl Program {
    pub fn func(&self, name: &str) -> Option<&Func> {
        self.funcs.iter().find(|f| f.name.as_str() == name)
    }

    pub fn extern_(&self, name: &str) -> Option<&Extern> {
        self.externs.iter().find(|f| f.name.as_str() == name)
    }

    /// The positions of the linear parameters function or extern `name`
    /// borrows: reads in place without consuming them
    /// ([`crate::visit::borrowed_params`], [`Extern`]).
    pub fn borrowed(&self, name: &str) -> Vec<usize> {
        match (self.func(name), self.extern_(name)) {
            (Some(f), _) => crate::visit::borrowed_params(f, &|g| self.borrowed(g.as_str())),
            (None, Some(e)) => e.borrowed.clone(),
            (None, None) => Vec::new(),
        }
    }

    /// The signature of function or extern `name`.
    pub fn sig(&self, name: &str) -> Option<Sig> {
        if let Some(f) = self.func(name) {
            return Some(Sig {
                borrowed: self.borrowed(name),
                ..f.sig()
            });
        }
        self.extern_(name).map(|e| Sig {
            nl_params: e.nl_params.clone(),
            lin_params: e.lin_params.clone(),
            nl_rets: e.nl_rets.clone(),
            lin_rets: e.lin_rets.clone(),
            borrowed: e.borrowed.clone(),
        })
    }
}
