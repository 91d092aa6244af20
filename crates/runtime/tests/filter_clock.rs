//! The time limit inside the filtering kernels (`identify_nodes`, `mark_steps`, `refine_nodes`):
//! a work-item of a query past its budget does nothing and raises the query's flag, which read 1
//! brings back with the counts, so the query is answered as timed out even when the host, which
//! looks at the limit only between launches, never saw it pass (on a GPU the launches are queued
//! long before they run).
//!
//! The emulator's kernels read a clock the runtime installs; this test installs one that runs a
//! second per reading, so the kernels see a 60 s limit pass within one launch while the host's
//! clock does not. Its own binary: the clock is the process's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use gpsense_runtime::{Engine, EngineKind, MatchOptions};

mod conceptnet100k;
use conceptnet100k::{compiled, conceptnet, options};

static FAST: AtomicU64 = AtomicU64::new(1);

/// A clock that runs a second per reading.
fn fast_clock() -> u64 {
    FAST.fetch_add(1_000_000_000, Ordering::Relaxed)
}

#[test]
fn the_filtering_kernels_stop_a_query_on_its_own_clock() {
    let g = conceptnet();
    // Read 1 brings the clocks back behind the counts: an odd number of counts (3 nodes and 4
    // directed edges) puts them past a padding word, an even one (4 and 6) right behind.
    let texts = [
        "SELECT * WHERE { ?x IsA animal . ?x AtLocation home }",
        "SELECT * WHERE { ?x IsA ?y . ?y IsA animal . ?x AtLocation ?z }",
    ];
    let qs: Vec<_> = texts.iter().map(|t| compiled(t)).collect();
    let opts = |timeout: Option<Duration>| MatchOptions {
        timeout,
        ..options(EngineKind::Emulated, MatchOptions::default().memory_budget)
    };
    let limited = opts(Some(Duration::from_secs(60)));
    let engine = Engine::new(g);
    // On the emulator's own clock (installed at its first launch) the limit never passes.
    let mut wants = Vec::new();
    for (text, q) in texts.iter().zip(&qs) {
        let want = engine.count(q, &opts(None)).unwrap();
        let real = engine.count(q, &limited).unwrap();
        assert!(want.rows > 0 && !want.timed_out, "{text}");
        assert_eq!((real.rows, real.timed_out), (want.rows, false), "{text}");
        wants.push(want.rows);
    }
    let batch = engine.count_batch(&[(&qs[0], &limited), (&qs[1], &limited)]);
    for (r, want) in batch.reports.iter().zip(&wants) {
        let r = r.as_ref().unwrap();
        assert_eq!((r.rows, r.timed_out), (*want, false));
    }
    let (q, want) = (&qs[1], wants[1]);

    gpsense_kernels::warp::clock::install(fast_clock);
    let stopped = engine.count(q, &limited).unwrap();
    assert!(stopped.timed_out, "{stopped:?}");
    assert!(stopped.rows < want, "{} rows", stopped.rows);
    // The filtering kernels stopped it: no join level ran.
    let device = stopped.device_report.unwrap();
    assert_eq!(device.levels, 0, "{device:?}");
    // Without a limit the clock is not read: the whole answer.
    let whole = engine.count(q, &opts(None)).unwrap();
    assert_eq!((whole.rows, whole.timed_out), (want, false));

    // In a batch, the query past its limit is answered as timed out, the other in full.
    let batch = engine.count_batch(&[(q, &limited), (q, &opts(None))]);
    let reports: Vec<_> = batch.reports.iter().map(|r| r.as_ref().unwrap()).collect();
    assert!(reports[0].timed_out, "{:?}", reports[0]);
    assert_eq!((reports[1].rows, reports[1].timed_out), (want, false));
}
