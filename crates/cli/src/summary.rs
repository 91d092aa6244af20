//! The summary a run prints on stderr, one format for every engine, for the full SPARQL evaluator
//! and for runs across processes:
//!
//! `ANSWER[ (CUT)] in TIME [SEMANTICS semantics, ENGINE engine]`, e.g.
//! `12 rows in 3.1 ms [iso semantics, dfs engine]` or `yes in 0.2 ms [hom semantics, timely
//! dataflow engine]`. Scripts (`xtask gpu-check`) read it, so its shape stays put; what only one
//! engine has to say goes on lines of its own.

use std::time::Duration;

use gpsense::fmt::{millis, thousands};

/// `1 row`, `2 rows`, `1,000 queries`.
pub fn plural(n: impl Into<u128>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// What the answer was: rows, a count, a yes/no.
pub enum Answer {
    /// Rows written.
    Rows(u128),
    /// `--count`: matches counted.
    Matches(u128),
    /// `SELECT (COUNT(*) AS ?n)`: one row holding the number of solutions.
    CountRow(u128),
    /// An ASK (or a query without variables): its answer, with why it is one.
    YesNo(String),
    /// CONSTRUCT or DESCRIBE: triples written.
    Triples(u128),
}

impl Answer {
    fn text(&self) -> String {
        match *self {
            Answer::Rows(n) => plural(n, "row", "rows"),
            Answer::Matches(n) => plural(n, "match", "matches"),
            Answer::CountRow(n) => format!("1 row ({})", plural(n, "solution", "solutions")),
            Answer::YesNo(ref answer) => answer.clone(),
            Answer::Triples(n) => plural(n, "triple", "triples"),
        }
    }
}

/// One run's summary line.
pub struct Summary<'a> {
    pub answer: Answer,
    pub timed_out: bool,
    pub limit_reached: bool,
    pub elapsed: Duration,
    pub semantics: &'a dyn std::fmt::Display,
    pub engine: &'a dyn std::fmt::Display,
}

impl std::fmt::Display for Summary<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A yes found before the clock ran out is a full answer: the mark is for counts and rows.
        let cut = match (&self.answer, self.timed_out, self.limit_reached) {
            (Answer::YesNo(_), _, _) => "",
            (_, true, _) => " (timed out: the answer is incomplete)",
            (_, false, true) => " (limit reached: more matches exist)",
            _ => "",
        };
        write!(
            f,
            "{}{cut} in {} [{} semantics, {} engine]",
            self.answer.text(),
            millis(self.elapsed),
            self.semantics,
            self.engine
        )
    }
}

/// `gpsense match`'s closing lines: the queries answered, and how their counts compared with the
/// expected answers, the same for one process and for several.
#[derive(Default)]
pub struct MatchTally {
    pub queries: usize,
    /// Milliseconds spent answering (the sum over queries).
    pub total_ms: f64,
    /// Counts compared with an expected one.
    pub checked: usize,
    pub mismatches: usize,
    /// Checked counts equal to the expected one (and not cut by the time limit).
    pub exact: usize,
    pub timed_out: usize,
}

impl MatchTally {
    /// `N queries in X ms of processing (Y ms per query)`, then `where` (how the graph was held).
    pub fn processed(&self, place: &str) -> String {
        format!(
            "{} in {:.1} ms of processing ({:.3} ms per query), {place}",
            plural(self.queries as u64, "query", "queries"),
            self.total_ms,
            self.total_ms / self.queries.max(1) as f64
        )
    }

    /// How the counts compared with the expected answers.
    pub fn checks(&self) -> String {
        // Every checked count is exact, a mismatch, or one a limit stopped short of the expected.
        let cut = self.checked.saturating_sub(self.exact + self.mismatches);
        let mut parts = vec![plural(self.mismatches as u64, "mismatch", "mismatches")];
        if cut == 0 && self.mismatches == 0 {
            parts.push("all counted exactly".to_owned());
        } else {
            if self.exact > 0 {
                parts.push(format!("{} counted exactly", thousands(self.exact as u64)));
            }
            if cut > 0 {
                parts.push(format!(
                    "{} stopped by a limit or the time limit",
                    thousands(cut as u64)
                ));
            }
        }
        format!(
            "{} checked against the expected answers: {}",
            plural(self.checked as u64, "count", "counts"),
            parts.join(", ")
        )
    }
}

