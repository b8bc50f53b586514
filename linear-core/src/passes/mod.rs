//! The program transformations, one module each, as free functions from
//! [`Program`](crate::ir::Program) to `Program`.

pub mod erase;
pub mod jvp;
pub mod simplify;
pub mod transpose;
pub mod unzip;

use std::fmt;

use rustc_hash::FxHashMap as HashMap;

use crate::ir::{Ty, Var};

/// The type a pass recorded for `v` in function `func`, or an error naming
/// it (a pass given ill-typed input, or a bug: never a panic).
pub(crate) fn type_of(types: &HashMap<Var, Ty>, func: &Var, v: &Var) -> Result<Ty, PassError> {
    types
        .get(v)
        .cloned()
        .ok_or_else(|| PassError::new(func, &format!("no type for `{v}`")))
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
