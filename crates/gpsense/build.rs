//! Ingests the shipped ConceptNet-100K into a snapshot embedded in the binary, so that `gpsense`
//! answers on a default graph with no set-up and loads it in milliseconds.

use std::path::{Path, PathBuf};

use gpsense_graph::ingest::{IngestOptions, NoProgress, ingest};

fn main() {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let source = manifest.join("../../datasets/conceptnet-100k/train.txt.gz");
    println!("cargo::rerun-if-changed={}", source.display());
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("default.gps");
    let (graph, _) = ingest(
        std::slice::from_ref(&source),
        &IngestOptions::default(),
        &NoProgress,
    )
    .unwrap_or_else(|e| panic!("cannot ingest the default graph {}: {e}", source.display()));
    graph
        .save(Path::new(&out))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}
