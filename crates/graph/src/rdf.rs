//! The one mapping between RDF terms and gpsense names, used by ingest (RDF in), `gpsense dump`
//! (N-Triples out) and the SPARQL side (typing a result binding).
//!
//! A graph holds plain strings. RDF terms become names as follows:
//!
//! - an IRI is its bare text: `http://example.org/dog` (no angle brackets), for nodes and
//!   relations alike;
//! - a literal is its N-Triples form, as [`oxrdf::Literal`]'s `Display` writes it: `"dog"` (plain
//!   and `xsd:string`), `"chat"@fr` (tags lower-cased), `"5"^^<http://www.w3.org/2001/XMLSchema#integer>`;
//! - a blank node is `_:LABEL` (ingest keeps each file's blank nodes apart, see
//!   `ingest::rdf`);
//! - anything else (ConceptNet's `dog`, `/c/en/dog`, `IsA`) is a *plain* name.
//!
//! N-Triples has no place for a plain name, and a predicate must be an IRI, so a dump writes those
//! in a reserved IRI scheme, percent-encoded, which ingest maps back: node `dog` is
//! `<gpsense:n/dog>`, relation `IsA` is `<gpsense:r/IsA>`, node `ice cream` is
//! `<gpsense:n/ice%20cream>`. A literal in subject position (possible in a graph made from TSV) is
//! written the same way. Names that start with `gpsense:n/` or `gpsense:r/` themselves are encoded
//! too, so that every name survives a dump and an ingest unchanged.

use std::borrow::Cow;
use std::fmt::Write as _;

use oxrdf::{NamedOrBlankNodeRef, TermRef};
use oxttl::NTriplesParser;

/// The RDF term types [`term_name`] and [`subject_name`] take, re-exported so that a caller uses
/// the very version the graph crate parses with.
pub use oxrdf;

/// The IRI prefix under which a dump writes a node name that is no RDF term.
pub const NODE_SCHEME: &str = "gpsense:n/";
/// The IRI prefix under which a dump writes a relation name that is no IRI.
pub const RELATION_SCHEME: &str = "gpsense:r/";

/// What kind of RDF term a name stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TermKind {
    /// An absolute IRI, written bare (`http://example.org/dog`).
    Iri,
    /// A literal in canonical N-Triples form (`"dog"`, `"chat"@fr`, `"5"^^<…#integer>`).
    Literal,
    /// `_:LABEL` with a valid N-Triples label.
    BlankNode,
    /// None of the three: a ConceptNet-style name such as `dog`, `/c/en/dog` or `IsA`.
    Plain,
}

/// The kind of term `name` stands for. A name counts as an IRI, literal or blank node only if
/// reading its N-Triples form back gives the very same name, so [`nt_term`] and ingest agree with
/// it exactly (`"chat"@FR` is plain: ingest would lower-case the tag).
pub fn term_kind(name: &str) -> TermKind {
    if name.starts_with('"') {
        return match parse_object(name) {
            Some(Parsed::Literal(text)) if text == name => TermKind::Literal,
            _ => TermKind::Plain,
        };
    }
    if let Some(label) = name.strip_prefix("_:") {
        return match parse_object(name) {
            Some(Parsed::Blank(parsed)) if parsed == label => TermKind::BlankNode,
            _ => TermKind::Plain,
        };
    }
    // Cheap test first: an absolute IRI starts with a scheme (a letter, then `scheme:`).
    let has_scheme = name.split_once(':').is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    // A `>` or `\` would end or escape the IRI in N-Triples: such a name is not an IRI's text.
    if !has_scheme || name.contains(['>', '\\']) {
        return TermKind::Plain;
    }
    match parse_object(&format!("<{name}>")) {
        Some(Parsed::Iri(iri)) if iri == name => TermKind::Iri,
        _ => TermKind::Plain,
    }
}

/// The name of an RDF term (subject or object): see the module docs. IRIs in the reserved
/// `gpsense:` scheme are decoded ([`iri_name`]).
pub fn term_name<'a>(term: impl Into<TermRef<'a>>) -> Cow<'a, str> {
    match term.into() {
        TermRef::NamedNode(iri) => iri_name(iri.as_str()),
        TermRef::BlankNode(b) => Cow::Owned(format!("_:{}", b.as_str())),
        TermRef::Literal(l) => Cow::Owned(l.to_string()),
        // A quoted triple exists only with oxrdf's `rdf-12` feature, which nothing here enables.
        #[allow(unreachable_patterns)]
        other => Cow::Owned(other.to_string()),
    }
}

/// The name of a subject.
pub fn subject_name<'a>(subject: impl Into<NamedOrBlankNodeRef<'a>>) -> Cow<'a, str> {
    match subject.into() {
        NamedOrBlankNodeRef::NamedNode(iri) => iri_name(iri.as_str()),
        NamedOrBlankNodeRef::BlankNode(b) => Cow::Owned(format!("_:{}", b.as_str())),
    }
}

