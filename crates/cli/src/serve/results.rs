//! The W3C SPARQL 1.1 result formats, written byte for byte as Oxigraph's `sparesults` writes them
//! (the acceptance test compares with pyoxigraph): Query Results JSON, XML, CSV and TSV.
//!
//! - JSON: `{"head":{"vars":[..]},"results":{"bindings":[..]}}`; a literal carries `xml:lang` or
//!   `datatype` (none for `xsd:string`); ASK is `{"head":{},"boolean":true}`.
//! - XML: `<sparql>` with `<head>`, `<results>`, `<uri>`, `<bnode>`, `<literal>`.
//! - CSV: the variable names, then plain values (IRIs bare, literals by their lexical form, blank
//!   nodes `_:b`), CRLF line ends, a field quoted when it holds `"`, `,`, CR or LF (RFC 4180).
//! - TSV: `?x` headers, terms in Turtle syntax (`<iri>`, `"chat"@fr`, `"a"^^<dt>`, `_:b`, and
//!   integers, decimals, doubles and booleans bare when their lexical form is Turtle's), LF ends.
//! - ASK in CSV and TSV: `true` or `false`, as Oxigraph writes it.

pub const XSD_INTEGER: &str = "http://www.w3.org/2001/XMLSchema#integer";
const XSD_DECIMAL: &str = "http://www.w3.org/2001/XMLSchema#decimal";
const XSD_DOUBLE: &str = "http://www.w3.org/2001/XMLSchema#double";
const XSD_BOOLEAN: &str = "http://www.w3.org/2001/XMLSchema#boolean";

/// A result format, chosen by content negotiation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Xml,
    Csv,
    Tsv,
}

impl Format {
    /// The `Content-Type` of a response.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Json => "application/sparql-results+json",
            Format::Xml => "application/sparql-results+xml",
            Format::Csv => "text/csv; charset=utf-8",
            Format::Tsv => "text/tab-separated-values; charset=utf-8",
        }
    }
}

pub use gpsense_graph::rdf::Term;

/// The body of an ASK answer.
pub fn boolean(format: Format, value: bool) -> Vec<u8> {
    let word = if value { "true" } else { "false" };
    match format {
        Format::Json => format!("{{\"head\":{{}},\"boolean\":{word}}}").into_bytes(),
        Format::Xml => format!(
            "<?xml version=\"1.0\"?><sparql xmlns=\"http://www.w3.org/2005/sparql-results#\">\
             <head></head><boolean>{word}</boolean></sparql>"
        )
        .into_bytes(),
        Format::Csv | Format::Tsv => word.as_bytes().to_vec(),
    }
}

/// Writes the solutions of a SELECT into a buffer: the header at creation, then one row at a time.
pub struct SolutionsWriter {
    format: Format,
    out: String,
    vars: Vec<String>,
    rows: u64,
}

impl SolutionsWriter {
    pub fn new(format: Format, vars: &[String]) -> Self {
        let mut w = SolutionsWriter {
            format,
            out: String::new(),
            vars: vars.to_vec(),
            rows: 0,
        };
        w.head();
        w
    }

