//! One parser per format, each turning a line (or CSV record) into triples on the [`Sink`].

use std::collections::BTreeMap;
use std::io::{BufRead, Read};
use std::path::Path;

use super::detect::detect_columns;
use super::input::Input;
use super::{
    Columns, FileReport, Format, IngestError, IngestOptions, LineError, OnError, Progress, Sink,
};
use crate::GraphError;

/// How many lines between progress reports.
const PROGRESS_EVERY: u64 = 1 << 14;
/// How many skipped lines a report keeps as examples.
const EXAMPLES: usize = 5;

/// Reads a whole input of a known format into `sink`.
pub(super) fn read(
    path: &Path,
    input: Input,
    format: Format,
    opts: &IngestOptions,
    sink: &mut Sink,
    progress: &dyn Progress,
) -> Result<FileReport, IngestError> {
    let columns = (format == Format::Triples).then(|| {
        opts.columns
            .unwrap_or_else(|| detect_columns(input.sample()))
    });
    let mut file = FileReport {
        path: path.to_path_buf(),
        format,
        columns,
        lines: 0,
        edges: 0,
        names: 0,
        nodes: 0,
        in_named_graphs: 0,
        filtered: 0,
        skipped: BTreeMap::new(),
        examples: Vec::new(),
    };
    let counter = input.counter();
    let nodes_before = sink.builder.node_count();
    let mut ctx = Ctx {
        path,
        opts,
        file: &mut file,
        progress,
        counter: &counter,
    };
    match format {
        Format::Csv => read_csv(input, sink, &mut ctx)?,
        Format::NTriples | Format::NQuads | Format::Turtle | Format::TriG | Format::RdfXml => {
            super::rdf::read(input, format, sink, &mut ctx)?
        }
        Format::Kgtk => super::kgtk::read(input, sink, &mut ctx)?,
        _ => {
            let mut parser = LineParser {
                format,
                columns: columns.unwrap_or(Columns::RelHeadTail),
                bench: Bench::default(),
            };
            read_lines(input, &mut ctx, |line, ctx| parser.line(line, sink, ctx))?;
            // Skipped lines already explain a shortfall; otherwise the counts must hold.
            if format == Format::Benchmark && ctx.file.skipped.is_empty() {
                let last = ctx.file.lines;
                ctx.record(last, parser.bench.finish())?;
                // The end-of-file check is not a line.
                ctx.file.lines = last;
            }
        }
    }
    progress.position(counter.get());
    file.nodes = (sink.builder.node_count() - nodes_before) as u64;
    Ok(file)
}

/// Consumes the rest of a line (after its first bytes were read), keeping none of it.
fn skip_line(reader: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(());
        }
        if let Some(i) = chunk.iter().position(|&b| b == b'\n') {
            reader.consume(i + 1);
            return Ok(());
        }
        let n = chunk.len();
        reader.consume(n);
    }
}

/// A NUL byte in a line: names are text. UTF-16 text (every other byte NUL) is named as such.
fn nul_byte(line_no: u64, bytes: &[u8], at: usize) -> LineError {
    let zeros = bytes.iter().filter(|&&b| b == 0).count();
    if zeros * 3 >= bytes.len() {
        LineError::new(
            "UTF-16 text",
            format!(
                "line {line_no} looks like UTF-16; gpsense reads UTF-8: convert the file with iconv -f UTF-16 -t UTF-8"
            ),
        )
    } else {
        LineError::new("NUL byte", format!("at byte {at}"))
    }
}

/// Per-file state shared by the line loop and the parsers.
pub(super) struct Ctx<'a> {
    pub(super) path: &'a Path,
    pub(super) opts: &'a IngestOptions,
    pub(super) file: &'a mut FileReport,
    progress: &'a dyn Progress,
    counter: &'a std::cell::Cell<u64>,
}

