//! The host emulator: a [`Device`] whose memory is host memory and whose launches run every thread
//! of the grid on the CPU, calling `gpsense_kernels::entry`, the functions the PTX entry points
//! call. It proves the GPU pipeline, the argument structs and the kernels' index math on machines
//! without a GPU, and is built to catch what would break on one:
//! - a launch is shaped as a GPU's, blocks of [`BLOCK`] threads, and the extra threads of the last
//!   block run too (a kernel must ignore them);
//! - blocks run in parallel and in a shuffled order that changes from launch to launch, so a kernel
//!   that depends on an order of threads fails;
//! - with `check_writes`, a shadow map records which thread wrote which bytes in a launch and the
//!   launch fails when two threads write one byte without an atomic;
//! - with `force_mapped`, the graph takes the host-mapped placement;
//! - allocation is fallible: running out of memory is an error, not an abort;
//! - every call is counted ([`DeviceCounters`]), as on the GPU.

use std::alloc::Layout;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};

use gpsense_kernels::entry;
use gpsense_kernels::warp::HostWarp;
use rayon::prelude::*;

use super::balance::{self, Ran, Schedule, Shape};
use super::{Counting, Device, DeviceCounters, DeviceError, Lanes, Launch, BLOCK};

#[derive(Debug, Default)]
pub struct HostDevice {
    /// Memory it pretends to have free (for tests of the memory planner); `None`: the budget rules.
    pub free_memory: Option<u64>,
    /// Memory it has in all, as a GPU: what its buffers hold now is taken off the free memory it
    /// reports, and an allocation past it fails (for tests of users sharing a device).
    pub total_memory: Option<u64>,
    /// Bytes its buffers hold now.
    in_use: Arc<AtomicU64>,
    /// Keep the shadow map of writes and fail a launch on two plain writes to one element.
    pub check_writes: bool,
    /// Place the graph in "host-mapped" memory whatever its size.
    pub force_mapped: bool,
    /// Every launch of the kernel of this name fails as a raised fault flag does on a GPU (for
    /// tests of what a device failure mid-query or mid-batch leaves).
    pub fault_in: Option<String>,
    counting: Counting,
    /// The threads its users run on: with `check_writes`, a call from another thread is an
    /// error (on a GPU it would go to no user's stream).
    lanes: Lanes,
    /// Seeds the block order of each launch.
    launches: AtomicU64,
}

impl HostDevice {
    /// The emulator as tests and the CLI use it: writes checked in debug builds or with
    /// `GPSENSE_EMULATOR_CHECK=1` (`=0`: never), the host-mapped placement with
    /// `GPSENSE_EMULATOR_MAPPED=1`, a device with only so much free memory with
    /// `GPSENSE_EMULATOR_FREE=64M` (what a busy GPU reports), a device of so much memory in all,
    /// its buffers taken off what it reports free, with `GPSENSE_EMULATOR_MEMORY=64M`, every
    /// launch of one kernel failing
    /// with `GPSENSE_EMULATOR_FAULT=extend_warp_batch` (a kernel's name).
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var(k).ok();
        let on = |k: &str| var(k).is_some_and(|v| v == "1");
        HostDevice {
            check_writes: match var("GPSENSE_EMULATOR_CHECK").as_deref() {
                Some("0") => false,
                Some("1") => true,
                _ => cfg!(debug_assertions),
            },
            force_mapped: on("GPSENSE_EMULATOR_MAPPED"),
            free_memory: size_var("GPSENSE_EMULATOR_FREE"),
            total_memory: size_var("GPSENSE_EMULATOR_MEMORY"),
            fault_in: var("GPSENSE_EMULATOR_FAULT").filter(|v| !v.is_empty()),
            ..Default::default()
        }
    }
}

/// A size in the environment (`64M`); one that is not a size is ignored with a warning.
fn size_var(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    match crate::parse_bytes(&value) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            eprintln!("warning: {name}={value} is ignored: {e}");
            None
        }
    }
}

/// Host memory, 16-byte aligned, written through raw pointers (as a device's would be).
pub struct HostBuffer {
    ptr: *mut u8,
    layout: Layout,
    /// Its device's bytes in use, given back on drop.
    in_use: Arc<AtomicU64>,
}

// The emulator hands the buffer's address to kernels that synchronise their own accesses.
unsafe impl Send for HostBuffer {}
unsafe impl Sync for HostBuffer {}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // Sound: allocated with this layout by `alloc_zeroed`.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
        self.in_use
            .fetch_sub(self.layout.size() as u64, Ordering::Relaxed);
    }
}

