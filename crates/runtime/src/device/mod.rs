//! Where kernels run: a [`Device`] allocates buffers, copies data and launches the kernels of
//! `gpsense_kernels::abi`. Two implementations: [`host::HostDevice`], an emulator that runs every
//! launch's threads on the CPU through the very functions the PTX entry points call (so the GPU
//! pipeline is tested without a GPU), and [`cuda::CudaDevice`] (cudarc, the driver loaded at run time).
//! The layers follow cudarc's: raw launches at the bottom, typed buffers ([`Buf`]) above, and the
//! query pipeline (`gpu_pipeline`) on top; nothing above this module touches raw addresses.

pub mod balance;
pub mod cuda;
pub mod host;
pub mod memory;

use std::marker::PhantomData;

use gpsense_kernels::abi::{self, DevSlice, KernelSig};
use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DeviceError {
    #[error("no GPU: {0}")]
    Unavailable(String),
    #[error("GPU error in {during}: {message}")]
    Driver { during: String, message: String },
    #[error("the kernels' PTX is missing: {0}")]
    Ptx(String),
    #[error("device memory: {0}")]
    Memory(String),
    /// An allocation the device could not grant now: other users (processes or this one's other
    /// queries) hold the memory. Not a fault: the device stays usable.
    #[error("device memory: {0}")]
    OutOfMemory(String),
    #[error("emulator: {0}")]
    Race(String),
    #[error("{0} (a bug in gpsense: please report it; the device stays usable)")]
    Fault(String),
    #[error("the GPU failed its self-check, so it is not used: {0}")]
    SelfCheck(String),
}

/// Plain data that may be copied to and from a device byte for byte.
///
/// # Safety
/// Implementors are `Copy`, contain no pointers, padding or invalid bit patterns.
pub unsafe trait Pod: Copy + Send + Sync + 'static {}
unsafe impl Pod for u8 {}
unsafe impl Pod for u16 {}
unsafe impl Pod for u32 {}
unsafe impl Pod for u64 {}
unsafe impl Pod for f32 {}
unsafe impl Pod for gpsense_kernels::filter::Need {}
unsafe impl Pod for gpsense_kernels::filter::Incident {}
unsafe impl Pod for gpsense_kernels::join::Check {}
unsafe impl Pod for abi::ListsArgs {}
unsafe impl Pod for abi::DirectedEdge {}
unsafe impl Pod for abi::NodeJob {}
unsafe impl Pod for abi::MarkStep {}
unsafe impl Pod for abi::RefineJob {}
unsafe impl Pod for abi::EdgeList {}
unsafe impl Pod for abi::LeafGroupArgs {}
unsafe impl Pod for gpsense_kernels::join::LeafTerm {}
unsafe impl Pod for abi::ExtendWarpArgs {}
unsafe impl Pod for abi::CountLeavesArgs {}
unsafe impl Pod for abi::PivotSegmentsArgs {}

/// One kernel launch: the kernel and its argument struct.
#[derive(Clone, Copy, Debug)]
pub enum Launch {
    IdentifyNodes(abi::IdentifyNodesArgs),
    CountWords(abi::CountWordsArgs),
    WriteWords(abi::WriteWordsArgs),
    NodeTotals(abi::NodeTotalsArgs),
    AdjacencyBounds(abi::AdjacencyBoundsArgs),
    ScanChunks(abi::ScanArgs),
    AddChunkOffsets(abi::ScanArgs),
    MarkSteps(abi::MarkStepsArgs),
    RefineNodes(abi::RefineNodesArgs),
    CountEdgeLists(abi::EdgeListsArgs),
    WriteEdgeLists(abi::EdgeListsArgs),
    ExtendWarp(abi::ExtendWarpArgs),
    ExtendWarpBatch(abi::ExtendWarpBatchArgs),
    ExtendWarpBindings(abi::ExtendWarpArgs),
    ExtendWarpBindingsBatch(abi::ExtendWarpBatchArgs),
    PivotSegments(abi::PivotSegmentsArgs),
    PivotSegmentsBatch(abi::PivotSegmentsBatchArgs),
    CountLeaves(abi::CountLeavesArgs),
    CountLeavesBatch(abi::CountLeavesBatchArgs),
    TrustSimilarity(abi::TrustSimilarityArgs),
    TrustOneHop(abi::TrustOneHopArgs),
    TrustExtend(abi::TrustExtendArgs),
    TrustMerge(abi::TrustMergeArgs),
    TrustSelect(abi::TrustSelectArgs),
}

