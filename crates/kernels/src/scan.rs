//! Stream compaction (the paper's `collect`): a per-word count, an exclusive prefix scan of the
//! counts, then a per-word write of the set bits at the scanned offset. Bits come out in ascending
//! order, so candidate arrays are sorted.

/// Count kernel: the number of candidates in one bitset word.
#[inline]
pub fn count_word(word: u32) -> u32 {
    word.count_ones()
}

/// Write kernel: the data nodes of word `w` (bits set in `word`) into `out`, which holds exactly
/// `word.count_ones()` slots starting at the word's scanned offset.
#[inline]
pub fn write_word(w: usize, mut word: u32, out: &mut [u32]) {
    let base = (w as u32) << 5;
    let mut i = 0;
    while word != 0 {
        out[i] = base + word.trailing_zeros();
        word &= word - 1;
        i += 1;
    }
}

/// Exclusive prefix sum in place; returns the total. The host (and one GPU block) body of the scan.
pub fn exclusive_scan(values: &mut [u32]) -> u64 {
    let mut total = 0u64;
    for v in values.iter_mut() {
        let x = *v as u64;
        *v = total as u32;
        total += x;
    }
    total
}

/// Exclusive prefix sum into 64-bit offsets (counts of matches can exceed `u32`).
pub fn exclusive_scan_u64(values: &[u32], offsets: &mut [u64]) -> u64 {
    let mut total = 0u64;
    for (o, &v) in offsets.iter_mut().zip(values) {
        *o = total;
        total += v as u64;
    }
    total
}

/// Kernel, first pass of the chunked scan (one work-item per chunk of `chunk` values): exclusive
/// scan of chunk `t` in place; returns the chunk's total.
pub fn scan_chunk(t: usize, chunk: usize, values: &mut [u64]) -> u64 {
    let start = t * chunk;
    let end = (start + chunk).min(values.len());
    let mut total = 0u64;
    for v in &mut values[start.min(end)..end] {
        let x = *v;
        *v = total;
        total += x;
    }
    total
}

/// Kernel, last pass of the chunked scan: adds the scanned total of earlier chunks to chunk `t`.
pub fn add_chunk_offset(t: usize, chunk: usize, values: &mut [u64], offset: u64) {
    let start = t * chunk;
    let end = (start + chunk).min(values.len());
    for v in &mut values[start.min(end)..end] {
        *v += offset;
    }
}
