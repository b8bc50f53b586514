//! Prints U (save-all) of J of a `.la` file, J unsimplified as the theorem
//! tests run it.
fn main() {
    let path = std::env::args().nth(1).expect("file");
    let src = std::fs::read_to_string(path).expect("read");
    let p = linear_core::parse::parse_program(&src).expect("parse");
    let j = linear_core::passes::jvp::jvp(&p).expect("J");
    let policy = match std::env::args().nth(2).as_deref() {
        Some("state") => linear_core::passes::unzip::Checkpoint::LoopState,
        Some("cheap") => linear_core::passes::unzip::Checkpoint::RecomputeCheap,
        Some("binomial") => linear_core::passes::unzip::Checkpoint::Binomial { snapshots: 2 },
        _ => linear_core::passes::unzip::Checkpoint::SaveAll,
    };
    let u = linear_core::passes::unzip::unzip(&j, policy).expect("U");
    println!("{u}");
}
