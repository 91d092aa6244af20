//! TruST workloads: planted-template trials on a real graph (does the search find a copied subgraph
//! whose names were misspelt and one of whose edges was removed?), and the random data graphs and
//! templates of the seed paper's Figure 13.

use std::time::{Duration, Instant};

use gpsense_graph::{GraphBuilder, KnowledgeGraph, NodeId};
use gpsense_trust::{Params, Template, Timings, Trust};

use crate::synth::Rng;

/// A template cut out of a data graph, with the embedding it was cut from.
#[derive(Clone, Debug)]
pub struct Planted {
    pub template: Template,
    /// The data node of each template node.
    pub truth: Vec<NodeId>,
    /// Template nodes whose names were misspelt.
    pub misspelt: Vec<usize>,
    /// The data edge left out of the template: `(source, relation, target)` as template nodes.
    pub removed: (usize, String, usize),
}

/// Settings of the planted trials.
#[derive(Clone, Copy, Debug)]
pub struct TrialConfig {
    pub trials: usize,
    pub seed: u64,
    /// Template sizes are drawn from `min_nodes..=max_nodes`.
    pub min_nodes: usize,
    pub max_nodes: usize,
    /// Names misspelt per template (one random edit each).
    pub misspelt: usize,
}

impl Default for TrialConfig {
    fn default() -> Self {
        TrialConfig {
            trials: 200,
            seed: 2024,
            min_nodes: 4,
            max_nodes: 6,
            misspelt: 2,
        }
    }
}

/// The outcome of a series of trials.
#[derive(Clone, Debug, Default)]
pub struct TrialReport {
    pub trials: usize,
    /// Trials whose top answer is exactly the planted matching.
    pub hits: usize,
    /// Trials where the planted matching is among the returned answers.
    pub in_top: usize,
    /// One line per miss, for a human to look at.
    pub misses: Vec<String>,
    pub search_time: Duration,
    /// Time per phase, summed over the trials.
    pub phases: Timings,
}

impl TrialReport {
    pub fn rate(&self) -> f64 {
        self.hits as f64 / self.trials.max(1) as f64
    }
}

/// Runs `cfg.trials` planted trials on `trust`'s graph.
pub fn run_trials(trust: &Trust, cfg: &TrialConfig, params: &Params) -> TrialReport {
    let g = trust.graph();
    let mut rng = Rng::new(cfg.seed);
    let mut report = TrialReport::default();
    while report.trials < cfg.trials {
        let nodes = cfg.min_nodes + rng.below((cfg.max_nodes - cfg.min_nodes + 1) as u64) as usize;
        let Some(p) = plant(g, &mut rng, nodes, cfg.misspelt) else {
            continue;
        };
        report.trials += 1;
        let start = Instant::now();
        let answer = match trust.search(&p.template, params) {
            Ok(a) => a,
            Err(e) => {
                report.misses.push(format!("search failed: {e}"));
                continue;
            }
        };
        report.search_time += start.elapsed();
        report.phases.similarity += answer.timings.similarity;
        report.phases.one_hop += answer.timings.one_hop;
        report.phases.traversal += answer.timings.traversal;
        let top = answer.matches.first().map(|m| m.nodes.as_slice());
        if top == Some(p.truth.as_slice()) {
            report.hits += 1;
        } else {
            report.misses.push(describe_miss(g, &p, &answer));
        }
        if answer.matches.iter().any(|m| m.nodes == p.truth) {
            report.in_top += 1;
        }
    }
    report
}

fn describe_miss(g: &KnowledgeGraph, p: &Planted, answer: &gpsense_trust::Answer) -> String {
    let names = |nodes: &[NodeId]| -> Vec<&str> { nodes.iter().map(|&v| g.node_name(v)).collect() };
    let template: Vec<&str> = p.template.nodes.iter().map(|n| n.name.as_str()).collect();
    let rank = answer.matches.iter().position(|m| m.nodes == p.truth);
    format!(
        "template {template:?} ({} edges), planted {:?}, top {:?} (score {:.4}), planted rank {rank:?}",
        p.template.edges.len(),
        names(&p.truth),
        answer.matches.first().map(|m| names(&m.nodes)),
        answer.matches.first().map_or(0.0, |m| m.score),
    )
}

