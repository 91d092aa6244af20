//! The device's users (a query alone, a batch) running side by side: each takes a buffer set
//! (arena) of its own from [`Arenas`] and counts itself in [`Users`] while its pipeline runs, so
//! that a query refused for memory can tell whether others held part of it and wait for them. A
//! single-threaded user runs in a pool of its own ([`own_pool`]), its work counted as its
//! caller's ([`thread_work_time`]).

use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::device::Device;
use crate::gpu_pipeline::Arena;

/// Idle arenas kept warm at most: as many users as a server commonly runs at once (a batch,
/// queries alone in its slots) then allocate nothing when warm. More would only hold memory.
const KEPT: usize = 4;

/// Buffer sets for a device's users, one each while they run: a server's queries alone and its
/// batches run side by side instead of each waiting for the device until the one before reaches
/// its time limit. Up to [`KEPT`] idle arenas stay, the largest, so that users of different sizes
/// running at once each find theirs warm; a user refused for memory gives the idle ones back
/// first ([`Arenas::release_idle`]).
pub(crate) struct Arenas<D: Device> {
    idle: Mutex<Vec<Arena<D>>>,
}

impl<D: Device> Default for Arenas<D> {
    fn default() -> Self {
        Arenas {
            idle: Mutex::new(Vec::new()),
        }
    }
}

impl<D: Device> Arenas<D> {
    /// The largest idle arena (a user's size is known only once it is planned), or a new empty
    /// one when none is idle.
    pub(crate) fn take(&self) -> Taken<'_, D> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let largest = (0..idle.len()).max_by_key(|&i| idle[i].bytes());
        let arena = largest.map(|i| idle.swap_remove(i)).unwrap_or_default();
        Taken {
            arena: Some(arena),
            from: self,
        }
    }

    /// Gives the idle arenas' buffers back to the device: whether there were any.
    pub(crate) fn release_idle(&self) -> bool {
        let released = std::mem::take(&mut *self.idle.lock().unwrap_or_else(|e| e.into_inner()));
        !released.is_empty()
    }

    fn give_back(&self, arena: Arena<D>) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        idle.push(arena);
        if idle.len() > KEPT {
            let smallest = (0..idle.len()).min_by_key(|&i| idle[i].bytes());
            if let Some(i) = smallest {
                idle.swap_remove(i);
            }
        }
    }
}

/// An arena taken from [`Arenas`], given back when dropped.
pub(crate) struct Taken<'a, D: Device> {
    arena: Option<Arena<D>>,
    from: &'a Arenas<D>,
}

impl<D: Device> std::ops::Deref for Taken<'_, D> {
    type Target = Arena<D>;
    fn deref(&self) -> &Arena<D> {
        self.arena.as_ref().expect("an arena until dropped")
    }
}

impl<D: Device> std::ops::DerefMut for Taken<'_, D> {
    fn deref_mut(&mut self) -> &mut Arena<D> {
        self.arena.as_mut().expect("an arena until dropped")
    }
}

impl<D: Device> Drop for Taken<'_, D> {
    fn drop(&mut self) {
        if let Some(arena) = self.arena.take() {
            self.from.give_back(arena);
        }
    }
}

/// A user's time on the device, on the calling thread, from [`Device::user_starts`] to
/// [`Device::user_ends`] when dropped.
pub(crate) struct OnDevice<'a, D: Device>(&'a D);

impl<'a, D: Device> OnDevice<'a, D> {
    pub(crate) fn new(dev: &'a D) -> Self {
        dev.user_starts();
        OnDevice(dev)
    }
}

impl<D: Device> Drop for OnDevice<'_, D> {
    fn drop(&mut self) {
        self.0.user_ends();
    }
}

/// A user of a device state other than the matching engine's (TruST's search), from
/// [`crate::engine::DeviceState::user`]: counted in its users, and a user of the device on the
/// calling thread, until it ends (or drops).
pub struct DeviceUser<'a, D: Device> {
    // Fields drop in order: the device's user ends (its work done) before it is counted out.
    _on: OnDevice<'a, D>,
    running: Running<'a>,
}

