//! The SPARQL algebra query set (`benches/sparql/algebra.rq`) and the digest both engines compute
//! of an answer, so that the side-by-side measurement also checks that they agree.
//!
//! A set is one text: each query starts at a line `#@ NAME CLASS` (a SPARQL comment, so the file
//! is readable SPARQL) and runs to the next such line; anything before the first is a preamble.

use std::collections::BTreeSet;

/// One query of the set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetQuery {
    pub name: String,
    /// The construct it measures (`optional`, `path`, ...): the report's geometric mean per class.
    pub class: String,
    pub text: String,
}

/// Why a query set cannot be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SetError {
    #[error("line {line}: `#@` must be followed by a name and a class (`#@ opt-two optional`)")]
    Header { line: usize },
    #[error("line {line}: query {name:?} has no text")]
    Empty { line: usize, name: String },
    #[error("line {line}: the name {name:?} is used twice")]
    Duplicate { line: usize, name: String },
    #[error("no query: each query starts with a line `#@ NAME CLASS`")]
    NoQuery,
}

/// Reads a query set.
pub fn parse(text: &str) -> Result<Vec<SetQuery>, SetError> {
    let mut out: Vec<(usize, SetQuery)> = Vec::new();
    let mut names = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if let Some(header) = line.strip_prefix("#@") {
            let mut words = header.split_whitespace();
            let (Some(name), Some(class), None) = (words.next(), words.next(), words.next()) else {
                return Err(SetError::Header { line: line_no });
            };
            if !names.insert(name.to_owned()) {
                return Err(SetError::Duplicate {
                    line: line_no,
                    name: name.to_owned(),
                });
            }
            out.push((
                line_no,
                SetQuery {
                    name: name.to_owned(),
                    class: class.to_owned(),
                    text: String::new(),
                },
            ));
        } else if let Some((_, q)) = out.last_mut() {
            q.text.push_str(line);
            q.text.push('\n');
        }
    }
    if out.is_empty() {
        return Err(SetError::NoQuery);
    }
    out.into_iter()
        .map(|(line, mut q)| {
            q.text = q.text.trim().to_owned();
            if q.text.is_empty() {
                Err(SetError::Empty { line, name: q.name })
            } else {
                Ok(q)
            }
        })
        .collect()
}

/// An answer's digest: FNV-1a (64 bits) over its rows sorted, each row its terms in N-Triples form
/// joined by tabs (an unbound value is empty), rows ended by a line feed. Row order does not count;
/// multiplicity does. `xtask/bench/sparql_peer.py` computes the same for Oxigraph.
#[derive(Clone, Debug, Default)]
pub struct Digest {
    rows: Vec<String>,
}

impl Digest {
    /// Adds one row.
    pub fn row<I: IntoIterator<Item = Option<String>>>(&mut self, terms: I) {
        let cells: Vec<String> = terms.into_iter().map(Option::unwrap_or_default).collect();
        self.rows.push(cells.join("\t"));
    }

    pub fn finish(mut self) -> u64 {
        self.rows.sort_unstable();
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for row in &self.rows {
            for b in row.bytes().chain([b'\n']) {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_split_at_headers() {
        let set = parse("# preamble\n\n#@ a optional\nSELECT 1\n\n#@ b path\nASK {}\n").unwrap();
        assert_eq!(
            set,
            vec![
                SetQuery {
                    name: "a".into(),
                    class: "optional".into(),
                    text: "SELECT 1".into()
                },
                SetQuery {
                    name: "b".into(),
                    class: "path".into(),
                    text: "ASK {}".into()
                },
            ]
        );
    }

    #[test]
    fn bad_sets_name_the_line() {
        assert_eq!(parse("#@ a\nASK {}"), Err(SetError::Header { line: 1 }));
        assert_eq!(
            parse("#@ a x\n#@ b y\nASK {}"),
            Err(SetError::Empty {
                line: 1,
                name: "a".into()
            })
        );
        assert_eq!(
            parse("#@ a x\nASK {}\n#@ a y\nASK {}"),
            Err(SetError::Duplicate {
                line: 3,
                name: "a".into()
            })
        );
        assert_eq!(parse("SELECT * {}"), Err(SetError::NoQuery));
    }

    #[test]
    fn the_shipped_set_reads() {
        let text = include_str!("../sparql/algebra.rq");
        let set = parse(text).unwrap();
        assert!(set.len() >= 20, "{} queries", set.len());
        assert!(set
            .iter()
            .all(|q| q.text.contains("PREFIX n: <gpsense:n/>")));
    }

    #[test]
    fn digest_ignores_row_order_but_not_multiplicity() {
        let digest = |rows: &[&[Option<&str>]]| {
            let mut d = Digest::default();
            for r in rows {
                d.row(r.iter().map(|t| t.map(str::to_owned)));
            }
            d.finish()
        };
        let (a, b) = (&[Some("<x>"), None][..], &[Some("<y>"), Some("\"1\"")][..]);
        assert_eq!(digest(&[a, b]), digest(&[b, a]));
        assert_ne!(digest(&[a, b]), digest(&[a, b, b]));
        assert_ne!(digest(&[a]), digest(&[b]));
        // The value Python computes for the same rows (xtask/bench/sparql_peer.py).
        assert_eq!(format!("{:016x}", digest(&[a, b])), PYTHON_AB);
    }

    /// `sparql_peer.digest([["<x>", None], ["<y>", '"1"']])`.
    const PYTHON_AB: &str = "7728121c7920be29";
}