/// The node or relation name an IRI stands for: the IRI itself, or, for `gpsense:n/X` and
/// `gpsense:r/X` with `X` validly percent-encoded UTF-8, `X` decoded.
pub fn iri_name(iri: &str) -> Cow<'_, str> {
    let encoded = iri
        .strip_prefix(NODE_SCHEME)
        .or_else(|| iri.strip_prefix(RELATION_SCHEME));
    match encoded.and_then(percent_decode) {
        Some(name) if !name.is_empty() => Cow::Owned(name),
        _ => Cow::Borrowed(iri),
    }
}

/// The N-Triples form of node `name` as an object: an IRI in angle brackets, a literal or blank
/// node as it is, anything else as `<gpsense:n/…>` (percent-encoded).
pub fn nt_term(name: &str) -> String {
    nt_term_of_kind(name, term_kind(name))
}

/// [`nt_term`] for a name whose [`term_kind`] is known (a dump computes each node's kind once).
pub fn nt_term_of_kind(name: &str, kind: TermKind) -> String {
    match kind {
        TermKind::Iri if !is_reserved(name) => format!("<{name}>"),
        TermKind::Literal | TermKind::BlankNode => name.to_owned(),
        _ => encoded(NODE_SCHEME, name),
    }
}

/// The N-Triples form of node `name` as a subject: as [`nt_term`], except that a literal cannot be
/// a subject and is written `<gpsense:n/…>` as well.
pub fn nt_subject(name: &str) -> String {
    nt_subject_of_kind(name, term_kind(name))
}

/// [`nt_subject`] for a name whose [`term_kind`] is known.
pub fn nt_subject_of_kind(name: &str, kind: TermKind) -> String {
    match kind {
        TermKind::Literal => encoded(NODE_SCHEME, name),
        kind => nt_term_of_kind(name, kind),
    }
}

/// The N-Triples form of relation `name`: the IRI itself, or `<gpsense:r/…>` (percent-encoded).
pub fn nt_predicate(name: &str) -> String {
    match term_kind(name) {
        TermKind::Iri if !is_reserved(name) => format!("<{name}>"),
        _ => encoded(RELATION_SCHEME, name),
    }
}

/// Names that look like the reserved scheme must be encoded, or ingest would decode them.
fn is_reserved(name: &str) -> bool {
    name.starts_with(NODE_SCHEME) || name.starts_with(RELATION_SCHEME)
}

fn encoded(scheme: &str, name: &str) -> String {
    let mut out = String::with_capacity(scheme.len() + name.len() + 2);
    out.push('<');
    out.push_str(scheme);
    percent_encode(name, &mut out);
    out.push('>');
    out
}

