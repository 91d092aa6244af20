//! RDF/XML through `oxrdfxml`, named as [`crate::rdf`] says, blank nodes kept apart per file as
//! [`super::rdf`]'s `Blanks` does.
//!
//! The parser reads through [`Lines`], which hands it one line at a time: its buffer then never
//! holds more than the current line, so an error belongs to the last line handed out (oxrdfxml
//! reports no location). Memory stays bounded as for Turtle: a line longer than
//! `--max-line-bytes`, or more than that read without a triple (an unterminated comment or
//! literal, deep nesting), ends the file with an error. DOCTYPE entities count as the bytes they
//! expand to, so entities that would expand to gigabytes ("billion laughs") end the file the same
//! way, before the parser expands them.
//!
//! XML cannot be resumed after a syntax error: one ends the file (with `--on-error skip`, the
//! triples before it stay and the error is counted).

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{self, BufRead, Read};
use std::rc::Rc;

use oxrdfxml::{RdfXmlParseError, RdfXmlParser};

use super::formats::{Ctx, Outcome};
use super::input::Input;
use super::rdf::{add, is_relative_iri_error};
use super::{IngestError, LineError, Sink, RELATIVE_IRI};

const BOM: &[u8] = b"\xEF\xBB\xBF";

pub(super) fn read(input: Input, sink: &mut Sink, ctx: &mut Ctx) -> Result<(), IngestError> {
    let shared = Rc::new(RefCell::new(Shared::default()));
    let lines = Lines::new(input.into_reader(), shared.clone(), ctx.opts.max_line());
    let mut parser = RdfXmlParser::new();
    if let Some(base) = &ctx.opts.base_iri {
        parser = parser
            .with_base_iri(base.as_str())
            .map_err(|e| IngestError::BaseIri {
                iri: base.clone(),
                why: e.to_string(),
            })?;
    }
    let mut recorded = 0;
    for result in parser.for_reader(lines) {
        let line = shared.borrow().line.max(1);
        let why = match result {
            Ok(t) => {
                let mut s = shared.borrow_mut();
                s.last_triple = s.handed;
                drop(s);
                let (subject, object) = (t.subject.as_ref(), t.object.as_ref());
                match add(sink, true, subject, t.predicate.as_ref(), object) {
                    Ok(()) => {
                        ctx.file.edges += 1;
                        continue;
                    }
                    Err(e) => LineError::from(e),
                }
            }
            Err(RdfXmlParseError::Io(e)) => match shared.borrow_mut().stop.take() {
                Some(why) => why,
                None => {
                    return Err(IngestError::Io {
                        path: ctx.path.to_path_buf(),
                        source: e,
                    })
                }
            },
            Err(RdfXmlParseError::Syntax(e)) => syntax(&e.to_string()),
        };
        let ends = !matches!(why.kind, "bad name" | "empty name");
        record_until(ctx, &mut recorded, line, Some(why))?;
        if ends {
            break;
        }
    }
    let last = shared.borrow().line;
    record_until(ctx, &mut recorded, last + 1, None)
}

/// oxrdfxml's message; a relative IRI is a kind of its own, which a base IRI would resolve.
fn syntax(message: &str) -> LineError {
    if is_relative_iri_error(message) {
        LineError::new(
            RELATIVE_IRI,
            format!("{message}: a relative IRI, and no base IRI to resolve it against"),
        )
    } else {
        LineError::new("RDF/XML syntax", message)
    }
}

/// Records the lines before `line` as read, then `line`'s error if any (one per line: a later
/// error of a line already recorded is a consequence of the first).
fn record_until(
    ctx: &mut Ctx,
    recorded: &mut u64,
    line: u64,
    why: Option<LineError>,
) -> Result<(), IngestError> {
    while *recorded + 1 < line {
        *recorded += 1;
        ctx.record(*recorded, Ok(Outcome::Nothing))?;
    }
    match why {
        Some(why) if *recorded < line => {
            *recorded = line;
            ctx.record(line, Err(why))
        }
        _ => Ok(()),
    }
}

/// What [`Lines`] and the reading loop share.
#[derive(Default)]
struct Shared {
    /// The line of the last byte handed to the parser (from 1).
    line: u64,
    /// Bytes handed out, entity references counted as what they expand to.
    handed: u64,
    /// `handed` when the parser last emitted a triple.
    last_triple: u64,
    /// Why [`Lines`] stopped the parser, if it did.
    stop: Option<LineError>,
}