/// What a parsed line contributed.
pub(super) enum Outcome {
    Edges(u64),
    /// Names given to existing nodes (a WordNet lemma table).
    Names(u64),
    Filtered,
    /// A statement in a named graph, skipped (gpsense keeps one default graph).
    InNamedGraph,
    Nothing,
}

impl Ctx<'_> {
    /// Records one line's result, or fails on a malformed line unless skipping.
    pub(super) fn record(
        &mut self,
        line: u64,
        result: Result<Outcome, LineError>,
    ) -> Result<(), IngestError> {
        self.file.lines += 1;
        if line.is_multiple_of(PROGRESS_EVERY) {
            self.progress.position(self.counter.get());
        }
        match result {
            Ok(Outcome::Edges(n)) => self.file.edges += n,
            Ok(Outcome::Names(n)) => self.file.names += n,
            Ok(Outcome::Filtered) => self.file.filtered += 1,
            Ok(Outcome::InNamedGraph) => self.file.in_named_graphs += 1,
            Ok(Outcome::Nothing) => {}
            Err(reason) if self.opts.on_error == OnError::Skip => {
                *self.file.skipped.entry(reason.kind).or_default() += 1;
                if self.file.examples.len() < EXAMPLES {
                    self.file.examples.push((line, reason));
                }
            }
            Err(reason) => {
                return Err(IngestError::Malformed {
                    path: self.path.to_path_buf(),
                    line,
                    reason,
                })
            }
        }
        Ok(())
    }
}

pub(super) fn read_lines(
    input: Input,
    ctx: &mut Ctx,
    mut parse: impl FnMut(&str, &Ctx) -> Result<Outcome, LineError>,
) -> Result<(), IngestError> {
    let mut reader = input.into_reader();
    let mut buf = Vec::with_capacity(1024);
    let mut line_no = 0u64;
    let max = ctx.opts.max_line();
    let io = |source| IngestError::Io {
        path: ctx.path.to_path_buf(),
        source,
    };
    loop {
        buf.clear();
        // At most one byte past the limit is kept: a longer line is never held whole.
        let n = (&mut reader)
            .take(max as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(io)?;
        if n == 0 {
            return Ok(());
        }
        line_no += 1;
        if buf.len() > max && buf.last() != Some(&b'\n') {
            let why = LineError::new(
                "line too long",
                format!("longer than {max} bytes (raise --max-line-bytes)"),
            );
            // Fail before reading the rest: a line without end (`/dev/zero`) would never be done.
            ctx.record(line_no, Err(why))?;
            skip_line(&mut reader).map_err(io)?;
            continue;
        }
        let bytes = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let bytes = if line_no == 1 {
            bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
        } else {
            bytes
        };
        let result = if let Some(at) = bytes.iter().position(|&b| b == 0) {
            Err(nul_byte(line_no, bytes, at))
        } else {
            match std::str::from_utf8(bytes) {
                Ok(line) if line.trim().is_empty() || line.starts_with('#') => Ok(Outcome::Nothing),
                Ok(line) => parse(line, ctx),
                Err(e) => Err(LineError::new(
                    "invalid UTF-8",
                    format!("at byte {}", e.valid_up_to()),
                )),
            }
        };
        ctx.record(line_no, result)?;
    }
}

impl From<GraphError> for LineError {
    /// A name the graph model refuses makes the line bad. A full dictionary repeats on every later
    /// line, so even with `--on-error skip` the report shows it plainly.
    fn from(e: GraphError) -> Self {
        let kind = match e {
            GraphError::EmptyName { .. } => "empty name",
            GraphError::TooMany { .. } => "graph limit",
            _ => "bad name",
        };
        LineError::new(kind, e.to_string())
    }
}

struct LineParser {
    format: Format,
    columns: Columns,
    bench: Bench,
}

/// State of a benchmark-format file: its declared vertex count, its declared edge count, and the
/// vertices and edges read so far (a file cut short must not pass for a smaller graph).
#[derive(Default)]
struct Bench {
    declared: Option<u64>,
    declared_edges: u64,
    vertices: u64,
    edges: u64,
}

impl LineParser {
    fn line(&mut self, line: &str, sink: &mut Sink, ctx: &Ctx) -> Result<Outcome, LineError> {
        let triple = match self.format {
            Format::ConceptNet => conceptnet(line, ctx.opts)?,
            Format::Triples => Some(triples(line, self.columns)?),
            Format::WordNetNodes => return wordnet_node(line, sink),
            Format::WordNetLemmas => return wordnet_lemma(line, sink),
            Format::Benchmark => return self.bench.line(line, sink),
            Format::Csv
            | Format::NTriples
            | Format::NQuads
            | Format::Turtle
            | Format::TriG
            | Format::RdfXml
            | Format::Kgtk => {
                unreachable!("{} has its own reader", self.format)
            }
        };
        let Some((h, r, t, w)) = triple else {
            return Ok(Outcome::Filtered);
        };
        sink.triple(&h, r, &t, w)?;
        Ok(Outcome::Edges(1))
    }
}

type Triple<'a> = (
    std::borrow::Cow<'a, str>,
    &'a str,
    std::borrow::Cow<'a, str>,
    f32,
);