/// Percent-encodes every character an IRI path may not hold literally (and `%` itself), so that
/// [`percent_decode`] is its exact inverse. Non-ASCII letters stay readable where RFC 3987 allows
/// them (`ucschar`).
fn percent_encode(name: &str, out: &mut String) {
    for c in name.chars() {
        let keep = c.is_ascii_alphanumeric()
            || "-._~!$&'()*+,;=:@/".contains(c)
            || (!c.is_ascii() && is_ucschar(c));
        if keep {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                // Writing to a String cannot fail.
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
}

/// RFC 3987's `ucschar`: the non-ASCII characters an IRI may hold unencoded outside its query.
fn is_ucschar(c: char) -> bool {
    let c = c as u32;
    matches!(c, 0xA0..=0xD7FF | 0xF900..=0xFDCF | 0xFDF0..=0xFFEF)
        || (c >= 0x10000 && (c & 0xFFFF) <= 0xFFFD && c < 0xF0000)
}

/// `%XX` sequences to bytes, everything else as it is; `None` if an escape is malformed or the
/// bytes are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The object term of `_:s <x:p> TEXT .`, if that is one valid N-Triples triple: the same parser
/// as ingest, so the kinds above agree with what ingest makes of a dump.
enum Parsed {
    Iri(String),
    Blank(String),
    Literal(String),
}

fn parse_object(text: &str) -> Option<Parsed> {
    // A line break would end the statement early; a valid term in canonical form has none.
    if text.contains(['\n', '\r']) {
        return None;
    }
    let line = format!("_:s <x:p> {text} .");
    let mut triples = NTriplesParser::new().for_slice(&line);
    let triple = triples.next()?.ok()?;
    if triples.next().is_some() {
        return None;
    }
    Some(match triple.object {
        oxrdf::Term::NamedNode(iri) => Parsed::Iri(iri.into_string()),
        oxrdf::Term::BlankNode(b) => Parsed::Blank(b.into_string()),
        oxrdf::Term::Literal(l) => Parsed::Literal(l.to_string()),
        #[allow(unreachable_patterns)]
        _ => return None,
    })
}

/// `xsd:string`: a literal of this datatype is a simple literal.
const XSD_STRING: &str = "http://www.w3.org/2001/XMLSchema#string";

/// An RDF term as SPARQL results carry it: a name of the graph read back into its parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Term<'a> {
    Iri(&'a str),
    /// The label, without `_:`.
    Blank(&'a str),
    Literal {
        value: Cow<'a, str>,
        lang: Option<&'a str>,
        /// `None` for a simple literal (`xsd:string`) and a language-tagged one.
        datatype: Option<&'a str>,
    },
}

impl<'a> Term<'a> {
    /// A simple literal (how a plain name such as ConceptNet's `dog` is served).
    pub fn plain(value: &'a str) -> Self {
        Term::Literal {
            value: Cow::Borrowed(value),
            lang: None,
            datatype: None,
        }
    }

    /// A literal of `datatype`; `xsd:string` makes a simple literal.
    pub fn typed(value: impl Into<Cow<'a, str>>, datatype: &'a str) -> Self {
        Term::Literal {
            value: value.into(),
            lang: None,
            datatype: (datatype != XSD_STRING).then_some(datatype),
        }
    }
}

/// A literal in N-Triples form (`"chat"@fr`, `"5"^^<…#integer>`, `"a\"b"`): its lexical form
/// unescaped, its language tag or datatype.
pub fn literal(name: &str) -> Option<Term<'_>> {
    let body = name.strip_prefix('"')?;
    let end = closing_quote(body)?;
    let (escaped, suffix) = (&body[..end], &body[end + 1..]);
    let value = unescape(escaped)?;
    if suffix.is_empty() {
        return Some(Term::Literal {
            value,
            lang: None,
            datatype: None,
        });
    }
    if let Some(lang) = suffix.strip_prefix('@') {
        return Some(Term::Literal {
            value,
            lang: Some(lang),
            datatype: None,
        });
    }
    let datatype = suffix.strip_prefix("^^<")?.strip_suffix('>')?;
    Some(Term::typed(value, datatype))
}

/// The byte index of the first unescaped `"`.
fn closing_quote(s: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, b) in s.bytes().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b'"' => return Some(i),
            _ => {}
        }
    }
    None
}

/// N-Triples string escapes (`ECHAR` and `UCHAR`) decoded; `None` on a malformed one.
fn unescape(s: &str) -> Option<Cow<'_, str>> {
    if !s.contains('\\') {
        return Some(Cow::Borrowed(s));
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let decoded = match chars.next()? {
            't' => '\t',
            'b' => '\u{08}',
            'n' => '\n',
            'r' => '\r',
            'f' => '\u{0C}',
            '"' => '"',
            '\'' => '\'',
            '\\' => '\\',
            'u' => hex_char(&mut chars, 4)?,
            'U' => hex_char(&mut chars, 8)?,
            _ => return None,
        };
        out.push(decoded);
    }
    Some(Cow::Owned(out))
}

