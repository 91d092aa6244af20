//! SenticNet 6 (`senticnet/senticnet6.py` from the `senticnet==1.6` wheel on PyPI) to a triples TSV
//! that `gpsense ingest` reads.
//!
//! # The input
//!
//! The module is a Python dict built one assignment per line (200,000 in the real file):
//!
//! ```text
//! senticnet = {}
//! senticnet['ice_cream'] = ['0.8', '0', '0', '0.7', '#joy', '#eagerness', 'positive', '0.75',
//!                           'dessert', 'sweet', 'cone', 'frozen_dessert', 'sundae']
//! ```
//!
//! The 13 values are, in order: the four sentic dimensions (introspection, temper, attitude,
//! sensitivity), the primary mood, the secondary mood, the polarity label, the polarity value, and
//! five semantically related concepts. The real file uses single quotes and no escapes, but the
//! parser reads the Python literal syntax properly so that a re-release does not break it: both
//! quote styles, `r`/`u` prefixes, triple quotes, backslash escapes, adjacent-literal
//! concatenation, comments, lines joined inside brackets, unquoted numbers, and the
//! `name = {'k': [...], ...}` dict display as well as `name['k'] = [...]`. Later assignments to
//! the same key replace earlier ones, as in Python. Every error names the line and column; nothing
//! panics on bad input.
//!
//! # The triples (`relation<TAB>head<TAB>tail`, in file order)
//!
//! For each concept `C`:
//!
//! | relation           | head | tail                                              |
//! |--------------------|------|---------------------------------------------------|
//! | `HasPrimaryMood`   | `C`  | the primary mood as SenticNet writes it (`#joy`)  |
//! | `HasSecondaryMood` | `C`  | the secondary mood (`#eagerness`)                 |
//! | `HasPolarity`      | `C`  | the polarity label (`positive` / `negative`)      |
//! | `RelatedTo`        | `C`  | each semantically related concept, in order       |
//!
//! Names: underscores become spaces and runs of whitespace collapse to one space, trimmed (as
//! ConceptNet-100K writes concepts: `ice cream`); that also keeps tabs and newlines out of the TSV.
//! Moods keep their `#`, which keeps the mood nodes apart from the concepts of the same word
//! (`joy`). Polarity labels stay bare words as SenticNet writes them, so they are the same nodes as
//! the related concepts `positive` and `negative` (217 `RelatedTo` edges in SenticNet 6 point
//! there); the relation labels tell the two uses apart. Distinct keys that normalise to one name
//! (the real file has `'top'` and `'top_'`) make one concept with the triples of both. Each triple
//! is written once: a related concept listed twice, and a concept's `RelatedTo` link to itself,
//! are skipped. A value that is empty after normalisation gives no triple. All of these are counted
//! in [`Stats`]. The numeric values (the four sentic dimensions and the polarity value) are not
//! graph structure and are dropped.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::io::{self, Write};

/// Longest node name `gpsense ingest` accepts (`gpsense_graph::MAX_NAME_LEN`; a test keeps the two
/// equal). Checked here so that a bad name is reported with its line in the Python file, not as an
/// ingest error about a line of the generated TSV.
pub const MAX_NAME_BYTES: usize = 4096;

/// Fewest values an entry may have: 4 sentics, 2 moods, polarity label and value, one related
/// concept.
const MIN_VALUES: usize = 9;

pub const REL_PRIMARY: &str = "HasPrimaryMood";
pub const REL_SECONDARY: &str = "HasSecondaryMood";
pub const REL_POLARITY: &str = "HasPolarity";
pub const REL_RELATED: &str = "RelatedTo";

/// A malformed input, with the 1-based line and column (in characters) where it was noticed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for ParseError {}

fn error<T>(line: usize, column: usize, message: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError {
        line,
        column,
        message: message.into(),
    })
}

/// One concept, its names already normalised (see [`normalise`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Line of the assignment that set it (the last one, if the key was assigned twice).
    pub line: usize,
    pub concept: String,
    pub primary_mood: String,
    pub secondary_mood: String,
    pub polarity: String,
    pub related: Vec<String>,
}

/// The parsed file: records in first-assignment order, as a Python dict keeps them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    pub records: Vec<Record>,
    /// Assignments that replaced an earlier one with the same key.
    pub overridden: usize,
}

/// What [`write_triples`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Distinct concept names written (heads).
    pub concepts: usize,
    /// Keys whose name, once normalised, is that of an earlier key: their triples join its concept.
    pub merged_keys: usize,
    pub triples_by_relation: BTreeMap<&'static str, u64>,
    /// Distinct node names in the output (concepts, related concepts, moods, polarity labels).
    pub nodes: usize,
    pub self_links_skipped: u64,
    /// Triples already written for the same concept (a related concept listed twice, or the same
    /// fact from two merged keys).
    pub repeated_triples_skipped: u64,
    pub empty_values_skipped: u64,
    pub empty_keys_skipped: u64,
}