impl HostBuffer {
    fn check(&self, offset: usize, len: usize) -> Result<(), DeviceError> {
        if offset
            .checked_add(len)
            .is_some_and(|e| e <= self.layout.size())
        {
            Ok(())
        } else {
            Err(DeviceError::Driver {
                during: "a copy".into(),
                message: format!(
                    "bytes {offset}..{} outside a buffer of {}",
                    offset.saturating_add(len),
                    self.layout.size()
                ),
            })
        }
    }
}

impl Device for HostDevice {
    type Buffer = HostBuffer;

    fn describe(&self) -> String {
        "host emulator (GPU kernels run on the CPU)".into()
    }

    fn free_memory(&self) -> Result<u64, DeviceError> {
        let left = self.total_memory.map_or(u64::MAX, |t| {
            t.saturating_sub(self.in_use.load(Ordering::Relaxed))
        });
        Ok(self.free_memory.unwrap_or(u64::MAX).min(left))
    }

    fn force_mapped(&self) -> bool {
        self.force_mapped
    }

    fn alloc_zeroed(&self, bytes: usize) -> Result<HostBuffer, DeviceError> {
        self.on_lane("an allocation")?;
        self.counting.alloc();
        let _timed = Timed::new(&self.counting, Counting::emulated);
        let layout = Layout::from_size_align(bytes.max(16).next_multiple_of(16), 16)
            .map_err(|e| DeviceError::Memory(format!("{bytes} bytes: {e}")))?;
        let size = layout.size() as u64;
        let before = self.in_use.fetch_add(size, Ordering::Relaxed);
        if self.total_memory.is_some_and(|t| before + size > t) {
            self.in_use.fetch_sub(size, Ordering::Relaxed);
            return Err(DeviceError::OutOfMemory(format!(
                "out of memory: {bytes} bytes asked, {} of the emulated device's {} in use",
                before,
                self.total_memory.unwrap_or_default()
            )));
        }
        // Sound: the layout has a non-zero size. `black_box`: an optimised build may otherwise drop
        // an allocation freed unused (as a failed request in a test is) and take it as granted.
        let ptr = std::hint::black_box(unsafe { std::alloc::alloc_zeroed(layout) });
        if ptr.is_null() {
            self.in_use.fetch_sub(size, Ordering::Relaxed);
            return Err(DeviceError::Memory(format!(
                "cannot allocate {bytes} bytes for the emulated device"
            )));
        }
        Ok(HostBuffer {
            ptr,
            layout,
            in_use: self.in_use.clone(),
        })
    }

    fn map_host_bytes(&self, bytes: &[u8]) -> Result<HostBuffer, DeviceError> {
        let buf = self.alloc_zeroed(bytes.len())?;
        // Sound: the buffer holds at least `bytes.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.ptr, bytes.len()) };
        Ok(buf)
    }

    fn write_bytes(
        &self,
        buf: &HostBuffer,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), DeviceError> {
        self.on_lane("a copy to the device")?;
        buf.check(offset, bytes.len())?;
        self.counting.up(bytes.len());
        let _timed = Timed::new(&self.counting, Counting::write_took);
        // Sound: checked to lie inside the buffer; launches run to completion before this.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.ptr.add(offset), bytes.len()) };
        Ok(())
    }

    fn zero_bytes(&self, buf: &HostBuffer, offset: usize, len: usize) -> Result<(), DeviceError> {
        self.on_lane("zeroing")?;
        buf.check(offset, len)?;
        let _timed = Timed::new(&self.counting, Counting::emulated);
        // Sound: as in `write_bytes`.
        unsafe { std::ptr::write_bytes(buf.ptr.add(offset), 0, len) };
        Ok(())
    }

