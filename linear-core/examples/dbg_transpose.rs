//! Prints T(simplify(U(simplify(J)))) of a `.la` file under save-all: the
//! linear residuals and their transposes, for reading a failing theorem
//! case by hand.
fn main() {
    use linear_core::passes::{jvp::jvp, simplify::simplify, transpose::transpose, unzip};
    let path = std::env::args().nth(1).expect("file");
    let src = std::fs::read_to_string(path).expect("read");
    let p = linear_core::parse::parse_program(&src).expect("parse");
    let j = simplify(&jvp(&p).expect("J"));
    let u = simplify(&unzip::unzip(&j, unzip::Checkpoint::SaveAll).expect("U"));
    let t = simplify(&transpose(&u).expect("T"));
    for f in t.funcs.iter().filter(|f| f.name.as_str().contains(".lin")) {
        println!("{f}");
    }
}