impl Stats {
    pub fn triples(&self) -> u64 {
        self.triples_by_relation.values().sum()
    }
}

/// Underscores to spaces, whitespace runs (tabs and newlines included) to one space, trimmed.
pub fn normalise(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for word in name
        .split(|c: char| c == '_' || c.is_whitespace())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Parses the bytes of `senticnet6.py`.
pub fn parse(src: &[u8]) -> Result<Parsed, ParseError> {
    let text = decode(src)?;
    let mut parser = Parser::new(&text);
    parser.file()?;
    Ok(parser.book.finish())
}

/// UTF-8 (as Python 3 reads source files by default), without a BOM, newlines as `\n`.
fn decode(src: &[u8]) -> Result<Cow<'_, str>, ParseError> {
    let src = src.strip_prefix(b"\xef\xbb\xbf").unwrap_or(src);
    let text = match std::str::from_utf8(src) {
        Ok(text) => text,
        Err(e) => {
            let good = &src[..e.valid_up_to()];
            let line = 1 + good.iter().filter(|&&b| b == b'\n').count();
            let line_start = good.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
            let column = 1 + String::from_utf8_lossy(&good[line_start..]).chars().count();
            return error(line, column, "invalid UTF-8");
        }
    };
    // Universal newlines, as Python: the lexer then only has to know `\n`.
    if text.contains('\r') {
        Ok(Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n")))
    } else {
        Ok(Cow::Borrowed(text))
    }
}

/// Writes the triples of `parsed` as TSV (see the module docs) to `out`, with a comment header that
/// `gpsense ingest` skips and whose last line names the columns.
pub fn write_triples<W: Write>(parsed: &Parsed, mut out: W) -> io::Result<Stats> {
    writeln!(
        out,
        "# SenticNet 6 (PyPI senticnet==1.6, senticnet/senticnet6.py), \
         converted by `cargo xtask fetch senticnet`."
    )?;
    writeln!(
        out,
        "# SenticNet data has no redistribution licence: never commit this file."
    )?;
    writeln!(out, "#relation\thead\ttail")?;
    let mut stats = Stats::default();
    let mut nodes: HashSet<&str> = HashSet::new();
    for group in concept_groups(parsed, &mut stats) {
        write_concept(&group, &mut out, &mut stats, &mut nodes)?;
    }
    stats.nodes = nodes.len();
    out.flush()?;
    Ok(stats)
}

/// The records grouped by concept name, in first-appearance order. Distinct keys can normalise to
/// one name (`'top'` and `'top_'` in the real file); such a concept is written once,
/// with the triples of all its keys. Records with an empty name are dropped (and counted).
fn concept_groups<'a>(parsed: &'a Parsed, stats: &mut Stats) -> Vec<Vec<&'a Record>> {
    let mut groups: Vec<Vec<&Record>> = Vec::with_capacity(parsed.records.len());
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(parsed.records.len());
    for record in &parsed.records {
        if record.concept.is_empty() {
            stats.empty_keys_skipped += 1;
        } else if let Some(&i) = index.get(record.concept.as_str()) {
            stats.merged_keys += 1;
            groups[i].push(record);
        } else {
            index.insert(&record.concept, groups.len());
            groups.push(vec![record]);
        }
    }
    stats.concepts = groups.len();
    groups
}

/// Writes the triples of one concept (one or more records with the same name), each once.
fn write_concept<'a, W: Write>(
    group: &[&'a Record],
    out: &mut W,
    stats: &mut Stats,
    nodes: &mut HashSet<&'a str>,
) -> io::Result<()> {
    let concept = group[0].concept.as_str();
    let mut written: HashSet<(&'static str, &'a str)> = HashSet::new();
    let mut emit = |rel: &'static str, tail: &'a str, stats: &mut Stats| -> io::Result<()> {
        if tail.is_empty() {
            stats.empty_values_skipped += 1;
        } else if rel == REL_RELATED && tail == concept {
            stats.self_links_skipped += 1;
        } else if !written.insert((rel, tail)) {
            stats.repeated_triples_skipped += 1;
        } else {
            writeln!(out, "{rel}\t{concept}\t{tail}")?;
            *stats.triples_by_relation.entry(rel).or_default() += 1;
            nodes.insert(concept);
            nodes.insert(tail);
        }
        Ok(())
    };
    for r in group {
        emit(REL_PRIMARY, &r.primary_mood, stats)?;
        emit(REL_SECONDARY, &r.secondary_mood, stats)?;
        emit(REL_POLARITY, &r.polarity, stats)?;
        for other in &r.related {
            emit(REL_RELATED, other, stats)?;
        }
    }
    Ok(())
}