impl<'a, D: Device> DeviceUser<'a, D> {
    pub(crate) fn new(users: &'a Users, dev: &'a D) -> Self {
        // Counted before its calls start, as a matching query is.
        let running = users.start();
        DeviceUser {
            _on: OnDevice::new(dev),
            running,
        }
    }

    /// Ends the user: whether others ran beside it.
    pub fn end(self) -> bool {
        self.running.others()
    }
}

/// How many users are running on the device, and a signal when the last ends.
#[derive(Default)]
pub(crate) struct Users {
    running: Mutex<usize>,
    none_running: Condvar,
}

/// How often a user waiting for the others looks at its own stop (time limit, cancellation).
const LOOK_AT_STOP: Duration = Duration::from_millis(20);

impl Users {
    /// Counts a user in until the returned guard drops.
    pub(crate) fn start(&self) -> Running<'_> {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let others_at_start = *running > 0;
        *running += 1;
        Running {
            users: self,
            others_at_start,
        }
    }

    /// Users running now.
    #[cfg(test)]
    pub(crate) fn running(&self) -> usize {
        *self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until no user runs or `stopped` says to stop looking: whether none runs. Inside an
    /// emulated launch's block (a user that a block's yield handed this thread) it does not wait:
    /// the users it would wait for end only after it (a deadlock, seen under load).
    pub(crate) fn wait_for_none(&self, stopped: impl Fn() -> bool) -> bool {
        if crate::device::host::in_launch() {
            return false;
        }
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        while *running > 0 {
            if stopped() {
                return false;
            }
            running = self
                .none_running
                .wait_timeout(running, LOOK_AT_STOP)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }
}

/// A running user, counted out when dropped.
pub(crate) struct Running<'a> {
    users: &'a Users,
    /// Other users were running when this one started.
    others_at_start: bool,
}

impl Running<'_> {
    /// Whether other users ran beside this one: at its start, or now.
    pub(crate) fn others(&self) -> bool {
        self.others_at_start || *self.users.running.lock().unwrap_or_else(|e| e.into_inner()) > 1
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let mut running = self.users.running.lock().unwrap_or_else(|e| e.into_inner());
        *running -= 1;
        if *running == 0 {
            self.users.none_running.notify_all();
        }
    }
}

/// `f` in a pool of one thread of its own when `single`, else in the current pool: a device
/// query's host work (and the emulator's launches) then never queue behind a heavy query's work
/// in the shared pool. The pool is the calling thread's, kept while it lives: starting a thread
/// per query would add its start to every light query. Its thread's CPU time and device waits
/// count as the caller's ([`thread_work_time`]).
pub(crate) fn own_pool<R: Send>(single: bool, f: impl FnOnce() -> R + Send) -> R {
    thread_local! {
        static ONE: std::cell::OnceCell<Option<rayon::ThreadPool>> =
            const { std::cell::OnceCell::new() };
    }
    if !single {
        return f();
    }
    ONE.with(|one| {
        let pool = one.get_or_init(|| rayon::ThreadPoolBuilder::new().num_threads(1).build().ok());
        let Some(pool) = pool else {
            return f();
        };
        let (r, worked) = pool.install(|| {
            let before = own_work();
            let r = f();
            (r, own_work().saturating_sub(before))
        });
        ELSEWHERE.with(|e| e.set(e.get() + worked));
        r
    })
}

thread_local! {
    /// What this thread's single-threaded queries did on their own pool's thread.
    static ELSEWHERE: std::cell::Cell<Duration> = const { std::cell::Cell::new(Duration::ZERO) };
}

/// The calling thread's CPU time plus the time it waited for devices' reads.
fn own_work() -> Duration {
    thread_cpu_time() + crate::device::thread_read_wait()
}

/// The work done for the calling thread so far: its CPU time, its waits for a device's reads
/// (the device's work, on a GPU), and the same of the pool thread each of its single-threaded
/// queries ran on (`MatchOptions::single_thread`). A server tells a heavy query from a starved one
/// by it: a light device query's CPU time is spent on its pool's thread, or on the device.
pub fn thread_work_time() -> Duration {
    own_work() + ELSEWHERE.with(|e| e.get())
}