    fn head(&mut self) {
        let out = &mut self.out;
        match self.format {
            Format::Json => {
                out.push_str("{\"head\":{\"vars\":[");
                for (i, v) in self.vars.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    json_string(out, v);
                }
                out.push_str("]},\"results\":{\"bindings\":[");
            }
            Format::Xml => {
                out.push_str(
                    "<?xml version=\"1.0\"?><sparql xmlns=\"http://www.w3.org/2005/sparql-results#\"><head>",
                );
                for v in &self.vars {
                    out.push_str("<variable name=\"");
                    xml_escape(out, v);
                    out.push_str("\"/>");
                }
                out.push_str("</head><results>");
            }
            Format::Csv => {
                out.push_str(&self.vars.join(","));
                out.push_str("\r\n");
            }
            Format::Tsv => {
                let names: Vec<String> = self.vars.iter().map(|v| format!("?{v}")).collect();
                out.push_str(&names.join("\t"));
                out.push('\n');
            }
        }
    }

    /// One solution: a term per variable, in the header's order.
    pub fn row(&mut self, terms: &[Term]) {
        let bound: Vec<Option<&Term>> = terms.iter().map(Some).collect();
        self.row_of(&bound);
    }

    /// One solution whose variables may be unbound (OPTIONAL): an unbound variable is left out
    /// of JSON and XML, and an empty field in CSV and TSV, as the formats say.
    pub fn row_of(&mut self, terms: &[Option<&Term>]) {
        debug_assert_eq!(terms.len(), self.vars.len());
        match self.format {
            Format::Json => self.json_row(terms),
            Format::Xml => self.xml_row(terms),
            Format::Csv | Format::Tsv => {
                let (separator, end) = match self.format {
                    Format::Csv => (',', "\r\n"),
                    _ => ('\t', "\n"),
                };
                for (i, t) in terms.iter().enumerate() {
                    if i > 0 {
                        self.out.push(separator);
                    }
                    match t {
                        Some(t) if self.format == Format::Csv => csv_term(&mut self.out, t),
                        Some(t) => tsv_term(&mut self.out, t),
                        None => {}
                    }
                }
                self.out.push_str(end);
            }
        }
        self.rows += 1;
    }

    fn json_row(&mut self, terms: &[Option<&Term>]) {
        let out = &mut self.out;
        if self.rows > 0 {
            out.push(',');
        }
        out.push('{');
        let bound = self
            .vars
            .iter()
            .zip(terms)
            .filter_map(|(v, t)| Some((v, (*t)?)));
        for (i, (v, t)) in bound.enumerate() {
            if i > 0 {
                out.push(',');
            }
            json_string(out, v);
            out.push(':');
            json_term(out, t);
        }
        out.push('}');
    }

    fn xml_row(&mut self, terms: &[Option<&Term>]) {
        let out = &mut self.out;
        out.push_str("<result>");
        let bound = self
            .vars
            .iter()
            .zip(terms)
            .filter_map(|(v, t)| Some((v, (*t)?)));
        for (v, t) in bound {
            out.push_str("<binding name=\"");
            xml_escape(out, v);
            out.push_str("\">");
            xml_term(out, t);
            out.push_str("</binding>");
        }
        out.push_str("</result>");
    }

    /// Bytes written and not yet taken.
    pub fn buffered(&self) -> usize {
        self.out.len()
    }

    /// The bytes written so far, for a streamed answer; the writer goes on after them.
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out).into_bytes()
    }

    /// Takes back the last row, written from `mark` (its [`buffered`](Self::buffered) before).
    pub fn undo_row(&mut self, mark: usize) {
        self.out.truncate(mark);
        self.rows = self.rows.saturating_sub(1);
    }

    /// The rest of the body.
    pub fn finish(mut self) -> Vec<u8> {
        match self.format {
            Format::Json => self.out.push_str("]}}"),
            Format::Xml => self.out.push_str("</results></sparql>"),
            Format::Csv | Format::Tsv => {}
        }
        self.out.into_bytes()
    }
}

fn json_term(out: &mut String, t: &Term) {
    match t {
        Term::Iri(iri) => {
            out.push_str("{\"type\":\"uri\",\"value\":");
            json_string(out, iri);
        }
        Term::Blank(label) => {
            out.push_str("{\"type\":\"bnode\",\"value\":");
            json_string(out, label);
        }
        Term::Literal {
            value,
            lang,
            datatype,
        } => {
            out.push_str("{\"type\":\"literal\",\"value\":");
            json_string(out, value);
            if let Some(lang) = lang {
                out.push_str(",\"xml:lang\":");
                json_string(out, lang);
            } else if let Some(dt) = datatype {
                out.push_str(",\"datatype\":");
                json_string(out, dt);
            }
        }
    }
    out.push('}');
}

/// A JSON string: `"` and `\` escaped, control characters as `\n`-style or `\u00XX` escapes (as
/// Oxigraph writes them). Also the CLI's JSON rows.
pub(crate) fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            c if c < ' ' => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn xml_term(out: &mut String, t: &Term) {
    match t {
        Term::Iri(iri) => {
            out.push_str("<uri>");
            xml_escape(out, iri);
            out.push_str("</uri>");
        }
        Term::Blank(label) => {
            out.push_str("<bnode>");
            xml_escape(out, label);
            out.push_str("</bnode>");
        }
        Term::Literal {
            value,
            lang,
            datatype,
        } => {
            out.push_str("<literal");
            if let Some(lang) = lang {
                out.push_str(" xml:lang=\"");
                xml_escape(out, lang);
                out.push('"');
            } else if let Some(dt) = datatype {
                out.push_str(" datatype=\"");
                xml_escape(out, dt);
                out.push('"');
            }
            out.push('>');
            xml_escape(out, value);
            out.push_str("</literal>");
        }
    }
}

