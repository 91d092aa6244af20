//! Row output formats: TSV (default), CSV, JSON (an array of objects, streamed).

use std::io::{self, Write};
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowFormat {
    Tsv,
    Csv,
    Json,
}

impl FromStr for RowFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "tsv" => Ok(RowFormat::Tsv),
            "csv" => Ok(RowFormat::Csv),
            "json" => Ok(RowFormat::Json),
            _ => Err(format!(
                "unknown output format {s:?} (expected tsv, csv or json)"
            )),
        }
    }
}

/// A name as a TSV or CSV cell: a number or boolean literal bare when Turtle writes it so (`5`,
/// not `"5"^^<…#integer>`), as SPARQL's TSV results do; any other name as it is. The graph path
/// and the full evaluator write cells alike with it (a COUNT is `5` either way). JSON keeps names,
/// a COUNT column being a number there.
pub fn cell(name: &str) -> std::borrow::Cow<'_, str> {
    use gpsense_graph::rdf::{literal, Term};
    if !name.starts_with('"') || !name.ends_with('>') {
        return name.into();
    }
    match literal(name) {
        Some(Term::Literal {
            value,
            lang: None,
            datatype: Some(dt),
        }) if crate::serve::results::is_turtle_short(&value, dt) => value.into_owned().into(),
        _ => name.into(),
    }
}

pub struct RowWriter<W: Write> {
    out: io::BufWriter<W>,
    format: RowFormat,
    header: Vec<String>,
    rows: u64,
    /// The header is written with the first row (or at the end): a query refused before any row
    /// prints nothing on stdout.
    begun: bool,
    /// Columns JSON writes as numbers (TruST's score), not strings.
    numeric: Vec<bool>,
}

impl<W: Write> RowWriter<W> {
    pub fn new(out: W, format: RowFormat, header: &[String]) -> io::Result<Self> {
        Ok(RowWriter {
            out: io::BufWriter::with_capacity(1 << 16, out),
            format,
            header: header.to_vec(),
            rows: 0,
            begun: false,
            numeric: vec![false; header.len()],
        })
    }

    /// Marks column `i` as numeric: JSON writes its values as numbers.
    pub fn numeric(mut self, i: usize) -> Self {
        self.numeric[i] = true;
        self
    }

    fn begin(&mut self) -> io::Result<()> {
        if self.begun {
            return Ok(());
        }
        self.begun = true;
        let header = std::mem::take(&mut self.header);
        match self.format {
            RowFormat::Tsv => self.line(header.iter().map(String::as_str), '\t', tsv_escape)?,
            RowFormat::Csv => self.line(header.iter().map(String::as_str), ',', csv_escape)?,
            RowFormat::Json => self.out.write_all(b"[")?,
        }
        self.header = header;
        Ok(())
    }

    pub fn row(&mut self, values: &[&str]) -> io::Result<()> {
        self.begin()?;
        match self.format {
            RowFormat::Tsv => self.line(values.iter().copied(), '\t', tsv_escape)?,
            RowFormat::Csv => self.line(values.iter().copied(), ',', csv_escape)?,
            RowFormat::Json => {
                let sep = if self.rows == 0 { "\n" } else { ",\n" };
                let fields: Vec<String> = self
                    .header
                    .iter()
                    .zip(values)
                    .zip(&self.numeric)
                    .map(|((k, v), &number)| {
                        let v = if number {
                            v.to_string()
                        } else {
                            json_string(v)
                        };
                        format!("{}: {v}", json_string(k))
                    })
                    .collect();
                write!(self.out, "{sep}{{{}}}", fields.join(", "))?;
            }
        }
        self.rows += 1;
        Ok(())
    }

    fn line<'v>(
        &mut self,
        values: impl Iterator<Item = &'v str>,
        sep: char,
        escape: fn(&str) -> String,
    ) -> io::Result<()> {
        let line: Vec<String> = values.map(escape).collect();
        writeln!(self.out, "{}", line.join(&sep.to_string()))
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Ends the output; `timed_out` marks it incomplete (see [`crate::out::TIMED_OUT_LINE`]): a last
    /// line for TSV and CSV, a last element of the JSON array.
    pub fn end(mut self, timed_out: bool) -> io::Result<()> {
        self.begin()?;
        match (self.format, timed_out) {
            (RowFormat::Json, false) => {
                self.out
                    .write_all(if self.rows == 0 { b"]\n" } else { b"\n]\n" })?
            }
            (RowFormat::Json, true) => {
                let sep = if self.rows == 0 { "\n" } else { ",\n" };
                write!(self.out, "{sep}{}\n]\n", crate::out::TIMED_OUT_JSON)?
            }
            (_, true) => writeln!(self.out, "{}", crate::out::TIMED_OUT_LINE)?,
            (_, false) => {}
        }
        self.out.flush()
    }
}

/// TSV cannot quote: tabs, newlines and backslashes are escaped as `\t`, `\n`, `\\`.
fn tsv_escape(s: &str) -> String {
    if !s.contains(['\t', '\n', '\r', '\\']) {
        return s.to_owned();
    }
    s.replace('\\', "\\\\")
        .replace('\t', "\\t")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
}

/// RFC 4180: quote fields with commas, quotes or line breaks; double the quotes.
fn csv_escape(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    crate::serve::results::json_string(&mut out, s);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(format: RowFormat, rows: &[&[&str]]) -> String {
        let mut buf = Vec::new();
        let mut w = RowWriter::new(&mut buf, format, &["x".into(), "r".into()]).unwrap();
        for r in rows {
            w.row(r).unwrap();
        }
        w.end(false).unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn formats_rows() {
        let rows: &[&[&str]] = &[&["ice cream", "IsA"], &["a,\"b\"", "tab\there"]];
        assert_eq!(
            render(RowFormat::Tsv, rows),
            "x\tr\nice cream\tIsA\na,\"b\"\ttab\\there\n"
        );
        assert_eq!(
            render(RowFormat::Csv, rows),
            "x,r\nice cream,IsA\n\"a,\"\"b\"\"\",tab\there\n"
        );
        assert_eq!(
            render(RowFormat::Json, rows),
            "[\n{\"x\": \"ice cream\", \"r\": \"IsA\"},\n{\"x\": \"a,\\\"b\\\"\", \"r\": \"tab\\there\"}\n]\n"
        );
        assert_eq!(render(RowFormat::Json, &[]), "[]\n");
    }

    #[test]
    fn a_timed_out_answer_ends_with_a_mark() {
        let cut = |format, rows: &[&[&str]]| {
            let mut buf = Vec::new();
            let mut w = RowWriter::new(&mut buf, format, &["x".into()]).unwrap();
            for r in rows {
                w.row(r).unwrap();
            }
            w.end(true).unwrap();
            String::from_utf8(buf).unwrap()
        };
        let mark = crate::out::TIMED_OUT_LINE;
        assert_eq!(cut(RowFormat::Tsv, &[&["a"]]), format!("x\na\n{mark}\n"));
        assert_eq!(cut(RowFormat::Csv, &[]), format!("x\n{mark}\n"));
        assert_eq!(
            cut(RowFormat::Json, &[&["a"]]),
            "[\n{\"x\": \"a\"},\n{\"timed_out\": true}\n]\n"
        );
        assert_eq!(cut(RowFormat::Json, &[]), "[\n{\"timed_out\": true}\n]\n");
    }
}