impl Launch {
    /// The kernel's entry in the ABI table.
    pub fn sig(&self) -> &'static KernelSig {
        let name = match self {
            Launch::IdentifyNodes(_) => "identify_nodes",
            Launch::CountWords(_) => "count_words",
            Launch::WriteWords(_) => "write_words",
            Launch::NodeTotals(_) => "node_totals",
            Launch::AdjacencyBounds(_) => "adjacency_bounds",
            Launch::ScanChunks(_) => "scan_chunks",
            Launch::AddChunkOffsets(_) => "add_chunk_offsets",
            Launch::MarkSteps(_) => "mark_steps",
            Launch::RefineNodes(_) => "refine_nodes",
            Launch::CountEdgeLists(_) => "count_edge_lists",
            Launch::WriteEdgeLists(_) => "write_edge_lists",
            Launch::ExtendWarp(_) => "extend_warp",
            Launch::ExtendWarpBatch(_) => "extend_warp_batch",
            Launch::ExtendWarpBindings(_) => "extend_warp_bindings",
            Launch::ExtendWarpBindingsBatch(_) => "extend_warp_bindings_batch",
            Launch::PivotSegments(_) => "pivot_segments",
            Launch::PivotSegmentsBatch(_) => "pivot_segments_batch",
            Launch::CountLeaves(_) => "count_leaves",
            Launch::CountLeavesBatch(_) => "count_leaves_batch",
            Launch::TrustSimilarity(_) => "trust_similarity",
            Launch::TrustOneHop(_) => "trust_one_hop",
            Launch::TrustExtend(_) => "trust_extend",
            Launch::TrustMerge(_) => "trust_merge",
            Launch::TrustSelect(_) => "trust_select",
        };
        abi::KERNELS
            .iter()
            .find(|k| k.name == name)
            .expect("every launch is in abi::KERNELS")
    }

    /// Threads to start for `items` work-items.
    pub fn threads(&self, items: u64) -> u64 {
        items.saturating_mul(self.sig().threads_per_item as u64)
    }
}

/// Threads per block for every kernel, on the GPU and in the emulator.
pub const BLOCK: u32 = 256;

/// What a device was asked to do from one thread ([`Counting`]): the measure of a GPU program's
/// overheads that needs no GPU (the emulator counts the same calls).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceCounters {
    pub launches: u64,
    /// Waits for the device (every read back is one).
    pub syncs: u64,
    pub allocations: u64,
    /// Copies to the device (each a call, and on a GPU a pageable source staged before it returns).
    pub uploads: u64,
    pub bytes_up: u64,
    pub bytes_down: u64,
    /// The warp join's balance (the emulator only; 0 on a GPU), in warp steps (a step is a
    /// lane-call of a warp primitive, about one per entry scanned), each summed over the warp
    /// joins' launches (`extend_warp*`): the launch's span on the model GPU of [`balance`] as the
    /// kernels take work-items (`warp_span`), as each warp's own stride would take them (the
    /// schedule before work stealing: `warp_span_strided`), and the mean steps of the warps that
    /// ran an item (`warp_mean`), and the least any schedule could take on that model (all the
    /// steps shared by the resident warps, or the longest item: `warp_span_bound`).
    /// `warp_span / warp_mean` is the imbalance, 1 at best.
    pub warp_span: u64,
    pub warp_span_strided: u64,
    pub warp_span_bound: u64,
    pub warp_mean: u64,
    /// Nanoseconds the host spent in reads (the copy and the wait for everything queued before
    /// it) and in queueing launches: with the phases' wall time, where a batch's time went
    /// between the host, the driver and the device (the emulator counts its copies' time in
    /// reads, and its launches' in `emulated_ns`).
    pub read_ns: u64,
    pub launch_ns: u64,
    /// Nanoseconds the host spent in uploads (a pageable source is staged before the call
    /// returns); in the emulator, its copies.
    pub write_ns: u64,
    /// Nanoseconds the emulator spent running launches and allocating and zeroing its memory
    /// (the emulator only: a GPU does that work beside the host): what of the phases' wall time
    /// was the device's and not the host's own work.
    pub emulated_ns: u64,
}

