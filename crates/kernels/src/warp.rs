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

    /// Whether `budget_ns` has passed since `clock[0]` (set to now by the first caller to find it
    /// 0); a caller that finds it passed sets `clock[1]` to 1. `u64::MAX`: no limit.
    #[inline]
    pub fn expired(clock: &[core::sync::atomic::AtomicU64], budget_ns: u64) -> bool {
        use core::sync::atomic::Ordering::Relaxed;
        if budget_ns == u64::MAX || clock.len() < 2 {
            return false;
        }
        let now = now_ns();
        let mut start = clock[0].load(Relaxed);
        if start == 0 {
            start = match clock[0].compare_exchange(0, now, Relaxed, Relaxed) {
                Ok(_) => now,
                Err(t) => t,
            };
        }
        if now.saturating_sub(start) <= budget_ns {
            return false;
        }
        if clock[1].load(Relaxed) == 0 {
            clock[1].store(1, Relaxed);
        }
        true
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
    /// The two-step output scheme within a warp: lane `l` counts `count(l)` items, lane 0 claims
    /// room for the warp's total (`claim(total)`, not called when it is 0; it returns the first
    /// position), and lane `l` runs `write(l, first)` with `first` its own first position: the
    /// claimed one plus the counts of the lanes below it (an exclusive scan). Returns the claimed
    /// position and the total, in every lane.
    fn claim(
        &self,
        count: impl Fn(u32) -> u64,
        claim: impl FnOnce(u64) -> u64,
        write: impl Fn(u32, u64),
    ) -> (u64, u64);
    /// Waits for every lane, and makes each lane's writes to device memory before it visible to
    /// every lane after it (`bar.warp.sync`): a lane may then read what another lane wrote in an
    /// [`Warp::each`] before. Nothing on the host, whose lanes run one after another.
    fn sync(&self);
    /// The warp starts work-item `item` of job `job` (a batch's query; 0 in a launch of one).
    /// Nothing on a GPU; the emulator times the items with it, to model the launch's schedule.
    #[inline]
    fn item(&self, _job: usize, _item: u64) {}
}

/// Lanes below `lane` in a ballot mask: a lane's rank among the lanes whose bit is set.
#[inline]
pub fn rank_below(mask: u32, lane: u32) -> u32 {
    (mask & ((1u32 << lane) - 1)).count_ones()
}

/// The host's warp: each primitive is a loop over the 32 lanes. `on_lane` is told which lane runs
/// before each per-lane call that may write memory (the emulator's write-ownership check keys
/// writes by thread); `on_item` is told each work-item the warp starts ([`Warp::item`]).
pub struct HostWarp<'a> {
    pub on_lane: &'a dyn Fn(u32),
    pub on_item: &'a dyn Fn(usize, u64),
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

    #[inline]
    fn sync(&self) {}

    fn claim(
        &self,
        count: impl Fn(u32) -> u64,
        claim: impl FnOnce(u64) -> u64,
        write: impl Fn(u32, u64),
    ) -> (u64, u64) {
        let mut counts = [0u64; LANES as usize];
        for (l, c) in counts.iter_mut().enumerate() {
            *c = count(l as u32);
        }
        let total = counts.iter().sum();
        if total == 0 {
            return (0, 0);
        }
        let at = self.leader(|| claim(total));
        let mut first = at;
        for (l, c) in counts.iter().enumerate() {
            (self.on_lane)(l as u32);
            write(l as u32, first);
            first += c;
        }
        (at, total)
    }

    #[inline]
    fn item(&self, job: usize, item: u64) {
        (self.on_item)(job, item)
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

    #[inline]
    fn sync(&self) {
        unsafe { core::arch::asm!("bar.warp.sync 0xffffffff;") };
    }

    #[inline]
    fn claim(
        &self,
        count: impl Fn(u32) -> u64,
        claim: impl FnOnce(u64) -> u64,
        write: impl Fn(u32, u64),
    ) -> (u64, u64) {
        let own = count(self.lane);
        // Inclusive scan over the lanes: five `shfl.sync.up` steps.
        let mut sum = own;
        let mut d = 1;
        while d < LANES {
            let up = shuffle_up(sum, d);
            if self.lane >= d {
                sum += up;
            }
            d <<= 1;
        }
        let total = shuffle_idx(sum, LANES - 1);
        if total == 0 {
            return (0, 0);
        }
        let at = self.leader(|| claim(total));
        write(self.lane, at + sum - own);
        (at, total)
    }
}

/// The value of lane `lane - d` (own value below `d`), a `u64` as two `shfl.sync.up`.
#[cfg(target_arch = "nvptx64")]
#[inline]
fn shuffle_up(v: u64, d: u32) -> u64 {
    let (lo, hi) = (v as u32, (v >> 32) as u32);
    let (a, b): (u32, u32);
    unsafe {
        core::arch::asm!(
            "shfl.sync.up.b32 {a}, {x}, {d}, 0, 0xffffffff;",
            "shfl.sync.up.b32 {b}, {y}, {d}, 0, 0xffffffff;",
            x = in(reg32) lo,
            y = in(reg32) hi,
            d = in(reg32) d,
            a = out(reg32) a,
            b = out(reg32) b,
        );
    }
    (b as u64) << 32 | a as u64
}

/// The value of lane `src`, a `u64` as two `shfl.sync.idx`.
#[cfg(target_arch = "nvptx64")]
#[inline]
fn shuffle_idx(v: u64, src: u32) -> u64 {
    let (lo, hi) = (v as u32, (v >> 32) as u32);
    let (a, b): (u32, u32);
    unsafe {
        core::arch::asm!(
            "shfl.sync.idx.b32 {a}, {x}, {s}, 0x1f, 0xffffffff;",
            "shfl.sync.idx.b32 {b}, {y}, {s}, 0x1f, 0xffffffff;",
            x = in(reg32) lo,
            y = in(reg32) hi,
            s = in(reg32) src,
            a = out(reg32) a,
            b = out(reg32) b,
        );
    }
    (b as u64) << 32 | a as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_warp_primitives_are_loops_over_lanes() {
        let seen = core::cell::Cell::new(0u64);
        let w = HostWarp {
            on_lane: &|l| seen.set(seen.get() | 1 << l),
            on_item: &|_, _| {},
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

    #[test]
    fn a_warp_claim_gives_each_lane_the_claimed_position_plus_the_counts_below_it() {
        let w = HostWarp {
            on_lane: &|_| {},
            on_item: &|_, _| {},
        };
        let firsts: [core::cell::Cell<u64>; 32] = Default::default();
        let claimed = core::cell::Cell::new(0);
        let (at, total) = w.claim(
            |l| u64::from(l % 3),
            |t| {
                claimed.set(t);
                100
            },
            |l, first| firsts[l as usize].set(first),
        );
        let expected_total: u64 = (0..32).map(|l| l % 3).sum();
        assert_eq!(
            (at, total, claimed.get()),
            (100, expected_total, expected_total)
        );
        for l in 0..32u32 {
            let below: u64 = (0..l).map(|k| u64::from(k % 3)).sum();
            assert_eq!(firsts[l as usize].get(), 100 + below, "lane {l}");
        }
        // Nothing counted: nothing claimed, nothing written.
        let (at, total) = w.claim(|_| 0, |_| panic!("claimed 0"), |_, _| panic!("wrote"));
        assert_eq!((at, total), (0, 0));
    }
}