fn thread_cpu_time() -> Duration {
    #[cfg(unix)]
    {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime only writes the struct passed.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0 {
            return Duration::new(t.tv_sec as u64, t.tv_nsec as u32);
        }
    }
    Duration::ZERO
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::host::HostDevice;
    use std::time::Instant;

    /// A device query that a block's yield handed a thread, refused for memory while the user
    /// whose block yielded runs, waited for it forever: it ends only after the query.
    #[test]
    fn a_user_inside_a_launch_s_block_does_not_wait_for_the_others() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let users = Users::default();
            let _yielding = users.start();
            let waited = crate::device::host::in_a_block(|| users.wait_for_none(|| false));
            let _ = tx.send(waited);
        });
        let waited = rx.recv_timeout(std::time::Duration::from_secs(10));
        assert_eq!(waited, Ok(false));
    }

    #[test]
    fn users_running_at_once_keep_their_arenas_warm_until_memory_is_short() {
        let dev = HostDevice::default();
        let arenas: Arenas<HostDevice> = Arenas::default();
        {
            let mut large = arenas.take();
            large.hold(&dev, 1 << 20).unwrap();
            let mut small = arenas.take();
            assert_eq!(small.bytes(), 0, "the first's buffers are its own");
            small.hold(&dev, 1 << 12).unwrap();
        }
        // Both stay idle: taken at once again, neither allocates; the first gets the larger.
        let large = arenas.take();
        let small = arenas.take();
        assert!(large.bytes() >= 1 << 20);
        assert!(small.bytes() >= 1 << 12 && small.bytes() < 1 << 20);
        drop((large, small));
        assert!(arenas.release_idle());
        assert!(!arenas.release_idle());
        assert_eq!(arenas.take().bytes(), 0, "given back to the device");
    }

    #[test]
    fn at_most_the_largest_few_arenas_stay_idle() {
        let dev = HostDevice::default();
        let arenas: Arenas<HostDevice> = Arenas::default();
        {
            let taken: Vec<_> = (1..=KEPT + 2)
                .map(|i| {
                    let mut a = arenas.take();
                    a.hold(&dev, i << 16).unwrap();
                    a
                })
                .collect();
            drop(taken);
        }
        let idle = arenas.idle.lock().unwrap();
        let mut sizes: Vec<u64> = idle.iter().map(|a| a.bytes() >> 16).collect();
        sizes.sort_unstable();
        assert_eq!(sizes, (3..=KEPT as u64 + 2).collect::<Vec<_>>());
    }

    /// A single-threaded query's work on its own pool's thread counts as its caller's: a server
    /// read only its request thread's CPU time and took a heavy device query for starved.
    #[test]
    fn work_in_a_query_s_own_pool_counts_as_the_caller_s() {
        let before = thread_work_time();
        let spun = own_pool(true, || {
            let start = thread_cpu_time();
            while thread_cpu_time() - start < Duration::from_millis(30) {
                std::hint::black_box(0u64);
            }
            std::thread::current().id()
        });
        assert_ne!(
            spun,
            std::thread::current().id(),
            "it ran on the pool's thread"
        );
        assert!(thread_work_time() - before >= Duration::from_millis(30));
    }

    #[test]
    fn a_user_knows_whether_others_run_and_can_wait_for_them() {
        let users = Users::default();
        let first = users.start();
        assert!(!first.others_at_start);
        let second = users.start();
        assert!(second.others_at_start && second.others());
        assert!(first.others(), "one started beside it");
        assert_eq!(users.running(), 2);
        drop(second);
        // Told to stop, it stops waiting while one still runs.
        assert!(!users.wait_for_none(|| true));
        let start = Instant::now();
        std::thread::scope(|s| {
            s.spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                drop(first);
            });
            assert!(users.wait_for_none(|| false));
        });
        assert!(start.elapsed() >= Duration::from_millis(100));
        assert_eq!(users.running(), 0);
    }
}
