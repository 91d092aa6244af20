//! `extern "ptx-kernel"` wrappers: the global thread index, then the body in
//! `gpsense_kernels::entry` (the same code the host emulator runs). Safety: the host launches each with
//! buffers that match its argument struct's documentation in `gpsense_kernels::abi`.

use core::arch::nvptx::{_block_dim_x, _block_idx_x, _thread_idx_x};

use gpsense_kernels::abi::*;
use gpsense_kernels::entry;
use gpsense_kernels::warp::DeviceWarp;

#[inline]
unsafe fn gid() -> usize {
    unsafe { _block_idx_x() as usize * _block_dim_x() as usize + _thread_idx_x() as usize }
}

macro_rules! kernels {
    ($($name:ident($args:ty);)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(a: $args) {
            unsafe { entry::$name(&a, gid()) }
        }
    )*};
}

/// Warp kernels: the work-item is the global warp, and the body gets this thread's lane.
macro_rules! warp_kernels {
    ($($name:ident($args:ty);)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(a: $args) {
            let t = unsafe { gid() };
            let warp = DeviceWarp { lane: (t % 32) as u32 };
            unsafe { entry::$name(&a, t / 32, &warp) }
        }
    )*};
}

kernels! {
    identify_nodes(IdentifyNodesArgs);
    count_words(CountWordsArgs);
    write_words(WriteWordsArgs);
    node_totals(NodeTotalsArgs);
    adjacency_bounds(AdjacencyBoundsArgs);
    scan_chunks(ScanArgs);
    add_chunk_offsets(ScanArgs);
    refine_nodes(RefineNodesArgs);
    pivot_segments(PivotSegmentsArgs);
    pivot_segments_batch(PivotSegmentsBatchArgs);
    count_edge_lists(EdgeListsArgs);
    write_edge_lists(EdgeListsArgs);
    trust_similarity(TrustSimilarityArgs);
    trust_one_hop(TrustOneHopArgs);
    count_leaves(CountLeavesArgs);
    count_leaves_batch(CountLeavesBatchArgs);
    trust_merge(TrustMergeArgs);
    trust_select(TrustSelectArgs);
}

warp_kernels! {
    mark_steps(MarkStepsArgs);
    extend_warp(ExtendWarpArgs);
    extend_warp_batch(ExtendWarpBatchArgs);
    extend_warp_bindings(ExtendWarpArgs);
    extend_warp_bindings_batch(ExtendWarpBatchArgs);
    trust_extend(TrustExtendArgs);
}
