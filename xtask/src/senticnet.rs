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
//! five semantically related concepts.
//!
//! Python reads it: `senticnet.py` (run by `python3`, which `fetch senticnet` needs for pip
//! anyway) parses the module with Python's own `ast` and evaluates each value with
//! `ast.literal_eval`, never running the file, and hands each assignment over as a JSON line. So
//! every literal Python accepts is read as Python reads it (quote styles, prefixes, escapes,
//! concatenation, comments, continuation lines, numbers, which come over as Python's `repr`), as
//! are the `name = {'k': [...], ...}` dict display and `name['k'] = [...]`. Later assignments to
//! the same key replace earlier ones, as in Python. Every error names the line and column.
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

/// The reader of the Python module (see the module docs), run by `python3 -c`.
const READER: &str = include_str!("senticnet.py");

/// One line of the reader's output.
#[derive(serde::Deserialize)]
struct Event {
    #[serde(default)]
    name: String,
    line: usize,
    column: usize,
    /// `name = {...}`: the variable is bound to a new dict.
    #[serde(default)]
    rebind: bool,
    key: Option<String>,
    values: Option<Vec<String>>,
    /// The first problem in the file; nothing follows it.
    error: Option<String>,
}

/// Parses the bytes of `senticnet6.py` with Python (`python3` on the `PATH`). A problem in the
/// file is a [`ParseError`] (inside the `anyhow::Error`), naming its line and column.
pub fn parse(src: &[u8]) -> anyhow::Result<Parsed> {
    use anyhow::Context;
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let mut child = Command::new("python3")
        .args(["-c", READER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot run python3, which reads SenticNet's Python module")?;
    let mut stdin = child.stdin.take().context("python3's standard input")?;
    let stdout = child.stdout.take().context("python3's standard output")?;
    let mut book = Book::default();
    let applied = std::thread::scope(|scope| {
        // The module goes in while the records come out: neither pipe fills up and stalls.
        let writer = scope.spawn(move || stdin.write_all(src));
        let applied = io::BufReader::new(stdout)
            .lines()
            .try_for_each(|line| apply(&mut book, &line.context("reading python3's output")?));
        let written = writer
            .join()
            .map_err(|_| anyhow::anyhow!("the writer thread panicked"))?;
        // A reader that stopped at an error may not take all of its input.
        if applied.is_ok() {
            written.context("writing the module to python3")?;
        }
        applied
    });
    let status = child.wait().context("waiting for python3")?;
    applied?;
    if !status.success() {
        anyhow::bail!("python3 failed reading the module ({status})");
    }
    Ok(book.finish())
}

/// Applies one line of the reader's output to the dict being built.
fn apply(book: &mut Book, line: &str) -> anyhow::Result<()> {
    let e: Event = serde_json::from_str(line)
        .map_err(|err| anyhow::anyhow!("unexpected output from the reader ({err}): {line}"))?;
    if let Some(message) = e.error {
        let (line, column) = (e.line, e.column);
        return Err(ParseError {
            line,
            column,
            message,
        }
        .into());
    }
    book.check_name(&e.name, e.line, e.column)?;
    match (e.rebind, e.key, e.values) {
        (true, _, _) => book.clear(),
        (false, Some(key), Some(values)) => book.insert(key, values, e.line)?,
        _ => anyhow::bail!("unexpected output from the reader: {line}"),
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/senticnet6_sample.py"
    );

    /// SenticNet-shaped, hand-written (no SenticNet data): the Python literal syntax the
    /// hand-written parser read (escapes, prefixes, triple quotes, concatenation, comments, a
    /// statement over lines, `;`, a continuation line), a key assigned twice, keys that normalise
    /// to one name, empty names and values, a link to itself.
    const SAMPLE: &str = SAMPLE_TEXT;

    /// A BOM, CRLF newlines, and a dict display that rebinds the variable (the entry before it is
    /// gone) with a key assigned again after it.
    const REBOUND: &str = REBOUND_TEXT;

    fn parse_str(text: &str) -> anyhow::Result<Parsed> {
        parse(text.as_bytes())
    }

    fn err(text: &str) -> ParseError {
        let e = parse_str(text).expect_err("should be rejected");
        e.downcast::<ParseError>()
            .unwrap_or_else(|e| panic!("not a located error: {e:#}"))
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

    fn lines_of(parsed: &Parsed) -> Vec<usize> {
        parsed.records.iter().map(|r| r.line).collect()
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

    /// The triples, record lines and counts below are what the hand-written parser (replaced by
    /// Python's own) produced on the same samples.
    #[test]
    fn same_output_as_the_hand_written_parser() {
        let parsed = parse_str(SAMPLE).expect("sample parses");
        let (text, stats) = convert(&parsed);
        assert_eq!(data_lines(&text), EXPECTED_SAMPLE);
        assert_eq!(lines_of(&parsed), LINES_SAMPLE);
        assert_eq!(parsed.overridden, OVERRIDDEN_SAMPLE);
        assert_eq!(format!("{stats:?}"), STATS_SAMPLE);

        let parsed = parse_str(REBOUND).expect("rebound parses");
        let (text, stats) = convert(&parsed);
        assert_eq!(data_lines(&text), EXPECTED_REBOUND);
        assert_eq!(lines_of(&parsed), LINES_REBOUND);
        assert_eq!(parsed.overridden, OVERRIDDEN_REBOUND);
        assert_eq!(format!("{stats:?}"), STATS_REBOUND);

        let parsed = parse(&std::fs::read(FIXTURE).expect("fixture")).expect("fixture parses");
        let (text, stats) = convert(&parsed);
        let want = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/senticnet6_sample.triples.tsv"
        ))
        .expect("expected triples");
        assert_eq!(text, want);
        assert_eq!(lines_of(&parsed), LINES_FIXTURE);
        assert_eq!(format!("{stats:?}"), STATS_FIXTURE);
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
        assert!(lines.contains(&"RelatedTo\tdon't panic\tkeep \"calm\""));
        assert!(lines.contains(&"RelatedTo\tcafé\tcrème brûlée"));
        // The re-assigned key keeps its first position but the last values.
        assert!(lines.contains(&"HasPrimaryMood\tthunderstorm\t#fear"));
        assert!(!lines.contains(&"HasPrimaryMood\tthunderstorm\t#joy"));
        assert_eq!(stats.triples(), lines.len() as u64);
    }

    /// The reader parses a few thousand lines at a time; a statement across a cut is read whole,
    /// and line numbers stay those of the file.
    #[test]
    fn a_statement_across_a_chunk_is_read_whole() {
        let mut text = "senticnet = {}\n".repeat(4094);
        text.push_str("senticnet['a'] = ['0', '0', '0', '0',\n'#joy', '#joy',\n");
        text.push_str("'positive', '0', 'x']\n");
        text.push_str(&entry("b"));
        let parsed = parse_str(&text).expect("parses");
        assert_eq!(lines_of(&parsed), [4095, 4098]);
        let e = err(&format!("{text}senticnet['c'] = ['x',\n"));
        assert_eq!(e.line, 4099, "{e}");
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
        rejected_at("senticnet['a'] = ['0', '1']\n", "senticnet", "has 2 values");
        rejected_at("print('hello')\n", "print", "expected a statement like");
        rejected_at(
            "other['a'] = ['x']\n",
            "other",
            "this file builds `senticnet`",
        );
        rejected_at("senticnet['a'] = [b'0']\n", "b'0'", "found bytes");
        rejected_at(
            "senticnet['a'] = [x]\n",
            "x]",
            "expected a string or a number",
        );
        rejected_at("senticnet[1] = ['x']\n", "1]", "a quoted string as the key");
        rejected_at("senticnet['a'] = {}\n", "{}", "expected a list of values");
        // Python's own syntax errors (their wording and column depend on its version).
        let e = err(&format!("{}senticnet['a' = ['x']\n", entry("fine")));
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.starts_with("invalid Python: "), "{e}");
        let e = err("senticnet['a'] = ['x', 'y'\n");
        assert_eq!(e.line, 1, "{e}");
        assert!(e.message.contains("invalid Python"), "{e}");
    }

    #[test]
    fn rejects_bad_encoding_and_long_names() {
        let mut bytes = entry("a").into_bytes();
        bytes.extend_from_slice(b"senticnet['caf\xe9'] = []\n");
        let e = parse(&bytes).expect_err("latin-1 byte");
        let e = e.downcast::<ParseError>().expect("located");
        assert_eq!((e.line, e.column), (2, 15));
        assert!(e.message.contains("UTF-8"));

        let long = "x".repeat(MAX_NAME_BYTES + 1);
        let e = err(&format!("\n{}", entry(&long)));
        assert_eq!(e.line, 2);
        assert!(e.message.contains("bytes long"), "{e}");
    }

    #[test]
    fn accepts_an_empty_file() {
        assert_eq!(parse_str("").expect("empty"), Parsed::default());
        assert_eq!(
            parse_str("# nothing\n").expect("comment"),
            Parsed::default()
        );
    }

    #[test]
    fn name_limit_matches_the_graph_crate() {
        assert_eq!(MAX_NAME_BYTES, gpsense_graph::MAX_NAME_LEN);
    }

    const SAMPLE_TEXT: &str = r#"# A SenticNet-shaped sample, hand-written: no SenticNet data.
sn = {}  # trailing comment
sn["a\x41\u00e9\101\n_b"] = [  # a list over lines
    '0', 0.5, -1e-3, +2,
    '#joy', u'#fear', r'pos\itive', '1',
    'x' "y", '''tri'ple''', 'z',
]; sn['k'] = ['0','0','0','0','#joy','#joy','positive','0','p']
sn['c'] = \
  ['0','0','0','0','#joy','#joy','positive','0','q']
sn['top_notch'] = ['0','0','0','0','#joy','#joy','positive','0','x','y', 'top notch']
sn['top_notch '] = ['0','0','0','0','#joy','#fear','positive','0','y','z']
sn['top_notch'] = ['0','0','0','0','#joy','#joy','positive','0','x','w','x']
sn['_'] = ['0','0','0','0','#joy','#joy','positive','0','x']
sn['empty'] = ['0','0','0','0','','#joy','positive','0','  ', 'y']
sn["don't_panic"] = ['0', '0.6', '0', '0.3', '#calmness', '#calmness', 'positive', '0.45', 'keep_\"calm\"', 'don\'t_panic', 'caf\u00e9']
"#;
    const REBOUND_TEXT: &str = "﻿senticnet = {}\r\nsenticnet['a'] = ['0','0','0','0','#joy','#joy','positive','0','gone']\r\nsenticnet = {\r\n  'b': ['0','0','0','0','#joy','#sadness','negative','0','x'],\r\n  \"c\": ['0','0','0','0','#joy','#joy','positive','0','y'],\r\n}\r\nsenticnet['b'] = ['0','0','0','0','#fear','#joy','negative','0','z', 'b']\r\n";
    const EXPECTED_SAMPLE: [&str; 30] = [
        "HasPrimaryMood\taAéA b\t#joy",
        "HasSecondaryMood\taAéA b\t#fear",
        "HasPolarity\taAéA b\tpos\\itive",
        "RelatedTo\taAéA b\txy",
        "RelatedTo\taAéA b\ttri'ple",
        "RelatedTo\taAéA b\tz",
        "HasPrimaryMood\tk\t#joy",
        "HasSecondaryMood\tk\t#joy",
        "HasPolarity\tk\tpositive",
        "RelatedTo\tk\tp",
        "HasPrimaryMood\tc\t#joy",
        "HasSecondaryMood\tc\t#joy",
        "HasPolarity\tc\tpositive",
        "RelatedTo\tc\tq",
        "HasPrimaryMood\ttop notch\t#joy",
        "HasSecondaryMood\ttop notch\t#joy",
        "HasPolarity\ttop notch\tpositive",
        "RelatedTo\ttop notch\tx",
        "RelatedTo\ttop notch\tw",
        "HasSecondaryMood\ttop notch\t#fear",
        "RelatedTo\ttop notch\ty",
        "RelatedTo\ttop notch\tz",
        "HasSecondaryMood\tempty\t#joy",
        "HasPolarity\tempty\tpositive",
        "RelatedTo\tempty\ty",
        "HasPrimaryMood\tdon't panic\t#calmness",
        "HasSecondaryMood\tdon't panic\t#calmness",
        "HasPolarity\tdon't panic\tpositive",
        "RelatedTo\tdon't panic\tkeep \"calm\"",
        "RelatedTo\tdon't panic\tcafé",
    ];
    const EXPECTED_REBOUND: [&str; 8] = [
        "HasPrimaryMood\tb\t#fear",
        "HasSecondaryMood\tb\t#joy",
        "HasPolarity\tb\tnegative",
        "RelatedTo\tb\tz",
        "HasPrimaryMood\tc\t#joy",
        "HasSecondaryMood\tc\t#joy",
        "HasPolarity\tc\tpositive",
        "RelatedTo\tc\ty",
    ];
    const LINES_SAMPLE: [usize; 8] = [3, 7, 8, 12, 11, 13, 14, 15];
    const LINES_REBOUND: [usize; 2] = [7, 5];
    const LINES_FIXTURE: [usize; 7] = [3, 4, 15, 6, 8, 9, 11];
    const OVERRIDDEN_SAMPLE: usize = 1;
    const OVERRIDDEN_REBOUND: usize = 1;
    const STATS_SAMPLE: &str = "Stats { concepts: 6, merged_keys: 1, triples_by_relation: {\"HasPolarity\": 6, \"HasPrimaryMood\": 5, \"HasSecondaryMood\": 7, \"RelatedTo\": 12}, nodes: 21, self_links_skipped: 1, repeated_triples_skipped: 3, empty_values_skipped: 2, empty_keys_skipped: 1 }";
    const STATS_REBOUND: &str = "Stats { concepts: 2, merged_keys: 0, triples_by_relation: {\"HasPolarity\": 2, \"HasPrimaryMood\": 2, \"HasSecondaryMood\": 2, \"RelatedTo\": 2}, nodes: 8, self_links_skipped: 1, repeated_triples_skipped: 0, empty_values_skipped: 0, empty_keys_skipped: 0 }";
    const STATS_FIXTURE: &str = "Stats { concepts: 7, merged_keys: 0, triples_by_relation: {\"HasPolarity\": 7, \"HasPrimaryMood\": 7, \"HasSecondaryMood\": 7, \"RelatedTo\": 33}, nodes: 48, self_links_skipped: 1, repeated_triples_skipped: 1, empty_values_skipped: 0, empty_keys_skipped: 0 }";
}
