//! The paper's running example, f(u) = -sin(u), through every stage of the
//! pipeline: Fig. 5 (J), Fig. 8 (U), Fig. 9 (T), printed in the IR's text
//! form, then evaluated.
//!
//! Run with `cargo run -p linear-core --example paper`.

use std::collections::HashMap;

use linear_core::check::{check, check_linear_b};
use linear_core::eval::{run, Value};
use linear_core::parse::parse_program;
use linear_core::passes::{jvp::jvp, simplify::simplify, transpose::transpose, unzip};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let source = "
def f(u: f64;) -> (f64;) =
  let v: f64; = sin(u) in
  let w: f64; = -v in
  (w;)
";
    let p = parse_program(source)?;
    check(&p)?;
    println!("== source (Fig. 5, left) ==\n{p}");

    let j = jvp(&p)?;
    check(&j)?;
    println!("== J(f) (Fig. 5, right) ==\n{j}");

    let u = unzip::unzip(&j, unzip::Checkpoint::SaveAll)?;
    check_linear_b(&u)?;
    println!("== U(J(f)): forward pass and linear residual (Fig. 8) ==\n{u}");

    let t = transpose(&u)?;
    check_linear_b(&t)?;
    let t = simplify(&t);
    check_linear_b(&t)?;
    println!("== T of the residual (Fig. 9, right; simplified) ==\n{t}");

    let no_consts = HashMap::new();
    let x = 0.7_f64;
    let fwd = run(&u, "f.jvp.nl", &[Value::Real(x)], &[], &no_consts)?;
    let tape = fwd.nl[1].clone();
    let back = run(&t, "f.jvp.lin.t", &[tape], &[Value::Real(1.0)], &no_consts)?;
    println!("f({x}) = {:?}", fwd.nl[0]);
    println!(
        "f'({x}) by reverse mode = {:?}; -cos({x}) = {}",
        back.lin[0],
        -x.cos()
    );
    Ok(())
}
