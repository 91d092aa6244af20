//! A front end's text read back into RDF terms: TSV cells in gpsense's name convention
//! (`crates/graph/src/rdf.rs`: an IRI bare, a literal in N-Triples form, a blank node `_:label`,
//! an unbound value empty), and N-Triples graphs. Read with oxttl, not with gpsense's own
//! reader, so that the convention is checked rather than assumed.

use oxrdf::{BlankNode, Graph, NamedNode, Term, Variable};
use oxttl::NTriplesParser;

use crate::w3c_support::results::{Row, Solutions};

/// `gpsense query --format tsv`: a header of variable names, then a row per line. With no
/// variable, the header and each row are empty lines.
pub fn read_tsv(out: &str) -> Result<Solutions, String> {
    let mut lines = out.lines();
    let header = lines.next().ok_or("no header line")?;
    let variables = cells(header)
        .map(|name| {
            let name = unescape(name)?;
            Variable::new(name.strip_prefix('?').unwrap_or(&name))
                .map_err(|e| format!("header {header:?}: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let rows = lines
        .enumerate()
        .map(|(i, line)| row(line, variables.len()).map_err(|e| format!("row {}: {e}", i + 1)))
        .collect::<Result<_, _>>()?;
    Ok(Solutions {
        variables,
        rows,
        ordered: true,
    })
}

/// A line's tab-separated cells; an empty line has none.
fn cells(line: &str) -> impl Iterator<Item = &str> {
    line.split('\t').filter(move |_| !line.is_empty())
}

fn row(line: &str, width: usize) -> Result<Row, String> {
    if line.starts_with('#') {
        return Err(format!("{line:?}"));
    }
    // One variable: an empty line is a row with it unbound.
    let cells: Vec<&str> = match (width, line.is_empty()) {
        (1, true) => vec![""],
        _ => cells(line).collect(),
    };
    if cells.len() != width {
        return Err(format!(
            "{} cells under {width} variables: {line:?}",
            cells.len()
        ));
    }
    cells.into_iter().map(term).collect()
}

/// One cell: empty is unbound.
fn term(cell: &str) -> Result<Option<Term>, String> {
    if cell.is_empty() {
        return Ok(None);
    }
    let name = unescape(cell)?;
    let term: Term = if let Some(label) = name.strip_prefix("_:") {
        BlankNode::new(label)
            .map_err(|e| format!("{cell:?}: {e}"))?
            .into()
    } else if name.starts_with('"') {
        literal(&name)?
    } else {
        NamedNode::new(name.as_str())
            .map_err(|e| format!("{cell:?} is no IRI, literal or blank node: {e}"))?
            .into()
    };
    Ok(Some(term))
}

/// A literal in N-Triples form, read as the object of a triple.
fn literal(text: &str) -> Result<Term, String> {
    let line = format!("_:s <urn:p> {text} .");
    let triples = NTriplesParser::new()
        .for_slice(line.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{text:?} is no N-Triples literal: {e}"))?;
    match triples.as_slice() {
        [t] => Ok(t.object.clone()),
        _ => Err(format!("{text:?} is no single N-Triples literal")),
    }
}

/// TSV's escapes undone: `\t`, `\n`, `\r`, `\\`.
fn unescape(cell: &str) -> Result<String, String> {
    let mut out = String::with_capacity(cell.len());
    let mut chars = cell.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next() {
            Some('t') => '\t',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('\\') => '\\',
            other => return Err(format!("{cell:?}: a backslash before {other:?}")),
        });
    }
    Ok(out)
}

/// N-Triples, one triple a line.
pub fn read_triples(out: &str) -> Result<Graph, String> {
    let triples = NTriplesParser::new()
        .for_slice(out.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not N-Triples: {e}"))?;
    Ok(triples.iter().collect())
}
