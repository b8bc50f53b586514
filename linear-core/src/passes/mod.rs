//! The program transformations, one module each, as free functions from
//! [`Program`](crate::ir::Program) to `Program`.

pub mod erase;
pub mod jvp;
pub mod simplify;
pub mod transpose;
pub mod unzip;

use std::fmt;

use crate::ir::Var;

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
