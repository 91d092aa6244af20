//! N-Triples, N-Quads, Turtle and TriG through `oxttl`, named as [`crate::rdf`] says (RDF/XML is
//! [`super::rdfxml`]'s).
//!
//! N-Triples and N-Quads are line formats: each line goes through the shared line reader (its
//! length bound, BOM, NUL and UTF-8 checks, `--on-error`) and is parsed on its own, so a bad line
//! adds nothing and names its column. gpsense keeps one default graph: a quad in a named graph
//! (N-Quads, TriG) is skipped and counted in the report.
//!
//! Turtle and TriG statements may span lines, so the parser is fed the stream, whole lines at a time:
//! a line longer than `--max-line-bytes`, or more than that without a triple inside an unterminated
//! long string or open brackets (oxttl holds all of it), ends the file with an error, which keeps
//! memory bounded whatever the input. Between statements (and in a statement at the top level,
//! outside long strings) oxttl holds at most a line, so directives (`@prefix` lines) count only
//! one statement at a time. After a syntax error oxttl
//! skips to the statement's final `.`; the triples it had emitted before the error stay.
//!
//! Blank nodes: see [`Blanks`].

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Read};

use oxrdf::{BlankNodeRef, GraphName, NamedNodeRef, NamedOrBlankNodeRef, Quad, TermRef};
use oxttl::trig::LowLevelTriGParser;
use oxttl::turtle::LowLevelTurtleParser;
use oxttl::{NQuadsParser, NTriplesParser, TriGParser, TurtleParser, TurtleSyntaxError};

use super::formats::{read_lines, Ctx, Outcome};
use super::input::Input;
use super::{Format, IngestError, IngestOptions, LineError, Sink, RELATIVE_IRI};
use crate::rdf::{iri_name, term_name};
use crate::{GraphBuilder, GraphError, NodeId};

/// Turtle is fed to the parser in chunks of whole lines of about this size (or `--max-line-bytes`
/// if less): an unfinished token is scanned again on each feed, so line-sized feeds would make a
/// long token quadratic.
const CHUNK: usize = 64 * 1024;
/// oxttl names `[]` and collection nodes with a random 128-bit number in hex (32 digits but for
/// leading zeros); a Turtle label this long made of hex digits is taken for one of those.
const GENERATED_LABEL: usize = 24;

pub(super) fn read(
    input: Input,
    format: Format,
    sink: &mut Sink,
    ctx: &mut Ctx,
) -> Result<(), IngestError> {
    sink.blanks.start_file(&sink.builder);
    match format {
        Format::Turtle | Format::TriG => {
            let parser = Chunked::new(format, ctx.opts, ctx.path)?;
            read_turtle(input, parser, sink, ctx)
        }
        Format::RdfXml => super::rdfxml::read(input, sink, ctx),
        _ => read_lines(input, ctx, |line, _| statement_line(line, format, sink)),
    }
}

/// The streaming parser of Turtle or TriG (whose quads may be in named graphs).
enum Chunked {
    Turtle(LowLevelTurtleParser),
    TriG(LowLevelTriGParser),
}

impl Chunked {
    fn new(
        format: Format,
        opts: &IngestOptions,
        path: &std::path::Path,
    ) -> Result<Self, IngestError> {
        let bad_base = |why: String| IngestError::BaseIri {
            iri: opts.base_iri.clone().unwrap_or_default(),
            why: format!("{why} (reading {})", path.display()),
        };
        Ok(if format == Format::TriG {
            let mut p = TriGParser::new();
            if let Some(base) = &opts.base_iri {
                p = p
                    .with_base_iri(base.as_str())
                    .map_err(|e| bad_base(e.to_string()))?;
            }
            Chunked::TriG(p.low_level())
        } else {
            let mut p = TurtleParser::new();
            if let Some(base) = &opts.base_iri {
                p = p
                    .with_base_iri(base.as_str())
                    .map_err(|e| bad_base(e.to_string()))?;
            }
            Chunked::Turtle(p.low_level())
        })
    }

    fn extend_from_slice(&mut self, bytes: &[u8]) {
        match self {
            Chunked::Turtle(p) => p.extend_from_slice(bytes),
            Chunked::TriG(p) => p.extend_from_slice(bytes),
        }
    }

