//! Empty: this package exists for `tests/large_function.rs`, which needs a
//! build script of its own, and for no dependency the test does not need.