/// Cuts a connected subgraph of `nodes` nodes out of `g` (all data edges among them), removes one
/// edge whose removal keeps it connected, and misspells `misspelt` names of at least four
/// characters. `None` when this draw cannot give such a template (then draw again).
pub fn plant(g: &KnowledgeGraph, rng: &mut Rng, nodes: usize, misspelt: usize) -> Option<Planted> {
    let truth = grow(g, rng, nodes)?;
    let mut edges: Vec<(usize, u16, usize)> = Vec::new();
    for (i, &v) in truth.iter().enumerate() {
        let (targets, labels) = g.out().neighbours(v);
        for (&w, &r) in targets.iter().zip(labels) {
            if let Some(j) = truth.iter().position(|&x| x == w) {
                edges.push((i, r, j));
            }
        }
    }
    let removable: Vec<usize> = (0..edges.len())
        .filter(|&e| connected_without(nodes, &edges, e))
        .collect();
    let too_dense = (0..nodes).any(|i| {
        edges.iter().filter(|e| e.0 == i).count() + edges.iter().filter(|e| e.2 == i).count()
            > gpsense_trust::MAX_TEMPLATE_DEGREE
    });
    if removable.is_empty() || too_dense {
        return None;
    }
    let removed = edges.remove(removable[rng.below(removable.len() as u64) as usize]);
    let long: Vec<usize> = (0..nodes)
        .filter(|&i| g.node_name(truth[i]).chars().count() >= 4)
        .collect();
    if long.len() < misspelt {
        return None;
    }
    let chosen = pick(rng, &long, misspelt);
    let mut template = Template::new();
    for (i, &v) in truth.iter().enumerate() {
        let name = g.node_name(v);
        let name = if chosen.contains(&i) {
            misspell(rng, name)
        } else {
            name.to_owned()
        };
        template.add_fuzzy(&name);
    }
    for &(s, r, t) in &edges {
        template.add_edge(s, t, Some(g.relation_name(r))).ok()?;
    }
    Some(Planted {
        template,
        truth,
        misspelt: chosen,
        removed: (removed.0, g.relation_name(removed.1).to_owned(), removed.2),
    })
}

/// A random connected set of `n` data nodes, grown from a random edge's source through random
/// neighbours (either direction).
fn grow(g: &KnowledgeGraph, rng: &mut Rng, n: usize) -> Option<Vec<NodeId>> {
    if g.edge_count() == 0 {
        return None;
    }
    let e = rng.below(g.edge_count() as u64) as usize;
    let source = g.out().offsets().partition_point(|&o| o as usize <= e) - 1;
    let mut set = vec![source as NodeId];
    for _ in 0..n * 20 {
        if set.len() == n {
            return Some(set);
        }
        let v = set[rng.below(set.len() as u64) as usize];
        let csr = if rng.below(2) == 0 { g.out() } else { g.inc() };
        let list = csr.neighbours(v).0;
        if list.is_empty() {
            continue;
        }
        let w = list[rng.below(list.len() as u64) as usize];
        if !set.contains(&w) {
            set.push(w);
        }
    }
    None
}

/// Whether the template stays connected (ignoring direction) without edge `skip`.
fn connected_without(n: usize, edges: &[(usize, u16, usize)], skip: usize) -> bool {
    let mut seen = vec![false; n];
    let mut stack = vec![0];
    seen[0] = true;
    while let Some(v) = stack.pop() {
        for (i, &(s, _, t)) in edges.iter().enumerate() {
            if i == skip {
                continue;
            }
            for (a, b) in [(s, t), (t, s)] {
                if a == v && !seen[b] {
                    seen[b] = true;
                    stack.push(b);
                }
            }
        }
    }
    seen.iter().all(|&x| x)
}

/// `k` distinct items of `xs`.
fn pick(rng: &mut Rng, xs: &[usize], k: usize) -> Vec<usize> {
    let mut pool = xs.to_vec();
    let mut out = Vec::with_capacity(k);
    for _ in 0..k {
        out.push(pool.swap_remove(rng.below(pool.len() as u64) as usize));
    }
    out
}

