//! Deterministic synthetic triples with a skewed degree distribution (a few hub concepts, many leaves),
//! shaped like ConceptNet: multi-word names, ~34 relations with skewed frequencies.

/// A small, fast, seeded generator (SplitMix64), so runs repeat without a dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() >> 32) * n) >> 32
    }

    /// Skewed towards 0: the minimum of two uniforms, squared in density.
    pub fn skewed(&mut self, n: u64) -> u64 {
        let a = self.below(n);
        let b = self.below(n);
        let c = self.below(n);
        a.min(b).min(c)
    }
}

/// `edges` triples `relation<TAB>head<TAB>tail` over about `edges / 4` concepts, as TSV text.
pub fn triples_tsv(edges: usize, seed: u64) -> String {
    triples_tsv_block(edges, edges, seed)
}

/// `edges` triples of a graph sized for `total` edges (about `total / 4` concepts).
pub fn triples_tsv_block(edges: usize, total: usize, seed: u64) -> String {
    const WORDS: [&str; 16] = [
        "red", "cake", "house", "run", "dog", "paper", "music", "cold", "sleep", "garden",
        "school", "water", "light", "car", "friend", "book",
    ];
    let concepts = (total / 4).max(2) as u64;
    let mut rng = Rng::new(seed);
    let mut out = String::with_capacity(edges * 32);
    let name = |i: u64, out: &mut String| {
        out.push_str(WORDS[(i % 16) as usize]);
        out.push(' ');
        out.push_str(WORDS[((i / 16) % 16) as usize]);
        out.push(' ');
        out.push_str(&(i / 256).to_string());
    };
    for _ in 0..edges {
        let rel = rng.skewed(34);
        out.push_str("Rel");
        out.push_str(&rel.to_string());
        out.push('\t');
        name(rng.skewed(concepts), &mut out);
        out.push('\t');
        name(rng.below(concepts), &mut out);
        out.push('\n');
    }
    out
}