/// Hands the parser one line (or, for a line longer than the parser's buffer, one piece) per
/// read, enforcing the bounds of the module docs.
struct Lines<R> {
    inner: R,
    shared: Rc<RefCell<Shared>>,
    max: usize,
    /// Bytes of the current line handed so far.
    line_len: usize,
    at_line_start: bool,
    started: bool,
    entities: Entities,
}

impl<R: BufRead> Lines<R> {
    fn new(inner: R, shared: Rc<RefCell<Shared>>, max: usize) -> Self {
        Lines {
            inner,
            shared,
            max,
            line_len: 0,
            at_line_start: true,
            started: false,
            entities: Entities::default(),
        }
    }

    /// Counts `piece`, just handed out; an error when a bound is passed.
    fn account(&mut self, piece: &[u8]) -> Result<(), LineError> {
        let mut s = self.shared.borrow_mut();
        if self.at_line_start {
            s.line += 1;
            self.line_len = 0;
        }
        self.at_line_start = piece.last() == Some(&b'\n');
        self.line_len += piece.len();
        let max = self.max;
        if self.line_len - usize::from(self.at_line_start) > max {
            return Err(LineError::new(
                "line too long",
                format!(
                    "longer than {max} bytes (raise --max-line-bytes); an RDF/XML element may \
                     span lines, so the rest of the file was not read"
                ),
            ));
        }
        s.handed += piece.len() as u64 + self.entities.scan(piece, max)?;
        let since = s.handed - s.last_triple;
        if since > max as u64 {
            return Err(LineError::new(
                "statement too long",
                format!(
                    "{since} bytes without a triple (entities expanded), more than \
                     --max-line-bytes ({max}): an unterminated comment or literal, deep nesting, \
                     or entities that expand too far?; the rest of the file was not read"
                ),
            ));
        }
        Ok(())
    }
}

impl<R: BufRead> Read for Lines<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if !std::mem::replace(&mut self.started, true) && self.inner.fill_buf()?.starts_with(BOM) {
            self.inner.consume(BOM.len());
        }
        let buf = self.inner.fill_buf()?;
        let end = buf
            .iter()
            .position(|&b| b == b'\n')
            .map_or(buf.len(), |i| i + 1);
        let n = end.min(out.len());
        out[..n].copy_from_slice(&buf[..n]);
        self.inner.consume(n);
        if n > 0 {
            if let Err(why) = self.account(&out[..n]) {
                let message = why.to_string();
                self.shared.borrow_mut().stop = Some(why);
                return Err(io::Error::other(message));
            }
        }
        Ok(n)
    }
}

/// The DOCTYPE's entities, by the length they expand to, read from the bytes as they pass the
/// way oxrdfxml reads them (`<!ENTITY [%] name "value">`, references in the value expanded).
/// A reference anywhere else counts as its entity's length (a comment's too: an overcount is
/// safe).
#[derive(Default)]
struct Entities {
    lengths: HashMap<Vec<u8>, u64>,
    state: Scan,
    /// How much of [`DECLARATION`] the last bytes matched.
    matched: usize,
}

#[derive(Default)]
enum Scan {
    #[default]
    Text,
    /// After `&`: the name so far.
    Reference(Vec<u8>),
    /// After `<!ENTITY`: the declaration so far.
    Declaration(Vec<u8>),
}

const DECLARATION: &[u8] = b"<!ENTITY";
/// A longer `&…` is no reference to a declared entity (whose names come from the DOCTYPE).
const MAX_NAME: usize = 1024;

/// Where the text of a declaration stands.
enum Declared<'a> {
    Incomplete,
    /// A name and its quoted value.
    Entity(&'a [u8], &'a [u8]),
    /// Something else (an external entity, say), which oxrdfxml refuses itself.
    Other,
}

impl Entities {
    /// How many bytes the entity references and declarations in `piece` expand to; an entity
    /// that expands beyond `max` is an error.
    fn scan(&mut self, piece: &[u8], max: usize) -> Result<u64, LineError> {
        let mut extra = 0;
        for &b in piece {
            self.state = match std::mem::take(&mut self.state) {
                Scan::Text => self.text(b),
                Scan::Reference(name) if b == b';' => {
                    extra += self.lengths.get(&name).copied().unwrap_or(0);
                    Scan::Text
                }
                Scan::Reference(mut name) if b != b'&' && b != b'<' && name.len() < MAX_NAME => {
                    name.push(b);
                    Scan::Reference(name)
                }
                Scan::Reference(_) => self.text(b),
                Scan::Declaration(mut text) => {
                    text.push(b);
                    match declared(&text) {
                        Declared::Incomplete if text.len() <= max => Scan::Declaration(text),
                        Declared::Incomplete | Declared::Other => Scan::Text,
                        Declared::Entity(name, value) => {
                            let len = self.expanded(value);
                            if len > max as u64 {
                                return Err(entity_too_long(name, len, max));
                            }
                            extra += len;
                            self.lengths.insert(name.to_vec(), len);
                            Scan::Text
                        }
                    }
                }
            };
        }
        Ok(extra)
    }

