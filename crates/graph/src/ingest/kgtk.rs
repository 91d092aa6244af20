//! KGTK edge files, as CSKG publishes them: a header line of column names, then one edge per line.
//!
//! CSKG's `cskg.tsv` has `id node1 relation node2 node1;label node2;label relation;label
//! relation;dimension source sentence`. Columns are found by name: `node1`, `relation` (or KGTK's
//! own `label`) and `node2` are required; `node1;label` and `node2;label` give further names
//! (aliases) of the node, so `dog` finds `/c/en/dog`; an optional `weight` column gives weights;
//! every other column is ignored. A label value may hold several labels separated by `|`, each a
//! bare word, a KGTK string `"…"` or a language-qualified string `'…'@en` (backslash escapes).

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::BuildHasher;

use super::formats::{read_lines, Ctx, Outcome};
use super::input::Input;
use super::{IngestError, LineError, Sink};
use crate::{GraphError, NodeId};

pub(super) fn read(input: Input, sink: &mut Sink, ctx: &mut Ctx) -> Result<(), IngestError> {
    let mut kgtk = Kgtk::default();
    read_lines(input, ctx, |line, _| kgtk.line(line, sink))?;
    ctx.file.names += kgtk.names;
    Ok(())
}

/// Where the columns are, from the header.
struct Columns {
    count: usize,
    node1: usize,
    relation: usize,
    node2: usize,
    label1: Option<usize>,
    label2: Option<usize>,
    weight: Option<usize>,
}

#[derive(Default)]
enum Header {
    #[default]
    Expected,
    Bad,
    Read(Columns),
}

#[derive(Default)]
struct Kgtk {
    header: Header,
    /// Aliases given so far.
    names: u64,
    /// A hash of the label value last applied to each node: CSKG repeats a node's labels on every
    /// one of its edges, and applying them once keeps the builder's alias list small.
    labelled: HashMap<NodeId, u64>,
}

/// One edge line's fields of interest.
#[derive(Default)]
struct Row<'a> {
    node1: &'a str,
    relation: &'a str,
    node2: &'a str,
    label1: &'a str,
    label2: &'a str,
    weight: &'a str,
}

impl Kgtk {
    fn line(&mut self, line: &str, sink: &mut Sink) -> Result<Outcome, LineError> {
        let columns = match &self.header {
            Header::Read(c) => c,
            Header::Expected => {
                let (header, result) = match header(line) {
                    Ok(c) => (Header::Read(c), Ok(Outcome::Nothing)),
                    Err(e) => (Header::Bad, Err(e)),
                };
                self.header = header;
                return result;
            }
            Header::Bad => {
                return Err(LineError::new(
                    "no KGTK header",
                    "the first line is no KGTK header (see the error there)",
                ))
            }
        };
        let row = row(line, columns)?;
        let weight = match row.weight.trim() {
            "" => 1.0,
            w => match w.parse::<f32>() {
                Ok(w) if w.is_finite() => w,
                _ => {
                    return Err(LineError::new(
                        "bad weight",
                        format!("{w:?} is not a finite number"),
                    ))
                }
            },
        };
        let s = sink.node(row.node1)?;
        let r = sink.builder.relation(row.relation)?;
        let t = sink.node(row.node2)?;
        sink.builder.add_edge(s, r, t, weight);
        self.label(sink, s, row.node1, row.label1)?;
        self.label(sink, t, row.node2, row.label2)?;
        Ok(Outcome::Edges(1))
    }

    /// Makes each label in `value` a name of `node`, unless this very value was applied already.
    fn label(
        &mut self,
        sink: &mut Sink,
        node: NodeId,
        name: &str,
        value: &str,
    ) -> Result<(), GraphError> {
        if value.is_empty() {
            return Ok(());
        }
        let hash = foldhash::fast::FixedState::default().hash_one(value);
        if self.labelled.insert(node, hash) == Some(hash) {
            return Ok(());
        }
        for label in labels(value) {
            if !label.is_empty() && label != name {
                sink.builder.alias(&label, node)?;
                self.names += 1;
            }
        }
        Ok(())
    }
}

/// The column positions named by a header line.
fn header(line: &str) -> Result<Columns, LineError> {
    let names: Vec<&str> = line.split('\t').map(str::trim).collect();
    let find = |name: &str| names.iter().position(|n| *n == name);
    let relation = find("relation").or_else(|| find("label"));
    match (find("node1"), relation, find("node2")) {
        (Some(node1), Some(relation), Some(node2)) => Ok(Columns {
            count: names.len(),
            node1,
            relation,
            node2,
            label1: find("node1;label"),
            label2: find("node2;label"),
            weight: find("weight"),
        }),
        _ => Err(LineError::new(
            "bad KGTK header",
            format!(
                "the first line must name the columns node1, relation (or label) and node2; \
                 found {:?}",
                truncate(line)
            ),
        )),
    }
}

