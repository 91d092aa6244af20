//! The bracket depth of a query, measured before any parser recurses into it.
//!
//! The SPARQL parser (spargebra, a PEG) recurses once per bracket level, and a deep enough query
//! overflows the stack, which aborts the process: a server, a Python interpreter. So the depth is
//! measured first, by a scan that may count too deep but never too shallow: wherever the scan
//! cannot tell how the parser will read a piece of text, it assumes the reading with more brackets.

/// The deepest bracket nesting a query may have; the subset gpsense answers needs a handful of
/// levels, and 64 levels of the parser fit in far less than the smallest stack a caller has.
pub const MAX_NESTING: usize = 64;

/// The deepest nesting of `()`, `{}` and `[]` as SPARQL's lexer could see them.
///
/// Skipped: strings (short and long, with escapes), comments, and a prefixed name's escapes
/// (`e:a\#`, `e:a\)`: PN_LOCAL_ESC). A `<...>` that may be an IRI may also be the operator `<`
/// followed by tokens (the parser backtracks when the IRI is invalid): its brackets count as
/// openers, its `#`, quotes and escapes as plain characters. Text in which `\uXXXX` escapes could
/// be decoded before parsing (SPARQL's codepoint escapes) is measured both ways.
pub fn nesting_depth(text: &str) -> usize {
    let raw = depth_of(text.as_bytes());
    if !has_codepoint_escape(text) {
        return raw;
    }
    raw.max(depth_of(unescape_codepoints(text).as_bytes()))
}

fn depth_of(b: &[u8]) -> usize {
    let (mut i, mut depth, mut deepest) = (0, 0usize, 0);
    while i < b.len() {
        match b[i] {
            b'(' | b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' | b'}' | b']' => depth = depth.saturating_sub(1),
            b'#' => i = line_end(b, i),
            // Outside strings a backslash only escapes one character of a prefixed name.
            b'\\' => i += 1,
            b'<' => {
                if let Some(end) = iri_end(b, i) {
                    let (inside_deepest, inside_net) = brackets_in(&b[i + 1..end]);
                    deepest = deepest.max(depth + inside_deepest);
                    depth = depth.saturating_add_signed(inside_net.max(0));
                    i = end;
                }
            }
            q @ (b'"' | b'\'') => i = string_end(b, i, q),
            _ => {}
        }
        i += 1;
    }
    deepest
}

/// The index of the line break ending the comment at `start` (or the text's end).
fn line_end(b: &[u8], start: usize) -> usize {
    b[start..]
        .iter()
        .position(|&c| c == b'\n' || c == b'\r')
        .map_or(b.len(), |n| start + n)
}

/// The index of the `>` closing what may be an IRI starting at `start`: no space, quote, brace,
/// `<`, `|`, `^`, backquote or backslash before it (IRIREF's excluded characters).
fn iri_end(b: &[u8], start: usize) -> Option<usize> {
    let rest = &b[start + 1..];
    let len = rest
        .iter()
        .position(|&c| c == b'>' || c <= b' ' || b"<\"{}|^`\\".contains(&c))?;
    (rest[len] == b'>').then_some(start + 1 + len)
}

/// Inside a `<...>` read as tokens: the deepest prefix of brackets and their net count.
fn brackets_in(b: &[u8]) -> (usize, isize) {
    let (mut net, mut deepest) = (0isize, 0isize);
    for &c in b {
        match c {
            b'(' | b'{' | b'[' => net += 1,
            b')' | b'}' | b']' => net -= 1,
            _ => {}
        }
        deepest = deepest.max(net);
    }
    (deepest.unsigned_abs(), net)
}

/// The index of the last quote of the string starting at `start` (or the text's end: the parser
/// fails on an unterminated short string, so nothing after it is parsed).
fn string_end(b: &[u8], start: usize, quote: u8) -> usize {
    let long = b.len() >= start + 3 && b[start + 1] == quote && b[start + 2] == quote;
    let mut i = if long { start + 3 } else { start + 1 };
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            c if c == quote && !long => return i,
            c if c == quote && b.len() >= i + 3 && b[i + 1] == quote && b[i + 2] == quote => {
                return i + 2
            }
            _ => {}
        }
        i += 1;
    }
    // A long string with no end is, to the parser, an empty string and a quote that starts
    // another: what follows still counts.
    if long {
        start + 1
    } else {
        b.len()
    }
}