impl std::ops::Sub for DeviceCounters {
    type Output = DeviceCounters;
    fn sub(self, o: DeviceCounters) -> DeviceCounters {
        DeviceCounters {
            launches: self.launches - o.launches,
            syncs: self.syncs - o.syncs,
            allocations: self.allocations - o.allocations,
            uploads: self.uploads - o.uploads,
            bytes_up: self.bytes_up - o.bytes_up,
            bytes_down: self.bytes_down - o.bytes_down,
            warp_span: self.warp_span - o.warp_span,
            warp_span_strided: self.warp_span_strided - o.warp_span_strided,
            warp_span_bound: self.warp_span_bound - o.warp_span_bound,
            warp_mean: self.warp_mean - o.warp_mean,
            read_ns: self.read_ns - o.read_ns,
            launch_ns: self.launch_ns - o.launch_ns,
            write_ns: self.write_ns - o.write_ns,
            emulated_ns: self.emulated_ns - o.emulated_ns,
        }
    }
}

impl std::ops::AddAssign for DeviceCounters {
    fn add_assign(&mut self, o: DeviceCounters) {
        self.launches += o.launches;
        self.syncs += o.syncs;
        self.allocations += o.allocations;
        self.uploads += o.uploads;
        self.bytes_up += o.bytes_up;
        self.bytes_down += o.bytes_down;
        self.warp_span += o.warp_span;
        self.warp_span_strided += o.warp_span_strided;
        self.warp_span_bound += o.warp_span_bound;
        self.warp_mean += o.warp_mean;
        self.read_ns += o.read_ns;
        self.launch_ns += o.launch_ns;
        self.write_ns += o.write_ns;
        self.emulated_ns += o.emulated_ns;
    }
}

/// The counters a device keeps, per calling thread: a device shared by a server's threads
/// (a batch, queries alone) counts each user's calls apart, so the difference of two snapshots on
/// one thread is that thread's calls to this device alone, whatever the others did meanwhile.
/// (A rayon worker that runs another user's job of the same device while it waits would count
/// that job's calls too; the device's users call it from their own threads.)
#[derive(Debug)]
pub struct Counting {
    /// Which device: a thread's calls to other devices are not this one's.
    id: u64,
}

/// The entry of device `id` in a thread's per-device list, made with `new` when missing.
fn entry_for<T>(list: &mut Vec<(u64, T)>, id: u64, new: impl FnOnce() -> T) -> &mut T {
    let at = match list.iter().position(|(d, _)| *d == id) {
        Some(at) => at,
        None => {
            list.push((id, new()));
            list.len() - 1
        }
    };
    &mut list[at].1
}

/// A number no other device's state in this process has: what a thread's per-device records
/// (counters, lanes, faults seen, current streams) are keyed by.
pub(crate) fn next_device_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Default for Counting {
    fn default() -> Self {
        Counting {
            id: next_device_id(),
        }
    }
}

