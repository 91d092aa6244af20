//! A cheap, deterministic fuzz pass that runs in every `cargo test`: real samples of each format and
//! a real snapshot, mutated thousands of times (bit flips, truncations, inserted separators), must give
//! a result or an error, never a panic, and every graph that comes out must be consistent.
//! The coverage-guided fuzz targets in `fuzz/` go further (`cargo fuzz run NAME`).

use std::path::Path;

use gpsense_graph::ingest::{ingest_bytes, Format, IngestOptions, OnError};
use gpsense_graph::snapshot::{checksum, HEADER_LEN};
use gpsense_graph::KnowledgeGraph;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const SPECIAL: &[u8] = b"\t\n\r,\"'#/ \xff\xc3tve0123456789{}:";

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(4) {
            0 if !out.is_empty() => {
                let i = at.min(out.len() - 1);
                out[i] ^= 1 << rng.below(8);
            }
            1 => out.truncate(at),
            2 => out.insert(at, SPECIAL[rng.below(SPECIAL.len())]),
            _ if at < out.len() => {
                out.remove(at);
            }
            _ => {}
        }
    }
    out
}

fn sample(rel: &str, lines: usize) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets")
        .join(rel);
    let text = String::from_utf8(std::fs::read(path).unwrap()).unwrap();
    text.lines()
        .take(lines)
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect()
}

fn survive(format: Format, input: &[u8], rounds: usize) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ format as u64);
    for _ in 0..rounds {
        let bytes = mutate(&mut rng, input);
        for on_error in [OnError::Fail, OnError::Skip] {
            let opts = IngestOptions {
                on_error,
                ..Default::default()
            };
            if let Ok((g, _)) = ingest_bytes(&bytes, format, &opts) {
                g.validate().unwrap();
            }
        }
    }
}

#[test]
fn parsers_survive_mutations() {
    survive(
        Format::Triples,
        &sample("conceptnet-100k/valid.txt", 30),
        3000,
    );
    survive(
        Format::ConceptNet,
        &sample("conceptnet5-sample/assertions.csv", 10),
        3000,
    );
    survive(
        Format::Csv,
        &sample("pattern-commonsense/commonsense.csv", 30),
        3000,
    );
    let nodes = b"#synset\tss_type\tlexfile_num\tfirst_lemma\n00001740-a\ta\t0\table\n00001740-n\tn\t3\tentity\n";
    survive(Format::WordNetNodes, nodes, 3000);
    survive(
        Format::Benchmark,
        &sample(
            "subgraph-matching/hprd-study/query_graph/query_dense_16_1.graph",
            60,
        ),
        3000,
    );
}

#[test]
fn snapshot_loading_survives_mutations_even_with_a_valid_checksum() {
    let (g, _) = ingest_bytes(
        &sample("conceptnet-100k/valid.txt", 40),
        Format::Triples,
        &IngestOptions::default(),
    )
    .unwrap();
    let bytes = g.to_snapshot_bytes().unwrap();
    let mut rng = Rng(42);
    for _ in 0..3000 {
        let mut bad = mutate(&mut rng, &bytes);
        assert!(KnowledgeGraph::from_snapshot_bytes(&bad, Path::new("m")).is_err() || bad == bytes);
        // Re-seal: fix the length and checksum so the decoder and the validation see the damage.
        if bad.len() >= HEADER_LEN {
            let body_len = (bad.len() - HEADER_LEN) as u64;
            bad[16..24].copy_from_slice(&body_len.to_le_bytes());
            let sum = checksum(&bad[HEADER_LEN..]);
            bad[24..32].copy_from_slice(&sum.to_le_bytes());
            if let Ok(g) = KnowledgeGraph::from_snapshot_bytes(&bad, Path::new("m")) {
                g.validate().unwrap();
            }
        }
    }
}