    fn read_bytes(
        &self,
        buf: &HostBuffer,
        offset: usize,
        out: &mut [u8],
    ) -> Result<(), DeviceError> {
        self.on_lane("a read")?;
        buf.check(offset, out.len())?;
        self.counting.down(out.len());
        let _timed = Timed::new(&self.counting, Counting::read_took);
        // Sound: as in `write_bytes`.
        unsafe { std::ptr::copy_nonoverlapping(buf.ptr.add(offset), out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    fn address(&self, buf: &HostBuffer) -> u64 {
        buf.ptr as u64
    }

    fn launch(&self, launch: &Launch, items: u64) -> Result<(), DeviceError> {
        self.on_lane(launch.sig().name)?;
        self.counting.launch();
        let _timed = Timed::new(&self.counting, Counting::emulated);
        if self.fault_in.as_deref() == Some(launch.sig().name) {
            return Err(DeviceError::Fault(format!(
                "kernel {} raised the fault flag (injected: GPSENSE_EMULATOR_FAULT)",
                launch.sig().name
            )));
        }
        let threads = launch.threads(items);
        if threads == 0 {
            return Ok(());
        }
        let blocks = threads.div_ceil(BLOCK as u64);
        let seed = self.launches.fetch_add(1, Ordering::Relaxed);
        let order = shuffled(blocks, seed);
        let shadow = self.check_writes.then(|| Arc::new(Shadow::default()));
        CLOCK.call_once(|| gpsense_kernels::warp::clock::install(now_ns));
        if shadow.is_some() {
            HOOK.call_once(|| gpsense_kernels::abi::shadow::install(record_write));
        }
        let warp_kernel = launch.sig().threads_per_item == 32;
        let joins = join_shape(launch, threads);
        // Every work-item a warp join's warps ran, with its steps: replayed after the launch on
        // the model GPU of `balance`.
        let items: Mutex<Vec<Ran>> = Mutex::new(Vec::new());
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // In rounds: rayon's workers take another caller's work (a light query beside this
            // one) only when they find none of theirs, so one loop over a heavy launch's blocks
            // held them all until it ended. Running a round's blocks before the next is one
            // schedule a GPU may choose too.
            let run_block = |b: u64| {
                let first = b * BLOCK as u64;
                let _context = Context::enter(shadow.clone());
                if warp_kernel {
                    let ran = RefCell::new(Vec::new());
                    let last_yield = RefCell::new(std::time::Instant::now());
                    for warp in (first / 32)..((first + BLOCK as u64) / 32) {
                        let taken = Cell::new(0u64);
                        let on_lane = |l: u32| {
                            taken.set(taken.get() + 1);
                            Context::set_thread(warp * 32 + l as u64)
                        };
                        // The item this warp runs, and its steps when it began.
                        let open: Cell<Option<(usize, u64, u64)>> = Cell::new(None);
                        let close = || {
                            if let Some((job, item, from)) = open.take() {
                                let steps = taken.get() - from;
                                ran.borrow_mut().push(Ran { job, item, steps });
                            }
                        };
                        let on_item = |job: usize, item: u64| {
                            close();
                            yield_now_and_then(&mut last_yield.borrow_mut());
                            open.set(Some((job, item, taken.get())));
                        };
                        let host_warp = HostWarp {
                            on_lane: &on_lane,
                            on_item: &on_item,
                        };
                        on_lane(0);
                        // Sound: the pipeline builds launches over live buffers.
                        unsafe { run_warp(launch, warp as usize, &host_warp) };
                        close();
                    }
                    let mut ran = ran.into_inner();
                    if joins.is_some() && !ran.is_empty() {
                        if let Ok(mut all) = items.lock() {
                            all.append(&mut ran);
                        }
                    }
                } else {
                    for t in first..first + BLOCK as u64 {
                        Context::set_thread(t);
                        // Sound: as above.
                        unsafe { run_thread(launch, t as usize) };
                    }
                }
            };
            // A small launch in one round: its joins would cost more than it holds the workers.
            let mut size = if order.len() <= ONE_ROUND {
                order.len()
            } else {
                FIRST_ROUND
            };
            let mut rest = &order[..];
            while !rest.is_empty() {
                let (round, after) = rest.split_at(size.min(rest.len()));
                let began = std::time::Instant::now();
                round.par_iter().for_each(|&b| run_block(b));
                size = next_round(size, began.elapsed());
                rest = after;
            }
        }));
        if let Err(panic) = ran {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            return Err(DeviceError::Fault(format!(
                "kernel {} failed a check: {what}",
                launch.sig().name
            )));
        }
        if let Some(shape) = joins {
            let ran = items.into_inner().unwrap_or_default();
            replay(&self.counting, launch, shape, &ran)?;
        }
        if let Some(conflict) = shadow.and_then(|s| s.conflict()) {
            return Err(DeviceError::Race(format!(
                "{}: {conflict}",
                launch.sig().name
            )));
        }
        Ok(())
    }

    fn counters(&self) -> DeviceCounters {
        self.counting.snapshot()
    }

    fn user_starts(&self) {
        self.lanes.start();
    }

    fn user_ends(&self) {
        self.lanes.end();
    }
}

/// Counts the time until it drops with the given counter: the emulator's own work (launches,
/// allocations, zeroing: [`DeviceCounters::emulated_ns`]), or its copies each way, as a GPU's are
/// counted, so that the rest of a phase's time is the host's own.
struct Timed<'a>(
    &'a Counting,
    std::time::Instant,
    fn(&Counting, std::time::Duration),
);