thread_local! {
    /// Per device this thread called, its calls.
    static CALLS: std::cell::RefCell<Vec<(u64, DeviceCounters)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The time the calling thread spent waiting for devices' reads, over every device it called.
pub(crate) fn thread_read_wait() -> std::time::Duration {
    let ns = CALLS.with(|calls| calls.borrow().iter().map(|(_, c)| c.read_ns).sum::<u64>());
    std::time::Duration::from_nanos(ns)
}

impl Counting {
    fn add(&self, f: impl FnOnce(&mut DeviceCounters)) {
        CALLS.with(|calls| {
            f(entry_for(
                &mut calls.borrow_mut(),
                self.id,
                Default::default,
            ))
        });
    }
    pub fn launch(&self) {
        self.add(|c| c.launches += 1);
    }
    pub fn alloc(&self) {
        self.add(|c| c.allocations += 1);
    }
    pub fn up(&self, bytes: usize) {
        self.add(|c| {
            c.uploads += 1;
            c.bytes_up += bytes as u64;
        });
    }
    pub fn down(&self, bytes: usize) {
        self.add(|c| {
            c.syncs += 1;
            c.bytes_down += bytes as u64;
        });
    }
    /// One warp-join launch replayed as the kernels take work and with strided warps.
    pub fn warp_balance(&self, now: &balance::Replay, strided: &balance::Replay) {
        self.add(|c| {
            c.warp_span += now.span;
            c.warp_mean += now.steps.div_ceil(now.working.max(1));
            c.warp_span_strided += strided.span;
            c.warp_span_bound += now.bound;
        });
    }
    /// Host time of one read, and of queueing one launch.
    pub fn read_took(&self, t: std::time::Duration) {
        self.add(|c| c.read_ns += t.as_nanos() as u64);
    }
    pub fn launch_took(&self, t: std::time::Duration) {
        self.add(|c| c.launch_ns += t.as_nanos() as u64);
    }
    pub fn write_took(&self, t: std::time::Duration) {
        self.add(|c| c.write_ns += t.as_nanos() as u64);
    }
    /// The emulator's time running one launch.
    pub fn emulated(&self, t: std::time::Duration) {
        self.add(|c| c.emulated_ns += t.as_nanos() as u64);
    }
    /// The calling thread's calls to this device so far.
    pub fn snapshot(&self) -> DeviceCounters {
        CALLS.with(|calls| {
            let calls = calls.borrow();
            let mine = calls.iter().find(|(id, _)| *id == self.id);
            mine.map(|&(_, c)| c).unwrap_or_default()
        })
    }
}

/// A device: buffers of bytes, copies, launches, all queued in one stream in order. Only reads
/// wait for the device.
pub trait Device: Sync {
    type Buffer: Send + Sync;

    /// What the device is, for messages (`NVIDIA H100 80GB HBM3`, `host emulator`).
    fn describe(&self) -> String;
    /// Free device memory in bytes.
    fn free_memory(&self) -> Result<u64, DeviceError>;
    /// Whether the graph must go to host-mapped memory whatever its size (a test setting of the
    /// emulator: a device never says so).
    fn force_mapped(&self) -> bool {
        false
    }
    /// A zeroed buffer of at least `bytes` bytes, 16-byte aligned.
    fn alloc_zeroed(&self, bytes: usize) -> Result<Self::Buffer, DeviceError>;
    /// Host memory the device reads directly (pinned and mapped): the paper's "CPU memory" mode for
    /// a graph larger than device memory.
    fn map_host_bytes(&self, bytes: &[u8]) -> Result<Self::Buffer, DeviceError>;
    /// Queues a copy of `bytes` into `buf` at byte `offset`.
    fn write_bytes(
        &self,
        buf: &Self::Buffer,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), DeviceError>;
    /// Queues zeroing `len` bytes of `buf` at `offset`.
    fn zero_bytes(&self, buf: &Self::Buffer, offset: usize, len: usize) -> Result<(), DeviceError>;
    /// Waits for everything queued, then copies `out.len()` bytes of `buf` at `offset` into `out`.
    fn read_bytes(
        &self,
        buf: &Self::Buffer,
        offset: usize,
        out: &mut [u8],
    ) -> Result<(), DeviceError>;
    /// The buffer's device address.
    fn address(&self, buf: &Self::Buffer) -> u64;
    /// Queues `launch` over `items` work-items.
    fn launch(&self, launch: &Launch, items: u64) -> Result<(), DeviceError>;
    /// Calls made so far.
    fn counters(&self) -> DeviceCounters;
    /// A user (a query alone, a batch) starts on the calling thread: its calls until
    /// [`Device::user_ends`] are its own (on CUDA with `GPSENSE_GPU_STREAMS=1`, on a stream of its
    /// own, so that users' work overlaps instead of queueing behind each other's), and a fault
    /// raised before is not its (the device keeps the faults its waits saw). Every call of a user
    /// comes from that thread.
    fn user_starts(&self) {}
    /// The user that started last on the calling thread ends, once the work it queued is done
    /// (what it leaves, its buffers, may then go to another user).
    fn user_ends(&self) {}
    /// Gives `buf` back while the calling thread's user may still have work queued on it (a
    /// buffer that grows): freed after that work.
    fn release(&self, buf: Self::Buffer) {
        drop(buf);
    }
}

/// The devices with a user running on the calling thread ([`Device::user_starts`]), for the
/// emulator's check that no call comes from elsewhere: on a GPU it would go to no user's stream.
pub(crate) struct Lanes {
    id: u64,
    /// Whether a user ever started: before, the calls are the graph's upload.
    started: std::sync::atomic::AtomicBool,
}

thread_local! {
    static ACTIVE: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Default for Lanes {
    fn default() -> Self {
        Lanes {
            id: next_device_id(),
            started: Default::default(),
        }
    }
}

impl std::fmt::Debug for Lanes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lanes").field("id", &self.id).finish()
    }
}

