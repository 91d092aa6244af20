//! Format detection from a file's name and first bytes.

use std::collections::HashSet;
use std::path::Path;

use super::{Columns, Format};

/// Guesses the format of a file from its extension (ignoring `.gz`) and its first decompressed bytes.
pub fn detect(path: &Path, sample: &[u8]) -> Result<Format, String> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    if sample.starts_with(&crate::snapshot::MAGIC) {
        return Err(
            "it is a gpsense snapshot already: give it to query, match or info as it is".into(),
        );
    }
    if sample.starts_with(&[0xFF, 0xFE]) || sample.starts_with(&[0xFE, 0xFF]) {
        return Err(
            "UTF-16 text; gpsense reads UTF-8: convert it with iconv -f UTF-16 -t UTF-8".into(),
        );
    }
    let text = String::from_utf8_lossy(sample);
    let text = text
        .strip_prefix('\u{feff}')
        .map(|t| (true, t))
        .unwrap_or((false, &text));
    let (bom, text) = text;
    if let Some(format) = rdf_by_extension(name) {
        return Ok(format);
    }
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    // No data to tell the format by, and none to read: any line format reads it as empty.
    let Some(first) = lines.clone().next() else {
        return Ok(Format::Triples);
    };
    if is_kgtk_header(first) {
        return Ok(Format::Kgtk);
    }
    if let Some(format) = rdf_by_content(first, lines.clone()) {
        return Ok(format);
    }
    if name.ends_with(".graph") || is_benchmark_header(first) {
        return Ok(Format::Benchmark);
    }
    if let Some(header) = first.strip_prefix("#synset\t") {
        return Ok(if header.trim_end() == "lemma" {
            Format::WordNetLemmas
        } else {
            Format::WordNetNodes
        });
    }
    let Some(data) = lines.find(|l| !l.starts_with('#')) else {
        return Ok(Format::Triples);
    };
    let fields: Vec<&str> = data.split('\t').collect();
    if fields.len() == 5 && fields[1].starts_with("/r/") {
        return Ok(Format::ConceptNet);
    }
    // A BOM says nothing about the format: spreadsheets write it before TSV as well as CSV.
    let _ = bom;
    if name.ends_with(".csv") || (fields.len() == 1 && data.contains(',')) {
        return Ok(Format::Csv);
    }
    if (3..=4).contains(&fields.len()) {
        return Ok(Format::Triples);
    }
    Err(format!(
        "first line has {} tab-separated fields",
        fields.len()
    ))
}

/// `.nt`, `.nq`, `.ttl`, `.trig`, `.rdf`, `.owl`, `.xml` (after `.gz` is dropped).
fn rdf_by_extension(name: &str) -> Option<Format> {
    let (_, ext) = name.rsplit_once('.')?;
    match ext {
        "nt" => Some(Format::NTriples),
        "nq" => Some(Format::NQuads),
        "ttl" => Some(Format::Turtle),
        "trig" => Some(Format::TriG),
        "rdf" | "owl" | "xml" => Some(Format::RdfXml),
        _ => None,
    }
}

/// A KGTK header: the first line names the columns `node1`, `relation` (or `label`) and `node2`.
fn is_kgtk_header(first: &str) -> bool {
    let names: Vec<&str> = first.split('\t').map(str::trim).collect();
    let has = |n: &str| names.contains(&n);
    has("node1") && has("node2") && (has("relation") || has("label"))
}

/// RDF/XML by its first tag; Turtle by its directives; N-Triples by a first statement `<…> … .`
/// or `_:… … .` (N-Quads and TriG have no telling mark: name the file `.nq` / `.trig` or pass
/// `--format`).
fn rdf_by_content<'a>(first: &str, mut lines: impl Iterator<Item = &'a str>) -> Option<Format> {
    let tag = first.trim_start();
    if ["<?xml", "<rdf:RDF", "<!DOCTYPE rdf:RDF"]
        .iter()
        .any(|t| tag.starts_with(t))
    {
        return Some(Format::RdfXml);
    }
    let directive = |l: &str| {
        let l = l.trim_start();
        l.starts_with("@prefix")
            || l.starts_with("@base")
            || l.get(..7)
                .is_some_and(|w| w.eq_ignore_ascii_case("prefix "))
            || l.get(..5).is_some_and(|w| w.eq_ignore_ascii_case("base "))
    };
    if directive(first) {
        return Some(Format::Turtle);
    }
    let data = lines.find(|l| !l.trim_start().starts_with('#'))?;
    let data = data.trim();
    let statement = (data.starts_with('<') || data.starts_with("_:")) && data.ends_with('.');
    statement.then_some(Format::NTriples)
}

fn is_benchmark_header(line: &str) -> bool {
    let mut parts = line.split_ascii_whitespace();
    parts.next() == Some("t")
        && parts.by_ref().take(2).all(|p| p.parse::<u64>().is_ok())
        && parts.next().is_none()
}

