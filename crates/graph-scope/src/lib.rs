//! The graph's find/hide expression language (README, "Find and hide"), one implementation
//! for the server's `hide`/`find` parameters; the console asks the server rather than
//! evaluating its own copy. `tests/expressions.json` is the table both are checked against.
//!
//! ```text
//! expr   := term (('or' | '||') term)*          term := factor (('and' | '&&') factor)*
//! factor := ('!' | 'not') factor | '(' expr ')' | attr op value | flag
//! op     := '=' | '!=' | '>' | '>=' | '<' | '<='
//! ```
//!
//! An expression selects nodes or edges, never both: each attribute belongs to one kind.
//! The semantics are the console's (`host/console/js/find.js`), including JavaScript's
//! number reading (`Number(text)`) and comparison rules, so that the same expression
//! selects the same elements on the same graph JSON.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod eval;
pub mod json;
mod parse;

pub use eval::{EdgeNumber, Field, Flag, Subject, js_number};
pub use parse::{Expr, Kind};

/// An expression that cannot be read; the message says why without repeating the request
/// beyond the token at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ExprError {
    /// Why.
    pub message: String,
}

impl ExprError {
    fn new(message: impl Into<String>) -> Self {
        ExprError { message: message.into() }
    }
}