    fn end(&mut self) {
        match self {
            Chunked::Turtle(p) => p.end(),
            Chunked::TriG(p) => p.end(),
        }
    }

    fn parse_next(&mut self) -> Option<Result<Quad, TurtleSyntaxError>> {
        match self {
            Chunked::Turtle(p) => p
                .parse_next()
                .map(|t| t.map(|t| t.in_graph(GraphName::DefaultGraph))),
            Chunked::TriG(p) => p.parse_next(),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Chunked::Turtle(_) => "Turtle syntax",
            Chunked::TriG(_) => "TriG syntax",
        }
    }
}

/// One N-Triples or N-Quads line: one statement, or nothing (a comment).
fn statement_line(line: &str, format: Format, sink: &mut Sink) -> Result<Outcome, LineError> {
    let kind = syntax_kind(format);
    let added = if format == Format::NQuads {
        match one(NQuadsParser::new().for_slice(line), kind)? {
            Some(q) if !q.graph_name.is_default_graph() => return Ok(Outcome::InNamedGraph),
            q => q.map(|q| {
                add(
                    sink,
                    false,
                    q.subject.as_ref(),
                    q.predicate.as_ref(),
                    q.object.as_ref(),
                )
            }),
        }
    } else {
        one(NTriplesParser::new().for_slice(line), kind)?.map(|t| {
            add(
                sink,
                false,
                t.subject.as_ref(),
                t.predicate.as_ref(),
                t.object.as_ref(),
            )
        })
    };
    match added {
        None => Ok(Outcome::Nothing),
        Some(result) => result.map(|()| Outcome::Edges(1)).map_err(LineError::from),
    }
}

/// The single statement of a line: oxttl refuses a second one, and may emit a statement it also
/// reports an error for (a missing final `.`), so the first error wins.
fn one<T>(
    mut items: impl Iterator<Item = Result<T, TurtleSyntaxError>>,
    kind: &'static str,
) -> Result<Option<T>, LineError> {
    let first = match items.next() {
        None => return Ok(None),
        Some(item) => item.map_err(|e| syntax(kind, &e))?,
    };
    match items.next() {
        None => Ok(Some(first)),
        Some(Err(e)) => Err(syntax(kind, &e)),
        Some(Ok(_)) => Err(LineError::new(kind, "more than one statement on the line")),
    }
}

fn syntax_kind(format: Format) -> &'static str {
    match format {
        Format::NQuads => "N-Quads syntax",
        _ => "N-Triples syntax",
    }
}

/// oxttl's message with its column (the line is the caller's to give). A relative IRI is a kind
/// of its own in Turtle and TriG, where a base IRI would resolve it.
fn syntax(kind: &'static str, e: &TurtleSyntaxError) -> LineError {
    let column = e.location().start.column + 1;
    let relative = is_relative_iri_error(e.message());
    match kind {
        "Turtle syntax" | "TriG syntax" if relative => LineError::new(
            RELATIVE_IRI,
            format!("column {column}: a relative IRI, and no base IRI to resolve it against"),
        ),
        _ if relative => LineError::new(
            kind,
            format!(
                "column {column}: {} (a relative IRI; this format allows only absolute ones)",
                e.message()
            ),
        ),
        _ => LineError::new(kind, format!("column {column}: {}", e.message())),
    }
}

/// oxiri's message for an IRI without a scheme (a relative one, where no base IRI is known).
pub(super) fn is_relative_iri_error(message: &str) -> bool {
    message.contains("No scheme found")
}

/// Adds one statement to the graph; `generated`: the parser names blank nodes without a label
/// itself (Turtle, TriG, RDF/XML), see [`Blanks`].
pub(super) fn add(
    sink: &mut Sink,
    generated: bool,
    subject: NamedOrBlankNodeRef,
    predicate: NamedNodeRef,
    object: TermRef,
) -> Result<(), GraphError> {
    let s = match subject {
        NamedOrBlankNodeRef::NamedNode(iri) => sink.node(&iri_name(iri.as_str()))?,
        NamedOrBlankNodeRef::BlankNode(b) => sink.blanks.node(b, generated, &mut sink.builder)?,
    };
    let r = sink.builder.relation(&iri_name(predicate.as_str()))?;
    let o = match object {
        TermRef::BlankNode(b) => sink.blanks.node(b, generated, &mut sink.builder)?,
        term => sink.node(&term_name(term))?,
    };
    sink.builder.add_edge(s, r, o, 1.0);
    Ok(())
}