/// Which column of a triples TSV holds the relation: a `#` header naming it, else the one of the first
/// two columns with fewer distinct values in the sample (relations repeat far more than concepts).
pub(crate) fn detect_columns(sample: &[u8]) -> Columns {
    let text = String::from_utf8_lossy(sample);
    let mut col0 = HashSet::new();
    let mut col1 = HashSet::new();
    for line in text.lines().take(2000) {
        if let Some(header) = line.strip_prefix('#') {
            let names: Vec<&str> = header.split('\t').collect();
            if names.get(1).is_some_and(|n| n.contains("relation")) {
                return Columns::HeadRelTail;
            }
            if names.first().is_some_and(|n| n.contains("relation")) {
                return Columns::RelHeadTail;
            }
            continue;
        }
        let mut f = line.split('\t');
        if let (Some(a), Some(b)) = (f.next(), f.next()) {
            col0.insert(a.to_owned());
            col1.insert(b.to_owned());
        }
    }
    if col1.len() < col0.len() {
        Columns::HeadRelTail
    } else {
        Columns::RelHeadTail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(name: &str, text: &str) -> Result<Format, String> {
        detect(Path::new(name), text.as_bytes())
    }

    #[test]
    fn detects_each_format() {
        assert_eq!(d("q.txt", "t 3 2\nv 0 1 1\n"), Ok(Format::Benchmark));
        assert_eq!(d("x.graph", "garbage"), Ok(Format::Benchmark));
        assert_eq!(
            d("n.tsv", "#synset\tss_type\tlexfile_num\tfirst_lemma\n"),
            Ok(Format::WordNetNodes)
        );
        assert_eq!(
            d("l.tsv", "#synset\tlemma\n00001740-n\tentity\n"),
            Ok(Format::WordNetLemmas)
        );
        assert_eq!(
            d("a.csv", "/a/x\t/r/IsA\t/c/en/a\t/c/en/b\t{}\n"),
            Ok(Format::ConceptNet)
        );
        assert_eq!(d("p", "\u{feff}\"a\",\"is-a\",\"b\"\n"), Ok(Format::Csv));
        assert_eq!(d("p.csv", "a,is-a,b\n"), Ok(Format::Csv));
        assert_eq!(d("t.txt", "IsA\tcat\tanimal\n"), Ok(Format::Triples));
        assert!(d("e.txt", "a\tb\n").is_err());
    }

    /// A file with no data has no format to tell, and needs none: it reads as an empty graph.
    #[test]
    fn empty_files_read_as_empty() {
        assert_eq!(d("e.txt", ""), Ok(Format::Triples));
        assert_eq!(d("e.txt", "\n  \n"), Ok(Format::Triples));
        assert_eq!(d("e.txt", "# only a comment\n"), Ok(Format::Triples));
        assert_eq!(d("e.ttl", ""), Ok(Format::Turtle));
        assert_eq!(d("e", "@prefix e: <http://e/> .\n"), Ok(Format::Turtle));
    }

    #[test]
    fn detects_rdf_and_kgtk() {
        let nt = "<http://e/s> <http://e/p> \"a, b\" .\n";
        assert_eq!(d("x.nt", nt), Ok(Format::NTriples));
        assert_eq!(d("x.nt.gz", nt), Ok(Format::NTriples));
        assert_eq!(d("x.NQ", nt), Ok(Format::NQuads));
        assert_eq!(d("x.ttl", "garbage"), Ok(Format::Turtle));
        assert_eq!(d("dump", nt), Ok(Format::NTriples));
        assert_eq!(d("dump", &format!("# c\n{nt}")), Ok(Format::NTriples));
        assert_eq!(
            d("d", "_:b0 <http://e/p> <http://e/o> .\n"),
            Ok(Format::NTriples)
        );
        assert_eq!(d("t", "@prefix e: <http://e/> .\n"), Ok(Format::Turtle));
        assert_eq!(d("t", "PREFIX e: <http://e/>\n"), Ok(Format::Turtle));
        assert_eq!(d("g.trig", "garbage"), Ok(Format::TriG));
        for name in ["o.owl", "o.rdf", "o.xml.gz"] {
            assert_eq!(d(name, "garbage"), Ok(Format::RdfXml), "{name}");
        }
        assert_eq!(d("o", "<?xml version=\"1.0\"?>\n"), Ok(Format::RdfXml));
        assert_eq!(
            d("o", "\u{feff}<rdf:RDF xmlns:rdf=\"x\">\n"),
            Ok(Format::RdfXml)
        );
        let cskg = "id\tnode1\trelation\tnode2\tnode1;label\tnode2;label\n";
        assert_eq!(d("cskg.tsv", cskg), Ok(Format::Kgtk));
        assert_eq!(d("k.tsv", "node1\tlabel\tnode2\n"), Ok(Format::Kgtk));
        // A dump's TSV header is a comment: triples, not KGTK.
        assert_eq!(
            d("g.tsv", "#head\trelation\ttail\nnode1\trelation\tnode2\n"),
            Ok(Format::Triples)
        );
    }

    #[test]
    fn detects_column_order() {
        assert_eq!(
            detect_columns(b"IsA\tcat\tanimal\nIsA\tdog\tanimal\nAtLocation\tcat\thome\n"),
            Columns::RelHeadTail
        );
        assert_eq!(
            detect_columns(b"cat\tIsA\tanimal\ndog\tIsA\tanimal\n"),
            Columns::HeadRelTail
        );
        assert_eq!(
            detect_columns(b"#source\trelation\ttarget\na\tb\tc\n"),
            Columns::HeadRelTail
        );
    }
}