/// The dict being built, with Python's semantics for re-assignment and re-binding.
#[derive(Default)]
struct Book {
    /// The dict's variable name, fixed by the first statement.
    name: Option<String>,
    records: Vec<Record>,
    /// Raw key (as Python sees it) to its record.
    index: HashMap<String, usize>,
    overridden: usize,
}

impl Book {
    fn check_name(&mut self, name: &str, line: usize, column: usize) -> Result<(), ParseError> {
        match &self.name {
            None => {
                self.name = Some(name.to_owned());
                Ok(())
            }
            Some(known) if known == name => Ok(()),
            Some(known) => error(
                line,
                column,
                format!("assignment to `{name}`; this file builds `{known}`"),
            ),
        }
    }

    /// `name = {...}` rebinds the variable: whatever was assigned before is gone.
    fn clear(&mut self) {
        self.records.clear();
        self.index.clear();
    }

    /// `name[key] = values`: a key assigned again keeps its place and takes the new values.
    fn insert(&mut self, key: String, values: Vec<String>, line: usize) -> Result<(), ParseError> {
        let record = record(&key, values, line)?;
        match self.index.get(&key) {
            Some(&i) => {
                self.overridden += 1;
                self.records[i] = record;
            }
            None => {
                self.index.insert(key, self.records.len());
                self.records.push(record);
            }
        }
        Ok(())
    }

    fn finish(self) -> Parsed {
        Parsed {
            records: self.records,
            overridden: self.overridden,
        }
    }
}

/// Builds a record from one entry's values, normalising and checking its names.
fn record(key: &str, values: Vec<String>, line: usize) -> Result<Record, ParseError> {
    if values.len() < MIN_VALUES {
        return error(
            line,
            1,
            format!(
                "entry {} has {} values; SenticNet 6 entries have 13 (4 sentic values, \
                 primary and secondary mood, polarity label and value, related concepts), \
                 at least {MIN_VALUES} needed",
                shown(key),
                values.len()
            ),
        );
    }
    let name = |raw: &str| -> Result<String, ParseError> {
        let n = normalise(raw);
        if n.len() > MAX_NAME_BYTES {
            return error(
                line,
                1,
                format!(
                    "a name in entry {} is {} bytes long; gpsense accepts at most {MAX_NAME_BYTES}",
                    shown(key),
                    n.len()
                ),
            );
        }
        Ok(n)
    };
    Ok(Record {
        line,
        concept: name(key)?,
        primary_mood: name(&values[4])?,
        secondary_mood: name(&values[5])?,
        polarity: name(&values[6])?,
        related: values[8..]
            .iter()
            .map(|v| name(v))
            .collect::<Result<_, _>>()?,
    })
}

/// A key for an error message, quoted and cut short.
fn shown(key: &str) -> String {
    const MAX: usize = 60;
    if key.chars().count() <= MAX {
        return format!("{key:?}");
    }
    let head: String = key.chars().take(MAX).collect();
    format!("{head:?}...")
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Num(String),
    Punct(char),
    /// The end of a logical line (newlines inside brackets do not count, as in Python).
    Newline,
    Eof,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("name `{s}`"),
            Tok::Str(s) => format!("string {s:?}"),
            Tok::Num(s) => format!("number {s}"),
            Tok::Punct(c) => format!("`{c}`"),
            Tok::Newline => "end of line".to_owned(),
            Tok::Eof => "end of file".to_owned(),
        }
    }
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
    column: usize,
}

/// Characters with their position; all the lexer needs.
struct Cursor<'a> {
    rest: std::str::Chars<'a>,
    line: usize,
    column: usize,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Self {
        Cursor {
            rest: text.chars(),
            line: 1,
            column: 1,
        }
    }

    fn peek(&self) -> Option<char> {
        self.rest.clone().next()
    }

    fn peek2(&self) -> Option<char> {
        self.rest.clone().nth(1)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.rest.next()?;
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn eat_while(&mut self, mut keep: impl FnMut(char) -> bool) -> String {
        let mut s = String::new();
        while let Some(c) = self.peek().filter(|&c| keep(c)) {
            s.push(c);
            self.bump();
        }
        s
    }
}