/// Why a chunk of Turtle stopped growing.
enum Fill {
    /// Big enough; more may follow.
    Full,
    Eof,
    /// The line after the chunk is longer than the limit (and was not kept).
    TooLong,
}

/// Turtle and TriG: whole lines in chunks, each fed to one streaming parser; see the module docs.
fn read_turtle(
    input: Input,
    mut parser: Chunked,
    sink: &mut Sink,
    ctx: &mut Ctx,
) -> Result<(), IngestError> {
    let io = |source| IngestError::Io {
        path: ctx.path.to_path_buf(),
        source,
    };
    let max = ctx.opts.max_line();
    let mut reader = input.into_reader();
    let mut chunk = Vec::with_capacity(CHUNK + 1024);
    let (mut line_no, mut since_triple) = (0u64, 0usize);
    let mut nesting = Nesting::default();
    loop {
        chunk.clear();
        let first = line_no + 1;
        let fill = fill_chunk(&mut reader, &mut chunk, max, &mut line_no).map_err(io)?;
        let lines = line_no + 1 - first - u64::from(matches!(fill, Fill::TooLong));
        parser.extend_from_slice(&chunk);
        let drained = drain(&mut parser, sink, line_no);
        // At the top level oxttl holds at most a line: a run of directives or comments is no
        // statement growing without end. After a syntax error the count goes on, to be safe.
        let settled = nesting.feed(&chunk) && drained.errors.is_empty();
        let triples = drained.edges + drained.named;
        account(ctx, first, lines, drained)?;
        since_triple = if triples > 0 || settled {
            0
        } else {
            since_triple + chunk.len()
        };
        let stop = match fill {
            Fill::TooLong => Some((
                "line too long",
                format!(
                    "longer than {max} bytes (raise --max-line-bytes); a Turtle statement may \
                     span lines, so the rest of the file was not read"
                ),
            )),
            // At the end nothing more is held: the parser has the last word.
            Fill::Eof => break,
            Fill::Full if since_triple > max => Some((
                "statement too long",
                format!(
                    "{since_triple} bytes in one statement without a triple, more than \
                     --max-line-bytes ({max}): an unterminated long string or brackets?; the rest \
                     of the file was not read"
                ),
            )),
            Fill::Full => None,
        };
        if let Some((kind, detail)) = stop {
            return ctx.record(line_no, Err(LineError::new(kind, detail)));
        }
    }
    parser.end();
    let drained = drain(&mut parser, sink, line_no);
    // What the end of the input completes or breaks belongs to no line of its own.
    let lines = ctx.file.lines;
    account(ctx, line_no.max(1), 1, drained)?;
    ctx.file.lines = lines;
    Ok(())
}

/// Where the Turtle fed so far stands, for the memory oxttl holds: inside a long string (`"""`,
/// `'''`: its token grows with every line) or open brackets (`[`, `(`: the parser's stack grows),
/// or at the top level, where it holds at most the current line. IRIs, short strings, comments and
/// escapes are followed so that the brackets and quotes in them do not count.
#[derive(Default)]
struct Nesting {
    depth: usize,
    inside: Inside,
    escaped: bool,
}

#[derive(Clone, Copy, Default, PartialEq)]
enum Inside {
    #[default]
    Nothing,
    Iri,
    Comment,
    Short(u8),
    Long(u8),
}

