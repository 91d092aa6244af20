//! What an EGSM run prints on standard output, read for the report. Its `main` prints, among
//! progress lines, one line per timed phase, `NAME, time (ms): H(host), K(kernel)` (the join's total
//! as `Total join time (ms): H(host) K(kernel)`), and at the end `# Matches: N`. The host figure is
//! the wall time of the phase including its synchronisation, so it is the one added up here: cuckoo
//! tries built, filtering, join. Its own build prints whole milliseconds; `build.sh` makes it print
//! fractions, and both read here.

/// One EGSM run's count and phase times (ms, host side).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EgsmRun {
    pub count: u64,
    pub tries_ms: f64,
    pub filter_ms: f64,
    pub join_ms: f64,
}

impl EgsmRun {
    /// The phases EGSM times itself (filtering and enumeration): without reading the graphs,
    /// moving them to the device, ordering on the host and allocating its result pool.
    pub fn ms(&self) -> f64 {
        self.tries_ms + self.filter_ms + self.join_ms
    }
}

/// Reads a finished run's output; an error names what is missing (a crash ends it early).
pub fn parse(stdout: &str) -> Result<EgsmRun, String> {
    let count = value(stdout, "# Matches:")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| missing("# Matches: N", stdout))?;
    let host = |key: &str| {
        value(stdout, key)
            .and_then(|v| v.split_once("(host)"))
            .and_then(|(h, _)| h.trim().parse::<f64>().ok())
            .ok_or_else(|| missing(key, stdout))
    };
    Ok(EgsmRun {
        count,
        tries_ms: host("Build Cuckoo Tries, time (ms):")?,
        filter_ms: host("Filtering, time (ms):")?,
        join_ms: host("Total join time (ms):")?,
    })
}

/// What follows `key` on the last line that starts with it.
fn value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix(key))
        .map(str::trim)
}

fn missing(what: &str, stdout: &str) -> String {
    let last: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = last[last.len().saturating_sub(2)..].join(" | ");
    format!("no `{what}` in its output (it ended with: {tail:?})")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NOT a recorded run: written from reading EGSM's `main.cpp`, `execution/execution.cu` and
    /// the timing macros of `utils/cuda_helpers.h` at commit de854d5 (no GPU was at hand), with
    /// made-up numbers; the times in the fractional form `build.sh` gives them.
    const SAMPLE: &str = "\
Build Cuckoo Tries, time (ms): 3.91(host), 3.87(kernel)
Filtering, time (ms): 1.25(host), 1.2(kernel)

# Candidate edges: 
(0, 1): 512 0: 40 1: 38
(1, 2): 300 1: 38 2: 51

Group 0: 0 1 (tree)
Group 0 pre edges: 0 - 1 

Before Allocation, Free 78.2GB, Total: 79.1GB
After allocation, Free 72.6GB, Total: 79.1GB

Finish group 0, time (ms): 0.05(host), 0.04(kernel)
Group 0 # partial results: 40
Finish last group, time (ms): 0.31(host), 0.3(kernel)

Total join time (ms): 0.36(host) 0.34(kernel)
Triggered Load Balancing: false
# Matches: 80
End.
";

    #[test]
    fn reads_the_count_and_the_host_times() {
        let run = parse(SAMPLE).unwrap();
        assert_eq!(run.count, 80);
        assert_eq!(
            (run.tries_ms, run.filter_ms, run.join_ms),
            (3.91, 1.25, 0.36)
        );
        assert!((run.ms() - 5.52).abs() < 1e-9);
    }

    #[test]
    fn reads_the_whole_milliseconds_of_an_unpatched_build() {
        let plain = SAMPLE
            .replace("3.91(host), 3.87", "3(host), 3")
            .replace("1.25(host), 1.2", "1(host), 1")
            .replace("0.36(host) 0.34", "0(host) 0");
        let run = parse(&plain).unwrap();
        assert_eq!((run.tries_ms, run.filter_ms, run.join_ms), (3.0, 1.0, 0.0));
    }

    #[test]
    fn a_run_cut_short_names_what_is_missing() {
        let crashed = "Build Cuckoo Tries, time (ms): 3(host), 3(kernel)\nFiltering, time (ms): 1(host), 1(kernel)\n";
        let err = parse(crashed).unwrap_err();
        assert!(err.starts_with("no `# Matches: N` in its output"), "{err}");
        assert!(err.contains("Filtering, time (ms): 1(host)"), "{err}");
        let no_join = SAMPLE.replace("Total join time", "Total time");
        assert!(parse(&no_join)
            .unwrap_err()
            .contains("Total join time (ms):"));
    }
}
