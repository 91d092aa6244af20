//! Warp-level cooperation, behind one small trait so that warp-centric kernel bodies are written
//! once: `DeviceWarp` (the nvptx build) maps each call to a PTX warp primitive (`vote.sync.ballot`, `shfl.sync`), and
//! [`HostWarp`] runs the same call as a plain loop over the lanes, so the host emulator and the tests
//! execute the very body the GPU runs.
//!
//! A body using a [`Warp`] is warp-uniform code: every value outside the closures is the same in all
//! lanes (on the GPU, all 32 threads compute it alike; on the host it is computed once). Per-lane
//! work happens only inside the closures, which get the lane index and may not carry state from one
//! lane to the next: they return a value to the primitive or write device memory. All 32 lanes reach
//! every primitive (uniform control flow), which the `.sync` forms with a full mask require.

/// Lanes per warp.
pub const LANES: u32 = 32;

/// A clock in nanoseconds: the GPU's `%globaltimer`; on the host, a hook the emulator installs
/// (0 without one).
pub mod clock {
    #[cfg(not(target_arch = "nvptx64"))]
    use core::sync::atomic::{AtomicUsize, Ordering};

    #[cfg(not(target_arch = "nvptx64"))]
    static HOOK: AtomicUsize = AtomicUsize::new(0);

    /// Installs the host's clock.
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn install(now: fn() -> u64) {
        HOOK.store(now as usize, Ordering::Release);
    }

    #[inline]
    pub fn now_ns() -> u64 {
        #[cfg(target_arch = "nvptx64")]
        {
            let t: u64;
            unsafe { core::arch::asm!("mov.u64 {t}, %globaltimer;", t = out(reg64) t) };
            t
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let h = HOOK.load(Ordering::Acquire);
            if h == 0 {
                return 0;
            }
            // Sound: only `install` stores here, and it stores a `fn() -> u64`.
            let now = unsafe { core::mem::transmute::<usize, fn() -> u64>(h) };
            now()
        }
    }
}

/// The warp primitives a kernel body may use.
pub trait Warp {
    /// The mask of lanes `l` for which `pred(l)` holds.
    fn ballot(&self, pred: impl Fn(u32) -> bool) -> u32;
    /// Every lane `l` runs `f(l)`.
    fn each(&self, f: impl Fn(u32));
    /// Lane 0 runs `f`; every lane gets its result.
    fn leader(&self, f: impl FnOnce() -> u64) -> u64;
}

/// Lanes below `lane` in a ballot mask: a lane's rank among the lanes whose bit is set.
#[inline]
pub fn rank_below(mask: u32, lane: u32) -> u32 {
    (mask & ((1u32 << lane) - 1)).count_ones()
}

/// The host's warp: each primitive is a loop over the 32 lanes. `on_lane` is told which lane runs
/// before each per-lane call that may write memory (the emulator's write-ownership check keys
/// writes by thread).
pub struct HostWarp<'a> {
    pub on_lane: &'a dyn Fn(u32),
}

impl Warp for HostWarp<'_> {
    #[inline]
    fn ballot(&self, pred: impl Fn(u32) -> bool) -> u32 {
        let mut mask = 0;
        for l in 0..LANES {
            if pred(l) {
                mask |= 1 << l;
            }
        }
        mask
    }

    #[inline]
    fn each(&self, f: impl Fn(u32)) {
        for l in 0..LANES {
            (self.on_lane)(l);
            f(l);
        }
    }

    #[inline]
    fn leader(&self, f: impl FnOnce() -> u64) -> u64 {
        (self.on_lane)(0);
        f()
    }
}

/// A GPU warp, seen from one of its threads.
#[cfg(target_arch = "nvptx64")]
pub struct DeviceWarp {
    pub lane: u32,
}

#[cfg(target_arch = "nvptx64")]
impl Warp for DeviceWarp {
    #[inline]
    fn ballot(&self, pred: impl Fn(u32) -> bool) -> u32 {
        let p = pred(self.lane) as u32;
        let mask: u32;
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred %p; setp.ne.u32 %p, {p}, 0; vote.sync.ballot.b32 {m}, %p, 0xffffffff; }}",
                p = in(reg32) p,
                m = out(reg32) mask,
            );
        }
        mask
    }

    #[inline]
    fn each(&self, f: impl Fn(u32)) {
        f(self.lane)
    }

    #[inline]
    fn leader(&self, f: impl FnOnce() -> u64) -> u64 {
        let v = if self.lane == 0 { f() } else { 0 };
        let (lo, hi) = (v as u32, (v >> 32) as u32);
        let (blo, bhi): (u32, u32);
        unsafe {
            core::arch::asm!(
                "shfl.sync.idx.b32 {a}, {x}, 0, 0x1f, 0xffffffff;",
                "shfl.sync.idx.b32 {b}, {y}, 0, 0x1f, 0xffffffff;",
                x = in(reg32) lo,
                y = in(reg32) hi,
                a = out(reg32) blo,
                b = out(reg32) bhi,
            );
        }
        (bhi as u64) << 32 | blo as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_warp_primitives_are_loops_over_lanes() {
        let seen = core::cell::Cell::new(0u64);
        let w = HostWarp {
            on_lane: &|l| seen.set(seen.get() | 1 << l),
        };
        assert_eq!(w.ballot(|l| l % 2 == 1), 0xAAAA_AAAA);
        let sum = core::cell::Cell::new(0);
        w.each(|l| sum.set(sum.get() + l));
        assert_eq!(sum.get(), (0..32).sum::<u32>());
        assert_eq!(seen.get(), u32::MAX as u64);
        assert_eq!(w.leader(|| 7), 7);
        assert_eq!(rank_below(0b1011, 3), 2);
        assert_eq!(rank_below(u32::MAX, 0), 0);
        assert_eq!(rank_below(u32::MAX, 31), 31);
    }
}