impl Nesting {
    /// Follows `chunk` (whole lines); whether it ends at the top level.
    fn feed(&mut self, chunk: &[u8]) -> bool {
        let mut i = 0;
        while i < chunk.len() {
            let b = chunk[i];
            i += 1;
            if std::mem::take(&mut self.escaped) {
                continue;
            }
            let triple = |q: u8| chunk[i - 1..].starts_with(&[q, q, q]);
            self.inside = match (self.inside, b) {
                (Inside::Comment | Inside::Iri | Inside::Short(_), b'\n') => Inside::Nothing,
                (Inside::Comment, _) => Inside::Comment,
                (Inside::Iri, b'>') => Inside::Nothing,
                (Inside::Iri, _) => Inside::Iri,
                (Inside::Short(_) | Inside::Long(_) | Inside::Nothing, b'\\') => {
                    self.escaped = true;
                    self.inside
                }
                (Inside::Short(q), c) if c == q => Inside::Nothing,
                (Inside::Long(q), c) if c == q && triple(q) => {
                    i += 2;
                    Inside::Nothing
                }
                (inside @ (Inside::Short(_) | Inside::Long(_)), _) => inside,
                (Inside::Nothing, q @ (b'"' | b'\'')) if triple(q) => {
                    i += 2;
                    Inside::Long(q)
                }
                (Inside::Nothing, q @ (b'"' | b'\'')) => Inside::Short(q),
                (Inside::Nothing, b'#') => Inside::Comment,
                (Inside::Nothing, b'<') => Inside::Iri,
                (Inside::Nothing, b'[' | b'(') => {
                    self.depth += 1;
                    Inside::Nothing
                }
                (Inside::Nothing, b']' | b')') => {
                    self.depth = self.depth.saturating_sub(1);
                    Inside::Nothing
                }
                (Inside::Nothing, _) => Inside::Nothing,
            };
        }
        self.depth == 0 && matches!(self.inside, Inside::Nothing | Inside::Comment)
    }
}

/// Appends whole lines to `chunk` until it holds [`CHUNK`] bytes (or `max`, if less) or the input
/// ends; a line longer than `max` is dropped, and read no further (the file ends there). The first
/// line loses a UTF-8 BOM.
fn fill_chunk(
    reader: &mut impl BufRead,
    chunk: &mut Vec<u8>,
    max: usize,
    line_no: &mut u64,
) -> std::io::Result<Fill> {
    while chunk.len() < CHUNK.min(max) {
        let start = chunk.len();
        // At most one byte past the limit is read: a longer line is never held whole.
        let n = reader.take(max as u64 + 1).read_until(b'\n', chunk)?;
        if n == 0 {
            return Ok(Fill::Eof);
        }
        *line_no += 1;
        if n > max && chunk.last() != Some(&b'\n') {
            chunk.truncate(start);
            return Ok(Fill::TooLong);
        }
        if *line_no == 1 && chunk.starts_with(b"\xEF\xBB\xBF") {
            chunk.drain(..3);
        }
    }
    Ok(Fill::Full)
}

/// What the parser emitted for a chunk.
#[derive(Default)]
struct Drained {
    edges: u64,
    /// Triples in named graphs, skipped.
    named: u64,
    /// Errors with their lines.
    errors: Vec<(u64, LineError)>,
}

/// Everything the parser can emit now (oxttl counts the lines it was fed, which are all of
/// them). A name the graph refuses is an error of line `line_no`, the last one fed.
fn drain(parser: &mut Chunked, sink: &mut Sink, line_no: u64) -> Drained {
    let mut out = Drained::default();
    while let Some(result) = parser.parse_next() {
        match result {
            Ok(q) if !q.graph_name.is_default_graph() => out.named += 1,
            Ok(q) => match add(
                sink,
                true,
                q.subject.as_ref(),
                q.predicate.as_ref(),
                q.object.as_ref(),
            ) {
                Ok(()) => out.edges += 1,
                Err(e) => out.errors.push((line_no, LineError::from(e))),
            },
            Err(e) => {
                // The end of the input is reported just past the last line.
                let line = (e.location().start.line + 1).min(line_no.max(1));
                out.errors.push((line, syntax(parser.kind(), &e)));
            }
        }
    }
    out
}

