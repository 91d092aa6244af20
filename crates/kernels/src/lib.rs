//! The kernel bodies of the GpSense pipeline: plain `no_std` functions over a work-item index (a
//! thread, or a warp's lane and width), taking only slices and scalars, never allocating.
//!
//! The same bodies are run by the CPU executor in `gpsense-runtime` (and tested there and here) and
//! compiled for `nvptx64-nvidia-cuda`, where thin `extern "ptx-kernel"` entry points call them.
//!
//! Phases (paper `001`, section 4): [`filter::identify_node_candidates`] sets a candidate bitset word
//! per 32 data nodes; [`scan`] compacts bitsets into sorted candidate arrays (count, prefix scan,
//! write); [`filter::filter_neighbour_candidates`] marks the neighbours of a query node's candidates
//! over the outgoing or incoming CSR; [`filter::refine_candidate`] drops candidates without support;
//! [`join::count_edge_candidates`] / [`join::write_edge_candidates`] collect edge candidates with the
//! two-step output scheme; [`join::extend`] combines: it grows one partial match by one query node.
#![no_std]
// Warp primitives (`shfl.sync`, `vote.sync`) are inline PTX: `core::arch::nvptx` has none.
#![cfg_attr(target_arch = "nvptx64", feature(asm_experimental_arch))]

pub mod abi;
pub mod bits;
pub mod entry;
pub mod filter;
pub mod join;
pub mod scan;
pub mod space;
pub mod trust;
pub mod variants;
pub mod view;
pub mod warp;

pub use view::{Adjacency, Dir, GraphView};

/// "No value": a variable node (no fixed data node), a node without a label requirement, a variable
/// edge (no fixed relation), or an unbound slot of a partial match.
pub const NONE: u32 = u32::MAX;

/// Lanes in a warp: the width the GPU executes in lock step, and the CPU executor can emulate.
pub const WARP: usize = 32;
