//! The raw little-endian layout the bincode snapshot is compared with: each array of the graph as a
//! length and its elements' bytes, read back with `from_le_bytes`. It holds the same arrays as the
//! snapshot and ends in the same validated graph, but has no header and no checksum: it measures what
//! bincode's encoding costs, it is not a format to ship.

use gpsense_graph::{Csr, Dictionary, GraphParts, KnowledgeGraph};

fn put_len(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n as u64).to_le_bytes());
}

fn put_u32s(out: &mut Vec<u8>, xs: &[u32]) {
    put_len(out, xs.len());
    xs.iter()
        .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
}

fn put_u16s(out: &mut Vec<u8>, xs: &[u16]) {
    put_len(out, xs.len());
    xs.iter()
        .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
}

fn put_dict(out: &mut Vec<u8>, d: &Dictionary) {
    let (bytes, ends) = d.parts();
    put_len(out, bytes.len());
    out.extend_from_slice(bytes.as_bytes());
    put_u32s(out, ends);
}

fn put_csr(out: &mut Vec<u8>, c: &Csr) {
    put_u32s(out, c.offsets());
    put_u32s(out, c.targets());
    put_u16s(out, c.labels());
}

pub fn encode(g: &KnowledgeGraph) -> Vec<u8> {
    let mut out = Vec::new();
    put_dict(&mut out, g.nodes());
    put_dict(&mut out, g.relations());
    put_u32s(&mut out, g.node_labels());
    put_dict(&mut out, g.node_label_names());
    put_csr(&mut out, g.out());
    put_csr(&mut out, g.inc());
    out
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head
    }

    fn len(&mut self) -> usize {
        u64::from_le_bytes(self.take(8).try_into().expect("8 bytes")) as usize
    }

    fn u32s(&mut self) -> Vec<u32> {
        let n = self.len();
        self.take(n * 4)
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect()
    }

    fn u16s(&mut self) -> Vec<u16> {
        let n = self.len();
        self.take(n * 2)
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes(c.try_into().expect("2 bytes")))
            .collect()
    }

    fn dict(&mut self) -> Dictionary {
        let n = self.len();
        let bytes = String::from_utf8(self.take(n).to_vec()).expect("UTF-8 names");
        Dictionary::from_parts(bytes, self.u32s()).expect("consistent names")
    }

    fn csr(&mut self) -> Csr {
        let offsets = self.u32s();
        let targets = self.u32s();
        Csr::from_parts(offsets, targets, self.u16s())
    }
}

/// Decodes the raw layout into a validated graph (the same end state as a snapshot load).
pub fn decode(bytes: &[u8]) -> KnowledgeGraph {
    let mut r = Reader(bytes);
    let parts = GraphParts {
        nodes: r.dict(),
        relations: r.dict(),
        node_labels: r.u32s(),
        node_label_names: r.dict(),
        out: r.csr(),
        inc: r.csr(),
        weights: Vec::new(),
        aliases: Default::default(),
    };
    KnowledgeGraph::from_parts(parts).expect("valid graph")
}
