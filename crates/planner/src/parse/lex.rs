//! Tokens of the query language with their positions (see the module docs of `parse` for the rules).

use super::{ParseError, Span};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    /// `?name`, without the `?`.
    Var(String),
    Word(String),
    Quoted(String),
    LBrace,
    RBrace,
    Dot,
    Eof,
}

impl Tok {
    /// How an error message names the token.
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Var(v) => format!("?{v}"),
            Tok::Word(w) => format!("{w:?}"),
            Tok::Quoted(s) => format!("the string {s:?}"),
            Tok::LBrace => "'{'".into(),
            Tok::RBrace => "'}'".into(),
            Tok::Dot => "'.'".into(),
            Tok::Eof => "the end of the query".into(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    pub tok: Tok,
    pub span: Span,
}

/// Whether `c` may appear in a bare word (a `'` only after its first character, a `.` only when
/// followed by such a character: see [`Lexer::word`]).
fn word_char(c: char) -> bool {
    !c.is_whitespace() && !matches!(c, '{' | '}' | '"' | '\'' | '#' | '?')
}

fn var_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `name` lexes as exactly one bare word equal to itself (so it needs no quotes).
pub(crate) fn is_bare_word(name: &str) -> bool {
    let mut lexer = Lexer::new(name);
    matches!(lexer.next_token(), Ok(Token { tok: Tok::Word(w), .. }) if w == name)
        && matches!(lexer.next_token(), Ok(Token { tok: Tok::Eof, .. }))
}

/// A lazy tokenizer: the parser pulls one token at a time, so a lexical error after a syntax error
/// never hides the earlier one.
pub(crate) struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    line: usize,
    column: usize,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(src: &'a str) -> Self {
        Lexer {
            src,
            pos: 0,
            line: 1,
            column: 1,
        }
    }

    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn peek_second(&self) -> Option<char> {
        self.src[self.pos..].chars().nth(1)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn span(&self) -> Span {
        Span {
            line: self.line,
            column: self.column,
        }
    }

    /// Skips whitespace and `#` comments.
    fn skip_trivia(&mut self) {
        while let Some(c) = self.peek() {
            if c.is_whitespace() {
                self.bump();
            } else if c == '#' {
                while self.peek().is_some_and(|c| c != '\n') {
                    self.bump();
                }
            } else {
                break;
            }
        }
    }

    pub(crate) fn next_token(&mut self) -> Result<Token, ParseError> {
        self.skip_trivia();
        let span = self.span();
        let tok = match self.peek() {
            None => Tok::Eof,
            Some('{') => self.single(Tok::LBrace),
            Some('}') => self.single(Tok::RBrace),
            Some('.') => self.single(Tok::Dot),
            Some('?') => self.variable(span)?,
            Some(q @ ('"' | '\'')) => self.quoted(q, span)?,
            Some(_) => self.word(),
        };
        Ok(Token { tok, span })
    }

    fn single(&mut self, tok: Tok) -> Tok {
        self.bump();
        tok
    }

    fn variable(&mut self, span: Span) -> Result<Tok, ParseError> {
        self.bump();
        let start = self.pos;
        while self.peek().is_some_and(var_char) {
            self.bump();
        }
        if start == self.pos {
            return Err(ParseError::at(
                span,
                "expected a variable name (letters, digits, '_') after '?'",
            ));
        }
        Ok(Tok::Var(self.src[start..self.pos].to_owned()))
    }

    /// A bare word. The first character is a word character other than `.` (the caller checked).
    fn word(&mut self) -> Tok {
        let start = self.pos;
        self.bump();
        while let Some(c) = self.peek() {
            let continues = |c: Option<char>| c.is_some_and(|c| word_char(c) || c == '\'');
            let keep = match c {
                // A dot ends the word unless the word goes on after it (`dog.n.01`, `3.5`).
                '.' => continues(self.peek_second()),
                '\'' => true,
                c => word_char(c),
            };
            if !keep {
                break;
            }
            self.bump();
        }
        Tok::Word(self.src[start..self.pos].to_owned())
    }

    fn quoted(&mut self, quote: char, span: Span) -> Result<Tok, ParseError> {
        self.bump();
        let mut out = String::new();
        loop {
            let escape_span = self.span();
            match self.bump() {
                None | Some('\n') => {
                    return Err(ParseError::at(
                        span,
                        format!("unterminated string: no closing {quote} on this line"),
                    ))
                }
                Some(c) if c == quote => return Ok(Tok::Quoted(out)),
                Some('\\') => out.push(self.escape(escape_span, span, quote)?),
                Some(c) => out.push(c),
            }
        }
    }

    fn escape(&mut self, at: Span, string: Span, quote: char) -> Result<char, ParseError> {
        match self.bump() {
            Some('"') => Ok('"'),
            Some('\'') => Ok('\''),
            Some('\\') => Ok('\\'),
            Some('n') => Ok('\n'),
            Some('t') => Ok('\t'),
            None | Some('\n') => Err(ParseError::at(
                string,
                format!("unterminated string: no closing {quote} on this line"),
            )),
            Some(c) => Err(ParseError::at(
                at,
                format!("unknown escape \\{c} in a string (use \\\" \\' \\\\ \\n or \\t)"),
            )),
        }
    }
}
