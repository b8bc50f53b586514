//! Compile-time behaviour: rejected inputs and their messages
//! (`tests/ui/<category>/<error-name>.rs` with `.stderr` snapshots), and
//! accepted programs that must compile warning-free and run
//! (`tests/pass`). Regenerate snapshots with `TRYBUILD=overwrite`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/*.rs");
    t.pass("tests/pass/*.rs");
}