fn has_codepoint_escape(text: &str) -> bool {
    text.as_bytes()
        .windows(2)
        .any(|w| w[0] == b'\\' && (w[1] == b'u' || w[1] == b'U'))
}

/// `\uXXXX` and `\UXXXXXXXX` decoded wherever they stand, as SPARQL 1.1 (section 19.2) decodes
/// them before parsing (spargebra's `standard-unicode-escaping`); other text is kept.
fn unescape_codepoints(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let digits = match after.as_bytes().first() {
            Some(b'u') => 4,
            Some(b'U') => 8,
            _ => 0,
        };
        let decoded = (digits > 0)
            .then(|| after.get(1..=digits))
            .flatten()
            .and_then(|hex| u32::from_str_radix(hex, 16).ok())
            .and_then(char::from_u32);
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &after[1 + digits..];
            }
            None => {
                out.push('\\');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_brackets_as_the_lexer_sees_them() {
        assert_eq!(
            nesting_depth("SELECT * WHERE { ?a ?b ?c FILTER((?a = ?b)) }"),
            3
        );
        // Brackets in strings, long strings, comments and IRIs do not count.
        let quiet = "ASK { ?a ?b \"((\\\"((\" . ?a ?b '((' . ?a ?b \"\"\"(( \" ((\"\"\" # (((\n \
                     ?a <http://x/#a> ?c }";
        assert_eq!(nesting_depth(quiet), 1);
        // `<` as an operator: what follows still counts.
        assert_eq!(nesting_depth("ASK { FILTER(?a < (?b)) }"), 3);
        // An unclosed string or IRI ends the scan without a panic.
        assert_eq!(nesting_depth("ASK { \"(("), 1);
        assert_eq!(nesting_depth("ASK { <((("), 4);
    }

    #[test]
    fn escapes_in_prefixed_names_neither_comment_nor_close() {
        // `e:a\#` is a name, not a comment; `e:a\)` closes nothing.
        let hash = "ASK { ?s e:a\\# ?o FILTER(((?o))) }";
        assert_eq!(nesting_depth(hash), 4);
        let paren = "ASK { FILTER((e:a\\) = (e:a\\) = ?o))) }";
        assert_eq!(nesting_depth(paren), 4);
        let quote = "ASK { ?s e:a\\' ?o FILTER(((?o))) }";
        assert_eq!(nesting_depth(quote), 4);
    }

    #[test]
    fn a_bracketed_iri_counts_as_the_deeper_reading() {
        // Invalid as an IRI (relative, no base), the parser reads `<` and then the brackets.
        assert_eq!(nesting_depth("ASK { FILTER(?a <((((?a))))> 1) }"), 6);
        // Its closers do not hide brackets that follow.
        assert_eq!(nesting_depth("ASK { FILTER(((<a)))))> ((?a)))) }"), 6);
        // A real IRI with balanced brackets: one level more at most.
        assert_eq!(
            nesting_depth("ASK { <http://x/Python_(language)> ?p ?o }"),
            2
        );
    }

    #[test]
    fn codepoint_escapes_are_measured_decoded_too() {
        let deep = format!(
            "ASK {{ FILTER({}?a{}) }}",
            "\\u0028".repeat(70),
            ")".repeat(70)
        );
        assert_eq!(nesting_depth(&deep), 72);
        // `\u0023` is `#` only once decoded: the raw reading still counts what follows.
        let hidden = format!(
            "ASK {{ ?s e:a\\u0023 ?o FILTER({}?o{}) }}",
            "(".repeat(70),
            ")".repeat(70)
        );
        assert_eq!(nesting_depth(&hidden), 72);
        assert_eq!(nesting_depth("ASK { ?a ?b \"\"\"(( }"), 1);
        // An unterminated long string reads as `""` and a short string: what follows counts.
        assert_eq!(nesting_depth("ASK { ?a ?b \"\"\"x\" FILTER(((?a))) }"), 4);
        assert_eq!(
            unescape_codepoints("a\\u0041\\U0001F600\\uZZZZ\\"),
            "aA\u{1F600}\\uZZZZ\\"
        );
    }
}