/// Picks the fields of interest; a row must have as many fields as the header.
fn row<'a>(line: &'a str, c: &Columns) -> Result<Row<'a>, LineError> {
    let mut row = Row::default();
    let mut count = 0;
    for (i, field) in line.split('\t').enumerate() {
        count += 1;
        let slot = match i {
            _ if i == c.node1 => &mut row.node1,
            _ if i == c.relation => &mut row.relation,
            _ if i == c.node2 => &mut row.node2,
            _ if Some(i) == c.label1 => &mut row.label1,
            _ if Some(i) == c.label2 => &mut row.label2,
            _ if Some(i) == c.weight => &mut row.weight,
            _ => continue,
        };
        *slot = field;
    }
    if count != c.count {
        return Err(LineError::new(
            "wrong field count",
            format!(
                "expected {} tab-separated fields (as in the header), found {count}",
                c.count
            ),
        ));
    }
    Ok(row)
}

/// The labels of a KGTK value: split at each `|` outside quotes and not escaped, then unquoted.
fn labels(value: &str) -> impl Iterator<Item = Cow<'_, str>> {
    let mut pieces = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in value.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            '|' if !quoted => {
                pieces.push(&value[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    pieces.push(&value[start..]);
    pieces.into_iter().map(unquote)
}

/// A KGTK string `"…"` or `'…'@lang` without its quotes and escapes; a bare symbol as it is (but
/// for an escaped `|`).
fn unquote(piece: &str) -> Cow<'_, str> {
    let inner = if piece.len() >= 2 && piece.starts_with('"') && piece.ends_with('"') {
        Some(&piece[1..piece.len() - 1])
    } else if piece.starts_with('\'') {
        piece
            .rfind("'@")
            .filter(|&end| end > 0)
            .or_else(|| (piece.len() >= 2 && piece.ends_with('\'')).then(|| piece.len() - 1))
            .map(|end| &piece[1..end])
    } else {
        None
    };
    match inner {
        Some(text) => unescape(text),
        None if piece.contains("\\|") => Cow::Owned(piece.replace("\\|", "|")),
        None => Cow::Borrowed(piece),
    }
}

/// KGTK's backslash escapes inside a string; an unknown escape stays as it is.
fn unescape(text: &str) -> Cow<'_, str> {
    if !text.contains('\\') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(c @ ('"' | '\'' | '\\' | '|')) => out.push(c),
            Some(c) => {
                out.push('\\');
                out.push(c);
            }
            None => out.push('\\'),
        }
    }
    Cow::Owned(out)
}

fn truncate(s: &str) -> &str {
    match s.char_indices().nth(80) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(value: &str) -> Vec<String> {
        labels(value).map(Cow::into_owned).collect()
    }

    #[test]
    fn splits_and_unquotes_labels() {
        assert_eq!(all("dog"), ["dog"]);
        assert_eq!(
            all("dog|domestic dog|Canis familiaris"),
            ["dog", "domestic dog", "Canis familiaris"]
        );
        assert_eq!(all(r#""say \"hi\""|'chien'@fr"#), ["say \"hi\"", "chien"]);
        assert_eq!(all(r#""a|b"|c\|d"#), ["a|b", "c|d"]);
        assert_eq!(all(r"'it\'s'@en-GB"), ["it's"]);
        assert_eq!(all("x||y"), ["x", "", "y"]);
        assert_eq!(all("\"unterminated"), ["\"unterminated"]);
        assert_eq!(all(r"back\slash"), [r"back\slash"]);
    }

    #[test]
    fn header_finds_columns_by_name() {
        let c = header("id\tnode1\trelation\tnode2\tnode1;label\tnode2;label\tsource").unwrap();
        assert_eq!(
            (c.count, c.node1, c.relation, c.node2, c.label1, c.label2),
            (7, 1, 2, 3, Some(4), Some(5))
        );
        let c = header("node2\tlabel\tnode1").unwrap();
        assert_eq!((c.node1, c.relation, c.node2, c.label1), (2, 1, 0, None));
        assert!(header("node1\tnode2").is_err());
        assert!(header("/c/en/dog\t/r/IsA\t/c/en/animal").is_err());
    }
}
