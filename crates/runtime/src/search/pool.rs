//! Work stealing for the search. The calling thread searches alone first, without touching the
//! rayon pool (not even to ask its size, which would start it); once the search has run
//! [`HELPERS_AFTER`] ticks of `check_every` nodes it pauses, opens a scope on the pool, asks for
//! helpers and goes on where it stopped. A helper with nothing to do says it is hungry; a busy
//! worker that notices hands it the untried half of its shallowest open level (the largest piece
//! of work it has) as a [`Task`], at any depth. Small queries never leave one thread: waking a
//! helper and splitting costs tens of microseconds, more than such a query's whole search.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use gpsense_kernels::NONE;

use super::{Context, Task, Worker};

/// Ticks (of `MatchOptions::check_every` search nodes: 8,192 nodes by default, about a
/// millisecond) the calling thread searches alone before it asks for helpers.
pub const HELPERS_AFTER: u32 = 8;

#[derive(Default)]
struct Queue {
    tasks: Vec<Task>,
    /// Workers running a task (or the initial search).
    busy: usize,
    done: bool,
}

/// What the workers of one search share.
#[derive(Default)]
pub struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    /// Workers waiting for a task.
    hungry: AtomicUsize,
}

/// A worker's handle on the shared state.
pub struct Pool<'p> {
    shared: &'p Shared,
    /// Searching alone: ticks left before the search pauses to go on with helpers (`None`: never).
    alone: Option<std::cell::Cell<u32>>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next task, waiting while others are busy; `None` when all work is done.
    fn take(&self) -> Option<Task> {
        let mut q = self.lock();
        loop {
            if q.done {
                return None;
            }
            if let Some(t) = q.tasks.pop() {
                q.busy += 1;
                return Some(t);
            }
            if q.busy == 0 {
                q.done = true;
                self.wake.notify_all();
                return None;
            }
            self.hungry.fetch_add(1, Ordering::Relaxed);
            q = self.wake.wait(q).unwrap_or_else(|p| p.into_inner());
            self.hungry.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn finish(&self) {
        let mut q = self.lock();
        q.busy -= 1;
        if q.busy == 0 && q.tasks.is_empty() {
            q.done = true;
            self.wake.notify_all();
        }
    }

    fn give(&self, task: Task) {
        self.lock().tasks.push(task);
        self.wake.notify_one();
    }

    /// The output stopped (limit, deadline, consumer gone): drop the queued work.
    fn stop(&self) {
        let mut q = self.lock();
        q.tasks.clear();
        if q.busy == 0 {
            q.done = true;
        }
        self.wake.notify_all();
    }
}

impl<'p> Pool<'p> {
    fn new(shared: &'p Shared) -> Self {
        Pool {
            shared,
            alone: None,
        }
    }

    /// Called by a worker every `check_every` search nodes; true when it should pause (the search
    /// has proved big: time for helpers).
    pub(super) fn on_tick(&self, w: &mut Worker) -> bool {
        if let Some(left) = &self.alone {
            left.set(left.get().saturating_sub(1));
            return left.get() == 0;
        }
        if self.shared.hungry.load(Ordering::Relaxed) > 0 {
            if let Some(task) = w.split() {
                self.shared.give(task);
            }
        }
        false
    }
}

/// Runs the search over all workers; rows and counts go to `cx.out`.
pub fn run(cx: &Context, parallel: bool) {
    let shared = Shared::default();
    shared.lock().busy = 1;
    let mut w = Worker::new(cx);
    let alone = Pool {
        shared: &shared,
        alone: parallel.then(|| HELPERS_AFTER.max(1).into()),
    };
    w.search_all(&alone);
    if !w.paused {
        return;
    }
    // The search proved big: on with helpers from the pool (started here if it was not yet).
    let threads = rayon::current_num_threads();
    let pool = Pool::new(&shared);
    if threads <= 1 {
        w.resume(&pool);
        return;
    }
    rayon::in_place_scope(|s| {
        let shared = &shared;
        cx.stats
            .helpers
            .fetch_add(threads as u64 - 1, Ordering::Relaxed);
        for _ in 1..threads {
            s.spawn(move |_| helper(cx, shared));
        }
        w.resume(&pool);
        shared.finish();
        serve(&mut w, cx, shared);
    });
}

/// A helper: takes tasks until the search is done.
fn helper(cx: &Context, shared: &Shared) {
    let mut w = Worker::new(cx);
    serve(&mut w, cx, shared);
}

fn serve(w: &mut Worker, cx: &Context, shared: &Shared) {
    let pool = Pool::new(shared);
    while let Some(task) = shared.take() {
        let busy = Busy(shared);
        if !cx.out.stopped() {
            w.search_task(task, &pool);
        }
        if cx.out.stopped() {
            shared.stop();
        }
        drop(busy);
    }
}

/// Marks the end of a task even when it panics, so that no worker waits for it forever (the panic
/// then reaches the caller when the scope ends).
struct Busy<'s>(&'s Shared);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().tasks.clear();
        }
        self.0.finish();
    }
}

impl Worker<'_, '_, '_> {
    /// Hands away the untried half of the shallowest level that has untried candidates.
    pub(super) fn split(&mut self) -> Option<Task> {
        let d = (0..self.top).find(|&d| self.frames[d].pos < self.frames[d].end)?;
        let f = &self.frames[d];
        let mid = f.pos + (f.end - f.pos) / 2;
        let u = f.u;
        let cands = self.ext(u)[mid..f.end].to_vec();
        let prefix = self
            .prefix
            .iter()
            .copied()
            .chain(self.frames[..d].iter().map(|p| (p.u, self.mi[p.u])))
            .collect();
        let mut vars = self.vars;
        for f in &self.frames[d..self.top] {
            for &k in &f.new_vars {
                vars[k] = NONE;
            }
        }
        let f = &mut self.frames[d];
        f.end = mid;
        f.split = true;
        self.stats.splits += 1;
        self.gave += 1;
        Some(Task {
            prefix,
            vars,
            u,
            cands,
        })
    }
}
