//! The bracket depth of a query, measured before any parser recurses into it.

/// The deepest bracket nesting a query may have. The SPARQL parser recurses once per level and
/// a deep enough query would overflow the stack, which aborts the process (a server with it); the
/// subset gpsense answers needs a handful of levels.
pub const MAX_NESTING: usize = 64;

/// The deepest nesting of `()`, `{}` and `[]` as SPARQL's lexer sees them: outside strings
/// (short and long, with escapes), comments and IRIs (`<...>` with no space, quote or brace, as
/// `IRIREF`; any other `<` is an operator). Unbalanced closers count as nothing.
pub fn nesting_depth(text: &str) -> usize {
    let b = text.as_bytes();
    let (mut i, mut depth, mut deepest) = (0, 0usize, 0);
    while i < b.len() {
        match b[i] {
            b'(' | b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' | b'}' | b']' => depth = depth.saturating_sub(1),
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'<' => i = iri_end(b, i).unwrap_or(i),
            q @ (b'"' | b'\'') => i = string_end(b, i, q),
            _ => {}
        }
        i += 1;
    }
    deepest
}

/// The index of the `>` closing an IRI that starts at `start`, if one does.
fn iri_end(b: &[u8], start: usize) -> Option<usize> {
    let rest = &b[start + 1..];
    let len = rest
        .iter()
        .position(|&c| c == b'>' || c <= b' ' || b"<\"{}|^`\\".contains(&c))?;
    (rest[len] == b'>').then_some(start + 1 + len)
}

/// The index of the last quote of the string starting at `start` (or the text's end).
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
    b.len()
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
                     ?a <http://x/((#> ?c }";
        assert_eq!(nesting_depth(quiet), 1);
        // `<` as an operator: what follows still counts.
        assert_eq!(nesting_depth("ASK { FILTER(?a < (?b)) }"), 3);
        // An unclosed string or IRI ends the scan without a panic.
        assert_eq!(nesting_depth("ASK { \"(("), 1);
        assert_eq!(nesting_depth("ASK { <((("), 4);
    }
}
