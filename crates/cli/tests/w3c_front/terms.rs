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

/// A number or boolean the CLI writes bare, as Turtle does (`5`, `1.5`, `1e3`, `true`).
fn bare(name: &str) -> Option<Term> {
    const XSD: &str = "http://www.w3.org/2001/XMLSchema#";
    let unsigned = name.strip_prefix(['+', '-']).unwrap_or(name);
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let datatype = if matches!(name, "true" | "false") {
        "boolean"
    } else if digits(unsigned) {
        "integer"
    } else if decimal(unsigned, digits) {
        "decimal"
    } else if unsigned.split_once(['e', 'E']).is_some_and(|(m, e)| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        digits(e) && (digits(m) || decimal(m, digits) || m.strip_suffix('.').is_some_and(digits))
    }) {
        "double"
    } else {
        return None;
    };
    let dt = NamedNode::new(format!("{XSD}{datatype}")).ok()?;
    Some(oxrdf::Literal::new_typed_literal(name, dt).into())
}

fn decimal(s: &str, digits: impl Fn(&str) -> bool) -> bool {
    s.split_once('.')
        .is_some_and(|(w, f)| (w.is_empty() || digits(w)) && digits(f))
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
    } else if let Some(t) = bare(&name) {
        t
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

#[cfg(test)]
mod tests {
    use super::*;
    use oxrdf::Literal;

    #[test]
    fn tsv_cells_are_terms_by_the_name_convention() {
        let out = "x\ty\tz\nhttp://e/a\t\"chat\"@fr\t_:b1\n\"a\\\\tb\\tc\"\t\t\"5\"^^<http://www.w3.org/2001/XMLSchema#integer>\n";
        let s = read_tsv(out).unwrap();
        let names: Vec<&str> = s.variables.iter().map(Variable::as_str).collect();
        assert_eq!(names, ["x", "y", "z"]);
        assert_eq!(
            s.rows[0],
            [
                Some(NamedNode::new_unchecked("http://e/a").into()),
                Some(Literal::new_language_tagged_literal_unchecked("chat", "fr").into()),
                Some(BlankNode::new_unchecked("b1").into()),
            ]
        );
        // `\\t` in the cell is the N-Triples escape `\t`: a tab in the literal; `\t` is one too.
        let typed = Literal::new_typed_literal("5", oxrdf::vocab::xsd::INTEGER);
        assert_eq!(
            s.rows[1],
            [
                Some(Literal::new_simple_literal("a\tb\tc").into()),
                None,
                Some(typed.into())
            ]
        );
    }

    #[test]
    fn no_variable_and_one_unbound_variable_are_told_apart() {
        assert_eq!(read_tsv("\n\n").unwrap().rows, [Vec::<Option<Term>>::new()]);
        assert_eq!(read_tsv("x\n\n").unwrap().rows, [vec![None]]);
    }

    #[test]
    fn what_is_no_term_is_no_answer() {
        // The CLI writes numbers bare, as SPARQL's TSV does: `5` is the integer 5.
        let five = read_tsv("n\n5\n").expect("a bare integer");
        assert_eq!(
            five.rows[0][0],
            Some(
                oxrdf::Literal::new_typed_literal(
                    "5",
                    NamedNode::new_unchecked("http://www.w3.org/2001/XMLSchema#integer")
                )
                .into()
            )
        );
        for out in [
            "n\n5x\n",
            "x\ty\na\n",
            "x\n# timed out\n",
            "x\n\"open\n",
            "x\n\\q\n",
        ] {
            assert!(read_tsv(out).is_err(), "{out:?} read as an answer");
        }
        assert!(read_triples("<a> <b> .\n").is_err());
    }
}