/// `batch time: plans 1.2 ms, filtering 3.4 ms, ...`: where the batches' time went; in the
/// emulator, how much of each phase its kernels took (the rest is the host's own work).
pub fn phases_line(p: &gpsense_runtime::BatchPhases) -> String {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let [filter, space, rest] = p.emulated.map(ms);
    let emulated = if filter + space + rest > 0.0 {
        format!(
            "; of which the emulated device (kernels, allocations, zeroing): filtering {filter:.1} ms, candidate space \
             {space:.1} ms, join and queries alone {rest:.1} ms"
        )
    } else {
        String::new()
    };
    let line = format!(
        "batch time: plans {:.1} ms, filtering {:.1} ms (preparing its queries {:.1} ms, uploads \
         {:.1} ms, queueing its launches {:.1} ms, its read {:.1} ms), candidate space {:.1} ms, \
         join {:.1} ms, queries gone on alone {:.1} ms",
        ms(p.plan),
        ms(p.filter),
        ms(p.filter_prepare),
        ms(p.filter_write),
        ms(p.filter_launch),
        ms(p.filter_read),
        ms(p.space),
        ms(p.levels),
        ms(p.alone)
    );
    line + &emulated
}

/// The notes a batch leaves on stderr: a GPU failure whose queries were answered on the CPU, and
/// counts that ran out of half their time limit beside the others and were counted again alone.
pub fn note_batch(b: &gpsense::BatchReport) {
    if let Some(why) = &b.fallback {
        crate::out::note!(
            "note: the GPU failed during a batch ({why}); {} answered on the CPU (dfs engine)",
            plural(b.on_cpu as u64, "query was", "queries were")
        );
    }
    if b.again > 0 {
        crate::out::note!(
            "note: {} out of half the time limit beside the others and counted again alone",
            plural(b.again as u64, "query ran", "queries ran")
        );
    }
}

/// `batches: 200 queries in 1 batch: 258 launches, 7 reads (1.29 launches, 0.04 reads a query)`.
pub fn batch_line(queries: usize, batches: usize, c: &gpsense::DeviceCounters) -> String {
    let per = |x: u64| x as f64 / queries.max(1) as f64;
    format!(
        "batches: {} in {}: {} launches, {} reads ({:.2} launches, {:.3} reads a query)",
        plural(queries as u64, "query", "queries"),
        plural(batches as u64, "batch", "batches"),
        thousands(c.launches),
        thousands(c.syncs),
        per(c.launches),
        per(c.syncs)
    )
}

/// `the host's share of the batches' device calls: 6.1 ms in reads (each waits for the work
/// queued before it), 0.4 ms queueing launches, 0.9 ms in 14 uploads of 2,840,400 bytes`.
pub fn host_calls_line(c: &gpsense::DeviceCounters) -> String {
    format!(
        "the host's share of the batches' device calls: {:.1} ms in reads (each waits for the work \
         queued before it), {:.1} ms queueing launches, {:.1} ms in {} uploads of {} bytes",
        c.read_ns as f64 / 1e6,
        c.launch_ns as f64 / 1e6,
        c.write_ns as f64 / 1e6,
        thousands(c.uploads),
        thousands(c.bytes_up)
    )
}

/// `auto: 241 counts estimated for dfs shared with the device: 140 taken by the device, 101 by
/// the CPU`.
pub fn shared_line(shared: usize, on_device: usize) -> String {
    format!(
        "auto: {} estimated for dfs shared with the device: {} taken by the device, {} by the CPU",
        plural(shared as u64, "count", "counts"),
        thousands(on_device as u64),
        thousands(shared.saturating_sub(on_device) as u64)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_follow_the_count() {
        assert_eq!(plural(1u64, "query", "queries"), "1 query");
        assert_eq!(plural(0u64, "query", "queries"), "0 queries");
        assert_eq!(plural(1234u64, "row", "rows"), "1,234 rows");
        assert_eq!(Answer::CountRow(1).text(), "1 row (1 solution)");
    }

    #[test]
    fn checks_say_all_when_every_count_ran_to_the_end() {
        let t = MatchTally {
            queries: 1,
            checked: 1,
            exact: 1,
            ..MatchTally::default()
        };
        assert_eq!(
            t.checks(),
            "1 count checked against the expected answers: 0 mismatches, all counted exactly"
        );
        let t = MatchTally {
            queries: 3,
            checked: 3,
            exact: 1,
            mismatches: 1,
            ..MatchTally::default()
        };
        assert_eq!(
            t.checks(),
            "3 counts checked against the expected answers: 1 mismatch, 1 counted exactly, 1 \
             stopped by a limit or the time limit"
        );
    }
}
