//! Reads the text form printed by [`crate::write`] back into a [`Program`].
//!
//! The grammar is the one documented in `write`. Linear and non-linear
//! arithmetic share their spelling; the parser resolves `a + b`, `-a` and
//! `s * a` to the linear forms when their (right) operand was bound in a
//! linear position, so it keeps, per function, the set of linear names in
//! scope. Errors carry a line and column.

use std::collections::HashSet;
use std::fmt;

use crate::ir::{Arm, Binder, Expr, Extern, Float, Func, Iter, Loop, Prim, Program, Stmt, Ty, Var};

#[derive(Clone, Debug, PartialEq)]
pub struct ParseError {
    pub line: usize,
    pub col: usize,
    pub msg: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.msg)
    }
}

impl std::error::Error for ParseError {}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Num(String),
    Punct(&'static str),
    Eof,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Ident(s) | Tok::Num(s) => write!(f, "`{s}`"),
            Tok::Punct(p) => write!(f, "`{p}`"),
            Tok::Eof => f.write_str("end of input"),
        }
    }
}

const PUNCTS: [&str; 16] = [
    "->", "=>", "(", ")", "{", "}", ",", ";", ":", "=", "+", "-", "*", "/", "#", "|",
];

fn lex(src: &str) -> Result<Vec<(Tok, usize, usize)>, ParseError> {
    let mut toks = Vec::new();
    let bytes = src.as_bytes();
    let (mut i, mut line, mut col) = (0, 1, 1);
    while i < bytes.len() {
        let c = bytes[i] as char;
        if c == '\n' {
            i += 1;
            line += 1;
            col = 1;
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            col += 1;
            continue;
        }
        if src[i..].starts_with("//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        if c.is_ascii_alphabetic() || c == '_' {
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'.')
            {
                i += 1;
            }
            toks.push((Tok::Ident(src[start..i].to_string()), line, col));
        } else if c.is_ascii_digit() {
            while i < bytes.len() {
                let b = bytes[i];
                let exp_sign = (b == b'-' || b == b'+') && matches!(bytes[i - 1], b'e' | b'E');
                if b.is_ascii_alphanumeric() || b == b'.' || exp_sign {
                    i += 1;
                } else {
                    break;
                }
            }
            toks.push((Tok::Num(src[start..i].to_string()), line, col));
        } else if let Some(p) = PUNCTS.iter().find(|p| src[i..].starts_with(**p)) {
            i += p.len();
            toks.push((Tok::Punct(p), line, col));
        } else {
            return Err(ParseError {
                line,
                col,
                msg: format!("unexpected character `{c}`"),
            });
        }
        col += i - start;
    }
    toks.push((Tok::Eof, line, col));
    Ok(toks)
}

/// Parses a whole program.
pub fn parse_program(src: &str) -> Result<Program, ParseError> {
    let mut p = Parser {
        toks: lex(src)?,
        pos: 0,
        linear: HashSet::new(),
    };
    let mut funcs = Vec::new();
    let mut externs = Vec::new();
    while p.peek() != &Tok::Eof {
        if p.is_kw("extern") {
            externs.push(p.extern_()?);
        } else {
            funcs.push(p.func()?);
        }
    }
    Ok(Program { externs, funcs })
}