    fn text(&mut self, b: u8) -> Scan {
        if b == b'&' {
            self.matched = 0;
            return Scan::Reference(Vec::new());
        }
        if b == DECLARATION[self.matched] {
            self.matched += 1;
            if self.matched == DECLARATION.len() {
                self.matched = 0;
                return Scan::Declaration(Vec::new());
            }
        } else {
            self.matched = usize::from(b == b'<');
        }
        Scan::Text
    }

    /// The length of an entity's value with its references expanded.
    fn expanded(&self, value: &[u8]) -> u64 {
        let (mut len, mut rest) = (0, value);
        while let Some(i) = rest.iter().position(|&b| b == b'&') {
            len += i as u64;
            let after = &rest[i + 1..];
            let Some(j) = after.iter().position(|&b| b == b';') else {
                break;
            };
            len += self
                .lengths
                .get(&after[..j])
                .copied()
                .unwrap_or(j as u64 + 2);
            rest = &after[j + 1..];
        }
        len + rest.len() as u64
    }
}

fn entity_too_long(name: &[u8], len: u64, max: usize) -> LineError {
    LineError::new(
        "entity too long",
        format!(
            "the entity {} expands to {len} bytes, more than --max-line-bytes ({max}); the rest \
             of the file was not read",
            String::from_utf8_lossy(name)
        ),
    )
}

/// Reads `[%] name "value"` as oxrdfxml does.
fn declared(text: &[u8]) -> Declared<'_> {
    let t = text.trim_ascii_start();
    let t = t.strip_prefix(b"%").unwrap_or(t).trim_ascii_start();
    let Some(end) = t.iter().position(u8::is_ascii_whitespace) else {
        return Declared::Incomplete;
    };
    let (name, rest) = t.split_at(end);
    let rest = rest.trim_ascii_start();
    match rest.split_first() {
        None => Declared::Incomplete,
        Some((b'"', value)) => match value.iter().position(|&b| b == b'"') {
            Some(i) => Declared::Entity(name, &value[..i]),
            None => Declared::Incomplete,
        },
        Some(_) => Declared::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> Result<u64, LineError> {
        Entities::default().scan(text.as_bytes(), 1 << 20)
    }

    #[test]
    fn entities_count_as_what_they_expand_to() {
        let doc = "<!DOCTYPE rdf:RDF [ <!ENTITY e \"0123456789\"> <!ENTITY % f \"&e;&e;\"> ]>";
        assert_eq!(scan(doc), Ok(30));
        let used = format!("{doc}<a x=\"&f;\">&e;&amp;&unknown;</a>");
        assert_eq!(scan(&used), Ok(30 + 20 + 10));
        // A comment's reference is overcounted, never missed; a lone `&` is no reference.
        assert_eq!(scan("a & b <!-- &x; -->"), Ok(0));
    }

    #[test]
    fn an_entity_bomb_is_refused_before_it_expands() {
        let mut doc = String::from("<!DOCTYPE r [<!ENTITY l0 \"0123456789\">");
        for i in 1..10 {
            let refs = format!("&l{};", i - 1).repeat(10);
            doc.push_str(&format!("<!ENTITY l{i} \"{refs}\">\n"));
        }
        let err = scan(&doc).unwrap_err();
        assert_eq!(err.kind, "entity too long");
        assert!(
            err.detail
                .contains("the entity l6 expands to 10000000 bytes"),
            "{err}"
        );
    }

    #[test]
    fn declarations_are_read_as_oxrdfxml_reads_them() {
        assert!(matches!(
            declared(b" e \"v\""),
            Declared::Entity(b"e", b"v")
        ));
        assert!(matches!(declared(b" % e \"v"), Declared::Incomplete));
        assert!(matches!(declared(b" e SYSTEM \"u\""), Declared::Other));
        assert!(matches!(declared(b" e"), Declared::Incomplete));
    }
}
