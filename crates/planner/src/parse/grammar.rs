//! Recursive-descent parser over the lazy token stream, then the checks that need the whole query.
//!
//! ```text
//! query      := (SELECT DISTINCT? projection | ASK) WHERE? '{' triple ('.' triple)* '.'? '}'
//!               (LIMIT n)?
//! projection := '*' | ?var+
//! triple     := term term term
//! term       := ?var | bare-word | quoted-string
//! ```

use std::collections::HashMap;

use super::lex::{Lexer, Tok, Token};
use super::{ParseError, Projection, Query, Span, Spanned, Term, Triple};

const KEYWORDS: [&str; 4] = ["SELECT", "DISTINCT", "WHERE", "LIMIT"];

pub(crate) struct Parser<'a> {
    lexer: Lexer<'a>,
    peeked: Option<Token>,
}

/// Where a term stands in a triple, for error messages.
#[derive(Clone, Copy)]
enum Role {
    Subject,
    Predicate,
    Object,
}

impl Role {
    fn expected(self) -> &'static str {
        match self {
            Role::Subject => "a subject (a ?variable or a concept)",
            Role::Predicate => "a predicate (a ?variable or a relation)",
            Role::Object => "an object (a ?variable or a concept)",
        }
    }
}

fn is_keyword(word: &str, keyword: &str) -> bool {
    word.eq_ignore_ascii_case(keyword)
}

/// Whether a bare word looks like an attempt at a keyword (rather than stray input).
fn looks_like_keyword(word: &str) -> bool {
    word.chars().all(|c| c.is_ascii_alphabetic())
}

impl<'a> Parser<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Parser {
            lexer: Lexer::new(text),
            peeked: None,
        }
    }

    fn peek(&mut self) -> Result<&Token, ParseError> {
        let token = match self.peeked.take() {
            Some(t) => t,
            None => self.lexer.next_token()?,
        };
        Ok(self.peeked.insert(token))
    }

    fn next(&mut self) -> Result<Token, ParseError> {
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.lexer.next_token(),
        }
    }

    /// Consumes the next token if it is the bare word `keyword` (any case).
    fn eat_keyword(&mut self, keyword: &str) -> Result<bool, ParseError> {
        let hit = matches!(&self.peek()?.tok, Tok::Word(w) if is_keyword(w, keyword));
        if hit {
            self.next()?;
        }
        Ok(hit)
    }

    pub(crate) fn query(mut self) -> Result<Query, ParseError> {
        // ASK projects nothing: a yes/no question, as a query without variables is.
        let (distinct, projection) = if self.form()? {
            (false, Projection::Variables(Vec::new()))
        } else {
            (self.eat_keyword("DISTINCT")?, self.projection()?)
        };
        let open = self.where_clause()?;
        let triples = self.triples(open)?;
        let limit = self.limit()?;
        self.end()?;
        let query = Query {
            projection,
            distinct,
            triples,
            limit,
        };
        check_variables(&query)?;
        Ok(query)
    }

    /// The query's first keyword: whether it is `ASK` (else `SELECT`).
    fn form(&mut self) -> Result<bool, ParseError> {
        let t = self.next()?;
        match &t.tok {
            Tok::Word(w) if is_keyword(w, "SELECT") => Ok(false),
            Tok::Word(w) if is_keyword(w, "ASK") => Ok(true),
            Tok::Word(w) if looks_like_keyword(w) => Err(ParseError::at(
                t.span,
                format!("unknown keyword {w:?}: a query starts with SELECT or ASK"),
            )),
            other => Err(ParseError::at(
                t.span,
                format!("expected SELECT or ASK, found {}", other.describe()),
            )),
        }
    }

    fn projection(&mut self) -> Result<Projection, ParseError> {
        if matches!(&self.peek()?.tok, Tok::Word(w) if w == "*") {
            self.next()?;
            return Ok(Projection::All);
        }
        let mut vars = Vec::new();
        while let Tok::Var(_) = self.peek()?.tok {
            let t = self.next()?;
            if let Tok::Var(v) = t.tok {
                vars.push(Spanned {
                    value: v,
                    span: t.span,
                });
            }
        }
        if vars.is_empty() {
            let t = self.peek()?;
            return Err(ParseError::at(
                t.span,
                format!(
                    "expected '*' or at least one ?variable after SELECT, found {}",
                    t.tok.describe()
                ),
            ));
        }
        Ok(Projection::Variables(vars))
    }

    /// An optional `WHERE`, then `{`. Returns the position of the `{`.
    fn where_clause(&mut self) -> Result<Span, ParseError> {
        let has_where = self.eat_keyword("WHERE")?;
        let t = self.next()?;
        match &t.tok {
            Tok::LBrace => Ok(t.span),
            Tok::Word(w) if !has_where && looks_like_keyword(w) => Err(ParseError::at(
                t.span,
                format!("unknown keyword {w:?}: expected WHERE or '{{'"),
            )),
            other => Err(ParseError::at(
                t.span,
                format!(
                    "expected '{{' to open the pattern, found {}",
                    other.describe()
                ),
            )),
        }
    }

    /// Triples up to and including the closing `}`.
    fn triples(&mut self, open: Span) -> Result<Vec<Triple>, ParseError> {
        let mut triples = Vec::new();
        loop {
            if self.peek()?.tok == Tok::RBrace {
                self.next()?;
                break;
            }
            triples.push(self.triple()?);
            let t = self.next()?;
            match t.tok {
                Tok::Dot => {}
                Tok::RBrace => break,
                Tok::Eof => {
                    return Err(ParseError::at(
                        t.span,
                        "expected '.' or '}' after a triple, found the end of the query \
                         (missing '}'?)",
                    ))
                }
                other => {
                    return Err(ParseError::at(
                        t.span,
                        format!(
                            "expected '.' or '}}' after a triple, found {}",
                            other.describe()
                        ),
                    ))
                }
            }
        }
        if triples.is_empty() {
            return Err(ParseError::at(
                open,
                "empty WHERE: the pattern needs at least one triple",
            ));
        }
        Ok(triples)
    }

    fn triple(&mut self) -> Result<Triple, ParseError> {
        Ok(Triple {
            subject: self.term(Role::Subject)?,
            predicate: self.term(Role::Predicate)?,
            object: self.term(Role::Object)?,
        })
    }

    fn term(&mut self, role: Role) -> Result<Spanned<Term>, ParseError> {
        let t = self.next()?;
        let value = match t.tok {
            Tok::Var(v) => Term::Variable(v),
            Tok::Word(w) => Term::Name(w),
            Tok::Quoted(s) if s.is_empty() => {
                return Err(ParseError::at(t.span, "empty name: \"\" names nothing"))
            }
            Tok::Quoted(s) => Term::Name(s),
            Tok::Eof => {
                return Err(ParseError::at(
                    t.span,
                    format!(
                        "expected {}, found the end of the query (missing '}}'?)",
                        role.expected()
                    ),
                ))
            }
            other => {
                return Err(ParseError::at(
                    t.span,
                    format!("expected {}, found {}", role.expected(), other.describe()),
                ))
            }
        };
        Ok(Spanned {
            value,
            span: t.span,
        })
    }

    fn limit(&mut self) -> Result<Option<u64>, ParseError> {
        if !self.eat_keyword("LIMIT")? {
            return Ok(None);
        }
        let t = self.next()?;
        let number = match &t.tok {
            Tok::Word(w) if w.bytes().all(|b| b.is_ascii_digit()) => w.parse::<u64>().ok(),
            _ => None,
        };
        match number {
            Some(n) => Ok(Some(n)),
            None => Err(ParseError::at(
                t.span,
                format!(
                    "LIMIT must be a non-negative integer below 2^64, found {}",
                    t.tok.describe()
                ),
            )),
        }
    }

    fn end(&mut self) -> Result<(), ParseError> {
        let t = self.next()?;
        match &t.tok {
            Tok::Eof => Ok(()),
            Tok::Word(w) if KEYWORDS.iter().any(|k| is_keyword(w, k)) => Err(ParseError::at(
                t.span,
                format!("trailing input: {w:?} cannot appear here"),
            )),
            Tok::Word(w) if looks_like_keyword(w) => Err(ParseError::at(
                t.span,
                format!("unknown keyword {w:?}: only LIMIT may follow the pattern"),
            )),
            other => Err(ParseError::at(
                t.span,
                format!("trailing input after the query: {}", other.describe()),
            )),
        }
    }
}