struct Parser {
    toks: Vec<(Tok, usize, usize)>,
    pos: usize,
    linear: HashSet<Var>,
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].0
    }
    fn next(&mut self) -> Tok {
        let t = self.toks[self.pos].0.clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }
    fn err<T>(&self, msg: impl Into<String>) -> Result<T, ParseError> {
        let (_, line, col) = self.toks[self.pos];
        Err(ParseError {
            line,
            col,
            msg: msg.into(),
        })
    }
    fn is(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }
    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s == kw)
    }
    fn eat(&mut self, p: &str) -> bool {
        if self.is(p) {
            self.next();
            true
        } else {
            false
        }
    }
    fn expect(&mut self, p: &str) -> Result<(), ParseError> {
        if self.eat(p) {
            Ok(())
        } else {
            self.err(format!("expected `{p}`, found {}", self.peek()))
        }
    }
    fn expect_kw(&mut self, kw: &str) -> Result<(), ParseError> {
        if self.is_kw(kw) {
            self.next();
            Ok(())
        } else {
            self.err(format!("expected `{kw}`, found {}", self.peek()))
        }
    }
    /// A count written as a plain number, like a replay's snapshots.
    fn count(&mut self) -> Result<u64, ParseError> {
        match self.peek().clone() {
            Tok::Num(n) => match n.parse::<u64>() {
                Ok(k) => {
                    self.next();
                    Ok(k)
                }
                Err(_) => self.err(format!("expected a count, found `{n}`")),
            },
            t => self.err(format!("expected a count, found {t}")),
        }
    }

    fn ident(&mut self) -> Result<Var, ParseError> {
        match self.peek().clone() {
            Tok::Ident(s) => {
                self.next();
                Ok(Var::new(&s))
            }
            t => self.err(format!("expected a name, found {t}")),
        }
    }

    fn func(&mut self) -> Result<Func, ParseError> {
        self.linear.clear();
        self.expect_kw("def")?;
        let name = self.ident()?;
        self.expect("(")?;
        let (nl_params, lin_params) = self.binders(")")?;
        self.expect(")")?;
        self.expect("->")?;
        self.expect("(")?;
        let nl_rets = self.types_until(&[";"])?;
        self.expect(";")?;
        let lin_rets = self.types_until(&[")"])?;
        self.expect(")")?;
        self.expect("=")?;
        let body = self.expr()?;
        Ok(Func {
            name,
            nl_params,
            lin_params,
            nl_rets,
            lin_rets,
            body,
        })
    }

    fn extern_(&mut self) -> Result<Extern, ParseError> {
        self.expect_kw("extern")?;
        // `extern pinned g(..)`; an extern named `pinned` is `extern
        // pinned(..)`.
        let (pinned, name) = match self.is_kw("pinned") {
            true => {
                let word = self.ident()?;
                match self.is("(") {
                    true => (false, word),
                    false => (true, self.ident()?),
                }
            }
            false => (false, self.ident()?),
        };
        self.expect("(")?;
        let (nl_params, constant) = self.marked_types(";", "const")?;
        self.expect(";")?;
        let (lin_params, borrowed) = self.marked_types(")", "borrow")?;
        self.expect(")")?;
        self.expect("->")?;
        self.expect("(")?;
        let nl_rets = self.types_until(&[";"])?;
        self.expect(";")?;
        let lin_rets = self.types_until(&[")"])?;
        self.expect(")")?;
        Ok(Extern {
            name,
            nl_params,
            lin_params,
            nl_rets,
            lin_rets,
            constant,
            borrowed,
            pinned,
        })
    }

    /// Types until `end`, each maybe preceded by the keyword `mark`: the
    /// types, and the positions of the marked ones.
    fn marked_types(&mut self, end: &str, mark: &str) -> Result<(Vec<Ty>, Vec<usize>), ParseError> {
        let (mut ts, mut marked) = (Vec::new(), Vec::new());
        while !self.is(end) {
            if self.is_kw(mark) {
                self.next();
                marked.push(ts.len());
            }
            ts.push(self.ty()?);
            if !self.eat(",") {
                break;
            }
        }
        Ok((ts, marked))
    }

    fn ty(&mut self) -> Result<Ty, ParseError> {
        if self.is_kw("tape") {
            self.next();
            self.expect("(")?;
            let name = self.ident()?;
            self.expect(")")?;
            return Ok(Ty::Tape(name));
        }
        if self.eat("(") {
            let mut ts = Vec::new();
            while !self.is(")") {
                ts.push(self.ty()?);
                if !self.eat(",") {
                    break;
                }
            }
            self.expect(")")?;
            return Ok(Ty::Tuple(ts));
        }
        if self.is_kw("sum") {
            self.next();
            self.expect("(")?;
            let mut ts = vec![self.ty()?];
            while self.eat("|") {
                ts.push(self.ty()?);
            }
            self.expect(")")?;
            return Ok(Ty::Sum(ts));
        }
        if self.is_kw("list") || self.is_kw("array") {
            let array = self.is_kw("array");
            self.next();
            self.expect("(")?;
            let t = Box::new(self.ty()?);
            let len = if self.eat(";") {
                Some(self.count()?)
            } else {
                None
            };
            self.expect(")")?;
            return Ok(if array {
                Ty::Array(t, len)
            } else {
                Ty::List(t, len)
            });
        }
        match self.next() {
            Tok::Ident(s) if s == "f64" => Ok(Ty::F64),
            Tok::Ident(s) if s == "f32" => Ok(Ty::F32),
            Tok::Ident(s) if s == "float" => Ok(Ty::Real(Float::Generic)),
            Tok::Ident(s) if s == "int" => Ok(Ty::Int),
            Tok::Ident(s) if s == "bool" => Ok(Ty::Bool),
            t => {
                self.pos -= 1;
                self.err(format!("expected a type, found {t}"))
            }
        }
    }

    fn types_until(&mut self, ends: &[&str]) -> Result<Vec<Ty>, ParseError> {
        let mut ts = Vec::new();
        while !ends.iter().any(|e| self.is(e)) {
            ts.push(self.ty()?);
            if !self.eat(",") {
                break;
            }
        }
        Ok(ts)
    }

    fn binder_list(&mut self, linear: bool, ends: &[&str]) -> Result<Vec<Binder>, ParseError> {
        let mut bs = Vec::new();
        while !ends.iter().any(|e| self.is(e)) {
            let var = self.ident()?;
            self.expect(":")?;
            let ty = self.ty()?;
            if linear {
                self.linear.insert(var.clone());
            }
            bs.push(Binder { var, ty });
            if !self.eat(",") {
                break;
            }
        }
        Ok(bs)
    }

    /// `nl..; lin..` up to (not including) `end`.
    fn binders(&mut self, end: &str) -> Result<(Vec<Binder>, Vec<Binder>), ParseError> {
        let nl = self.binder_list(false, &[";"])?;
        self.expect(";")?;
        let lin = self.binder_list(true, &[end])?;
        Ok((nl, lin))
    }

    fn var_list(&mut self, ends: &[&str]) -> Result<Vec<Var>, ParseError> {
        let mut vs = Vec::new();
        while !ends.iter().any(|e| self.is(e)) {
            vs.push(self.ident()?);
            if !self.eat(",") {
                break;
            }
        }
        Ok(vs)
    }

    /// `nl..; lin..)` including the closing parenthesis.
    fn args(&mut self) -> Result<(Vec<Var>, Vec<Var>), ParseError> {
        let nl = self.var_list(&[";", ")"])?;
        self.expect(";")?;
        let lin = self.var_list(&[")"])?;
        self.expect(")")?;
        Ok((nl, lin))
    }

    fn expr(&mut self) -> Result<Expr, ParseError> {
        let mut stmts = Vec::new();
        loop {
            if self.is_kw("let") {
                self.next();
                let (nl, lin) = self.binders("=")?;
                self.expect("=")?;
                let rhs = self.expr()?;
                self.expect_kw("in")?;
                stmts.push(Stmt::Let { nl, lin, rhs });
            } else if self.is_kw("unpack") {
                self.next();
                let linear = self.eat(";");
                self.expect("(")?;
                let vars = self.binder_list(linear, &[")"])?;
                self.expect(")")?;
                self.expect("=")?;
                let tuple = self.ident()?;
                self.expect_kw("in")?;
                stmts.push(if linear {
                    Stmt::LinUnpack { vars, tuple }
                } else {
                    Stmt::Unpack { vars, tuple }
                });
            } else {
                break;
            }
        }
        let tail = self.simple()?;
        Ok(Expr::block(stmts, tail))
    }

    fn literal(&mut self, negate: bool) -> Result<Expr, ParseError> {
        let Tok::Num(text) = self.next() else {
            return self.err("expected a number");
        };
        if let Some(d) = text.strip_suffix('i') {
            return match d.parse::<i64>() {
                Ok(n) => Ok(Expr::Int(if negate { -n } else { n })),
                Err(_) => self.err(format!("malformed integer `{text}`")),
            };
        }
        let (digits, float) = if let Some(d) = text.strip_suffix("f32") {
            (d, Float::F32)
        } else if let Some(d) = text.strip_suffix("float") {
            (d, Float::Generic)
        } else {
            (text.strip_suffix("f64").unwrap_or(&text), Float::F64)
        };
        match digits.parse::<f64>() {
            Ok(v) => Ok(Expr::Lit {
                value: if negate { -v } else { v },
                float,
            }),
            Err(_) => self.err(format!("malformed number `{text}`")),
        }
    }

    fn simple(&mut self) -> Result<Expr, ParseError> {
        if self.eat("{") {
            let e = self.expr()?;
            self.expect("}")?;
            // `{ e }` with no statements is just `e`; a block always prints
            // with its statements, so the round trip is unaffected.
            return Ok(e);
        }
        if self.eat("(") {
            let (nl, lin) = self.args()?;
            return Ok(Expr::Ret { nl, lin });
        }
        if self.eat("-") {
            if matches!(self.peek(), Tok::Num(_)) {
                return self.literal(true);
            }
            let a = self.ident()?;
            return Ok(if self.linear.contains(&a) {
                Expr::LinNeg(a)
            } else {
                Expr::Prim {
                    prim: Prim::Neg,
                    args: vec![a],
                }
            });
        }
        if matches!(self.peek(), Tok::Num(_)) {
            return self.literal(false);
        }
        if self.is_kw("case") {
            self.next();
            return self.case();
        }
        if self.is_kw("loop") {
            self.next();
            return self.loop_();
        }
        let name = self.ident()?;
        if !self.is("(") {
            match name.as_str() {
                "true" => return Ok(Expr::Bool(true)),
                "false" => return Ok(Expr::Bool(false)),
                _ => return self.infix(name),
            }
        }
        self.next();
        match name.as_str() {
            "tup" => {
                if self.eat(";") {
                    let vs = self.var_list(&[")"])?;
                    self.expect(")")?;
                    Ok(Expr::LinTup(vs))
                } else {
                    let vs = self.var_list(&[")"])?;
                    self.expect(")")?;
                    Ok(Expr::Tup(vs))
                }
            }
            "zero" => {
                let t = self.ty()?;
                self.expect(")")?;
                Ok(Expr::LinZero(t))
            }
            "const" => {
                let name = self.ident()?;
                let args = if self.eat("(") {
                    let a = self.var_list(&[")"])?;
                    self.expect(")")?;
                    a
                } else {
                    Vec::new()
                };
                self.expect(":")?;
                let ty = self.ty()?;
                self.expect(")")?;
                Ok(Expr::Const { name, args, ty })
            }
            "dup" => {
                let a = self.ident()?;
                self.expect(")")?;
                Ok(Expr::Dup(a))
            }
            "len" | "pop" | "lpop" => {
                let a = self.ident()?;
                self.expect(")")?;
                Ok(match name.as_str() {
                    "len" => Expr::Len(a),
                    "pop" => Expr::Pop { arr: a },
                    _ => Expr::LinPop { arr: a },
                })
            }
            "push" | "lpush" => {
                let arr = self.ident()?;
                self.expect(",")?;
                let val = self.ident()?;
                self.expect(")")?;
                Ok(if name.as_str() == "push" {
                    Expr::Push { arr, val }
                } else {
                    Expr::LinPush { arr, val }
                })
            }
            "index" | "lindex" | "laccum" | "set" | "lset" => {
                let arr = self.ident()?;
                self.expect(",")?;
                let idx = self.ident()?;
                let val = if matches!(name.as_str(), "laccum" | "set" | "lset") {
                    self.expect(",")?;
                    Some(self.ident()?)
                } else {
                    None
                };
                self.expect(")")?;
                Ok(match (name.as_str(), val) {
                    ("index", _) => Expr::Index { arr, idx },
                    ("set", Some(val)) => Expr::Set { arr, idx, val },
                    ("lset", Some(val)) => Expr::LinSet { arr, idx, val },
                    (_, Some(val)) => Expr::LinAccum { arr, idx, val },
                    _ => Expr::LinIndex { arr, idx },
                })
            }
            "fill" | "lfree" => {
                let a = self.ident()?;
                self.expect(",")?;
                let b = self.ident()?;
                if name.as_str() == "lfree" {
                    self.expect(")")?;
                    return Ok(Expr::LinFree { arr: a, len: b });
                }
                let size = if self.eat(";") {
                    match self.next() {
                        Tok::Num(n) => match n.parse::<u64>() {
                            Ok(n) => Some(n),
                            Err(_) => return self.err("`fill`'s size is a whole number"),
                        },
                        _ => return self.err("`fill`'s size is a whole number"),
                    }
                } else {
                    None
                };
                self.expect(")")?;
                Ok(Expr::Fill {
                    len: a,
                    val: b,
                    size,
                })
            }
            "lzeros" => {
                let ty = self.ty()?;
                self.expect(",")?;
                let len = self.ident()?;
                self.expect(")")?;
                Ok(Expr::LinZeros { ty, len })
            }
            "inj" => {
                let val = self.ident()?;
                self.expect(",")?;
                let tag = match self.next() {
                    Tok::Num(n) => n.parse::<usize>().ok(),
                    _ => None,
                };
                let Some(tag) = tag else {
                    return self.err("`inj` takes an alternative number");
                };
                self.expect(",")?;
                let sum = self.ty()?;
                self.expect(")")?;
                Ok(Expr::Inj { sum, tag, val })
            }
            "drop" => {
                let e = self.expr()?;
                self.expect(")")?;
                Ok(Expr::Drop(Box::new(e)))
            }
            "powi" => {
                let a = self.ident()?;
                self.expect(",")?;
                let neg = self.eat("-");
                let n = match self.next() {
                    Tok::Num(s) => s.parse::<i32>().ok(),
                    _ => None,
                };
                let Some(n) = n else {
                    return self.err("`powi` takes an integer exponent");
                };
                self.expect(")")?;
                Ok(Expr::Prim {
                    prim: Prim::Powi(if neg { -n } else { n }),
                    args: vec![a],
                })
            }
            other => {
                if let Some(prim) = Prim::from_call_name(other) {
                    let args = self.var_list(&[")"])?;
                    self.expect(")")?;
                    if args.len() != prim.arity() {
                        return self.err(format!(
                            "`{other}` takes {} operand(s), found {}",
                            prim.arity(),
                            args.len()
                        ));
                    }
                    Ok(Expr::Prim { prim, args })
                } else {
                    let (nl, lin) = self.args()?;
                    Ok(Expr::App {
                        func: name,
                        nl,
                        lin,
                    })
                }
            }
        }
    }

    /// `case v { arm | arm .. }` after `case`.
    fn case(&mut self) -> Result<Expr, ParseError> {
        let scrut = self.ident()?;
        self.expect("{")?;
        let mut arms = Vec::new();
        loop {
            let bind = if self.is_kw("true") || self.is_kw("false") {
                self.next();
                None
            } else {
                let var = self.ident()?;
                self.expect(":")?;
                let ty = self.ty()?;
                Some(Binder { var, ty })
            };
            self.expect("=>")?;
            let body = self.expr()?;
            arms.push(Arm { bind, body });
            if !self.eat("|") {
                break;
            }
        }
        self.expect("}")?;
        Ok(Expr::Case { scrut, arms })
    }

    /// A loop after `loop`: header, `carry(..)`, `collect(..)`, body.
    fn loop_(&mut self) -> Result<Expr, ParseError> {
        let rev = |p: &mut Parser| {
            let r = p.is_kw("rev");
            if r {
                p.next();
            }
            r
        };
        let iter = if self.is_kw("for") || self.is_kw("each") {
            let each = self.is_kw("each");
            self.next();
            let var = self.ident()?;
            self.expect(":")?;
            let ty = self.ty()?;
            self.expect_kw("in")?;
            let b = Binder { var, ty };
            if each {
                let list = self.ident()?;
                Iter::Each {
                    elem: b,
                    list,
                    rev: rev(self),
                }
            } else {
                self.expect_kw("range")?;
                self.expect("(")?;
                let lo = self.ident()?;
                self.expect(",")?;
                let hi = self.ident()?;
                let step = if self.eat(",") {
                    Some(self.ident()?)
                } else {
                    None
                };
                let trip = if self.eat(";") {
                    Some(self.count()?)
                } else {
                    None
                };
                self.expect(")")?;
                let desc = rev(self);
                if self.is_kw("zip") && trip.is_none() {
                    self.next();
                    let var = self.ident()?;
                    self.expect(":")?;
                    let ty = self.ty()?;
                    self.expect_kw("in")?;
                    Iter::Zip {
                        index: b,
                        lo,
                        hi,
                        step,
                        desc,
                        elem: Binder { var, ty },
                        list: self.ident()?,
                        rev: rev(self),
                    }
                } else {
                    Iter::Range {
                        index: b,
                        lo,
                        hi,
                        step,
                        rev: desc,
                        trip,
                    }
                }
            }
        } else if self.is_kw("replay") {
            self.next();
            let var = self.ident()?;
            self.expect(":")?;
            let ty = self.ty()?;
            self.expect_kw("from")?;
            let init = self.ident()?;
            self.expect_kw("count")?;
            let count = self.ident()?;
            self.expect_kw("keep")?;
            let Ok(snapshots) = u32::try_from(self.count()?) else {
                return self.err("too many snapshots");
            };
            self.expect_kw("next")?;
            let next = Box::new(self.simple()?);
            Iter::Replay {
                state: Binder { var, ty },
                init,
                count,
                next,
                snapshots,
                rev: rev(self),
            }
        } else {
            self.expect_kw("while")?;
            Iter::While {
                cond: Box::new(self.simple()?),
            }
        };
        self.expect_kw("carry")?;
        self.expect("(")?;
        let nl = self.carry(false, ";")?;
        self.expect(";")?;
        let lin = self.carry(true, ")")?;
        self.expect(")")?;
        self.expect_kw("collect")?;
        self.expect("(")?;
        let collect = self.types_until(&[")"])?;
        self.expect(")")?;
        let zero_skip = self.is_kw("zeroskip");
        if zero_skip {
            self.next();
        }
        let body = self.simple()?;
        Ok(Expr::Loop(Box::new(Loop {
            iter,
            nl,
            lin,
            collect,
            zero_skip,
            body,
        })))
    }

    fn carry(&mut self, linear: bool, end: &str) -> Result<Vec<(Binder, Var)>, ParseError> {
        let mut out = Vec::new();
        while !self.is(end) {
            let var = self.ident()?;
            self.expect(":")?;
            let ty = self.ty()?;
            self.expect("=")?;
            let init = self.ident()?;
            if linear {
                self.linear.insert(var.clone());
            }
            out.push((Binder { var, ty }, init));
            if !self.eat(",") {
                break;
            }
        }
        Ok(out)
    }

    /// After a leading name: `a + b`, `a - b`, `a * b`, `a / b`, or `a`
    /// alone.
    fn infix(&mut self, a: Var) -> Result<Expr, ParseError> {
        let prim = match self.peek() {
            Tok::Punct("+") => Prim::Add,
            Tok::Punct("-") => Prim::Sub,
            Tok::Punct("*") => Prim::Mul,
            Tok::Punct("/") => Prim::Div,
            // A bare name is shorthand for returning that one variable.
            _ if self.linear.contains(&a) => return Ok(Expr::lin_var(a)),
            _ => return Ok(Expr::var(a)),
        };
        self.next();
        let b = self.ident()?;
        let (a_lin, b_lin) = (self.linear.contains(&a), self.linear.contains(&b));
        Ok(match prim {
            Prim::Add if a_lin => Expr::LinAdd(a, b),
            Prim::Mul if b_lin => Expr::LinScale(a, b),
            _ => Expr::Prim {
                prim,
                args: vec![a, b],
            },
        })
    }
}
