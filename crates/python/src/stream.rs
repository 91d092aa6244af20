//! The query thread of a streamed result, and what it may hold while its reader does not read.
//!
//! A reader may stop reading for as long as it likes (a result kept half read). Its producer then
//! waits, and must hold nothing another query needs: not a thread of the shared rayon pool (each
//! stalled worker is one thread fewer for every other query, and with as many stalled as there are
//! cores every later query waits forever), not the device (`DeviceState` runs one query at a time).
//! So each stream matches on a rayon pool of its own, and a query on the device never waits for its
//! reader: its rows are buffered for it, within the memory budget.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::Arc;

use gpsense::{solutions, EngineKind, Error, MatchOptions, Matcher, Prepared, Reported};
use gpsense_runtime::RowBatch;

use crate::shared::Shared;

/// Batches of rows a query thread on the CPU may run ahead of its reader.
const AHEAD: usize = 4;
/// Results streaming at once, at most: each holds a query thread and a pool of its own until it is
/// read to its end or dropped.
pub const MAX_STREAMS: usize = 64;
/// What a buffered batch costs besides its ids (the message and the vector), for the budget.
const BATCH_OVERHEAD: u64 = 64;

static STREAMS: AtomicUsize = AtomicUsize::new(0);

/// What the query thread sends.
pub enum Message {
    /// A batch's ids, and its number of rows (a projection may have no columns).
    Rows(Vec<u32>, usize),
    End(Box<Result<Reported, Error>>),
    /// The query thread stopped for a reason of the stream's own (its buffer is full).
    Failed(String),
}

/// The reader's side of a running query thread. Dropping it stops the thread.
pub struct Stream {
    pub rows: Receiver<Message>,
    cancel: Arc<AtomicBool>,
    /// Bytes sent and not yet taken, for a buffered (device) stream.
    unread: Option<Arc<AtomicU64>>,
    _slot: Slot,
}

impl Stream {
    /// Starts the query thread. `opts` carry the caller's time limit; their `cancel` is set here.
    pub fn start(
        shared: Arc<Shared>,
        prepared: Arc<Prepared>,
        mut opts: MatchOptions,
    ) -> Result<Stream, String> {
        let slot = Slot::take()?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(rayon::current_num_threads())
            .thread_name(|i| format!("gpsense-stream-{i}"))
            .build()
            .map_err(|e| format!("cannot start the query's threads: {e}"))?;
        let cancel = Arc::new(AtomicBool::new(false));
        opts.cancel = Some(cancel.clone());
        opts.blocking_rows = true;
        let buffered = shared.with_dependent(|_, e| on_device(&e.matcher, opts.engine));
        let (mut feed, rows, unread) = Feed::new(buffered, opts.memory_budget);
        std::thread::Builder::new()
            .name("gpsense-query".into())
            .spawn(move || {
                let result = pool.install(|| {
                    shared.with_dependent(|_, e| {
                        solutions::select(&e.matcher, &prepared, &opts, &mut |b| feed.send(b))
                    })
                });
                feed.end(result.map_err(Error::from));
            })
            .map_err(|e| format!("cannot start the query thread: {e}"))?;
        Ok(Stream {
            rows,
            cancel,
            unread,
            _slot: slot,
        })
    }

    /// A batch of `ids` was taken from the channel.
    pub fn taken(&self, ids: &[u32]) {
        if let Some(unread) = &self.unread {
            unread.fetch_sub(batch_bytes(ids), Ordering::Relaxed);
        }
    }

    fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}

impl Drop for Stream {
    /// A stream dropped before its end (a `break`, `close()`, the result collected) stops its query
    /// thread, also where it is not sending (the channel's end tells only a sender).
    fn drop(&mut self) {
        self.cancel();
    }
}

/// Whether `engine` runs on a device (a GPU, or the host emulating one): one query at a time.
fn on_device(m: &Matcher, engine: EngineKind) -> bool {
    match engine {
        EngineKind::Gpu | EngineKind::Emulated => true,
        EngineKind::Auto => m.engine().gpu().is_ok(),
        EngineKind::Dfs | EngineKind::Kernels => false,
    }
}

fn batch_bytes(ids: &[u32]) -> u64 {
    ids.len() as u64 * 4 + BATCH_OVERHEAD
}

/// The query thread's side of the channel.
enum Feed {
    /// On the CPU: waits while `AHEAD` batches are unread, on the stream's own threads.
    Paced(SyncSender<Message>),
    /// On a device: never waits; stops once the unread rows would outgrow `budget` bytes.
    Buffered {
        tx: Sender<Message>,
        unread: Arc<AtomicU64>,
        budget: u64,
        over: bool,
    },
}