impl<'a> Timed<'a> {
    fn new(counting: &'a Counting, count: fn(&Counting, std::time::Duration)) -> Self {
        Timed(counting, std::time::Instant::now(), count)
    }
}

impl Drop for Timed<'_> {
    fn drop(&mut self) {
        (self.2)(self.0, self.1.elapsed());
    }
}

impl HostDevice {
    /// With `check_writes`: an error for `call` from a thread none of its users runs on.
    fn on_lane(&self, call: &str) -> Result<(), DeviceError> {
        if self.check_writes {
            self.lanes.check(call)?;
        }
        Ok(())
    }
}

/// Blocks in a launch's first round; each next round is sized from the one before so that a
/// round takes about [`ROUND_TIME`]: a heavy launch then leaves rayon's workers to another
/// caller's work that often. A launch of at most [`ONE_ROUND`] blocks runs in one.
const FIRST_ROUND: usize = 64;
const ONE_ROUND: usize = 256;
const ROUND_TIME: std::time::Duration = std::time::Duration::from_millis(2);

/// Lets the worker run other callers' waiting work (a light query's launch beside this one) once a
/// round's time has passed since it last did: a warp that takes work-items from a queue may take
/// a whole launch's, so rounds of blocks alone no longer bound how long a worker is held.
fn yield_now_and_then(last: &mut std::time::Instant) {
    if last.elapsed() >= ROUND_TIME {
        rayon::yield_now();
        *last = std::time::Instant::now();
    }
}

/// Replays a warp join's work-items on the model GPU: its span as the kernels take work (work
/// stealing) and as each warp's own stride would (the schedule before), into the counters.
fn replay(
    counting: &Counting,
    launch: &Launch,
    shape: Shape,
    ran: &[Ran],
) -> Result<(), DeviceError> {
    if ran.is_empty() {
        return Ok(());
    }
    let costs = balance::costs(shape, ran)
        .map_err(|e| DeviceError::Fault(format!("kernel {}: {e}", launch.sig().name)))?;
    let now = balance::replay(shape, &costs, Schedule::Stealing);
    let strided = balance::replay(shape, &costs, Schedule::Strided);
    counting.warp_balance(&now, &strided);
    Ok(())
}

/// The shape of a warp-join launch of `threads` threads (`None` for other kernels).
fn join_shape(launch: &Launch, threads: u64) -> Option<Shape> {
    let (warps, resident) = (threads / 32, balance::resident_warps(launch.sig().name));
    match launch {
        Launch::ExtendWarp(a) | Launch::ExtendWarpBindings(a) => Some(Shape {
            warps,
            per: a.warps,
            jobs: 1,
            resident,
        }),
        Launch::ExtendWarpBatch(b) | Launch::ExtendWarpBindingsBatch(b) => Some(Shape {
            warps,
            per: b.warps.max(1),
            jobs: b.jobs.len as usize,
            resident,
        }),
        _ => None,
    }
}

/// The next round's blocks after `size` took `took`: doubled while well under [`ROUND_TIME`],
/// halved while over twice it.
fn next_round(size: usize, took: std::time::Duration) -> usize {
    if took < ROUND_TIME / 2 {
        size.saturating_mul(2)
    } else if took > ROUND_TIME * 2 {
        (size / 2).max(1)
    } else {
        size
    }
}

/// `0..blocks` in an order drawn from `seed` (a Fisher-Yates shuffle with a small LCG).
fn shuffled(blocks: u64, seed: u64) -> Vec<u64> {
    let mut order: Vec<u64> = (0..blocks).collect();
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for i in (1..order.len()).rev() {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        order.swap(i, (state >> 33) as usize % (i + 1));
    }
    order
}

/// One launch's shadow map: each block's log of plain writes (byte ranges, with the thread that
/// wrote them), checked for a byte two threads wrote once the launch ends. A block appends to its
/// own log without a lock; a map of elements shared by every block, locked per element written,
/// took most of a debug build's emulated time.
#[derive(Default)]
struct Shadow {
    logs: Mutex<Vec<Vec<Write>>>,
}

/// Bytes `start..end` written by GPU thread `thread`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Write {
    thread: u64,
    start: u64,
    end: u64,
}