impl Lanes {
    pub(crate) fn start(&self) {
        self.started
            .store(true, std::sync::atomic::Ordering::Relaxed);
        ACTIVE.with(|a| a.borrow_mut().push(self.id));
    }

    pub(crate) fn end(&self) {
        ACTIVE.with(|a| {
            let mut a = a.borrow_mut();
            if let Some(at) = a.iter().rposition(|&id| id == self.id) {
                a.remove(at);
            }
        });
    }

    /// An error for a call from a thread without a user of this device, once users run.
    pub(crate) fn check(&self, call: &str) -> Result<(), DeviceError> {
        if !self.started.load(std::sync::atomic::Ordering::Relaxed)
            || ACTIVE.with(|a| a.borrow().contains(&self.id))
        {
            return Ok(());
        }
        Err(DeviceError::Race(format!(
            "{call} from a thread without a user of the device: on a GPU it would go to no \
             user's stream (a bug in gpsense)"
        )))
    }
}

/// Faults the kernels raise on a device that several users share (a server's queries alone and
/// its batches): the kernels' one flag says that a kernel failed, not whose, and the first user
/// to read after it would have taken the error and cleared the flag, the faulty query answering
/// on as if complete. Every user running when a fault is seen gets the error instead.
pub(crate) struct Faults {
    /// Which device (a thread's marks for other devices are not this one's).
    id: u64,
    /// Faults seen so far.
    seen: std::sync::atomic::AtomicU64,
}

thread_local! {
    /// Per device, the faults seen when this thread's user started or last got one.
    static KNOWN: std::cell::RefCell<Vec<(u64, u64)>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            id: next_device_id(),
            seen: Default::default(),
        }
    }
}

impl Faults {
    /// The calling thread's user starts: the faults seen so far are not its.
    pub(crate) fn user_starts(&self) {
        let now = self.seen.load(std::sync::atomic::Ordering::Acquire);
        self.mark(|known| *known = now);
    }

    /// After a wait, with whether the flag was raised (and cleared): whether a fault was seen
    /// since the calling thread's user started (or last got one), by it or another user.
    pub(crate) fn after_wait(&self, raised: bool) -> bool {
        // Marked before the count moves: a first wait that raised it sees it.
        self.mark(|_| ());
        if raised {
            self.seen.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        }
        let now = self.seen.load(std::sync::atomic::Ordering::Acquire);
        self.mark(|known| std::mem::replace(known, now) != now)
    }

