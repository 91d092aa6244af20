//! Any bytes, read as the ConceptNet format, in both error modes: an error or a valid graph, never a panic.
#![no_main]

use gpsense_graph::ingest::{ingest_bytes, Format, IngestOptions, OnError};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for on_error in [OnError::Fail, OnError::Skip] {
        let opts = IngestOptions { on_error, ..Default::default() };
        if let Ok((graph, _)) = ingest_bytes(data, Format::ConceptNet, &opts) {
            graph.validate().expect("ingest produced an inconsistent graph");
        }
    }
});
