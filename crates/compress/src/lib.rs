//! Multi-level graph compression for gpsense (the GpSense paper, section 5). This crate owns the
//! compression algorithm, the [`CompressedGraph`] it produces (levels, the weighted top-level graph,
//! mapping lists, Definition 4's weights) and the `.gpsc` file format. It depends on the graph crate
//! only; matching on a compressed graph and expanding to exact answers lives in the runtime crate
//! (`gpsense_runtime::compressed`).
//!
//! At each level, disjoint pairs of similar nodes merge into a hyper-node. Similarity counts common
//! edges `e(label, v)` over both directions: `|common(u, v)| / max(|adj(u)|, |adj(v)|) >= delta`
//! (the paper prints the ratio upside down, which every pair would pass). Pairs are found without
//! comparing all pairs: identical signatures by hashing, near-equal ones by MinHash with LSH banding. Every original edge keeps an image between the hyper-nodes of its
//! endpoints, so matching on the top graph under homomorphism, then expanding hyper-nodes through
//! their mapping lists and checking edges and injectivity on the original graph, gives exactly the
//! original answers (Theorems 1 and 2).
//!
//! ```
//! use gpsense_compress::{compress, CompressOptions, NoProgress};
//! use gpsense_graph::GraphBuilder;
//!
//! let mut b = GraphBuilder::new();
//! for cake in ["cake", "pie", "tart"] {
//!     b.add_triple(cake, "IsA", "dessert", 1.0).unwrap();
//!     b.add_triple(cake, "HasProperty", "sweet", 1.0).unwrap();
//! }
//! let g = b.build().unwrap().0;
//! let c = compress(&g, &CompressOptions::default(), &NoProgress).unwrap();
//! // Level 1 merges cake and pie; level 2 merges that pair with tart.
//! let cake = c.hyper_node(g.node_id("cake").unwrap());
//! assert_eq!(c.members(cake).len(), 3);
//! assert_eq!(c.top().edge_count(), 2);
//! ```

mod contract;
mod driver;
mod error;
pub mod format;
mod model;
mod options;
mod pairing;
mod signature;
mod weights;

pub use contract::Members;
pub use driver::compress;
pub use error::CompressError;
pub use format::KIND_COMPRESSED;
pub use model::{topology_bytes, CompressedGraph, Fingerprint, LevelRecord, LevelRow};
pub use options::{CompressOptions, LshOptions, NoProgress, Progress, MAX_LEVELS};
pub use weights::DirectionWeights;