impl Shadow {
    /// Two threads' plain writes to one byte, if the launch made any. Each block's log comes
    /// sorted; only the logs whose spans overlap (blocks writing among each other's bytes) are
    /// sorted together, so a launch whose blocks write apart is checked in linear time.
    fn conflict(&self) -> Option<String> {
        let mut logs = std::mem::take(&mut *self.logs.lock().unwrap_or_else(|p| p.into_inner()));
        logs.retain(|l| !l.is_empty());
        let mut spans: Vec<(u64, u64, usize)> = logs
            .iter()
            .enumerate()
            .map(|(i, l)| (l[0].start, l.iter().map(|w| w.end).max().unwrap_or(0), i))
            .collect();
        spans.sort_unstable();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut reach = 0;
        for (start, end, i) in spans {
            match groups.last_mut() {
                Some(group) if start < reach => group.push(i),
                _ => groups.push(vec![i]),
            }
            reach = reach.max(end);
        }
        groups.par_iter().find_map_any(|group| match group[..] {
            [one] => first_conflict(&logs[one]),
            _ => {
                let mut all: Vec<Write> = group
                    .iter()
                    .flat_map(|&i| logs[i].iter().copied())
                    .collect();
                all.sort_unstable_by_key(|w| (w.start, w.thread));
                first_conflict(&all)
            }
        })
    }
}

/// Two threads' writes to one byte among `writes` (sorted by start): each write against the one
/// reaching furthest before it. Until a conflict, that one holds every byte that any earlier write
/// of another thread may share with this one: two earlier writes covering a byte this one starts
/// at overlap each other there.
fn first_conflict(writes: &[Write]) -> Option<String> {
    let mut top: Option<Write> = None;
    for &w in writes {
        match top {
            Some(t) if w.start < t.end && w.thread != t.thread => {
                return Some(format!(
                    "threads {} and {} both wrote the byte at {:#x} without an atomic",
                    t.thread, w.thread, w.start
                ));
            }
            Some(t) if w.end <= t.end => {}
            _ => top = Some(w),
        }
    }
    None
}

/// A block's writes while it runs, and the GPU thread running.
struct Log {
    writes: RefCell<Vec<Write>>,
    /// Entries past which the writes are merged (each thread's touching ranges into one): a thread
    /// that writes one element in a loop grows the log by its ranges, not by its writes.
    compact_at: Cell<usize>,
    thread: Cell<u64>,
}

impl Log {
    const FIRST_COMPACT: usize = 1 << 16;

    fn new() -> Self {
        Log {
            writes: RefCell::new(Vec::new()),
            compact_at: Cell::new(Self::FIRST_COMPACT),
            thread: Cell::new(0),
        }
    }

    fn record(&self, addr: u64, elements: u64, bytes: u64) {
        let w = Write {
            thread: self.thread.get(),
            start: addr,
            end: addr + elements * bytes,
        };
        let mut writes = self.writes.borrow_mut();
        match writes.last_mut() {
            // The same thread on from where it wrote last: one range.
            Some(last) if last.thread == w.thread && w.start <= last.end && w.end >= last.start => {
                last.start = last.start.min(w.start);
                last.end = last.end.max(w.end);
            }
            _ => writes.push(w),
        }
        if writes.len() >= self.compact_at.get() {
            merge(&mut writes);
            self.compact_at
                .set((writes.len() * 2).max(Self::FIRST_COMPACT));
        }
    }
}

/// Each thread's touching or overlapping writes as one (no two threads' writes are merged).
fn merge(writes: &mut Vec<Write>) {
    writes.sort_unstable();
    let mut merged: Vec<Write> = Vec::with_capacity(writes.len());
    for &w in writes.iter() {
        match merged.last_mut() {
            Some(last) if last.thread == w.thread && w.start <= last.end => {
                last.end = last.end.max(w.end);
            }
            _ => merged.push(w),
        }
    }
    *writes = merged;
}

static HOOK: Once = Once::new();
static CLOCK: Once = Once::new();

/// The kernels' clock on the host: nanoseconds since the first launch (never 0, which the time
/// limit reads as "not started").
fn now_ns() -> u64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    EPOCH
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
        + 1
}

thread_local! {
    /// The write log of the block this host thread is running (with the GPU thread it runs).
    static CURRENT: Cell<Option<*const Log>> = const { Cell::new(None) };
    /// Blocks of launches this host thread is running: more than one when a block runs inside
    /// another's yield.
    static BLOCKS: Cell<usize> = const { Cell::new(0) };
}

/// Whether this thread runs inside a block of an emulated launch: work that a block's yield
/// (`yield_now_and_then`) handed it. Such work must not wait for other device users: the user
/// whose block yielded, suspended beneath it on this stack, or whose launch waits for this block,
/// ends only after it.
pub(crate) fn in_launch() -> bool {
    BLOCKS.get() > 0
}

