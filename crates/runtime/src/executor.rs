//! The CPU executor: runs a kernel body over its work-items, in parallel with rayon when there are
//! enough of them to pay for the threads, sequentially otherwise (small queries stay in microseconds).

use rayon::prelude::*;

/// Below this many work-items a kernel runs on the calling thread. Work-items that touch adjacency
/// lists (a candidate, a partial match) are worth a thread sooner than those that touch one bitset
/// word.
const PARALLEL_FROM: usize = 2048;
const PARALLEL_FROM_LIGHT: usize = 1 << 16;

#[derive(Clone, Copy, Debug)]
pub struct Executor {
    pub parallel: bool,
}

impl Executor {
    fn go_parallel(&self, items: usize) -> bool {
        self.parallel && items >= PARALLEL_FROM
    }

    /// Whether `items` work-items touching adjacency lists run in parallel.
    pub fn is_parallel_for(&self, items: usize) -> bool {
        self.go_parallel(items)
    }

    /// [`Executor::map`] for cheap bodies (one bitset word each).
    pub fn map_light<T: Send>(&self, out: &mut [T], body: impl Fn(usize) -> T + Sync + Send) {
        if self.parallel && out.len() >= PARALLEL_FROM_LIGHT {
            out.par_iter_mut()
                .enumerate()
                .for_each(|(i, o)| *o = body(i));
        } else {
            out.iter_mut().enumerate().for_each(|(i, o)| *o = body(i));
        }
    }

    /// `out[i] = body(i)` for every work-item `i`.
    pub fn map<T: Send>(&self, out: &mut [T], body: impl Fn(usize) -> T + Sync + Send) {
        if self.go_parallel(out.len()) {
            out.par_iter_mut()
                .enumerate()
                .for_each(|(i, o)| *o = body(i));
        } else {
            out.iter_mut().enumerate().for_each(|(i, o)| *o = body(i));
        }
    }

    /// `body(i)` for every work-item `0..items` (bodies that write through atomics).
    pub fn for_each(&self, items: usize, body: impl Fn(usize) + Sync + Send) {
        if self.go_parallel(items) {
            (0..items).into_par_iter().for_each(body);
        } else {
            (0..items).for_each(body);
        }
    }

    /// Two-step output, write step: `body(i, out_i)` where `out_i` is work-item `i`'s region of `out`,
    /// `offsets[i] * stride .. offsets[i + 1] * stride` (`offsets` has `items + 1` entries, from a scan).
    pub fn scatter<T: Send>(
        &self,
        out: &mut [T],
        offsets: &[u64],
        stride: usize,
        body: impl Fn(usize, &mut [T]) + Sync + Send,
    ) {
        let items = offsets.len() - 1;
        let mut regions: Vec<(usize, &mut [T])> = Vec::with_capacity(items);
        let mut rest = out;
        for i in 0..items {
            let len = (offsets[i + 1] - offsets[i]) as usize * stride;
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
            regions.push((i, head));
            rest = tail;
        }
        if self.go_parallel(items) {
            regions
                .into_par_iter()
                .for_each(|(i, region)| body(i, region));
        } else {
            regions.into_iter().for_each(|(i, region)| body(i, region));
        }
    }
}

impl Executor {
    /// [`Executor::scatter`] into two parallel arrays (stride 1), e.g. targets and labels.
    pub fn scatter2<A: Send, B: Send>(
        &self,
        a: &mut [A],
        b: &mut [B],
        offsets: &[u64],
        body: impl Fn(usize, &mut [A], &mut [B]) + Sync + Send,
    ) {
        let items = offsets.len() - 1;
        let mut regions: Vec<(usize, &mut [A], &mut [B])> = Vec::with_capacity(items);
        let (mut rest_a, mut rest_b) = (a, b);
        for i in 0..items {
            let len = (offsets[i + 1] - offsets[i]) as usize;
            let (ha, ta) = std::mem::take(&mut rest_a).split_at_mut(len);
            let (hb, tb) = std::mem::take(&mut rest_b).split_at_mut(len);
            regions.push((i, ha, hb));
            rest_a = ta;
            rest_b = tb;
        }
        if self.go_parallel(items) {
            regions
                .into_par_iter()
                .for_each(|(i, ra, rb)| body(i, ra, rb));
        } else {
            regions.into_iter().for_each(|(i, ra, rb)| body(i, ra, rb));
        }
    }
}

/// Exclusive scan of per-item counts into `items + 1` offsets; the last is the total.
pub fn offsets_of(counts: &[u32]) -> Vec<u64> {
    let mut offsets = vec![0u64; counts.len() + 1];
    let total = gpsense_kernels::scan::exclusive_scan_u64(counts, &mut offsets[..counts.len()]);
    offsets[counts.len()] = total;
    offsets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scatter_gives_each_item_its_region() {
        for parallel in [false, true] {
            let ex = Executor { parallel };
            let counts: Vec<u32> = (0..5000).map(|i| (i % 3) as u32).collect();
            let offsets = offsets_of(&counts);
            let mut out = vec![0u32; *offsets.last().unwrap() as usize * 2];
            ex.scatter(&mut out, &offsets, 2, |i, region| {
                region.iter_mut().for_each(|x| *x = i as u32)
            });
            let expected: Vec<u32> = (0..5000u32)
                .flat_map(|i| std::iter::repeat_n(i, (i % 3) as usize * 2))
                .collect();
            assert_eq!(out, expected);
        }
    }
}
