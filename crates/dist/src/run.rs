//! The entry point: one query on this process's workers, in a cluster or on parts held in memory.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cluster::{self, Cluster, Traffic};
use crate::dataflow::Topology;
use crate::job::{self, Job, Report, SinkFactory};
use crate::{DistError, Partition};

/// What this process saw of its queries.
#[derive(Debug)]
pub struct Outcome {
    /// Per query: worker 0's report (on process 0; `None` elsewhere), or why it failed.
    pub reports: Vec<Result<Option<Report>, DistError>>,
    /// Bytes this process sent to and received from the other processes.
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

/// Runs `jobs` in turn (one connection set-up for all). With one process, `parts` may hold every part of a cut (each served by
/// `c.workers` threads: the routing is exercised exactly as across processes); with several,
/// `parts` is this process's own part.
pub fn run(
    c: &Cluster,
    parts: Vec<Arc<Partition>>,
    jobs: Vec<Job>,
    sinks: Vec<Option<SinkFactory>>,
) -> Result<Outcome, DistError> {
    let Some(first) = parts.first() else {
        return Err(DistError::Setup("no graph part to run on".into()));
    };
    let cut = first.parts as usize;
    let (topo, threads) = if c.processes == 1 {
        if parts.len() != cut || parts.iter().enumerate().any(|(i, p)| p.part as usize != i) {
            return Err(DistError::Setup(format!(
                "one process needs all {cut} parts of the cut, in order"
            )));
        }
        (
            Topology {
                parts: cut as u32,
                per_part: c.workers,
            },
            c.workers * cut,
        )
    } else {
        if parts.len() != 1 || cut != c.processes || first.part as usize != c.process {
            return Err(DistError::Setup(format!(
                "process {} of {} needs part {} of a cut into {} parts (`gpsense partition G -n {}`), \
                 not part {} of {cut}",
                c.process, c.processes, c.process, c.processes, c.processes, first.part
            )));
        }
        (
            Topology {
                parts: cut as u32,
                per_part: c.workers,
            },
            c.workers,
        )
    };
    let agreement = xxhash_rust::xxh3::xxh3_64(
        format!("{}|{:?}|{:?}", first.fingerprint, jobs, first.parts).as_bytes(),
    );
    let traffic = Traffic::default();
    let local = Cluster {
        workers: threads,
        ..c.clone()
    };
    let sinks = Mutex::new(sinks);
    let remote = c.processes > 1;
    let results = cluster::execute(&local, agreement, &traffic, move |w| {
        let part = &parts[if c_is_local(&parts) {
            w.index() / topo.per_part
        } else {
            0
        }];
        let mut sinks = if w.index() == 0 {
            sinks
                .lock()
                .map(|mut s| std::mem::take(&mut *s))
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let mut out = Vec::with_capacity(jobs.len());
        for (k, job) in jobs.iter().enumerate() {
            let sink = sinks.get_mut(k).and_then(Option::take);
            let failed = deadline_watch(remote, job.timeout);
            let r = job::run_worker(w, part, topo, threads, job, sink, &failed);
            // A broken peer ends every query; any other error is the same on every worker.
            let broken = matches!(r, Err(DistError::Peer(_)));
            out.push(r);
            if broken {
                break;
            }
        }
        out
    })?;
    let mut reports: Vec<Result<Option<Report>, DistError>> = Vec::new();
    for worker in results {
        for (k, r) in worker.into_iter().enumerate() {
            if let Err(DistError::Peer(why)) = r {
                return Err(DistError::Peer(why));
            }
            if k >= reports.len() {
                reports.push(r);
            } else if let (Ok(None), Ok(Some(_))) = (&reports[k], &r) {
                reports[k] = r;
            }
        }
    }
    Ok(Outcome {
        reports,
        bytes_sent: traffic.sent(),
        bytes_received: traffic.received(),
    })
}

/// How long past its time limit a query may take to stop on every process before the others
/// give up on the one that does not answer.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

/// A failed peer, or, across processes, a query still running [`STOP_GRACE`] after its time limit:
/// a process is stuck with its connections open (stopped, swapping, or its machine unreachable),
/// which only the clock can tell.
fn deadline_watch(remote: bool, timeout: Option<Duration>) -> impl Fn() -> Option<String> {
    let late = timeout
        .filter(|_| remote)
        .map(|t| (t, Instant::now() + t + STOP_GRACE));
    move || {
        cluster::peer_failure().or_else(|| {
            let (t, at) = late?;
            (Instant::now() >= at).then(|| {
                let why = format!(
                    "the time limit ({t:.1?}) passed {STOP_GRACE:.0?} ago and the cluster has not \
                     stopped: a process stopped answering with its connections open (stopped, stuck, \
                     or its machine unreachable); {}",
                    cluster::ABANDONED
                );
                cluster::give_up(why.clone());
                why
            })
        })
    }
}

/// Whether this process holds every part (one process) rather than its own.
fn c_is_local(parts: &[Arc<Partition>]) -> bool {
    parts.len() > 1 || parts.first().is_some_and(|p| p.parts == 1)
}