/// Runs `f` as inside a launch's block (tests of what a yield hands a block's thread).
#[cfg(test)]
pub(crate) fn in_a_block<R>(f: impl FnOnce() -> R) -> R {
    let _block = Context::enter(None);
    f()
}

/// The launch context of a host thread, cleared when dropped: a block's write log while it runs
/// (handed to its launch's shadow map at the end), and the log it replaced (a block may run inside
/// another's yield, on the same thread); counted in `BLOCKS` while it lives.
struct Context {
    shadow: Option<(Arc<Shadow>, Box<Log>)>,
    before: Option<*const Log>,
}

impl Context {
    fn enter(shadow: Option<Arc<Shadow>>) -> Self {
        BLOCKS.set(BLOCKS.get() + 1);
        let before = CURRENT.get();
        let shadow = shadow.map(|s| (s, Box::new(Log::new())));
        if let Some((_, log)) = &shadow {
            CURRENT.set(Some(&**log as *const Log));
        }
        Context { shadow, before }
    }

    fn set_thread(t: u64) {
        if let Some(log) = CURRENT.get() {
            // Sound: the `Context` owning the log is alive while it is current (see `Drop`).
            unsafe { &*log }.thread.set(t);
        }
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        BLOCKS.set(BLOCKS.get() - 1);
        if let Some((shadow, log)) = self.shadow.take() {
            CURRENT.set(self.before);
            let mut writes = log.writes.into_inner();
            // Sorted here, on the block's worker: the launch's check merges sorted logs.
            writes.sort_unstable_by_key(|w| (w.start, w.thread));
            shadow
                .logs
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(writes);
        }
    }
}

/// The write hook: records `elements` elements of `bytes` bytes at `addr` for the current thread.
fn record_write(addr: u64, elements: u64, bytes: u64) {
    if let Some(log) = CURRENT.get() {
        // Sound: the `Context` owning the log outlives the thread's kernel calls.
        unsafe { &*log }.record(addr, elements, bytes);
    }
}

/// One GPU thread.
///
/// # Safety
/// The launch's arguments describe live host buffers, as the pipeline builds them.
unsafe fn run_thread(launch: &Launch, gid: usize) {
    unsafe {
        match launch {
            Launch::IdentifyNodes(a) => entry::identify_nodes(a, gid),
            Launch::CountWords(a) => entry::count_words(a, gid),
            Launch::WriteWords(a) => entry::write_words(a, gid),
            Launch::NodeTotals(a) => entry::node_totals(a, gid),
            Launch::AdjacencyBounds(a) => entry::adjacency_bounds(a, gid),
            Launch::ScanChunks(a) => entry::scan_chunks(a, gid),
            Launch::AddChunkOffsets(a) => entry::add_chunk_offsets(a, gid),
            Launch::RefineNodes(a) => entry::refine_nodes(a, gid),
            Launch::CountEdgeLists(a) => entry::count_edge_lists(a, gid),
            Launch::WriteEdgeLists(a) => entry::write_edge_lists(a, gid),
            Launch::PivotSegments(a) => entry::pivot_segments(a, gid),
            Launch::PivotSegmentsBatch(a) => entry::pivot_segments_batch(a, gid),
            Launch::CountLeaves(a) => entry::count_leaves(a, gid),
            Launch::CountLeavesBatch(a) => entry::count_leaves_batch(a, gid),
            Launch::TrustSimilarity(a) => entry::trust_similarity(a, gid),
            Launch::TrustOneHop(a) => entry::trust_one_hop(a, gid),
            Launch::TrustMerge(a) => entry::trust_merge(a, gid),
            Launch::TrustSelect(a) => entry::trust_select(a, gid),
            Launch::MarkSteps(_)
            | Launch::TrustExtend(_)
            | Launch::ExtendWarp(_)
            | Launch::ExtendWarpBatch(_)
            | Launch::ExtendWarpBindings(_)
            | Launch::ExtendWarpBindingsBatch(_) => {
                unreachable!("warp kernels run per warp")
            }
        }
    }
}

/// One GPU warp.
///
/// # Safety
/// As [`run_thread`].
unsafe fn run_warp(launch: &Launch, warp: usize, w: &HostWarp) {
    unsafe {
        match launch {
            Launch::MarkSteps(a) => entry::mark_steps(a, warp, w),
            Launch::ExtendWarp(a) => entry::extend_warp(a, warp, w),
            Launch::ExtendWarpBatch(a) => entry::extend_warp_batch(a, warp, w),
            Launch::ExtendWarpBindings(a) => entry::extend_warp_bindings(a, warp, w),
            Launch::ExtendWarpBindingsBatch(a) => entry::extend_warp_bindings_batch(a, warp, w),
            Launch::TrustExtend(a) => entry::trust_extend(a, warp, w),
            _ => unreachable!("thread kernels run per thread"),
        }
    }
}

