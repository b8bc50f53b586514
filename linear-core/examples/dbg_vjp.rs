//! Prints the composed VJP of the last function of a `.la` file, as
//! `order = 2` differentiates it (`passes::hvp::first_vjp` after J, U
//! under the macro's default policy, and T), then J of it:
//! `cargo run -p linear-core --example dbg_vjp -- path/to/f.la`.
use linear_core::passes::{
    hvp::first_vjp, jvp::jvp, simplify::simplify, through::through_all, transpose::transpose,
    unzip::unzip, unzip::Checkpoint,
};

fn main() {
    let path = std::env::args().nth(1).expect("file");
    let src = std::fs::read_to_string(path).expect("read");
    let p = linear_core::parse::parse_program(&src).expect("parse");
    let main = p.funcs.last().expect("a function").name.clone();
    let j = simplify(&jvp(&simplify(&p)).expect("J"));
    let u = simplify(&unzip(&j, Checkpoint::Adjoint).expect("U"));
    let t = simplify(&transpose(&u).expect("T"));
    // Every extern `g` through its VJP `g.vjp` (`passes::through`).
    match first_vjp(&t, main.as_str(), &through_all(&p.externs)) {
        Ok(Some((f, externs))) => {
            let prog = linear_core::Program {
                externs,
                funcs: vec![f],
            };
            println!("{prog}");
            match jvp(&prog) {
                Ok(j) => println!("== J ==\n{}", simplify(&j)),
                Err(e) => println!("J: {e}"),
            }
        }
        Ok(None) => println!("refused: the VJP keeps a tape J cannot differentiate"),
        Err(e) => println!("error: {e}"),
    }
}
