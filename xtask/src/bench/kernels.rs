//! The kernel variants side by side: runs `cargo bench -p gpsense-benches --bench kernels` and reads
//! criterion's estimate for each `group/bench/variant`.

use std::path::Path;
use std::process::Command;

/// One criterion result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timing {
    pub bench: String,
    pub variant: String,
    /// Criterion's point estimate with its unit (`411.23 µs`).
    pub time: String,
}

pub fn run(root: &Path) -> Result<Vec<Timing>, String> {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .args(["bench", "-p", "gpsense-benches", "--bench", "kernels"])
        .output()
        .map_err(|e| format!("cannot run cargo bench: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "cargo bench failed: {}",
            err.lines().last().unwrap_or("")
        ));
    }
    let rows = parse(&String::from_utf8_lossy(&out.stdout));
    if rows.is_empty() {
        return Err("cargo bench printed no criterion result".into());
    }
    Ok(rows)
}

/// Criterion prints `name` then `time:   [low est high]`, on one line when the name is short.
pub fn parse(text: &str) -> Vec<Timing> {
    let mut out = Vec::new();
    let mut name: Option<String> = None;
    for line in text.lines() {
        let (head, rest) = match line.find("time:") {
            Some(i) => (&line[..i], Some(&line[i + 5..])),
            None => (line, None),
        };
        if !head.trim().is_empty() && !head.starts_with(' ') {
            name = Some(head.trim().to_owned());
        }
        let (Some(rest), Some(full)) = (rest, name.as_ref()) else {
            continue;
        };
        let inside = rest.trim().trim_start_matches('[').trim_end_matches(']');
        let parts: Vec<&str> = inside.split_whitespace().collect();
        if parts.len() != 6 {
            continue;
        }
        let mut segments = full.splitn(3, '/');
        let _group = segments.next();
        let bench = segments.next().unwrap_or("").to_owned();
        let variant = segments.next().unwrap_or("").to_owned();
        out.push(Timing {
            bench,
            variant,
            time: format!("{} {}", parts[2], parts[3]),
        });
        name = None;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_criterion_output() {
        let text = "Gnuplot not found, using plotters backend\n\
kernel-variants/scan-1M/sequential\n                        time:   [409.91 µs 411.23 µs 412.71 µs]\n\
Found 3 outliers among 100 measurements (3.00%)\n\
kernel-variants/write-word-all-words/tz time:   [50.100 µs 50.200 µs 50.300 µs]\n\
                        change: [-1.0% +0.1% +1.2%] (p = 0.8 > 0.05)\n";
        let rows = parse(text);
        assert_eq!(
            rows,
            vec![
                Timing {
                    bench: "scan-1M".into(),
                    variant: "sequential".into(),
                    time: "411.23 µs".into()
                },
                Timing {
                    bench: "write-word-all-words".into(),
                    variant: "tz".into(),
                    time: "50.200 µs".into()
                },
            ]
        );
    }
}