/// Tests' emulator whose launches go through `hook` (to skip, count or follow them with an
/// action); every other call is the emulator's.
#[cfg(test)]
pub(crate) struct Hooked<F> {
    pub inner: HostDevice,
    pub hook: F,
}

/// What a [`Hooked`] emulator does on a launch (the emulator is there to run it).
#[cfg(test)]
pub(crate) trait LaunchHook:
    Fn(&HostDevice, &Launch, u64) -> Result<(), DeviceError> + Sync
{
}

#[cfg(test)]
impl<F: Fn(&HostDevice, &Launch, u64) -> Result<(), DeviceError> + Sync> LaunchHook for F {}

#[cfg(test)]
impl<F: LaunchHook> Device for Hooked<F> {
    type Buffer = <HostDevice as Device>::Buffer;
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn free_memory(&self) -> Result<u64, DeviceError> {
        self.inner.free_memory()
    }
    fn alloc_zeroed(&self, bytes: usize) -> Result<Self::Buffer, DeviceError> {
        self.inner.alloc_zeroed(bytes)
    }
    fn map_host_bytes(&self, bytes: &[u8]) -> Result<Self::Buffer, DeviceError> {
        self.inner.map_host_bytes(bytes)
    }
    fn write_bytes(&self, b: &Self::Buffer, at: usize, bytes: &[u8]) -> Result<(), DeviceError> {
        self.inner.write_bytes(b, at, bytes)
    }
    fn zero_bytes(&self, b: &Self::Buffer, at: usize, len: usize) -> Result<(), DeviceError> {
        self.inner.zero_bytes(b, at, len)
    }
    fn read_bytes(&self, b: &Self::Buffer, at: usize, out: &mut [u8]) -> Result<(), DeviceError> {
        self.inner.read_bytes(b, at, out)
    }
    fn address(&self, b: &Self::Buffer) -> u64 {
        self.inner.address(b)
    }
    fn launch(&self, launch: &Launch, items: u64) -> Result<(), DeviceError> {
        (self.hook)(&self.inner, launch, items)
    }
    fn counters(&self) -> DeviceCounters {
        self.inner.counters()
    }
    fn user_starts(&self) {
        self.inner.user_starts();
    }
    fn user_ends(&self) {
        self.inner.user_ends();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpsense_kernels::abi::{CountWordsArgs, DevSlice, WriteWordsArgs};

    /// Once users run, every call comes from a thread one of them runs on: on a GPU each user's
    /// calls go to its own stream, and one from elsewhere would be ordered with none of them.
    #[test]
    fn a_call_from_a_thread_without_a_user_is_an_error() {
        let dev = HostDevice {
            check_writes: true,
            ..HostDevice::default()
        };
        // Before any user (the graph's upload): from anywhere.
        let buf = dev.alloc_zeroed(64).unwrap();
        dev.user_starts();
        dev.write_bytes(&buf, 0, &[1]).unwrap();
        std::thread::scope(|s| {
            let stray = s.spawn(|| dev.write_bytes(&buf, 0, &[2])).join().unwrap();
            assert!(matches!(stray, Err(DeviceError::Race(_))), "{stray:?}");
        });
        dev.user_ends();
        let mut out = [0u8; 1];
        let after = dev.read_bytes(&buf, 0, &mut out);
        assert!(matches!(after, Err(DeviceError::Race(_))), "{after:?}");
        dev.user_starts();
        dev.read_bytes(&buf, 0, &mut out).unwrap();
        dev.user_ends();
        assert_eq!(out, [1]);
    }

    #[test]
    fn running_out_of_memory_is_an_error_not_an_abort() {
        let dev = HostDevice::default();
        for bytes in [usize::MAX / 2, 1 << 60] {
            let err = dev.alloc_zeroed(bytes).err().expect("no such memory");
            assert!(matches!(err, DeviceError::Memory(_)), "{err}");
        }
    }

    #[test]
    fn a_shuffle_is_a_permutation_that_changes_with_the_seed() {
        let a = shuffled(100, 1);
        let b = shuffled(100, 2);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_ne!(a, b);
    }

    /// A device shared by threads counts each thread's calls apart: a server's batch reports its
    /// own launches and reads, not those of a query alone on another thread meanwhile, nor those
    /// of another device.
    #[test]
    fn each_thread_counts_its_own_calls() {
        let dev = HostDevice::default();
        let before = dev.counters();
        std::thread::scope(|s| {
            s.spawn(|| {
                let mine = dev.counters();
                let buf = dev.alloc_zeroed(24).unwrap();
                dev.write_bytes(&buf, 0, &[7; 24]).unwrap();
                let _: Vec<u64> = super::super::read(&dev, &buf, 0, 3).unwrap();
                let calls = dev.counters() - mine;
                assert_eq!((calls.syncs, calls.bytes_up, calls.bytes_down), (1, 24, 24));
            });
        });
        assert_eq!(dev.counters() - before, DeviceCounters::default());
        // Nor are another device's calls on this thread (another engine's, another test's).
        let other = HostDevice::default();
        other.alloc_zeroed(8).unwrap();
        assert_eq!(other.counters().allocations, 1);
        assert_eq!(dev.counters() - before, DeviceCounters::default());
    }

    /// The shadow map's check of a launch's writes finds two threads on one byte exactly when a
    /// byte-by-byte check does: random writes of a few threads over a few bytes, in one to three
    /// blocks' logs (apart or among each other), some merged first as a long block's are.
    #[test]
    fn the_shadow_map_finds_two_threads_on_one_byte_as_a_byte_check_does() {
        let mut state = 0x5eed_u64;
        let mut next = |n: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let (mut races, mut clean) = (0, 0);
        for case in 0..5_000 {
            let writes: Vec<Write> = (0..1 + next(6))
                .map(|_| {
                    let start = next(24);
                    Write {
                        thread: next(3),
                        start,
                        end: start + 1 + next(6),
                    }
                })
                .collect();
            let mut owner = [None::<u64>; 32];
            let mut race = false;
            for w in &writes {
                for b in w.start..w.end {
                    match owner[b as usize] {
                        Some(t) if t != w.thread => race = true,
                        _ => owner[b as usize] = Some(w.thread),
                    }
                }
            }
            // One to three blocks' logs, each sorted as a block hands it over.
            let mut logs: Vec<Vec<Write>> = vec![Vec::new(); 1 + next(3) as usize];
            for &w in &writes {
                let k = next(logs.len() as u64) as usize;
                logs[k].push(w);
            }
            for log in &mut logs {
                if case % 2 == 1 {
                    merge(log);
                }
                log.sort_unstable_by_key(|w| (w.start, w.thread));
            }
            let shadow = Shadow {
                logs: Mutex::new(logs),
            };
            let found = shadow.conflict();
            assert_eq!(found.is_some(), race, "{writes:?}: {found:?}");
            if race {
                races += 1;
            } else {
                clean += 1;
            }
        }
        assert!(races > 1000 && clean > 1000, "{races} races, {clean} clean");
    }

    #[test]
    fn two_threads_writing_one_element_fail_the_launch() {
        let dev = HostDevice {
            check_writes: true,
            ..Default::default()
        };
        let before = dev.counters();
        let words = super::super::upload(&dev, &[0b1011u32, 0b1]).unwrap();
        let out = dev.alloc_zeroed(64).unwrap();
        let offsets = super::super::upload(&dev, &[0u64, 3]).unwrap();
        let good = WriteWordsArgs {
            words: words.slice(&dev),
            offsets: offsets.slice(&dev),
            out: DevSlice {
                ptr: dev.address(&out),
                len: 4,
            },
            stride: 2,
        };
        dev.launch(&Launch::WriteWords(good), 2).unwrap();
        // Both words written at offset 0: word 1's thread overwrites word 0's first element.
        let zeros = super::super::upload(&dev, &[0u64, 0]).unwrap();
        let bad = WriteWordsArgs {
            offsets: zeros.slice(&dev),
            ..good
        };
        let err = dev.launch(&Launch::WriteWords(bad), 2).unwrap_err();
        assert!(err.to_string().contains("both wrote"), "{err}");
        // Atomic counters are not plain writes.
        let counts = dev.alloc_zeroed(24).unwrap();
        let count = CountWordsArgs {
            words: words.slice(&dev),
            counts: DevSlice {
                ptr: dev.address(&counts),
                len: 3,
            },
        };
        dev.launch(&Launch::CountWords(count), 2).unwrap();
        assert_eq!((dev.counters() - before).launches, 3);
        // A body that fails a check (offsets for one word only) is an error, not a crash.
        let short = WriteWordsArgs {
            offsets: DevSlice {
                len: 1,
                ..offsets.slice(&dev)
            },
            ..good
        };
        let err = dev.launch(&Launch::WriteWords(short), 2).unwrap_err();
        assert!(matches!(err, DeviceError::Fault(_)), "{err}");
    }
}
