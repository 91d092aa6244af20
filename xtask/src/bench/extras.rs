//! Our own extras side by side, from their examples: compressed vs uncompressed matching
//! (`--example compression`) and TruST against the seed paper's Figure 13 (`--example trust_table`).
//! Each prints its own table; the report includes it as printed.

use std::path::Path;
use std::process::Command;

/// Runs `cargo run --release -p gpsense-benches --example NAME` and returns what it printed.
pub fn run_example(root: &Path, name: &str) -> Result<String, String> {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .args([
            "run",
            "--release",
            "--quiet",
            "-p",
            "gpsense-benches",
            "--example",
            name,
        ])
        .output()
        .map_err(|e| format!("cannot run the {name} example: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "the {name} example failed: {}",
            err.lines().last().unwrap_or("")
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout).trim_end().to_owned();
    if text.is_empty() {
        return Err(format!("the {name} example printed nothing"));
    }
    Ok(text)
}

/// A report section: the example's output in a code block, or why it is missing.
pub fn section(title: &str, command: &str, result: &Result<String, String>) -> String {
    match result {
        Ok(text) => format!("## {title}\n\n`{command}`:\n\n```\n{text}\n```\n\n"),
        Err(why) => format!("## {title}\n\n{why}\n\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_show_output_or_reason() {
        let ok = section("TruST", "cargo run ...", &Ok("row 1\nrow 2".into()));
        assert!(ok.contains("```\nrow 1\nrow 2\n```"), "{ok}");
        let err = section(
            "TruST",
            "cargo run ...",
            &Err("not run in --quick mode".into()),
        );
        assert!(
            err.contains("not run in --quick mode") && !err.contains("```"),
            "{err}"
        );
    }
}
