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