impl Feed {
    fn new(buffered: bool, budget: u64) -> (Feed, Receiver<Message>, Option<Arc<AtomicU64>>) {
        if !buffered {
            let (tx, rx) = sync_channel(AHEAD);
            return (Feed::Paced(tx), rx, None);
        }
        let (tx, rx) = channel();
        let unread = Arc::new(AtomicU64::new(0));
        let feed = Feed::Buffered {
            tx,
            unread: unread.clone(),
            budget,
            over: false,
        };
        (feed, rx, Some(unread))
    }

    /// Hands a batch on; false stops the match (the reader is gone, or the buffer is full).
    fn send(&mut self, b: RowBatch) -> bool {
        let rows = Message::Rows(b.data.to_vec(), b.rows);
        match self {
            Feed::Paced(tx) => tx.send(rows).is_ok(),
            Feed::Buffered {
                tx,
                unread,
                budget,
                over,
            } => {
                let bytes = batch_bytes(b.data);
                if unread.fetch_add(bytes, Ordering::Relaxed) + bytes > *budget {
                    *over = true;
                    return false;
                }
                tx.send(rows).is_ok()
            }
        }
    }

    /// The last message: the match's outcome, or why the stream stopped it.
    fn end(self, result: Result<Reported, Error>) {
        let message = match &self {
            Feed::Buffered {
                budget, over: true, ..
            } => Message::Failed(format!(
                "the rows not yet read took more than the memory budget ({budget} bytes): a query \
                 on the device does not wait for its reader, so as not to hold the device, and \
                 its rows wait in memory instead; read them faster, add a LIMIT, or use \
                 engine=\"dfs\", which waits for its reader"
            )),
            _ => Message::End(Box::new(result)),
        };
        // A reader that is gone needs no end.
        let _ = match self {
            Feed::Paced(tx) => tx.send(message),
            Feed::Buffered { tx, .. } => tx.send(message),
        };
    }
}

/// A place among the `MAX_STREAMS` streams, given back when the stream ends.
struct Slot;

impl Slot {
    fn take() -> Result<Slot, String> {
        STREAMS
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_STREAMS).then_some(n + 1)
            })
            .map(|_| Slot)
            .map_err(|_| {
                format!(
                    "{MAX_STREAMS} query results are being streamed at once, the most gpsense \
                     allows (each holds threads of its own until it is read to its end, closed or \
                     dropped): finish, close() or drop one before iterating another, or take the \
                     rows at once with to_list()"
                )
            })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        STREAMS.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(data: &[u32]) -> RowBatch<'_> {
        RowBatch {
            data,
            width: 1,
            rows: data.len(),
        }
    }

    #[test]
    fn a_buffered_feed_never_waits_and_stops_at_its_budget() {
        let ids = [7u32; 100];
        let budget = 3 * batch_bytes(&ids);
        let (mut feed, rows, unread) = Feed::new(true, budget);
        let unread = unread.expect("a buffered feed counts its unread bytes");
        // Nobody reads: three batches fit, the fourth stops the match.
        assert!((0..3).all(|_| feed.send(batch(&ids))));
        assert!(!feed.send(batch(&ids)));
        feed.end(Err(Error::NotRegularFile("unused".into())));
        let messages: Vec<Message> = rows.try_iter().collect();
        assert_eq!(messages.len(), 4);
        assert!(messages[..3]
            .iter()
            .all(|m| matches!(m, Message::Rows(v, 100) if v.len() == 100)));
        let Message::Failed(why) = &messages[3] else {
            panic!("the last message should say why the stream stopped");
        };
        assert!(
            why.contains(&format!("memory budget ({budget} bytes)")),
            "{why}"
        );
        assert!(unread.load(Ordering::Relaxed) > budget);
    }

    #[test]
    fn a_buffered_feed_goes_on_while_its_reader_reads() {
        let ids = [1u32; 10];
        let (mut feed, rows, unread) = Feed::new(true, 2 * batch_bytes(&ids));
        let unread = unread.expect("a buffered feed counts its unread bytes");
        for _ in 0..100 {
            assert!(feed.send(batch(&ids)));
            let Ok(Message::Rows(v, _)) = rows.try_recv() else {
                panic!("a batch should be waiting");
            };
            unread.fetch_sub(batch_bytes(&v), Ordering::Relaxed);
        }
    }

    #[test]
    fn a_paced_feed_runs_ahead_of_its_reader_by_a_few_batches() {
        let (feed, rows, unread) = Feed::new(false, 0);
        assert!(unread.is_none());
        let Feed::Paced(tx) = feed else {
            panic!("a feed on the CPU waits for its reader");
        };
        for _ in 0..AHEAD {
            assert!(tx.try_send(Message::Failed(String::new())).is_ok());
        }
        assert!(tx.try_send(Message::Failed(String::new())).is_err());
        drop(rows);
    }
}