/// One random edit (substitution, insertion or deletion of a lowercase letter) that changes `name`.
pub fn misspell(rng: &mut Rng, name: &str) -> String {
    let mut chars: Vec<char> = name.chars().collect();
    loop {
        let mut c = chars.clone();
        let letter = (b'a' + rng.below(26) as u8) as char;
        match rng.below(3) {
            0 => {
                let i = rng.below(c.len() as u64) as usize;
                c[i] = letter;
            }
            1 => {
                let i = rng.below(c.len() as u64 + 1) as usize;
                c.insert(i, letter);
            }
            _ => {
                let i = rng.below(c.len() as u64) as usize;
                c.remove(i);
            }
        }
        if c != chars {
            chars = c;
            return chars.into_iter().collect();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The seed paper's Figure 13

/// One row of Figure 13: sizes and the seed's times in seconds.
#[derive(Clone, Copy, Debug)]
pub struct SeedRow {
    pub data_nodes: usize,
    pub data_edges: usize,
    pub template_nodes: usize,
    pub template_edges: usize,
    pub cpu_one_hop: f64,
    pub cpu_traversal: f64,
    pub gpu_one_hop: f64,
    pub gpu_traversal: f64,
}

const fn row(n: usize, m: usize, tn: usize, tm: usize, t: [f64; 4]) -> SeedRow {
    SeedRow {
        data_nodes: n,
        data_edges: m,
        template_nodes: tn,
        template_edges: tm,
        cpu_one_hop: t[0],
        cpu_traversal: t[1],
        gpu_one_hop: t[2],
        gpu_traversal: t[3],
    }
}

/// Figure 13 of the seed paper (Tesla K80 against a 2.3 GHz Xeon; Python with numba and cupy),
/// copied from its text.
pub const FIGURE_13: [SeedRow; 16] = [
    row(40, 80, 3, 3, [0.3672, 0.1760, 1.1356, 1.2801]),
    row(40, 80, 4, 6, [0.7339, 0.6426, 1.1564, 1.2267]),
    row(40, 80, 6, 10, [1.2012, 3.2430, 1.0435, 1.2254]),
    row(40, 80, 7, 20, [2.2612, 3.7501, 1.1820, 1.4012]),
    row(400, 1000, 3, 3, [4.4040, 9.7514, 1.2527, 1.2494]),
    row(400, 1000, 4, 6, [8.8727, 10.5813, 1.0522, 1.1607]),
    row(400, 1000, 6, 10, [14.4211, 30.6109, 1.2505, 1.3005]),
    row(400, 1000, 7, 20, [28.9680, 47.8257, 1.4024, 1.2437]),
    row(4000, 15000, 3, 3, [64.8889, 40.3240, 1.1668, 1.2093]),
    row(4000, 15000, 4, 6, [128.6486, 60.6072, 1.4021, 1.5253]),
    row(4000, 15000, 6, 10, [212.7749, 268.3556, 1.5429, 1.2927]),
    row(4000, 15000, 7, 20, [304.1698, 420.0750, 1.6223, 1.3290]),
    row(10000, 40000, 3, 3, [204.8660, 61.9532, 1.4900, 1.3295]),
    row(10000, 40000, 4, 6, [402.4207, 135.4928, 1.5113, 1.5232]),
    row(10000, 40000, 6, 10, [779.2258, 429.3690, 1.6135, 1.6124]),
    row(10000, 40000, 7, 20, [1406.2339, 672.1200, 1.9123, 2.0194]),
];

/// A random word of 4 to 10 lowercase letters.
fn word(rng: &mut Rng) -> String {
    let len = 4 + rng.below(7) as usize;
    (0..len)
        .map(|_| (b'a' + rng.below(26) as u8) as char)
        .collect()
}

/// A random undirected graph (as the seed's: each edge stored in both directions, one relation)
/// with `nodes` randomly named nodes and `edges` distinct edges, no self-loops.
pub fn random_data_graph(nodes: usize, edges: usize, seed: u64) -> KnowledgeGraph {
    let mut rng = Rng::new(seed);
    let mut b = GraphBuilder::new();
    let mut made = 0;
    while made < nodes {
        // A repeated name is drawn again (names are unique in a graph).
        let name = word(&mut rng);
        if b.existing_node(&name).is_none() {
            b.node(&name).expect("node");
            made += 1;
        }
    }
    let r = b.relation("edge").expect("relation");
    let mut pairs = std::collections::HashSet::new();
    while pairs.len() < edges.min(nodes * (nodes - 1) / 2) {
        let (u, v) = (
            rng.below(nodes as u64) as u32,
            rng.below(nodes as u64) as u32,
        );
        if u != v && pairs.insert((u.min(v), u.max(v))) {
            b.add_edge(u, r, v, 1.0);
            b.add_edge(v, r, u, 1.0);
        }
    }
    b.build().expect("build").0
}

/// A random connected undirected template with `nodes` nodes and `edges` distinct edges (a random
/// spanning tree plus random extra pairs), named after random data nodes, two of them misspelt.
pub fn random_template(g: &KnowledgeGraph, nodes: usize, edges: usize, seed: u64) -> Template {
    let mut rng = Rng::new(seed);
    let mut t = Template::new();
    for i in 0..nodes {
        let name = g.node_name(rng.below(g.node_count() as u64) as u32);
        let name = if i < 2 {
            misspell(&mut rng, name)
        } else {
            name.to_owned()
        };
        t.add_fuzzy(&name);
    }
    let mut pairs = std::collections::HashSet::new();
    for v in 1..nodes {
        let u = rng.below(v as u64) as usize;
        pairs.insert((u, v));
    }
    while pairs.len() < edges.min(nodes * (nodes - 1) / 2) {
        let (u, v) = (
            rng.below(nodes as u64) as usize,
            rng.below(nodes as u64) as usize,
        );
        if u != v {
            pairs.insert((u.min(v), u.max(v)));
        }
    }
    let mut pairs: Vec<(usize, usize)> = pairs.into_iter().collect();
    pairs.sort_unstable();
    for (u, v) in pairs {
        // Both directions, as in the data graph; the endpoints exist, so this cannot fail.
        let _ = t.add_edge(u, v, Some("edge"));
        let _ = t.add_edge(v, u, Some("edge"));
    }
    t
}