struct Lexer<'a> {
    cur: Cursor<'a>,
    /// Bracket nesting: newlines inside brackets join lines.
    depth: usize,
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str) -> Self {
        Lexer {
            cur: Cursor::new(text),
            depth: 0,
        }
    }

    fn next_token(&mut self) -> Result<Token, ParseError> {
        loop {
            self.cur.eat_while(|c| c == ' ' || c == '\t' || c == '\x0c');
            let (line, column) = (self.cur.line, self.cur.column);
            let token = |tok| Ok(Token { tok, line, column });
            let Some(c) = self.cur.peek() else {
                return token(Tok::Eof);
            };
            match c {
                '#' => {
                    self.cur.eat_while(|c| c != '\n');
                }
                '\\' if self.cur.peek2() == Some('\n') => {
                    // Explicit line joining.
                    self.cur.bump();
                    self.cur.bump();
                }
                '\n' => {
                    self.cur.bump();
                    if self.depth == 0 {
                        return token(Tok::Newline);
                    }
                }
                '[' | '{' | '(' | ']' | '}' | ')' | '=' | ':' | ',' | ';' | '-' | '+' => {
                    self.cur.bump();
                    self.track_depth(c);
                    return token(Tok::Punct(c));
                }
                '\'' | '"' => return token(Tok::Str(self.string(false, line, column)?)),
                c if c.is_ascii_digit() || c == '.' => return token(Tok::Num(self.number())),
                c if c.is_alphabetic() || c == '_' => return self.word(line, column),
                c => return error(line, column, format!("unexpected character {c:?}")),
            }
        }
    }

    fn track_depth(&mut self, c: char) {
        match c {
            '[' | '{' | '(' => self.depth += 1,
            // Unbalanced closers are the parser's to report; never underflow here.
            ']' | '}' | ')' => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
    }

    /// A name, or a string with a prefix (`r'..'`, `u'..'`).
    fn word(&mut self, line: usize, column: usize) -> Result<Token, ParseError> {
        let word = self.cur.eat_while(|c| c.is_alphanumeric() || c == '_');
        let quoted = matches!(self.cur.peek(), Some('\'' | '"'));
        let tok = match word.to_ascii_lowercase().as_str() {
            "r" if quoted => Tok::Str(self.string(true, line, column)?),
            "u" if quoted => Tok::Str(self.string(false, line, column)?),
            "b" | "br" | "rb" | "f" | "fr" | "rf" if quoted => {
                return error(
                    line,
                    column,
                    format!("{word}'...' literals are not supported (only plain, r and u strings)"),
                )
            }
            _ => Tok::Ident(word),
        };
        Ok(Token { tok, line, column })
    }

    /// A numeric literal, kept as text (SenticNet quotes its numbers, and they are dropped anyway).
    fn number(&mut self) -> String {
        let mut s = String::new();
        while let Some(c) = self.cur.peek() {
            let exponent_sign = (c == '-' || c == '+') && s.ends_with(['e', 'E']);
            if !(c.is_ascii_alphanumeric() || c == '.' || c == '_' || exponent_sign) {
                break;
            }
            s.push(c);
            self.cur.bump();
        }
        s
    }

    /// A string literal whose opening quote is next; (`line`, `column`) is where it (or its prefix)
    /// starts, for the "unterminated" error.
    fn string(&mut self, raw: bool, line: usize, column: usize) -> Result<String, ParseError> {
        let quote = self.cur.bump().unwrap_or('\'');
        let triple = self.cur.peek() == Some(quote) && self.cur.peek2() == Some(quote);
        if triple {
            self.cur.bump();
            self.cur.bump();
        }
        let unterminated = || error(line, column, "unterminated string");
        let mut s = String::new();
        loop {
            match self.cur.peek() {
                None => return unterminated(),
                Some('\n') if !triple => return unterminated(),
                Some(c) if c == quote => {
                    self.cur.bump();
                    if !triple {
                        return Ok(s);
                    }
                    if self.cur.peek() == Some(quote) && self.cur.peek2() == Some(quote) {
                        self.cur.bump();
                        self.cur.bump();
                        return Ok(s);
                    }
                    s.push(c);
                }
                Some('\\') if raw => {
                    // In a raw string a backslash only stops the next character from ending it.
                    self.cur.bump();
                    s.push('\\');
                    match self.cur.bump() {
                        Some(c) => s.push(c),
                        None => return unterminated(),
                    }
                }
                Some('\\') => self.escape(&mut s, line, column)?,
                Some(c) => {
                    self.cur.bump();
                    s.push(c);
                }
            }
        }
    }

    /// One backslash escape of a non-raw string, appended to `s`.
    fn escape(&mut self, s: &mut String, line: usize, column: usize) -> Result<(), ParseError> {
        let (at_line, at_column) = (self.cur.line, self.cur.column);
        self.cur.bump();
        let Some(c) = self.cur.bump() else {
            return error(line, column, "unterminated string");
        };
        let simple = match c {
            '\n' => return Ok(()), // backslash-newline continues the string
            '\\' | '\'' | '"' => Some(c),
            'n' => Some('\n'),
            't' => Some('\t'),
            'r' => Some('\r'),
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'f' => Some('\x0c'),
            'v' => Some('\x0b'),
            _ => None,
        };
        if let Some(ch) = simple {
            s.push(ch);
            return Ok(());
        }
        let code = match c {
            '0'..='7' => self.octal(c),
            'x' => self.hex(2),
            'u' => self.hex(4),
            'U' => self.hex(8),
            'N' => {
                return error(at_line, at_column, "\\N{...} escapes are not supported");
            }
            _ => {
                // Python keeps unknown escapes as they are.
                s.push('\\');
                s.push(c);
                return Ok(());
            }
        };
        match code.and_then(char::from_u32) {
            Some(ch) => {
                s.push(ch);
                Ok(())
            }
            None => error(
                at_line,
                at_column,
                format!("malformed \\{c} escape in a string"),
            ),
        }
    }

    /// Up to three octal digits, the first already read.
    fn octal(&mut self, first: char) -> Option<u32> {
        let mut value = first.to_digit(8)?;
        for _ in 0..2 {
            match self.cur.peek().and_then(|c| c.to_digit(8)) {
                Some(d) => {
                    value = value * 8 + d;
                    self.cur.bump();
                }
                None => break,
            }
        }
        Some(value)
    }

    /// Exactly `digits` hex digits; `None` if fewer.
    fn hex(&mut self, digits: usize) -> Option<u32> {
        let mut value: u32 = 0;
        for _ in 0..digits {
            let d = self.cur.peek()?.to_digit(16)?;
            self.cur.bump();
            value = value.checked_mul(16)?.checked_add(d)?;
        }
        Some(value)
    }
}