fn fields<const N: usize>(line: &str, min: usize) -> Result<([&str; N], usize), LineError> {
    let mut out = [""; N];
    let mut count = 0;
    for (i, f) in line.split('\t').enumerate() {
        if i < N {
            out[i] = f;
        }
        count += 1;
    }
    if count < min || count > N {
        let expected = if min == N {
            format!("{N}")
        } else {
            format!("{min} to {N}")
        };
        return Err(LineError::new(
            "wrong field count",
            format!("expected {expected} tab-separated fields, found {count}"),
        ));
    }
    Ok((out, count))
}

fn weight(text: &str) -> Result<f32, LineError> {
    match text.trim().parse::<f32>() {
        Ok(w) if w.is_finite() => Ok(w),
        _ => Err(LineError::new(
            "bad weight",
            format!("{text:?} is not a finite number"),
        )),
    }
}

fn triples(line: &str, columns: Columns) -> Result<Triple<'_>, LineError> {
    let ([a, b, c, w], n) = fields::<4>(line, 3)?;
    let (r, h, t) = match columns {
        Columns::RelHeadTail => (a, b, c),
        Columns::HeadRelTail => (b, a, c),
    };
    let w = if n == 4 { weight(w)? } else { 1.0 };
    Ok((h.into(), r, t.into(), w))
}

/// One line of the ConceptNet dump; `None` when filtered (language, non-concept node).
fn conceptnet<'a>(line: &'a str, opts: &IngestOptions) -> Result<Option<Triple<'a>>, LineError> {
    let ([_, rel, start, end, meta], _) = fields::<5>(line, 5)?;
    let rel = rel
        .strip_prefix("/r/")
        .filter(|r| !r.is_empty())
        .ok_or_else(|| {
            LineError::new(
                "bad relation URI",
                format!("{rel:?} does not start with /r/"),
            )
        })?;
    let (Some(head), Some(tail)) = (concept(start, opts)?, concept(end, opts)?) else {
        return Ok(None);
    };
    Ok(Some((head, rel, tail, metadata_weight(meta)?)))
}

