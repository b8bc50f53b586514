//! `linear-core`: the Linear A pipeline of "You Only Linearize Once"
//! (Radul, Paszke, Frostig, Johnson, Maclaurin; POPL 2023) as an ordinary
//! library.
//!
//! * [`ir`]: the language (Fig. 2); [`write`] and [`parse`] its text form.
//! * [`check`]: the type system (Fig. 3) and the Linear B restriction
//!   (Def. 6.1).
//! * [`eval`]: an interpreter counting work by the cost model (sec. 4.3).
//! * [`passes`]: forward differentiation J (Fig. 6), unzipping U (Fig. 7),
//!   transposition T (Fig. 10), linearity erasure L (sec. 4.5), and a
//!   simplifier.
//!
//! * [`derive`]: `#[derive(Differentiable)]`; [`layout`]: how macros
//!   read the fields of structs defined elsewhere; [`signature`]: how a
//!   caller reads the signature of a function defined elsewhere;
//!   [`namesake`]: the hidden macro both use, named like its item.
//! * [`lower`]: Rust (syn) to Linear A; [`codegen`]: Linear A to Rust;
//!   [`expand`]: the `#[differentiable]` attribute from tokens to tokens.
//!
//! * [`workload`]: the generated function expansion-cost figures use.
//!
//! The proc-macro crate only forwards to [`expand`]; everything here is
//! testable without rustc.

pub mod check;
pub mod codegen;
pub mod derive;
pub mod eval;
pub mod expand;
pub mod ir;
pub mod layout;
pub mod lower;
pub mod namesake;
pub mod parse;
pub mod passes;
pub mod signature;
pub mod visit;
pub mod workload;
pub mod write;

pub use ir::{Binder, Expr, Float, Func, Prim, Program, Stmt, Ty, Var};
