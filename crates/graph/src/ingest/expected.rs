//! Expected answer counts of the subgraph-matching suites, as `gpsense match --expected` and
//! `cargo xtask gpu-check` read them: `name:count` lines (the SIGMOD study) or `name count` lines
//! (yeast_ans.txt); a trailing `.graph` is dropped from the name, blank lines are skipped.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ExpectedError {
    #[error("line {0}: expected `name:count` or `name count`")]
    Shape(usize),
    #[error("line {0}: bad count {1:?}")]
    Count(usize, String),
}

/// The (name, count) pairs of an expected-counts file, in file order.
pub fn expected_counts(text: &str) -> Result<Vec<(String, u64)>, ExpectedError> {
    let mut out = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let (name, count) = line
            .rsplit_once(':')
            .or_else(|| line.split_once(char::is_whitespace))
            .ok_or(ExpectedError::Shape(i + 1))?;
        let count = count
            .trim()
            .parse()
            .map_err(|_| ExpectedError::Count(i + 1, count.trim().to_owned()))?;
        out.push((name.trim().trim_end_matches(".graph").to_owned(), count));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_layouts_and_names_the_bad_line() {
        let text = "q1.graph:12\n\nq2 7\n";
        assert_eq!(
            expected_counts(text).unwrap(),
            vec![("q1".to_owned(), 12), ("q2".to_owned(), 7)]
        );
        assert_eq!(expected_counts("q1\n"), Err(ExpectedError::Shape(1)));
        assert_eq!(
            expected_counts("a:1\nb:x\n"),
            Err(ExpectedError::Count(2, "x".into()))
        );
    }
}