/// A recursive-descent parser over the statements the file may contain.
struct Parser<'a> {
    lexer: Lexer<'a>,
    peeked: Option<Token>,
    book: Book,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Parser {
            lexer: Lexer::new(text),
            peeked: None,
            book: Book::default(),
        }
    }

    fn next(&mut self) -> Result<Token, ParseError> {
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.lexer.next_token(),
        }
    }

    fn peek(&mut self) -> Result<&Tok, ParseError> {
        if self.peeked.is_none() {
            self.peeked = Some(self.lexer.next_token()?);
        }
        Ok(&self.peeked.as_ref().expect("just filled").tok)
    }

    fn expect(&mut self, want: char, context: &str) -> Result<(), ParseError> {
        let t = self.next()?;
        if t.tok == Tok::Punct(want) {
            return Ok(());
        }
        error(
            t.line,
            t.column,
            format!("expected `{want}` {context}, found {}", t.tok.describe()),
        )
    }

    fn file(&mut self) -> Result<(), ParseError> {
        loop {
            let t = self.next()?;
            match t.tok {
                Tok::Eof => return Ok(()),
                Tok::Newline | Tok::Punct(';') => {}
                Tok::Ident(name) => {
                    self.statement(&name, t.line, t.column)?;
                    self.end_of_statement()?;
                }
                other => {
                    return error(
                        t.line,
                        t.column,
                        format!(
                            "expected a statement like `senticnet['concept'] = [...]`, found {}",
                            other.describe()
                        ),
                    )
                }
            }
        }
    }

    /// `name[key] = [values]` or `name = {key: [values], ...}`.
    fn statement(&mut self, name: &str, line: usize, column: usize) -> Result<(), ParseError> {
        self.book.check_name(name, line, column)?;
        let t = self.next()?;
        match t.tok {
            Tok::Punct('[') => {
                let key = self.string("as the key")?;
                self.expect(']', "after the key")?;
                self.expect('=', "after `]`")?;
                let values = self.list()?;
                self.book.insert(key, values, line)
            }
            Tok::Punct('=') => {
                self.expect('{', &format!("after `{name} =` (a dict)"))?;
                self.book.clear();
                self.dict_body()
            }
            other => error(
                t.line,
                t.column,
                format!(
                    "expected `[` or `=` after `{name}`, found {}",
                    other.describe()
                ),
            ),
        }
    }

    fn end_of_statement(&mut self) -> Result<(), ParseError> {
        match self.peek()? {
            Tok::Eof => Ok(()),
            Tok::Newline | Tok::Punct(';') => {
                self.next()?;
                Ok(())
            }
            _ => {
                let t = self.next()?;
                error(
                    t.line,
                    t.column,
                    format!("unexpected {} after the statement", t.tok.describe()),
                )
            }
        }
    }

    /// The entries of a dict display after its `{`, through the closing `}`.
    fn dict_body(&mut self) -> Result<(), ParseError> {
        loop {
            if self.peek()? == &Tok::Punct('}') {
                self.next()?;
                return Ok(());
            }
            let line = self.peeked.as_ref().map_or(0, |t| t.line);
            let key = self.string("as a dict key")?;
            self.expect(':', "after the dict key")?;
            let values = self.list()?;
            self.book.insert(key, values, line)?;
            let t = self.next()?;
            match t.tok {
                Tok::Punct(',') => {}
                Tok::Punct('}') => return Ok(()),
                other => {
                    return error(
                        t.line,
                        t.column,
                        format!(
                            "expected `,` or `}}` in the dict, found {}",
                            other.describe()
                        ),
                    )
                }
            }
        }
    }

    /// One or more adjacent string literals (Python concatenates them).
    fn string(&mut self, what: &str) -> Result<String, ParseError> {
        let t = self.next()?;
        let Tok::Str(mut s) = t.tok else {
            return error(
                t.line,
                t.column,
                format!(
                    "expected a quoted string {what}, found {}",
                    t.tok.describe()
                ),
            );
        };
        while let Tok::Str(more) = self.peek()? {
            s.push_str(more);
            self.next()?;
        }
        Ok(s)
    }

    /// `[value, ...]` with an optional trailing comma; values are strings or (signed) numbers.
    fn list(&mut self) -> Result<Vec<String>, ParseError> {
        self.expect('[', "to open the list of values")?;
        let mut values = Vec::with_capacity(13);
        loop {
            if self.peek()? == &Tok::Punct(']') {
                self.next()?;
                return Ok(values);
            }
            values.push(self.value()?);
            let t = self.next()?;
            match t.tok {
                Tok::Punct(',') => {}
                Tok::Punct(']') => return Ok(values),
                other => {
                    return error(
                        t.line,
                        t.column,
                        format!(
                            "expected `,` or `]` in the list, found {}",
                            other.describe()
                        ),
                    )
                }
            }
        }
    }

    fn value(&mut self) -> Result<String, ParseError> {
        if matches!(self.peek()?, Tok::Str(_)) {
            return self.string("");
        }
        let t = self.next()?;
        match t.tok {
            Tok::Num(n) => Ok(n),
            Tok::Punct(sign @ ('-' | '+')) => {
                let n = self.next()?;
                match n.tok {
                    Tok::Num(digits) => Ok(format!("{sign}{digits}")),
                    other => error(
                        n.line,
                        n.column,
                        format!(
                            "expected a number after `{sign}`, found {}",
                            other.describe()
                        ),
                    ),
                }
            }
            other => error(
                t.line,
                t.column,
                format!("expected a string or a number, found {}", other.describe()),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/senticnet6_sample.py"
    );

    fn parse_str(text: &str) -> Result<Parsed, ParseError> {
        parse(text.as_bytes())
    }

    fn err(text: &str) -> ParseError {
        parse_str(text).expect_err("should be rejected")
    }

    fn convert(parsed: &Parsed) -> (String, Stats) {
        let mut out = Vec::new();
        let stats = write_triples(parsed, &mut out).expect("writing to memory");
        (String::from_utf8(out).expect("utf-8"), stats)
    }

    /// The data lines of a conversion, without the comment header.
    fn data_lines(text: &str) -> Vec<&str> {
        text.lines().filter(|l| !l.starts_with('#')).collect()
    }

    fn entry(key: &str) -> String {
        format!(
            "senticnet['{key}'] = ['0', '0', '0', '0', '#joy', '#calmness', 'positive', '0.5', \
             'a', 'b', 'c', 'd', 'e']\n"
        )
    }

    #[test]
    fn normalises_names() {
        assert_eq!(normalise("ice_cream"), "ice cream");
        assert_eq!(normalise("  top_notch "), "top notch");
        assert_eq!(normalise("a\t_b\nc"), "a b c");
        assert_eq!(normalise("__"), "");
        assert_eq!(normalise("#joy"), "#joy");
        assert_eq!(normalise("four-star"), "four-star");
    }

    #[test]
    fn converts_the_fixture() {
        let bytes = std::fs::read(FIXTURE).expect("fixture");
        let parsed = parse(&bytes).expect("fixture parses");
        assert_eq!(parsed.records.len(), 7);
        assert_eq!(parsed.overridden, 1);
        let ice = &parsed.records[1];
        assert_eq!(ice.concept, "ice cream");
        assert_eq!(ice.line, 4);
        assert_eq!(ice.primary_mood, "#joy");
        assert_eq!(ice.polarity, "positive");
        assert_eq!(
            ice.related,
            ["dessert", "sweet", "cone", "frozen dessert", "sundae"]
        );

        let (text, stats) = convert(&parsed);
        let lines = data_lines(&text);
        assert!(text.starts_with("# SenticNet 6"));
        assert!(text.contains("\n#relation\thead\ttail\n"));
        assert_eq!(lines[0], "HasPrimaryMood\tbirthday party\t#joy");
        assert!(lines.contains(&"RelatedTo\tice cream\tfrozen dessert"));
        assert!(lines.contains(&"HasSecondaryMood\trainy day\t#fear"));
        assert!(lines.contains(&"HasPolarity\trainy day\tnegative"));
        // Escapes and the other quote style.
        assert!(lines.contains(&"RelatedTo\tdon't panic\tkeep \"calm\""));
        assert!(lines.contains(&"RelatedTo\tcafé\tcrème brûlée"));
        // The re-assigned key keeps its first position but the last values.
        assert!(lines.contains(&"HasPrimaryMood\tthunderstorm\t#fear"));
        assert!(!lines.contains(&"HasPrimaryMood\tthunderstorm\t#joy"));
        // Every line is three non-empty tab-separated fields.
        for line in &lines {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), 3, "{line:?}");
            assert!(fields.iter().all(|f| !f.is_empty()), "{line:?}");
        }
        assert_eq!(stats.concepts, 7);
        assert_eq!(stats.self_links_skipped, 1);
        assert_eq!(stats.repeated_triples_skipped, 1);
        assert_eq!(stats.merged_keys, 0);
        assert_eq!(stats.triples_by_relation[REL_PRIMARY], 7);
        assert_eq!(stats.triples_by_relation[REL_RELATED], 33);
        assert_eq!(stats.triples(), lines.len() as u64);
    }

    #[test]
    fn reads_python_literal_syntax() {
        let text = concat!(
            "# comment\n",
            "sn = {}  # trailing comment\n",
            "sn[\"a\\x41\\u00e9\\101\\n_b\"] = [  # open list\n",
            "    '0', 0.5, -1e-3, +2,\n",
            "    '#joy', u'#fear', r'pos\\itive', '1',\n",
            "    'x' \"y\", '''tri'ple''', 'z',\n",
            "]; sn['k'] = ['0','0','0','0','#joy','#joy','positive','0','p']\n",
            "sn['c'] = \\\n  ['0','0','0','0','#joy','#joy','positive','0','q']",
        );
        let parsed = parse_str(text).expect("valid Python");
        assert_eq!(parsed.records.len(), 3);
        let r = &parsed.records[0];
        assert_eq!(r.concept, "aAéA b");
        assert_eq!(r.secondary_mood, "#fear");
        assert_eq!(r.polarity, "pos\\itive");
        assert_eq!(r.related, ["xy", "tri'ple", "z"]);
        assert_eq!(parsed.records[2].line, 8);
    }

    #[test]
    fn dict_display_and_rebinding() {
        let text = format!(
            "{}senticnet = {{\n  'b': ['0','0','0','0','#joy','#joy','positive','0','x'],\n  \
             \"c\": ['0','0','0','0','#joy','#joy','positive','0','y'],\n}}\n",
            entry("a")
        );
        let parsed = parse_str(&text).expect("dict display");
        let names: Vec<_> = parsed.records.iter().map(|r| r.concept.as_str()).collect();
        assert_eq!(names, ["b", "c"], "rebinding drops the earlier entries");
        assert_eq!(parsed.records[1].line, 4);
    }

    #[test]
    fn empty_values_give_no_triples() {
        let text = "senticnet['_'] = ['0','0','0','0','#joy','#joy','positive','0','x']\n\
                    senticnet['k'] = ['0','0','0','0','','#joy','positive','0','  ', 'y']\n";
        let parsed = parse_str(text).expect("parses");
        let (text, stats) = convert(&parsed);
        assert_eq!(stats.empty_keys_skipped, 1);
        assert_eq!(
            data_lines(&text),
            [
                "HasSecondaryMood\tk\t#joy",
                "HasPolarity\tk\tpositive",
                "RelatedTo\tk\ty"
            ]
        );
        assert_eq!(stats.empty_values_skipped, 2);
        assert_eq!(stats.nodes, 4);
    }

    #[test]
    fn keys_with_the_same_name_make_one_concept() {
        let text = "s['top_notch'] = ['0','0','0','0','#joy','#joy','positive','0','x','y']\n\
                    s['other'] = ['0','0','0','0','#joy','#joy','positive','0','x']\n\
                    s['top_notch '] = ['0','0','0','0','#joy','#fear','positive','0','y','z']\n\
                    s['top_notch'] = ['0','0','0','0','#joy','#joy','positive','0','x','w']\n";
        let parsed = parse_str(text).expect("parses");
        assert_eq!(parsed.records.len(), 3, "three distinct Python keys");
        assert_eq!(parsed.overridden, 1, "'top_notch' assigned twice");
        let (text, stats) = convert(&parsed);
        assert_eq!(
            data_lines(&text),
            [
                "HasPrimaryMood\ttop notch\t#joy",
                "HasSecondaryMood\ttop notch\t#joy",
                "HasPolarity\ttop notch\tpositive",
                "RelatedTo\ttop notch\tx",
                "RelatedTo\ttop notch\tw",
                "HasSecondaryMood\ttop notch\t#fear",
                "RelatedTo\ttop notch\ty",
                "RelatedTo\ttop notch\tz",
                "HasPrimaryMood\tother\t#joy",
                "HasSecondaryMood\tother\t#joy",
                "HasPolarity\tother\tpositive",
                "RelatedTo\tother\tx",
            ]
        );
        assert_eq!((stats.concepts, stats.merged_keys), (2, 1));
        assert_eq!(stats.repeated_triples_skipped, 2);
    }

    /// Checks that `bad`, after a valid first line, is rejected on line 2 at the first occurrence
    /// of `marker` with a message containing `message`.
    fn rejected_at(bad: &str, marker: &str, message: &str) {
        let e = err(&format!("{}{bad}", entry("fine")));
        let column = bad.find(marker).expect("marker in the input") + 1;
        assert_eq!((e.line, e.column), (2, column), "{bad:?}: {e}");
        assert!(e.message.contains(message), "{bad:?}: {e}");
        assert!(e
            .to_string()
            .starts_with(&format!("line 2, column {column}: ")));
    }

    #[test]
    fn errors_name_the_line_and_column() {
        let full = "['0', '0', '0', '0', '#joy', '#joy', 'positive', '0', 'x']";
        rejected_at(
            "senticnet['a' = ['x']\n",
            "= [",
            "expected `]` after the key",
        );
        rejected_at("senticnet['a] = []\n", "'a]", "unterminated string");
        rejected_at(
            "senticnet['a'] = ['x' 'y' 5]\n",
            "5]",
            "expected `,` or `]`",
        );
        rejected_at("senticnet['a'] = ['0', '1']\n", "senticnet", "has 2 values");
        rejected_at("print('hello')\n", "print", "assignment to `print`");
        rejected_at("senticnet('a')\n", "('a')", "expected `[` or `=`");
        let trailing = format!("senticnet['a'] = {full} zz\n");
        rejected_at(&trailing, "zz", "name `zz` after the statement");
        let stray = format!("senticnet['a'] = {full} @\n");
        rejected_at(&stray, "@", "unexpected character '@'");
        rejected_at(
            "senticnet['a'] = [b'0']\n",
            "b'0'",
            "literals are not supported",
        );
        rejected_at("senticnet['\\N{DASH}'] = []\n", "\\N", "\\N{...}");
        rejected_at("senticnet['\\x4'] = []\n", "\\x4", "malformed \\x escape");
        rejected_at(
            "senticnet['\\ud800'] = []\n",
            "\\ud800",
            "malformed \\u escape",
        );
        rejected_at("senticnet['a'] = ['''x\n", "'''", "unterminated string");
        rejected_at(
            "senticnet['a'] = [-'x']\n",
            "'x'",
            "expected a number after `-`",
        );
        rejected_at(
            "senticnet['a'] = {}\n",
            "{}",
            "expected `[` to open the list",
        );
        rejected_at("senticnet = {'a' ['x']}\n", "['x']", "expected `:`");
        rejected_at("]\n", "]", "expected a statement");

        // A list left open runs into the end of the file.
        let e = err("senticnet['a'] = ['x', 'y'\n");
        assert_eq!((e.line, e.column), (2, 1), "{e}");
        assert!(e.message.contains("found end of file"), "{e}");
    }

    #[test]
    fn rejects_bad_encoding_and_long_names() {
        let mut bytes = entry("a").into_bytes();
        bytes.extend_from_slice(b"senticnet['caf\xe9'] = []\n");
        let e = parse(&bytes).expect_err("latin-1 byte");
        assert_eq!((e.line, e.column), (2, 15));
        assert!(e.message.contains("UTF-8"));

        let long = "x".repeat(MAX_NAME_BYTES + 1);
        let e = err(&format!("\n{}", entry(&long)));
        assert_eq!(e.line, 2);
        assert!(e.message.contains("bytes long"), "{e}");
    }

    #[test]
    fn accepts_bom_crlf_and_empty_files() {
        let text = format!(
            "\u{feff}senticnet = {{}}\r\n{}",
            entry("a").replace('\n', "\r\n")
        );
        assert_eq!(parse_str(&text).expect("crlf").records[0].line, 2);
        assert_eq!(parse_str("").expect("empty"), Parsed::default());
    }

    #[test]
    fn never_panics_on_truncated_input() {
        // Every prefix of a tricky input is either parsed or rejected, never a panic.
        let text =
            "s = {}\ns['a\\x41\\'b'] = [r'\\'', \"\"\"t\"\"\", -1.5e-3, 'c',]\ns[u'd'] = ['e'";
        for end in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
            let _ = parse_str(&text[..end]);
        }
    }

    #[test]
    fn name_limit_matches_the_graph_crate() {
        assert_eq!(MAX_NAME_BYTES, gpsense_graph::MAX_NAME_LEN);
    }
}