/// Checks that no variable is both a node and an edge, and that every projected variable occurs in
/// the pattern. O(number of terms).
fn check_variables(q: &Query) -> Result<(), ParseError> {
    let mut nodes: HashMap<&str, Span> = HashMap::new();
    let mut edges: HashMap<&str, Span> = HashMap::new();
    for t in &q.triples {
        for (term, is_edge) in [
            (&t.subject, false),
            (&t.predicate, true),
            (&t.object, false),
        ] {
            let Term::Variable(v) = &term.value else {
                continue;
            };
            let (mine, other) = if is_edge {
                (&mut edges, &nodes)
            } else {
                (&mut nodes, &edges)
            };
            if let Some(first) = other.get(v.as_str()) {
                return Err(clash(v, term.span, is_edge, *first));
            }
            mine.entry(v.as_str()).or_insert(term.span);
        }
    }
    if let Projection::Variables(vars) = &q.projection {
        for v in vars {
            let name = v.value.as_str();
            if !nodes.contains_key(name) && !edges.contains_key(name) {
                return Err(ParseError::at(
                    v.span,
                    format!("?{name} is selected but does not occur in the WHERE pattern"),
                ));
            }
        }
    }
    Ok(())
}

fn clash(v: &str, here: Span, here_is_edge: bool, first: Span) -> ParseError {
    let (now, before) = if here_is_edge {
        ("an edge (predicate)", "a node")
    } else {
        ("a node", "an edge (predicate)")
    };
    ParseError::at(
        here,
        format!(
            "?{v} is used here as {now} but as {before} at line {}, column {}; \
             a variable is either a node or an edge",
            first.line, first.column
        ),
    )
}