/// Text and attribute values: markup characters as entities; CR as a character reference (a
/// parser would turn a raw one into LF); characters XML 1.0 cannot hold at all as U+FFFD.
fn xml_escape(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#13;"),
            '\t' | '\n' => out.push(c),
            c if c < ' ' || matches!(c, '\u{FFFE}' | '\u{FFFF}') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
}

fn csv_term(out: &mut String, t: &Term) {
    match t {
        Term::Iri(iri) => csv_field(out, iri),
        Term::Blank(label) => {
            out.push_str("_:");
            out.push_str(label);
        }
        Term::Literal { value, .. } => csv_field(out, value),
    }
}

/// RFC 4180: a field with `"`, `,`, CR or LF is quoted, its quotes doubled. (Oxigraph quotes only
/// literals; an IRI holding a comma is quoted here too, so that the row still has its columns.)
fn csv_field(out: &mut String, s: &str) {
    if !s.contains(['"', ',', '\n', '\r']) {
        out.push_str(s);
        return;
    }
    out.push('"');
    out.push_str(&s.replace('"', "\"\""));
    out.push('"');
}

fn tsv_term(out: &mut String, t: &Term) {
    match t {
        Term::Iri(iri) => {
            out.push('<');
            out.push_str(iri);
            out.push('>');
        }
        Term::Blank(label) => {
            out.push_str("_:");
            out.push_str(label);
        }
        Term::Literal {
            value,
            lang: Some(lang),
            ..
        } => {
            tsv_quoted(out, value);
            out.push('@');
            out.push_str(lang);
        }
        Term::Literal {
            value,
            lang: None,
            datatype,
        } => match datatype {
            Some(dt) if is_turtle_short(value, dt) => out.push_str(value),
            Some(dt) => {
                tsv_quoted(out, value);
                out.push_str("^^<");
                out.push_str(dt);
                out.push('>');
            }
            None => tsv_quoted(out, value),
        },
    }
}

/// A Turtle string: tab, line ends, `"` and `\` escaped (a raw tab would split the field).
fn tsv_quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Whether Turtle writes this literal bare: a boolean, integer, decimal or double whose lexical
/// form is Turtle's own token for it.
pub(crate) fn is_turtle_short(value: &str, datatype: &str) -> bool {
    match datatype {
        XSD_BOOLEAN => matches!(value, "true" | "false"),
        XSD_INTEGER => is_integer(value),
        XSD_DECIMAL => is_decimal(value),
        XSD_DOUBLE => is_double(value),
        _ => false,
    }
}

