//! Software prefetch for the CPU engine's passes over a list of data nodes: each node's test reads
//! a few scattered cache lines (its label, CSR offsets, neighbour-label set), and a query's first
//! run finds most of them outside the core's caches. Asking for node `i + AHEAD`'s lines while
//! node `i` is tested overlaps those misses instead of taking them one after another.

/// How many nodes ahead a pass asks for.
pub const AHEAD: usize = 8;

/// A hint that `*p` will be read soon; no effect on the program's meaning (a prefetch never
/// faults), none at all off x86-64.
#[inline(always)]
pub fn read<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing architecturally and cannot fault; `p` is a valid reference.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((p as *const T).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// What a node test reads of a node in the graph: its label, its CSR offsets per direction (a
/// symmetric graph's filters read only the outgoing ones, and a line asked for in vain costs
/// bandwidth the other misses need).
#[derive(Clone, Copy, Debug)]
pub struct NodeReads {
    pub label: bool,
    pub out: bool,
    pub inc: bool,
}

/// Asks for what a node test reads of `v` in the graph (`reads`).
#[inline]
pub fn node(g: &gpsense_kernels::GraphView, v: u32, reads: NodeReads) {
    let v = v as usize;
    if reads.label {
        if let Some(l) = g.node_labels.get(v) {
            read(l);
        }
    }
    if reads.out {
        if let Some(o) = g.out.offsets.get(v) {
            read(o);
        }
    }
    if reads.inc {
        if let Some(o) = g.inc.offsets.get(v) {
            read(o);
        }
    }
}

/// `pool.retain(keep)`, asking for node `i + AHEAD`'s lines (`ask`) while node `i` is judged.
#[inline]
pub fn retain(pool: &mut Vec<u32>, ask: impl Fn(u32), keep: impl FnMut(u32) -> bool) {
    retain_staged(pool, |_| {}, ask, keep);
}

/// [`retain`] for a test that reads what `near` asks for at an address only known once what `far`
/// asks for has arrived (a node's adjacency list, after its CSR offsets): `far` runs `2 * AHEAD`
/// nodes ahead, `near` `AHEAD`.
#[inline]
pub fn retain_staged(
    pool: &mut Vec<u32>,
    far: impl Fn(u32),
    near: impl Fn(u32),
    mut keep: impl FnMut(u32) -> bool,
) {
    // The first nodes are asked for at once: most pools are shorter than `AHEAD` (HPRD's: 7 nodes
    // on average), and their misses then overlap too.
    for &v in pool.iter().take(2 * AHEAD) {
        far(v);
    }
    for &v in pool.iter().take(AHEAD) {
        near(v);
    }
    let mut kept = 0;
    for i in 0..pool.len() {
        if let Some(&ahead) = pool.get(i + 2 * AHEAD) {
            far(ahead);
        }
        if let Some(&ahead) = pool.get(i + AHEAD) {
            near(ahead);
        }
        let v = pool[i];
        if keep(v) {
            pool[kept] = v;
            kept += 1;
        }
    }
    pool.truncate(kept);
}

/// Asks for `v`'s CSR offsets in `adj`.
#[inline(always)]
pub fn offsets(adj: &gpsense_kernels::Adjacency, v: u32) {
    if let Some(o) = adj.offsets.get(v as usize) {
        read(o);
    }
}

/// Asks for the start of `v`'s list in `adj` (its offsets read, so best once they have arrived).
#[inline(always)]
pub fn list(adj: &gpsense_kernels::Adjacency, v: u32) {
    if let Some(t) = (adj.offsets.get(v as usize)).and_then(|&o| adj.targets.get(o as usize)) {
        read(t);
    }
}

/// An array whose cache lines [`read_lines`] reads: a slice or vector of plain values.
pub trait Lines {
    fn bytes(&self) -> usize;
    /// Reads one value per cache line, front to back (a stream the hardware prefetcher follows).
    fn touch(&self);
}

impl<T: Copy> Lines for &[T] {
    fn bytes(&self) -> usize {
        std::mem::size_of_val(*self)
    }

    fn touch(&self) {
        let step = (64 / std::mem::size_of::<T>().max(1)).max(1);
        for &x in self.iter().step_by(step) {
            std::hint::black_box(x);
        }
    }
}

impl<T: Copy> Lines for Vec<T> {
    fn bytes(&self) -> usize {
        self.as_slice().bytes()
    }

    fn touch(&self) {
        self.as_slice().touch();
    }
}

/// Reads `arrays` (hottest first) into the caches: the hottest that fit in `budget` bytes, coldest
/// first, so that the hottest are read last and stay in the core's own cache.
pub fn read_lines(arrays: &[&dyn Lines], budget: usize) {
    let mut left = budget;
    let mut chosen = Vec::with_capacity(arrays.len());
    for &a in arrays {
        if a.bytes() <= left {
            left -= a.bytes();
            chosen.push(a);
        }
    }
    for a in chosen.iter().rev() {
        a.touch();
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    /// An array of `bytes` that logs its name when read.
    struct Logged<'a> {
        name: &'static str,
        bytes: usize,
        log: &'a RefCell<Vec<&'static str>>,
    }

    impl Lines for Logged<'_> {
        fn bytes(&self) -> usize {
            self.bytes
        }

        fn touch(&self) {
            self.log.borrow_mut().push(self.name);
        }
    }

    #[test]
    fn the_hottest_arrays_that_fit_are_read_coldest_first() {
        let log = RefCell::new(Vec::new());
        let a = |name, bytes| Logged {
            name,
            bytes,
            log: &log,
        };
        let (hot, big, warm, cold) = (a("hot", 40), a("big", 100), a("warm", 30), a("cold", 31));
        read_lines(&[&hot, &big, &warm, &cold], 100);
        // "big" does not fit after "hot"; "cold" does not fit after "warm".
        assert_eq!(*log.borrow(), ["warm", "hot"]);
    }

    #[test]
    fn a_slice_is_read_once_per_cache_line() {
        let v: Vec<u32> = (0..1000).collect();
        assert_eq!(v.bytes(), 4000);
        assert_eq!((&v[..10]).bytes(), 40);
        // Reads only: nothing to observe but that it returns.
        v.touch();
        (&[0u8; 0][..]).touch();
    }
}
