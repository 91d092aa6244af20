//! Format detection on any first bytes and any file name: a format or a message, never a panic.
#![no_main]

use gpsense_graph::ingest::detect;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for name in ["x.tsv", "x.csv.gz", "x.graph", "x"] {
        let _ = detect(std::path::Path::new(name), data);
    }
});
