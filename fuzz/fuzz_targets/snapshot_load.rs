//! Snapshot loading on any bytes. The checksum rejects almost every mutation, so the input is also
//! re-sealed with a valid header and checksum: the decoder and the validation then see crafted bodies.
#![no_main]

use std::path::Path;

use gpsense_graph::snapshot::{HEADER_LEN, KIND_GRAPH, MAGIC, SNAPSHOT_VERSION};
use gpsense_graph::KnowledgeGraph;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = KnowledgeGraph::from_snapshot_bytes(data, Path::new("fuzz"));
    let mut sealed = Vec::with_capacity(HEADER_LEN + data.len());
    sealed.extend_from_slice(&MAGIC);
    sealed.extend_from_slice(&SNAPSHOT_VERSION.to_le_bytes());
    sealed.extend_from_slice(&KIND_GRAPH.to_le_bytes());
    sealed.extend_from_slice(&(data.len() as u64).to_le_bytes());
    sealed.extend_from_slice(&gpsense_graph::snapshot::checksum(data).to_le_bytes());
    sealed.extend_from_slice(data);
    if let Ok(graph) = KnowledgeGraph::from_snapshot_bytes(&sealed, Path::new("fuzz")) {
        graph.validate().expect("a loaded snapshot is always valid");
    }
});

