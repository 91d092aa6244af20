//! Candidate bitsets: bit `v % 32` of word `v / 32` says whether data node `v` is a candidate.
//! Words are `AtomicU32` where many work-items may set bits of one word at once.

use core::sync::atomic::{AtomicU32, Ordering};

#[inline]
pub fn words_for(nodes: usize) -> usize {
    nodes.div_ceil(32)
}

#[inline]
pub fn test(words: &[u32], v: u32) -> bool {
    words[(v >> 5) as usize] & (1 << (v & 31)) != 0
}

#[inline]
pub fn test_atomic(words: &[AtomicU32], v: u32) -> bool {
    words[(v >> 5) as usize].load(Ordering::Relaxed) & (1 << (v & 31)) != 0
}

#[inline]
pub fn set_atomic(words: &[AtomicU32], v: u32) {
    let bit = 1 << (v & 31);
    let word = &words[(v >> 5) as usize];
    // Reading first skips the atomic when the bit is set already: most marks repeat.
    if word.load(Ordering::Relaxed) & bit == 0 {
        word.fetch_or(bit, Ordering::Relaxed);
    }
}

#[inline]
pub fn clear_atomic(words: &[AtomicU32], v: u32) {
    words[(v >> 5) as usize].fetch_and(!(1 << (v & 31)), Ordering::Relaxed);
}
