//! The query language: the basic graph pattern of SPARQL.
//!
//! ```text
//! SELECT [DISTINCT] ?a ?b | * [WHERE] { ?a IsA animal . ?a ?r "chocolate cake" . } [LIMIT n]
//! ASK [WHERE] { ?a IsA animal . ?a AtLocation home }
//! ```
//!
//! Lexical rules (all positions are 1-based lines and columns counted in `char`s):
//! - Keywords (`SELECT`, `ASK`, `DISTINCT`, `WHERE`, `LIMIT`) are case-insensitive. `WHERE` may be
//!   left out, as in SPARQL. Inside `{ }` keywords are not special: a bare `limit` or `ask` there is
//!   a concept.
//! - `#` starts a comment to the end of the line (outside quoted strings).
//! - `?name` is a variable; the name is letters, digits and `_` (any script).
//! - A quoted string (`"..."` or `'...'`) is a concept or relation name; escapes are `\"`, `\'`, `\\`,
//!   `\n` and `\t`; a string cannot span lines.
//! - A bare word is a run of characters other than whitespace and `{ } " ' # ?`, with two refinements
//!   that make natural-language names work unquoted:
//!   - a `.` belongs to the word only when the next character could continue the word, so
//!     `dog.n.01` and `3.5` are one word while the `.` of `animal.` or `animal.}` separates triples
//!     (write `"st."` or `st..` for a name that ends in a dot);
//!   - a `'` after the first character is part of the word (`baha'i`, `bull's-eye`); only a `'` that
//!     starts a token opens a string.
//! - A token that starts with `.` is always the triple separator.

mod grammar;
mod lex;
#[cfg(test)]
mod tests;

use std::fmt;

use thiserror::Error;

/// A position in the query text: 1-based line and column, the column counted in `char`s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    pub line: usize,
    pub column: usize,
}

/// A value with the position where it starts.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Spanned<T> {
    pub value: T,
    pub span: Span,
}

/// A subject, predicate or object of a triple.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Term {
    /// `?name` (the name without the `?`).
    Variable(String),
    /// A concept (subject, object) or relation (predicate) name, bare or quoted.
    Name(String),
}

/// One `subject predicate object` pattern.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Triple {
    pub subject: Spanned<Term>,
    pub predicate: Spanned<Term>,
    pub object: Spanned<Term>,
}

/// What `SELECT` returns.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Projection {
    /// `SELECT *`: every variable, in order of first appearance.
    All,
    /// The listed variables (names without the `?`), in the order given.
    Variables(Vec<Spanned<String>>),
}

/// A parsed query: checked for syntax, for projected variables that occur in the pattern and for
/// variables used both as node and as edge, but not yet resolved against a graph.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Query {
    pub projection: Projection,
    pub distinct: bool,
    /// At least one.
    pub triples: Vec<Triple>,
    pub limit: Option<u64>,
}

/// A syntax error at a position of the query text.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("line {line}, column {column}: {message}")]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl ParseError {
    pub(crate) fn at(span: Span, message: impl Into<String>) -> Self {
        ParseError {
            line: span.line,
            column: span.column,
            message: message.into(),
        }
    }

    /// The message followed by the offending line of `source` with a caret under the column.
    pub fn render(&self, source: &str) -> String {
        render_at(source, self.line, self.column, &self.to_string())
    }
}

/// Characters of the query shown on each side of an error's column.
const WINDOW: usize = 40;

/// The longest message shown whole; a longer one (quoting a huge token) keeps its two ends.
const MAX_MESSAGE: usize = 240;

/// `message`, then line `line` of `source` with a caret under `column` (both 1-based). A long line
/// shows a window of [`WINDOW`] characters either side of the column, with `...` where it is cut.
///
/// Tabs before the column are kept in the caret line so that the caret lines up in a terminal.
pub(crate) fn render_at(source: &str, line: usize, column: usize, message: &str) -> String {
    let text = source.lines().nth(line.saturating_sub(1)).unwrap_or("");
    let at = column.saturating_sub(1);
    let start = at.saturating_sub(WINDOW);
    let shown: String = text.chars().skip(start).take(2 * WINDOW).collect();
    let before = if start > 0 { "..." } else { "" };
    let after = if text.chars().count() > start + 2 * WINDOW {
        "..."
    } else {
        ""
    };
    let pad: String = before
        .chars()
        .chain(shown.chars().take(at - start))
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let gutter = " ".repeat(line.to_string().len());
    format!(
        "{}\n{line} | {before}{shown}{after}\n{gutter} | {pad}^",
        shorten(message)
    )
}

/// `message`, or its first and last parts around `...` when it is longer than [`MAX_MESSAGE`].
fn shorten(message: &str) -> std::borrow::Cow<'_, str> {
    let n = message.chars().count();
    if n <= MAX_MESSAGE {
        return message.into();
    }
    let head: String = message.chars().take(MAX_MESSAGE / 2).collect();
    let tail: String = message.chars().skip(n - MAX_MESSAGE / 2).collect();
    format!("{head}...{tail}").into()
}

/// Parses one query. O(length of `text`).
pub fn parse(text: &str) -> Result<Query, ParseError> {
    grammar::Parser::new(text).query()
}

impl Term {
    /// The text of the term as it would be written in a query (`?x`, `IsA`, `"ice cream"`).
    pub fn to_query_text(&self) -> String {
        match self {
            Term::Variable(v) => format!("?{v}"),
            Term::Name(n) => quote_if_needed(n),
        }
    }
}

/// `name` bare when it would lex back as the same single bare word, otherwise quoted with escapes.
/// O(length of `name`).
pub fn quote_if_needed(name: &str) -> String {
    if lex::is_bare_word(name) {
        name.to_owned()
    } else {
        let mut out = String::with_capacity(name.len() + 2);
        out.push('"');
        for c in name.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }
}

impl fmt::Display for Query {
    /// A canonical rendering that parses back to the same query (positions aside).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.projection {
            // What `ASK` parses to.
            Projection::Variables(vars) if vars.is_empty() => f.write_str("ASK")?,
            p => {
                f.write_str("SELECT ")?;
                if self.distinct {
                    f.write_str("DISTINCT ")?;
                }
                match p {
                    Projection::All => f.write_str("*")?,
                    Projection::Variables(vars) => {
                        let names: Vec<String> =
                            vars.iter().map(|v| format!("?{}", v.value)).collect();
                        f.write_str(&names.join(" "))?;
                    }
                }
            }
        }
        f.write_str(" WHERE {")?;
        for t in &self.triples {
            write!(
                f,
                " {} {} {} .",
                t.subject.value.to_query_text(),
                t.predicate.value.to_query_text(),
                t.object.value.to_query_text()
            )?;
        }
        f.write_str(" }")?;
        if let Some(n) = self.limit {
            write!(f, " LIMIT {n}")?;
        }
        Ok(())
    }
}