    /// `f` on the calling thread's mark for this device (the faults seen then; a thread without
    /// one is marked now: a user that never said it started counts from its first wait).
    fn mark<R>(&self, f: impl FnOnce(&mut u64) -> R) -> R {
        let now = self.seen.load(std::sync::atomic::Ordering::Acquire);
        KNOWN.with(|known| f(entry_for(&mut known.borrow_mut(), self.id, || now)))
    }
}

/// A typed device buffer of `len` elements.
pub struct Buf<D: Device, T: Pod> {
    raw: D::Buffer,
    len: usize,
    marker: PhantomData<T>,
}

impl<D: Device, T: Pod> Buf<D, T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The kernel-side description of elements `start..end`.
    pub fn part(&self, dev: &D, start: usize, end: usize) -> DevSlice {
        assert!(start <= end && end <= self.len, "buffer part out of range");
        DevSlice {
            ptr: dev.address(&self.raw) + (start * size_of::<T>()) as u64,
            len: (end - start) as u64,
        }
    }

    pub fn slice(&self, dev: &D) -> DevSlice {
        self.part(dev, 0, self.len)
    }
}

pub fn as_bytes<T: Pod>(data: &[T]) -> &[u8] {
    // Sound for Pod: no padding, no pointers.
    unsafe { std::slice::from_raw_parts(data.as_ptr() as *const u8, std::mem::size_of_val(data)) }
}

pub fn upload<D: Device, T: Pod>(dev: &D, data: &[T]) -> Result<Buf<D, T>, DeviceError> {
    let bytes = as_bytes(data);
    let raw = dev.alloc_zeroed(bytes.len())?;
    dev.write_bytes(&raw, 0, bytes)?;
    Ok(Buf {
        raw,
        len: data.len(),
        marker: PhantomData,
    })
}

pub fn map_host<D: Device, T: Pod>(dev: &D, data: &[T]) -> Result<Buf<D, T>, DeviceError> {
    Ok(Buf {
        raw: dev.map_host_bytes(as_bytes(data))?,
        len: data.len(),
        marker: PhantomData,
    })
}

/// Reads `len` elements of type `T` at byte `offset` of `buf` (one synchronisation).
pub fn read<D: Device, T: Pod + Default>(
    dev: &D,
    buf: &D::Buffer,
    offset: usize,
    len: usize,
) -> Result<Vec<T>, DeviceError> {
    let mut out = vec![T::default(); len];
    // Sound for Pod: every bit pattern is valid.
    let bytes = unsafe {
        std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut u8, std::mem::size_of_val(&out[..]))
    };
    dev.read_bytes(buf, offset, bytes)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fault seen by one user's wait reaches every user running then, once each, and not a user
    /// that starts after it.
    #[test]
    fn a_fault_reaches_every_user_running_when_it_was_seen() {
        let faults = Faults::default();
        let other = std::sync::Barrier::new(2);
        let seen = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            let t = s.spawn(|| {
                faults.user_starts();
                other.wait();
                seen.wait();
                // Not its flag: another user's wait cleared it, and it still gets the error.
                let got = faults.after_wait(false);
                (got, faults.after_wait(false))
            });
            faults.user_starts();
            other.wait();
            assert!(faults.after_wait(true), "the user whose wait saw the flag");
            seen.wait();
            assert_eq!(
                t.join().unwrap(),
                (true, false),
                "the other running user, once"
            );
        });
        assert!(!faults.after_wait(false), "told once");
        std::thread::scope(|s| {
            s.spawn(|| {
                faults.user_starts();
                assert!(!faults.after_wait(false), "a user started after it");
            });
        });
        // A thread's first wait that raises the flag gets it.
        std::thread::scope(|s| {
            s.spawn(|| assert!(faults.after_wait(true)));
        });
    }
}