fn unsigned(value: &str) -> &str {
    value.strip_prefix(['+', '-']).unwrap_or(value)
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Turtle's `INTEGER`: `[+-]? [0-9]+`.
fn is_integer(value: &str) -> bool {
    digits(unsigned(value))
}

/// Turtle's `DECIMAL`: `[+-]? [0-9]* '.' [0-9]+`.
fn is_decimal(value: &str) -> bool {
    match unsigned(value).split_once('.') {
        Some((whole, fraction)) => (whole.is_empty() || digits(whole)) && digits(fraction),
        None => false,
    }
}

/// Turtle's `DOUBLE`: a mantissa with digits on at least one side of an optional `.`, then
/// `[eE] [+-]? [0-9]+`.
fn is_double(value: &str) -> bool {
    let Some((mantissa, exponent)) = unsigned(value).split_once(['e', 'E']) else {
        return false;
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((a, b)) => {
            (!a.is_empty() || !b.is_empty())
                && (a.is_empty() || digits(a))
                && (b.is_empty() || digits(b))
        }
        None => digits(mantissa),
    };
    mantissa_ok && digits(unsigned(exponent))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn sample() -> Vec<Vec<Term<'static>>> {
        vec![
            vec![Term::Iri("http://example.org/a,b"), Term::Blank("b0")],
            vec![
                Term::Literal {
                    value: Cow::Borrowed("chat"),
                    lang: Some("fr"),
                    datatype: None,
                },
                Term::typed("5", XSD_INTEGER),
            ],
            vec![
                Term::plain("say \"hi\",\tthen\nleave"),
                Term::typed("x", "http://example.org/dt"),
            ],
            vec![Term::plain("dog"), Term::typed("1.5", XSD_DECIMAL)],
        ]
    }

    fn written(format: Format) -> String {
        let mut w = SolutionsWriter::new(format, &["x".to_owned(), "y".to_owned()]);
        for row in sample() {
            w.row(&row);
        }
        String::from_utf8(w.finish()).unwrap()
    }

    #[test]
    fn json_is_the_w3c_format() {
        let expected = concat!(
            r#"{"head":{"vars":["x","y"]},"results":{"bindings":["#,
            r#"{"x":{"type":"uri","value":"http://example.org/a,b"},"y":{"type":"bnode","value":"b0"}},"#,
            r#"{"x":{"type":"literal","value":"chat","xml:lang":"fr"},"y":{"type":"literal","value":"5","datatype":"http://www.w3.org/2001/XMLSchema#integer"}},"#,
            r#"{"x":{"type":"literal","value":"say \"hi\",\tthen\nleave"},"y":{"type":"literal","value":"x","datatype":"http://example.org/dt"}},"#,
            r#"{"x":{"type":"literal","value":"dog"},"y":{"type":"literal","value":"1.5","datatype":"http://www.w3.org/2001/XMLSchema#decimal"}}"#,
            "]}}"
        );
        assert_eq!(written(Format::Json), expected);
        assert_eq!(
            String::from_utf8(boolean(Format::Json, true)).unwrap(),
            "{\"head\":{},\"boolean\":true}"
        );
        let mut s = String::new();
        json_string(&mut s, "a\u{1}\\");
        assert_eq!(s, "\"a\\u0001\\\\\"");
    }

    #[test]
    fn csv_is_plain_values_with_crlf_and_rfc4180_quoting() {
        let expected = "x,y\r\n\
                        \"http://example.org/a,b\",_:b0\r\n\
                        chat,5\r\n\
                        \"say \"\"hi\"\",\tthen\nleave\",x\r\n\
                        dog,1.5\r\n";
        assert_eq!(written(Format::Csv), expected);
        assert_eq!(boolean(Format::Csv, false), b"false");
    }

    #[test]
    fn tsv_is_turtle_terms() {
        let expected = "?x\t?y\n\
                        <http://example.org/a,b>\t_:b0\n\
                        \"chat\"@fr\t5\n\
                        \"say \\\"hi\\\",\\tthen\\nleave\"\t\"x\"^^<http://example.org/dt>\n\
                        \"dog\"\t1.5\n";
        assert_eq!(written(Format::Tsv), expected);
        assert_eq!(boolean(Format::Tsv, true), b"true");
    }

    #[test]
    fn xml_is_the_w3c_format() {
        let out = written(Format::Xml);
        assert!(out.starts_with(
            "<?xml version=\"1.0\"?><sparql xmlns=\"http://www.w3.org/2005/sparql-results#\">\
             <head><variable name=\"x\"/><variable name=\"y\"/></head><results>"
        ));
        assert!(out.contains(
            "<result><binding name=\"x\"><uri>http://example.org/a,b</uri></binding>\
             <binding name=\"y\"><bnode>b0</bnode></binding></result>"
        ));
        assert!(out.contains("<literal xml:lang=\"fr\">chat</literal>"));
        assert!(out.contains("<literal>say &quot;hi&quot;,\tthen\nleave</literal>"));
        assert!(out.ends_with("</results></sparql>"));
    }

    #[test]
    fn turtle_numbers_are_bare_only_in_turtle_syntax() {
        assert!(is_integer("-12") && !is_integer("1.") && !is_integer("+"));
        assert!(is_decimal(".5") && is_decimal("-1.0") && !is_decimal("1.") && !is_decimal("1"));
        assert!(is_double("1e5") && is_double("1.E-3") && is_double(".5e1"));
        assert!(!is_double("1.5") && !is_double("e5") && !is_double(".e5"));
        assert!(!is_turtle_short("yes", XSD_BOOLEAN));
        // xsd:string is a simple literal.
        assert_eq!(
            Term::typed("a", "http://www.w3.org/2001/XMLSchema#string"),
            Term::plain("a")
        );
        let mut out = String::new();
        tsv_term(&mut out, &Term::typed("01", XSD_INTEGER));
        assert_eq!(out, "01");
    }
}
