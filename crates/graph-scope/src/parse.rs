//! Reading an expression: tokens as the console's tokenizer cuts them, then a recursive
//! descent with its precedence (`not` over `and` over `or`) and its error cases.

use crate::ExprError;
use crate::eval::{Attr, Flag, Op, js_number};

/// What an expression selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Nodes (boxes included).
    Node,
    /// Edges.
    Edge,
}

impl Kind {
    /// `node` or `edge`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Node => "node",
            Kind::Edge => "edge",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Ast {
    Or(Box<Ast>, Box<Ast>),
    And(Box<Ast>, Box<Ast>),
    Not(Box<Ast>),
    Flag(Flag),
    Cmp { attr: Attr, op: Op, raw: String, num: Option<f64> },
}

/// A compiled expression: what it selects and the test.
#[derive(Debug, Clone)]
pub struct Expr {
    pub(crate) kind: Kind,
    pub(crate) ast: Ast,
}

#[derive(Debug)]
struct Token {
    v: String,
    quoted: bool,
    /// 1-based character position, for messages that do not repeat the request.
    at: usize,
}

const PUNCT: [&str; 11] = ["||", "&&", "!=", ">=", "<=", "=", ">", "<", "!", "(", ")"];

/// `\w` of JavaScript regular expressions (ASCII).
fn word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The console's tokenizer: `\s*(\|\||&&|!=|>=|<=|=|>|<|!|\(|\)|%?[A-Za-z_][\w.\-*]*|
/// -?\d+(?:\.\d+)?|"[^"]*")`, applied until only white space is left.
fn tokenize(text: &str) -> Result<Vec<Token>, ExprError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        if i >= chars.len() {
            return Ok(out);
        }
        let at = i + 1;
        let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
        if let Some(p) = PUNCT.iter().find(|p| rest.starts_with(**p)) {
            out.push(Token { v: (*p).to_string(), quoted: false, at });
            i += p.chars().count();
            continue;
        }
        let start = i;
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let ident_start = |c: char| c.is_ascii_alphabetic() || c == '_';
        if ident_start(c) || (c == '%' && next.is_some_and(ident_start)) {
            i += if c == '%' { 2 } else { 1 };
            while i < chars.len() && (word(chars[i]) || matches!(chars[i], '.' | '-' | '*')) {
                i += 1;
            }
        } else if c.is_ascii_digit() || (c == '-' && next.is_some_and(|n| n.is_ascii_digit())) {
            i += 1;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            if chars.get(i) == Some(&'.') && chars.get(i + 1).is_some_and(char::is_ascii_digit) {
                i += 1;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
        } else if c == '"' {
            let Some(len) = chars[i + 1..].iter().position(|&c| c == '"') else {
                return Err(ExprError::new(format!("a quote at character {at} is not closed")));
            };
            out.push(Token { v: chars[i + 1..i + 1 + len].iter().collect(), quoted: true, at });
            i += len + 2;
            continue;
        } else {
            return Err(ExprError::new(format!("cannot read the expression from character {at}")));
        }
        out.push(Token { v: chars[start..i].iter().collect(), quoted: false, at });
    }
}

/// The most tokens an expression may have (a long real one has a few dozen).
pub const MAX_TOKENS: usize = 256;

struct Parser {
    toks: Vec<Token>,
    i: usize,
    kind: Option<Kind>,
}

impl Parser {
    fn peek(&self) -> Option<&str> {
        self.toks.get(self.i).map(|t| t.v.as_str())
    }
    /// The next token as a keyword: unquoted, lower-cased.
    fn keyword(&self) -> Option<String> {
        self.toks.get(self.i).filter(|t| !t.quoted).map(|t| t.v.to_lowercase())
    }
    fn claim(&mut self, k: Kind, at: usize) -> Result<(), ExprError> {
        match self.kind {
            Some(had) if had != k => Err(ExprError::new(format!(
                "the attribute at character {at} is an {} attribute after {} attributes; an \
                 expression selects nodes or edges, not both",
                k.as_str(),
                had.as_str()
            ))),
            _ => {
                self.kind = Some(k);
                Ok(())
            }
        }
    }
    fn expr(&mut self) -> Result<Ast, ExprError> {
        let mut left = self.term()?;
        while matches!(self.keyword().as_deref(), Some("or" | "||")) {
            self.i += 1;
            left = Ast::Or(Box::new(left), Box::new(self.term()?));
        }
        Ok(left)
    }
    fn term(&mut self) -> Result<Ast, ExprError> {
        let mut left = self.factor()?;
        while matches!(self.keyword().as_deref(), Some("and" | "&&")) {
            self.i += 1;
            left = Ast::And(Box::new(left), Box::new(self.factor()?));
        }
        Ok(left)
    }
    fn factor(&mut self) -> Result<Ast, ExprError> {
        let Some(t) = self.peek() else {
            return Err(ExprError::new("the expression ends too early"));
        };
        if t == "!" || self.keyword().as_deref() == Some("not") {
            self.i += 1;
            return Ok(Ast::Not(Box::new(self.factor()?)));
        }
        if t == "(" {
            let at = self.toks[self.i].at;
            self.i += 1;
            let e = self.expr()?;
            if self.peek() != Some(")") {
                return Err(ExprError::new(format!("the “(” at character {at} is not closed")));
            }
            self.i += 1;
            return Ok(e);
        }
        let (name, at) = (self.toks[self.i].v.to_lowercase(), self.toks[self.i].at);
        self.i += 1;
        if let Some(op) = self.peek().and_then(Op::parse) {
            self.i += 1;
            let Some(value) = self.toks.get(self.i) else {
                return Err(ExprError::new(format!(
                    "the comparison at character {at} needs a value"
                )));
            };
            let raw = value.v.clone();
            self.i += 1;
            let Some(attr) = Attr::parse(&name) else {
                return Err(ExprError::new(format!(
                    "unknown attribute at character {at}; node attributes: {}; edge \
                     attributes: {}",
                    Attr::NODE_NAMES,
                    Attr::EDGE_NAMES
                )));
            };
            self.claim(attr.kind(), at)?;
            let num = js_number(&raw);
            let num = (!raw.is_empty() && num.is_finite()).then_some(num);
            return Ok(Ast::Cmp { attr, op, raw, num });
        }
        let Some(flag) = Flag::parse(&name) else {
            return Err(ExprError::new(format!(
                "unknown attribute or flag at character {at}; node flags: {}; edge flags: {}",
                Flag::NODE_NAMES,
                Flag::EDGE_NAMES
            )));
        };
        self.claim(flag.kind(), at)?;
        Ok(Ast::Flag(flag))
    }
}

impl Expr {
    /// Reads an expression (README, "Find and hide").
    pub fn parse(text: &str) -> Result<Expr, ExprError> {
        let toks = tokenize(text)?;
        // The parser, evaluation and drop all recurse once per nesting level, and a request
        // line may hold some 30,000 "(": a bound on the parts keeps every depth small.
        if toks.len() > MAX_TOKENS {
            return Err(ExprError::new(format!("the expression has more than {MAX_TOKENS} parts")));
        }
        let mut p = Parser { toks, i: 0, kind: None };
        let ast = p.expr()?;
        if let Some(t) = p.toks.get(p.i) {
            return Err(ExprError::new(format!("unexpected token at character {}", t.at)));
        }
        // Every factor claims a kind, and an expression has at least one.
        let kind = p.kind.unwrap_or(Kind::Node);
        Ok(Expr { kind, ast })
    }

    /// Whether the expression selects nodes or edges.
    pub fn kind(&self) -> Kind {
        self.kind
    }
}