fn hex_char(chars: &mut std::str::Chars, digits: usize) -> Option<char> {
    let hex: String = chars.by_ref().take(digits).collect();
    if hex.len() != digits {
        return None;
    }
    char::from_u32(u32::from_str_radix(&hex, 16).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const XSD: &str = "http://www.w3.org/2001/XMLSchema#";

    #[test]
    fn kinds_follow_what_ingest_makes() {
        let kinds = [
            ("http://example.org/dog", TermKind::Iri),
            ("wn:dog.n.01", TermKind::Iri),
            ("urn:isbn:0451450523", TermKind::Iri),
            ("\"dog\"", TermKind::Literal),
            ("\"chat\"@fr", TermKind::Literal),
            ("\"a\\nb \\\"q\\\" \\\\\"", TermKind::Literal),
            ("_:b0", TermKind::BlankNode),
            ("_:anon0.f1", TermKind::BlankNode),
            ("dog", TermKind::Plain),
            ("ice cream", TermKind::Plain),
            ("/c/en/dog", TermKind::Plain),
            ("Q144", TermKind::Plain),
            ("IsA", TermKind::Plain),
            ("5:00 pm", TermKind::Plain),
            // Not canonical: ingest would lower-case the tag, drop xsd:string, escape the newline.
            ("\"chat\"@FR", TermKind::Plain),
            ("\"a\nb\"", TermKind::Plain),
            ("\"unterminated", TermKind::Plain),
            ("\"a\" . <x:s> <x:p> \"b\"", TermKind::Plain),
            ("_:a b", TermKind::Plain),
            ("_:", TermKind::Plain),
            ("http://x/>", TermKind::Plain),
            ("http://x/ y", TermKind::Plain),
            ("http://x/\\u0041", TermKind::Plain),
        ];
        for (name, kind) in kinds {
            assert_eq!(term_kind(name), kind, "{name}");
        }
        let typed = format!("\"5\"^^<{XSD}integer>");
        assert_eq!(term_kind(&typed), TermKind::Literal);
        assert_eq!(term_kind(&format!("\"5\"^^<{XSD}string>")), TermKind::Plain);
    }

    /// Every name survives its N-Triples form in each position, read back by oxttl.
    #[test]
    fn every_name_round_trips_through_n_triples() {
        let names = [
            "dog",
            "ice cream",
            "/c/en/dog",
            "100%",
            "%41",
            "a\"b",
            "back\\slash",
            "line\nbreak",
            "tab\there",
            "cr\r",
            "café",
            "日本語",
            "emoji 😀",
            "<angle>",
            "{curly}|^`",
            "#hash?query",
            "http://x/>",
            "http://example.org/dog",
            "wn:dog.n.01",
            "gpsense:n/dog",
            "gpsense:r/IsA",
            "gpsense:n/%ZZ",
            "gpsense:n/",
            "gpsense:other",
            "\"dog\"",
            "\"chat\"@fr",
            "\"chat\"@FR",
            "\"5\"^^<http://www.w3.org/2001/XMLSchema#integer>",
            "_:b0",
            "_:a b",
            "\u{0}nul",
            "c1\u{85}",
            "private\u{E000}",
            "\u{FFFE}",
            "\u{10FFFF}",
        ];
        for name in names {
            let line = format!(
                "{} {} {} .",
                nt_subject(name),
                nt_predicate(name),
                nt_term(name)
            );
            let mut parsed = NTriplesParser::new().for_slice(&line);
            let t = match parsed.next() {
                Some(Ok(t)) => t,
                other => panic!("{name:?}: {line} gives {other:?}"),
            };
            assert!(parsed.next().is_none(), "{line}");
            assert_eq!(subject_name(t.subject.as_ref()), name, "{line}");
            assert_eq!(iri_name(t.predicate.as_str()), name, "{line}");
            assert_eq!(term_name(t.object.as_ref()), name, "{line}");
        }
    }

    #[test]
    fn plain_names_and_relations_use_the_reserved_schemes() {
        assert_eq!(nt_term("dog"), "<gpsense:n/dog>");
        assert_eq!(nt_term("ice cream"), "<gpsense:n/ice%20cream>");
        assert_eq!(nt_term("/c/en/dog"), "<gpsense:n//c/en/dog>");
        assert_eq!(nt_term("café"), "<gpsense:n/café>");
        assert_eq!(nt_predicate("IsA"), "<gpsense:r/IsA>");
        assert_eq!(nt_term("http://e.org/x"), "<http://e.org/x>");
        assert_eq!(nt_term("\"dog\""), "\"dog\"");
        assert_eq!(nt_subject("\"dog\""), "<gpsense:n/%22dog%22>");
        assert_eq!(nt_term("_:b0"), "_:b0");
        assert_eq!(nt_term("gpsense:n/x"), "<gpsense:n/gpsense:n/x>");
        assert_eq!(iri_name("gpsense:n/ice%20cream"), "ice cream");
        assert_eq!(iri_name("gpsense:r/Is%41"), "IsA");
        // Not validly encoded, or empty: the IRI names itself.
        assert_eq!(iri_name("gpsense:n/%ZZ"), "gpsense:n/%ZZ");
        assert_eq!(iri_name("gpsense:n/%C3"), "gpsense:n/%C3");
        assert_eq!(iri_name("gpsense:n/%4"), "gpsense:n/%4");
        assert_eq!(iri_name("gpsense:n/"), "gpsense:n/");
        assert_eq!(iri_name("http://e.org/x%20y"), "http://e.org/x%20y");
    }

    #[test]
    fn literals_split_into_value_lang_and_datatype() {
        assert_eq!(literal("\"dog\""), Some(Term::plain("dog")));
        assert_eq!(
            literal("\"chat\"@fr"),
            Some(Term::Literal {
                value: Cow::Borrowed("chat"),
                lang: Some("fr"),
                datatype: None
            })
        );
        assert_eq!(
            literal("\"5\"^^<http://www.w3.org/2001/XMLSchema#integer>"),
            Some(Term::typed("5", "http://www.w3.org/2001/XMLSchema#integer"))
        );
        assert_eq!(
            literal(r#""say \"hi\"\n\u00E9\U0001F600""#),
            Some(Term::plain("say \"hi\"\n\u{e9}\u{1F600}"))
        );
        // Malformed: no closing quote, a bad escape, a suffix that is neither.
        assert_eq!(literal("\"open"), None);
        assert_eq!(literal(r#""a\q""#), None);
        assert_eq!(literal(r#""a"x"#), None);
        assert_eq!(literal(r#""\u12""#), None);
    }
}
