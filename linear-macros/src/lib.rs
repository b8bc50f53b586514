//! The proc-macro crate: one-line entry points into linear-core.