/// The node name of a `/c/<lang>/<term>[/<pos>/...]` URI; `None` for other URIs or other languages.
fn concept<'a>(
    uri: &'a str,
    opts: &IngestOptions,
) -> Result<Option<std::borrow::Cow<'a, str>>, LineError> {
    let Some(rest) = uri.strip_prefix("/c/") else {
        return Ok(None);
    };
    let mut parts = rest.splitn(3, '/');
    let (Some(lang), Some(term)) = (parts.next(), parts.next()) else {
        return Err(LineError::new(
            "bad concept URI",
            format!("{uri:?} has no term"),
        ));
    };
    if lang.is_empty() || term.is_empty() {
        return Err(LineError::new(
            "bad concept URI",
            format!("{uri:?} has an empty language or term"),
        ));
    }
    if !opts.languages.is_empty() && !opts.languages.iter().any(|l| l == lang) {
        return Ok(None);
    }
    let suffix = parts.next().filter(|_| !opts.strip_pos);
    if opts.languages.len() == 1 {
        let mut name = term.replace('_', " ");
        if let Some(s) = suffix {
            name.push('/');
            name.push_str(s);
        }
        Ok(Some(name.into()))
    } else if suffix.is_some() {
        Ok(Some(uri.into()))
    } else {
        Ok(Some(uri[..3 + lang.len() + 1 + term.len()].into()))
    }
}

/// The `"weight": x` of ConceptNet's JSON metadata, read without a JSON parser (it is on the hot path).
fn metadata_weight(meta: &str) -> Result<f32, LineError> {
    let key = "\"weight\":";
    let at = meta
        .find(key)
        .ok_or_else(|| LineError::new("bad metadata", "no \"weight\" in the JSON column"))?;
    let rest = meta[at + key.len()..].trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
        .unwrap_or(rest.len());
    weight(&rest[..end])
}

/// A WordNet node row: creates node `lemma/synset` labelled with the synset type.
fn wordnet_node(line: &str, sink: &mut Sink) -> Result<Outcome, LineError> {
    let ([synset, ss_type, _lexfile, lemma], _) = fields::<4>(line, 4)?;
    if synset.is_empty() || lemma.is_empty() || ss_type.is_empty() {
        return Err(LineError::new("empty name", "empty synset, type or lemma"));
    }
    if sink.aliases.contains_key(synset) {
        return Err(LineError::new(
            "duplicate node",
            format!("synset {synset} appears twice"),
        ));
    }
    let id = sink.builder.node(&format!("{lemma}/{synset}"))?;
    sink.builder.set_node_label(id, ss_type)?;
    sink.aliases.insert(synset.into(), id);
    Ok(Outcome::Nothing)
}

/// A WordNet lemma row `synset<TAB>lemma`: the lemma (underscores read as spaces, as in ConceptNet's
/// names) becomes a name of the synset's node, which a node table read earlier created.
fn wordnet_lemma(line: &str, sink: &mut Sink) -> Result<Outcome, LineError> {
    let ([synset, lemma], _) = fields::<2>(line, 2)?;
    if synset.is_empty() || lemma.is_empty() {
        return Err(LineError::new("empty name", "empty synset or lemma"));
    }
    let Some(&id) = sink.aliases.get(synset) else {
        return Err(LineError::new(
            "unknown synset",
            format!(
                "synset {synset} is not in a node table (give the node table, \
                 wn30_synset.nodes.tsv.gz, in the same ingest)"
            ),
        ));
    };
    sink.builder.alias(&lemma.replace('_', " "), id)?;
    Ok(Outcome::Names(1))
}

impl Bench {
    /// At the end of the file: whether it holds what its `t N M` header declares.
    fn finish(&self) -> Result<Outcome, LineError> {
        match self.declared {
            Some(n) if (n, self.declared_edges) != (self.vertices, self.edges) => {
                Err(LineError::new(
                    "count mismatch",
                    format!(
                        "the header declares {n} vertices and {} edges, the file has {} and {} \
                     (cut short?)",
                        self.declared_edges, self.vertices, self.edges
                    ),
                ))
            }
            _ => Ok(Outcome::Nothing),
        }
    }

