//! One device shared by concurrent users (a server's threads): queries alone and batches each take
//! buffers of their own, so a light query or a batch runs beside a heavy query alone instead of
//! waiting for the device until the heavy query's time limit; each counts its own device calls.
//! On ConceptNet-100K, emulated.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use gpsense_planner::QueryGraph;
use gpsense_runtime::{Engine, EngineKind, MatchOptions};

mod conceptnet100k;
use conceptnet100k::{compiled, conceptnet, options};

/// Every 5-edge path, counted: far more than the emulator does in the 6 s it is given.
const HEAVY: &str = "SELECT * WHERE { ?a ?r ?b . ?b ?s ?c . ?c ?t ?d . ?d ?u ?e . ?e ?v ?f }";
const LIGHT: &str = "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }";

/// Runs the heavy count alone in the main lane (6 s limit) on another thread and, once it has
/// started, `light` here; returns when `light` ended and when the heavy count did.
fn beside_heavy(engine: &Engine, light: impl FnOnce()) -> (Instant, Instant) {
    let heavy = compiled(HEAVY);
    let limited = MatchOptions {
        timeout: Some(Duration::from_secs(6)),
        ..options(EngineKind::Emulated, 1 << 30)
    };
    let started = AtomicBool::new(false);
    std::thread::scope(|s| {
        let alone = s.spawn(|| {
            started.store(true, Relaxed);
            let r = engine.count(&heavy, &limited).unwrap();
            assert!(r.timed_out, "the heavy count ended within its limit");
            Instant::now()
        });
        while !started.load(Relaxed) {
            std::thread::yield_now();
        }
        // Well inside the heavy count's run: it holds its buffers.
        std::thread::sleep(Duration::from_millis(1000));
        light();
        let light_done = Instant::now();
        (light_done, alone.join().unwrap())
    })
}

/// The light count on a warm engine (the device state and its graph are built once).
fn warm(engine: &Engine, q: &QueryGraph) -> u128 {
    engine
        .count(q, &options(EngineKind::Emulated, 1 << 30))
        .unwrap()
        .rows
}

/// A batch of light queries is answered while a heavy count runs alone on another thread
/// (before, the batch waited for the device's one arena until the count's time limit).
#[test]
fn a_batch_runs_beside_a_heavy_query_alone() {
    let engine = Engine::new(conceptnet());
    let light = compiled(LIGHT);
    let want = warm(&engine, &light);
    let opts = options(EngineKind::Emulated, 1 << 30);
    let batch = || engine.count_batch(&[(&light, &opts), (&light, &opts)]);
    let alone = batch().counters;
    let (light_done, heavy_done) = beside_heavy(&engine, || {
        let beside = batch();
        for r in &beside.reports {
            assert_eq!(r.as_ref().unwrap().rows, want);
        }
        // Its own calls only: the heavy query's, on another thread meanwhile, are not its.
        let calls = |c: gpsense_runtime::DeviceCounters| (c.launches, c.syncs);
        assert_eq!(calls(beside.counters), calls(alone));
    });
    assert!(
        light_done < heavy_done,
        "the batch waited for the heavy query"
    );
}

/// A light query alone is answered while a heavy count runs alone on another thread, in a pool of
/// its own or in the shared one (before, it waited for the device's one set of buffers until the
/// heavy count's time limit).
#[test]
fn a_light_query_runs_beside_a_heavy_one_alone() {
    let engine = Engine::new(conceptnet());
    let light = compiled(LIGHT);
    let want = warm(&engine, &light);
    for single_thread in [true, false] {
        let opts = MatchOptions {
            single_thread,
            ..options(EngineKind::Emulated, 1 << 30)
        };
        let (light_done, heavy_done) = beside_heavy(&engine, || {
            assert_eq!(engine.count(&light, &opts).unwrap().rows, want);
        });
        assert!(light_done < heavy_done, "single_thread {single_thread}");
    }
}