/// Records `lines` lines from `first`: the first error at or before each line makes it malformed
/// (named by the error's own line), the others are fine; the edges count for the chunk.
fn account(ctx: &mut Ctx, first: u64, lines: u64, drained: Drained) -> Result<(), IngestError> {
    ctx.file.edges += drained.edges;
    ctx.file.in_named_graphs += drained.named;
    let mut errors = drained.errors;
    errors.sort_by_key(|(line, _)| *line);
    let mut errors = errors.into_iter().peekable();
    for line in first..first + lines {
        match errors.next_if(|(at, _)| *at <= line) {
            Some((at, e)) => {
                // One error per line: the rest of that line's are consequences.
                while errors.next_if(|(other, _)| *other <= line).is_some() {}
                ctx.record(at, Err(e))?;
            }
            None => ctx.record(line, Ok(Outcome::Nothing))?,
        }
    }
    // Errors past the chunk's lines (none are expected): still reported, never lost.
    if let Some((at, e)) = errors.next() {
        let lines = ctx.file.lines;
        ctx.record(at, Err(e))?;
        ctx.file.lines = lines;
    }
    Ok(())
}

/// Blank nodes across the RDF files of one ingest.
///
/// A label keeps its name, `_:LABEL`, unless an earlier file (or another input) already made a
/// node of that name: blank nodes of different files are different nodes (RDF merge), so such a
/// label becomes `_:LABEL.fK` (K: the RDF file's number in the ingest, from 0; `.2`, `.3`… after
/// it if that is taken too). So a single file, a dump included, keeps every label as it is.
///
/// Turtle's and TriG's `[]` and collections, and RDF/XML's nodes without `rdf:nodeID`, have no
/// label; the parsers give them random ones, which ingest replaces by `_:anon0`, `_:anon1`, … in
/// order of appearance, so the same input always gives the same graph. (The random labels are 24
/// to 32 lower-case hex digits with no leading zero; a written label of that form cannot be told
/// from them and is renamed too.)
#[derive(Default)]
pub(crate) struct Blanks {
    /// RDF files started so far.
    files: u32,
    /// Nodes from this id on were made while reading the current file.
    first_new: NodeId,
    /// This file's labels whose own name was taken, with the node they got instead.
    renamed: HashMap<Box<str>, NodeId>,
    /// This file's anonymous nodes, by oxttl's random id.
    anonymous: HashMap<u128, NodeId>,
    /// Nodes of this file that a label may not reach by its own name (renamed and generated ones).
    taken: HashSet<NodeId>,
    /// Generated names handed out in this ingest.
    generated: u64,
}

impl Blanks {
    pub(super) fn start_file(&mut self, builder: &GraphBuilder) {
        self.files += 1;
        self.first_new = builder.node_count() as NodeId;
        self.renamed.clear();
        self.anonymous.clear();
        self.taken.clear();
    }

    fn node(
        &mut self,
        b: BlankNodeRef,
        generated: bool,
        builder: &mut GraphBuilder,
    ) -> Result<NodeId, GraphError> {
        match b.unique_id() {
            Some(id) if generated && b.as_str().len() >= GENERATED_LABEL => {
                self.anonymous(id, builder)
            }
            _ => self.labelled(b.as_str(), builder),
        }
    }

    fn anonymous(&mut self, id: u128, builder: &mut GraphBuilder) -> Result<NodeId, GraphError> {
        if let Some(&v) = self.anonymous.get(&id) {
            return Ok(v);
        }
        let v = loop {
            let name = format!("_:anon{}", self.generated);
            self.generated += 1;
            if builder.existing_node(&name).is_none() {
                break builder.node(&name)?;
            }
        };
        self.anonymous.insert(id, v);
        self.taken.insert(v);
        Ok(v)
    }

    fn labelled(&mut self, label: &str, builder: &mut GraphBuilder) -> Result<NodeId, GraphError> {
        if let Some(&v) = self.renamed.get(label) {
            return Ok(v);
        }
        let name = format!("_:{label}");
        match builder.existing_node(&name) {
            None => builder.node(&name),
            Some(v) if v >= self.first_new && !self.taken.contains(&v) => Ok(v),
            Some(_) => {
                let base = format!("{name}.f{}", self.files - 1);
                let mut candidate = base.clone();
                let mut i = 2;
                while builder.existing_node(&candidate).is_some() {
                    candidate = format!("{base}.{i}");
                    i += 1;
                }
                let v = builder.node(&candidate)?;
                self.renamed.insert(label.into(), v);
                self.taken.insert(v);
                Ok(v)
            }
        }
    }
}