    /// One line of the benchmark format. Vertices are named by their id; edges are stored both ways.
    fn line(&mut self, line: &str, sink: &mut Sink) -> Result<Outcome, LineError> {
        let mut parts = line.split_ascii_whitespace();
        let tag = parts.next().unwrap_or("");
        let nums: Vec<&str> = parts.collect();
        let number = |s: &str| {
            s.parse::<u64>().map_err(|_| {
                LineError::new("bad number", format!("{s:?} is not a non-negative integer"))
            })
        };
        match tag {
            "t" if nums.len() == 2 => {
                if self.declared.is_some() {
                    return Err(LineError::new("duplicate header", "a second `t` line"));
                }
                self.declared = Some(number(nums[0])?);
                self.declared_edges = number(nums[1])?;
                Ok(Outcome::Nothing)
            }
            "v" if (2..=3).contains(&nums.len()) => {
                let id = number(nums[0])?;
                if self.declared.is_some_and(|n| id >= n) {
                    return Err(LineError::new(
                        "bad vertex",
                        format!("vertex {id} beyond the declared count"),
                    ));
                }
                if id != sink.builder.node_count() as u64 {
                    return Err(LineError::new(
                        "bad vertex",
                        format!(
                            "vertex {id} out of order (expected {})",
                            sink.builder.node_count()
                        ),
                    ));
                }
                let v = sink.builder.node(nums[0])?;
                sink.builder.set_node_label(v, nums[1])?;
                self.vertices += 1;
                Ok(Outcome::Nothing)
            }
            "e" if (2..=3).contains(&nums.len()) => {
                let [u, v] = [nums[0], nums[1]].map(|s| sink.builder.existing_node(s));
                let (Some(u), Some(v)) = (u, v) else {
                    return Err(LineError::new(
                        "unknown vertex",
                        format!("edge {} {} names an undeclared vertex", nums[0], nums[1]),
                    ));
                };
                let r = sink
                    .builder
                    .relation(nums.get(2).copied().unwrap_or("edge"))?;
                sink.builder.add_edge(u, r, v, 1.0);
                sink.builder.add_edge(v, r, u, 1.0);
                self.edges += 1;
                Ok(Outcome::Edges(1))
            }
            _ => Err(LineError::new(
                "bad record",
                format!(
                    "expected `t N M`, `v id label [degree]` or `e u v [label]`, found {:?}",
                    truncate(line)
                ),
            )),
        }
    }
}

fn truncate(s: &str) -> &str {
    match s.char_indices().nth(60) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// CSV `head,relation,tail[,context[,weight]]` (the csv crate handles quoting and strips a BOM).
fn read_csv(input: Input, sink: &mut Sink, ctx: &mut Ctx) -> Result<(), IngestError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(input.into_reader());
    let mut record = csv::StringRecord::new();
    let mut last_line = 0;
    loop {
        let result = match reader.read_record(&mut record) {
            Ok(false) => return Ok(()),
            Ok(true) => csv_record(&record).and_then(|(h, r, t, w)| {
                sink.triple(h, r, t, w)
                    .map(|_| Outcome::Edges(1))
                    .map_err(LineError::from)
            }),
            Err(e) => match e.kind() {
                csv::ErrorKind::Io(_) => {
                    let source = match e.into_kind() {
                        csv::ErrorKind::Io(io) => io,
                        _ => unreachable!("matched above"),
                    };
                    return Err(IngestError::Io {
                        path: ctx.path.to_path_buf(),
                        source,
                    });
                }
                csv::ErrorKind::Utf8 { .. } => Err(LineError::new("invalid UTF-8", e.to_string())),
                _ => Err(LineError::new("bad CSV", e.to_string())),
            },
        };
        let line = record.position().map(|p| p.line()).unwrap_or(last_line + 1);
        last_line = line;
        ctx.record(line, result)?;
    }
}

fn csv_record(record: &csv::StringRecord) -> Result<(&str, &str, &str, f32), LineError> {
    if !(3..=5).contains(&record.len()) {
        return Err(LineError::new(
            "wrong field count",
            format!(
                "expected 3 to 5 comma-separated fields, found {}",
                record.len()
            ),
        ));
    }
    let w = match record.get(4).map(str::trim) {
        None | Some("") => 1.0,
        Some(w) => weight(w)?,
    };
    Ok((&record[0], &record[1], &record[2], w))
}
