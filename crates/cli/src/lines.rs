//! Query errors with line numbers counted in the file the query came from. The library numbers a
//! query's lines from its own first line (`line 2, column 5: ...`, then `2 | text` and a caret
//! line); a file of queries holds several, so the CLI moves those numbers by where the query
//! starts, and every line number it prints is a line of the file.

/// A query error already rendered against the query's text (the dataflow's), for [`in_file`].
#[derive(Debug)]
pub struct Rendered(pub String);

impl std::fmt::Display for Rendered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Rendered {}

/// `rendered` with its positions moved from the query's lines to the file's, the query's line 1
/// being the file's line `first`: the leading `line L, column C:`, the parser's `at L:C`
/// (spargebra's), and the quoted source line's gutter. `None` when the text names no position.
pub fn in_file(rendered: &str, first: usize) -> Option<String> {
    let rest = rendered.strip_prefix("line ")?;
    let digits = rest.find(|c: char| !c.is_ascii_digit())?;
    let line: usize = rest[..digits].parse().ok()?;
    let rest = rest[digits..].strip_prefix(", column ")?;
    let moved = line + first - 1;
    let mut lines = rest.lines();
    let head = lines.next()?;
    // spargebra's own position of the same error, inside the message.
    let head = head.replacen(&format!(" at {line}:"), &format!(" at {moved}:"), 1);
    let mut out = format!("line {moved}, column {head}");
    let (gutter, moved_gutter) = (" ".repeat(digits), " ".repeat(moved.to_string().len()));
    for l in lines {
        out.push('\n');
        if let Some(text) = l.strip_prefix(&format!("{line} | ")) {
            out.push_str(&format!("{moved} | {text}"));
        } else if let Some(caret) = l.strip_prefix(&format!("{gutter} | ")) {
            out.push_str(&format!("{moved_gutter} | {caret}"));
        } else {
            out.push_str(l);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::in_file;

    #[test]
    fn moves_the_message_the_gutter_and_the_parser_position() {
        let rendered = "line 3, column 17: SPARQL syntax: error at 3:17: expected x\n\
                        3 |   ?x AtLocation y }\n  |                 ^";
        assert_eq!(
            in_file(rendered, 8).as_deref(),
            Some(
                "line 10, column 17: SPARQL syntax: error at 10:17: expected x\n\
                 10 |   ?x AtLocation y }\n   |                 ^"
            )
        );
        assert_eq!(in_file(rendered, 1).as_deref(), Some(rendered));
        assert_eq!(in_file("no position here", 4), None);
    }
}
