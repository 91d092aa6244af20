//! Partitioned snapshots: the data graph split by node across processes.
//!
//! Node `v` belongs to part `v % parts` and is local node `v / parts` there, so any process can
//! tell a node's owner without a table. A part holds, for its own nodes only, their names, their
//! aliases' entries, their node labels and their out- and in-lists (neighbours as global ids); every
//! part also holds the small replicated [`Vocab`]: relation and node-label names and the planner's
//! statistics of the whole graph.

use std::path::{Path, PathBuf};

use gpsense_graph::snapshot::{self, SnapshotError};
use gpsense_graph::{Aliases, Dictionary, KnowledgeGraph, LabelId, NodeId};
use gpsense_kernels::view::Adjacency;
use serde::{Deserialize, Serialize};

use crate::DistError;

/// The snapshot `kind` of a partition file (1 is a graph, 2 a compressed graph).
pub const KIND_PARTITION: u32 = 3;

/// The part that owns data node `v` when the graph is split into `parts`.
#[inline]
pub fn owner(v: NodeId, parts: u32) -> u32 {
    v % parts
}

/// Node `v`'s index among its owner's nodes.
#[inline]
pub fn local(v: NodeId, parts: u32) -> u32 {
    v / parts
}

/// What every part holds of the whole graph: names of relations and node labels, and the
/// statistics planning reads. Small (relations and labels number in the thousands at most).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Vocab {
    pub relations: Dictionary,
    /// Edges per relation (the popularity suggestions rank by).
    pub relation_edges: Vec<u64>,
    /// Distinct sources and targets per relation.
    pub relation_sources: Vec<u64>,
    pub relation_targets: Vec<u64>,
    pub node_label_names: Dictionary,
    /// Nodes per node label (one entry, all nodes, when the graph has no labels).
    pub label_frequency: Vec<u64>,
    /// Whether nodes carry labels (neighbour-label filters apply).
    pub node_labels: bool,
    /// Whether every edge has its reverse with the same relation (`DataShape::symmetric`).
    pub symmetric: bool,
    pub node_count: u32,
    pub edge_count: u64,
}

/// One direction of a part's adjacency: the list of local node `i` is
/// `targets[offsets[i]..offsets[i + 1]]`, sorted by `(label, target)`, targets global ids.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LocalCsr {
    pub offsets: Vec<u32>,
    pub targets: Vec<NodeId>,
    pub labels: Vec<LabelId>,
    /// The node label of each target (empty when the graph has no node labels): the neighbour-label
    /// filter reads it without asking the target's owner.
    pub target_labels: Vec<u32>,
}

/// One part of a partitioned graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Partition {
    pub part: u32,
    pub parts: u32,
    /// The same for every part cut from one graph (a hash of its arrays), so parts of different
    /// graphs or cuts are never mixed.
    pub fingerprint: u64,
    pub vocab: Vocab,
    /// Names of the local nodes, in local order.
    pub names: Dictionary,
    /// Alias names with those of their nodes that are local (global ids, ascending).
    pub aliases: Aliases,
    /// Node label per local node (empty when the graph has none).
    pub node_labels: Vec<u32>,
    pub out: LocalCsr,
    pub inc: LocalCsr,
}

/// Nodes of part `part` when `node_count` nodes are split into `parts` (`part < parts`): the `v`
/// below `node_count` with `v % parts == part` (none when `parts` is 0, which no cut has).
pub fn local_count_of(node_count: u32, part: u32, parts: u32) -> usize {
    if part >= node_count || parts == 0 {
        0
    } else {
        ((node_count - part - 1) / parts + 1) as usize
    }
}

impl Vocab {
    /// The replicated vocabulary of `g`: O(V + E) once per cut, so that every process plans from
    /// the very same statistics without holding the graph (the counts are those of the planner's
    /// `PlannerStats`, and `symmetric` that of the runtime's `DataShape::of`).
    pub fn of(g: &KnowledgeGraph) -> Vocab {
        let n = g.node_count() as u64;
        let label_frequency = if g.has_node_labels() {
            let mut freq = vec![0u64; g.node_label_names().len()];
            for &l in g.node_labels() {
                if let Some(f) = freq.get_mut(l as usize) {
                    *f += 1;
                }
            }
            freq
        } else {
            // As `KnowledgeGraph::node_label` reports: every node under label 0.
            vec![n]
        };
        let (o, i) = (g.out(), g.inc());
        Vocab {
            relations: g.relations().clone(),
            relation_edges: g.relation_frequencies(),
            relation_sources: distinct_endpoints(o, g.relation_count()),
            relation_targets: distinct_endpoints(i, g.relation_count()),
            node_label_names: g.node_label_names().clone(),
            label_frequency,
            node_labels: g.has_node_labels(),
            symmetric: o.offsets() == i.offsets()
                && o.targets() == i.targets()
                && o.labels() == i.labels(),
            node_count: g.node_count() as u32,
            edge_count: g.edge_count() as u64,
        }
    }

    /// Heap bytes of the names and the statistics.
    pub fn heap_bytes(&self) -> usize {
        self.relations.heap_bytes()
            + self.node_label_names.heap_bytes()
            + 8 * (self.relation_edges.capacity()
                + self.relation_sources.capacity()
                + self.relation_targets.capacity()
                + self.label_frequency.capacity())
    }

    /// The lengths the planner indexes by relation and label id agree with the dictionaries.
    fn check(&self) -> Result<(), String> {
        let r = self.relations.len();
        if r > LabelId::MAX as usize + 1 {
            return Err(format!("{r} relations, more than relation ids can number"));
        }
        for (what, v) in [
            ("edges", &self.relation_edges),
            ("sources", &self.relation_sources),
            ("targets", &self.relation_targets),
        ] {
            if v.len() != r {
                return Err(format!(
                    "vocabulary has {} relation {what} counts for {r} relations",
                    v.len()
                ));
            }
        }
        let labels = if self.node_labels {
            self.node_label_names.len()
        } else {
            1
        };
        if self.label_frequency.len() != labels {
            return Err(format!(
                "vocabulary has {} node-label counts, expected {labels}",
                self.label_frequency.len()
            ));
        }
        Ok(())
    }
}

/// For each relation, the nodes whose list in `csr` has at least one edge of it: each distinct label
/// of a (label-sorted) list starts a run. O(V + E).
fn distinct_endpoints(csr: &gpsense_graph::Csr, relations: usize) -> Vec<u64> {
    let mut count = vec![0u64; relations];
    for v in 0..csr.node_count() as NodeId {
        let mut previous: Option<LabelId> = None;
        for &l in &csr.labels()[csr.range(v)] {
            if previous != Some(l) {
                if let Some(c) = count.get_mut(l as usize) {
                    *c += 1;
                }
                previous = Some(l);
            }
        }
    }
    count
}

/// A hash of `g`'s arrays (XXH3-64): node count, both CSRs, node labels and the bytes of every
/// name dictionary (nodes, relations, node labels, aliases with their nodes). Parts cut from one
/// graph carry the same value, so a process refuses to join peers holding another graph's parts
/// (or a re-cut after the graph changed). Each array is preceded by its length, so moving an
/// element from one array to the next changes the hash. O(V + E), streaming (no copy).
pub fn fingerprint(g: &KnowledgeGraph) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&(g.node_count() as u64).to_le_bytes());
    for csr in [g.out(), g.inc()] {
        feed_u32(&mut h, csr.offsets());
        feed_u32(&mut h, csr.targets());
        feed_u16(&mut h, csr.labels());
    }
    feed_u32(&mut h, g.node_labels());
    for dict in [
        g.nodes(),
        g.relations(),
        g.node_label_names(),
        g.aliases().names(),
    ] {
        let (bytes, ends) = dict.parts();
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes.as_bytes());
        feed_u32(&mut h, ends);
    }
    for (_, nodes) in g.aliases().iter() {
        feed_u32(&mut h, nodes);
    }
    h.digest()
}

/// `xs` little-endian, after its length, through a small buffer (the same hash on any host).
fn feed_u32(h: &mut xxhash_rust::xxh3::Xxh3, xs: &[u32]) {
    h.update(&(xs.len() as u64).to_le_bytes());
    let mut buf = [0u8; 4096];
    for chunk in xs.chunks(buf.len() / 4) {
        for (slot, x) in buf.chunks_exact_mut(4).zip(chunk) {
            slot.copy_from_slice(&x.to_le_bytes());
        }
        h.update(&buf[..4 * chunk.len()]);
    }
}

fn feed_u16(h: &mut xxhash_rust::xxh3::Xxh3, xs: &[u16]) {
    h.update(&(xs.len() as u64).to_le_bytes());
    let mut buf = [0u8; 4096];
    for chunk in xs.chunks(buf.len() / 2) {
        for (slot, x) in buf.chunks_exact_mut(2).zip(chunk) {
            slot.copy_from_slice(&x.to_le_bytes());
        }
        h.update(&buf[..2 * chunk.len()]);
    }
}

impl LocalCsr {
    /// The lists of the nodes `part`, `part + parts`, ... of `csr`, with each target's node label
    /// when `labels` is given. Sized exactly before filling: O(V/P + E/P) memory.
    fn cut(csr: &gpsense_graph::Csr, labels: Option<&[u32]>, part: u32, parts: u32) -> LocalCsr {
        let n = csr.node_count() as u32;
        let count = local_count_of(n, part, parts);
        let owned = || (part..n).step_by(parts as usize);
        let edges: usize = owned().map(|v| csr.range(v).len()).sum();
        let mut out = LocalCsr {
            offsets: Vec::with_capacity(count + 1),
            targets: Vec::with_capacity(edges),
            labels: Vec::with_capacity(edges),
            target_labels: Vec::with_capacity(if labels.is_some() { edges } else { 0 }),
        };
        out.offsets.push(0);
        for v in owned() {
            let r = csr.range(v);
            let targets = &csr.targets()[r.clone()];
            out.targets.extend_from_slice(targets);
            out.labels.extend_from_slice(&csr.labels()[r]);
            if let Some(node_labels) = labels {
                out.target_labels
                    .extend(targets.iter().map(|&t| node_labels[t as usize]));
            }
            // At most the graph's edge count, which its own u32 offsets hold.
            out.offsets.push(out.targets.len() as u32);
        }
        out
    }

    fn adjacency(&self) -> Adjacency<'_> {
        Adjacency::new(&self.offsets, &self.targets, &self.labels)
    }

    fn degree(&self, local: u32) -> usize {
        let i = local as usize;
        (self.offsets[i + 1] - self.offsets[i]) as usize
    }

    fn shrink_to_fit(&mut self) {
        self.offsets.shrink_to_fit();
        self.targets.shrink_to_fit();
        self.labels.shrink_to_fit();
        self.target_labels.shrink_to_fit();
    }

    fn heap_bytes(&self) -> usize {
        4 * (self.offsets.capacity() + self.targets.capacity() + self.target_labels.capacity())
            + 2 * self.labels.capacity()
    }

    /// Every invariant [`Adjacency`] and the distributed join rely on, for `count` local nodes.
    fn check(&self, count: usize, vocab: &Vocab) -> Result<(), String> {
        if self.offsets.len() != count + 1 {
            return Err(format!(
                "{} offsets for {count} local nodes (expected {})",
                self.offsets.len(),
                count + 1
            ));
        }
        if self.offsets[0] != 0 {
            return Err("offsets do not start at 0".into());
        }
        if self.offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err("offsets decrease".into());
        }
        let last = self.offsets[count] as usize;
        if last != self.targets.len() || self.labels.len() != self.targets.len() {
            return Err(format!(
                "offsets end at {last} but there are {} targets and {} labels",
                self.targets.len(),
                self.labels.len()
            ));
        }
        let expected_target_labels = if vocab.node_labels {
            self.targets.len()
        } else {
            0
        };
        if self.target_labels.len() != expected_target_labels {
            return Err(format!(
                "{} target labels for {} targets (the graph {} node labels)",
                self.target_labels.len(),
                self.targets.len(),
                if vocab.node_labels { "has" } else { "has no" }
            ));
        }
        if let Some(t) = self.targets.iter().find(|&&t| t >= vocab.node_count) {
            return Err(format!(
                "target {t} out of range ({} nodes)",
                vocab.node_count
            ));
        }
        let relations = vocab.relations.len();
        if let Some(l) = self.labels.iter().find(|&&l| l as usize >= relations) {
            return Err(format!("relation {l} out of range ({relations} relations)"));
        }
        let label_names = vocab.node_label_names.len();
        if let Some(l) = self
            .target_labels
            .iter()
            .find(|&&l| l as usize >= label_names)
        {
            return Err(format!(
                "target node label {l} out of range ({label_names} node labels)"
            ));
        }
        for (i, w) in self.offsets.windows(2).enumerate() {
            let (s, e) = (w[0] as usize, w[1] as usize);
            let (t, l) = (&self.targets[s..e], &self.labels[s..e]);
            if (1..t.len()).any(|k| (l[k - 1], t[k - 1]) >= (l[k], t[k])) {
                return Err(format!(
                    "the list of local node {i} is not sorted by (relation, node) and distinct"
                ));
            }
        }
        Ok(())
    }
}

impl Partition {
    /// Part `part` of `parts` of `g`, whose vocabulary and fingerprint the caller computed once
    /// for all parts ([`Vocab::of`], [`fingerprint`]). Reads only the owned nodes' entries of the
    /// graph's arrays: O(V/P + E/P) memory beside the graph, and O(V/P + E/P + aliases) time.
    pub fn cut(
        g: &KnowledgeGraph,
        vocab: &Vocab,
        fingerprint: u64,
        part: u32,
        parts: u32,
    ) -> Result<Partition, DistError> {
        check_parts(part, parts)?;
        if vocab.node_count as usize != g.node_count() || vocab.edge_count != g.edge_count() as u64
        {
            return Err(DistError::Setup(format!(
                "the vocabulary ({} nodes, {} edges) is not the graph's ({} nodes, {} edges)",
                vocab.node_count,
                vocab.edge_count,
                g.node_count(),
                g.edge_count()
            )));
        }
        let n = g.node_count() as u32;
        let owned = || (part..n).step_by(parts as usize);
        let mut names = Dictionary::new();
        for v in owned() {
            // The graph's names are distinct, so local node `i` gets id `i`.
            names.intern(g.node_name(v))?;
        }
        let mut alias_names = Dictionary::new();
        let mut pairs = Vec::new();
        for (name, nodes) in g.aliases().iter() {
            let mut mine = nodes
                .iter()
                .filter(|&&v| owner(v, parts) == part)
                .peekable();
            if mine.peek().is_some() {
                let id = alias_names.intern(name)?;
                pairs.extend(mine.map(|&v| (id, v)));
            }
        }
        let node_labels = if g.has_node_labels() {
            owned().map(|v| g.node_label(v)).collect()
        } else {
            Vec::new()
        };
        let labels = g.has_node_labels().then(|| g.node_labels());
        Ok(Partition {
            part,
            parts,
            fingerprint,
            vocab: vocab.clone(),
            names,
            aliases: Aliases::from_pairs(alias_names, pairs),
            node_labels,
            out: LocalCsr::cut(g.out(), labels, part, parts),
            inc: LocalCsr::cut(g.inc(), labels, part, parts),
        })
    }

    /// All `parts` parts of `g` in memory (the vocabulary and fingerprint computed once): for tests
    /// and single-machine runs; [`write_parts`] holds one part at a time.
    pub fn cut_all(g: &KnowledgeGraph, parts: u32) -> Result<Vec<Partition>, DistError> {
        check_parts(0, parts)?;
        let vocab = Vocab::of(g);
        let fp = fingerprint(g);
        (0..parts)
            .map(|part| Partition::cut(g, &vocab, fp, part, parts))
            .collect()
    }

    /// Nodes this part owns.
    pub fn local_count(&self) -> usize {
        self.names.len()
    }

    /// The global id of local node `local` (`local < local_count()`).
    #[inline]
    pub fn global(&self, local: u32) -> NodeId {
        self.part + local * self.parts
    }

    /// Whether data node `v` exists and belongs to this part.
    #[inline]
    pub fn owns(&self, v: NodeId) -> bool {
        v < self.vocab.node_count && owner(v, self.parts) == self.part
    }

    /// The out-lists, indexed by local node; targets are global ids.
    pub fn out_adj(&self) -> Adjacency<'_> {
        self.out.adjacency()
    }

    /// The in-lists (targets are the sources), indexed by local node; global ids.
    pub fn inc_adj(&self) -> Adjacency<'_> {
        self.inc.adjacency()
    }

    /// The node label of owned node `v` (global id), 0 when the graph has none.
    #[inline]
    pub fn node_label(&self, v: NodeId) -> u32 {
        self.node_labels
            .get(local(v, self.parts) as usize)
            .copied()
            .unwrap_or(0)
    }

    /// The name of owned node `v` (global id). Panics if this part does not own `v`.
    pub fn name(&self, v: NodeId) -> &str {
        self.names.name(local(v, self.parts))
    }

    /// What this part knows of `KnowledgeGraph::nodes_named(name)`: its node of that name, if it
    /// owns it, and its own nodes that `name` is an alias of; global ids, ascending, distinct. The
    /// union over all parts is the graph's answer.
    pub fn nodes_named(&self, name: &str) -> Vec<NodeId> {
        let mut nodes = self.aliases.nodes(name).to_vec();
        if let Some(i) = self.names.get(name) {
            let v = self.global(i);
            if let Err(at) = nodes.binary_search(&v) {
                nodes.insert(at, v);
            }
        }
        nodes
    }

    /// Total degree (out + in) of owned node `v` (global id), as `KnowledgeGraph::degree`.
    pub fn degree(&self, v: NodeId) -> usize {
        let i = local(v, self.parts);
        self.out.degree(i) + self.inc.degree(i)
    }

    /// Heap bytes of every array and dictionary this part holds (the vocabulary included).
    pub fn heap_bytes(&self) -> usize {
        self.vocab.heap_bytes()
            + self.names.heap_bytes()
            + self.aliases.heap_bytes()
            + 4 * self.node_labels.capacity()
            + self.out.heap_bytes()
            + self.inc.heap_bytes()
    }

    /// Up to `limit` of this part's names nearest to `name` by the planner's ranking (the
    /// suggestions `query` makes for an unknown concept), each with its popularity: a node's
    /// degree, an alias's summed degrees of this part's nodes it names. An alias that is also a
    /// local node's name is left to the node, as `concept_names` does. Each part ranks only its
    /// own names, so the caller merges the parts' candidates (by name, summing an alias's
    /// popularity over parts) and ranks the merged list again.
    pub fn suggestion_candidates(&self, name: &str, limit: usize) -> Vec<(String, u64)> {
        let nodes = self
            .names
            .iter()
            .map(|(i, n)| (n, self.local_degree(i) as u64));
        let aliases = self
            .aliases
            .iter()
            .filter(|(n, _)| self.names.get(n).is_none())
            .map(|(n, vs)| (n, self.alias_popularity(vs)));
        gpsense_planner::nearest_names(name, nodes.chain(aliases), limit)
            .into_iter()
            .map(|n| {
                let popularity = match self.names.get(&n) {
                    Some(i) => self.local_degree(i) as u64,
                    None => self.alias_popularity(self.aliases.nodes(&n)),
                };
                (n, popularity)
            })
            .collect()
    }

    fn local_degree(&self, i: u32) -> usize {
        self.out.degree(i) + self.inc.degree(i)
    }

    fn alias_popularity(&self, nodes: &[NodeId]) -> u64 {
        nodes.iter().map(|&v| self.degree(v) as u64).sum()
    }

    /// Checks every invariant the accessors and the distributed join rely on, so that a crafted or
    /// damaged file is an error naming the problem, never a panic or a wrong answer: the part
    /// numbers, the vocabulary's lengths, the local node count the part number implies, both
    /// adjacencies (offsets, ranges, sorted distinct lists, targets and relations in range,
    /// target labels), node labels, and the aliases (well formed, only owned nodes).
    pub fn validate(&self, origin: &Path) -> Result<(), DistError> {
        let bad = |what: String| DistError::BadPartition {
            path: origin.to_path_buf(),
            what,
        };
        if self.parts == 0 {
            return Err(bad("a partition into 0 parts".into()));
        }
        if self.part >= self.parts {
            return Err(bad(format!(
                "part {} of {}: the part number must be below the number of parts",
                self.part, self.parts
            )));
        }
        self.vocab.check().map_err(bad)?;
        let count = local_count_of(self.vocab.node_count, self.part, self.parts);
        if self.names.len() != count {
            return Err(bad(format!(
                "{} node names, but part {} of {} of {} nodes owns {count}",
                self.names.len(),
                self.part,
                self.parts,
                self.vocab.node_count
            )));
        }
        self.out
            .check(count, &self.vocab)
            .map_err(|e| bad(format!("out-lists: {e}")))?;
        self.inc
            .check(count, &self.vocab)
            .map_err(|e| bad(format!("in-lists: {e}")))?;
        let expected_labels = if self.vocab.node_labels { count } else { 0 };
        if self.node_labels.len() != expected_labels {
            return Err(bad(format!(
                "{} node labels for {count} local nodes (expected {expected_labels})",
                self.node_labels.len()
            )));
        }
        let label_names = self.vocab.node_label_names.len();
        if let Some(l) = self
            .node_labels
            .iter()
            .find(|&&l| l as usize >= label_names)
        {
            return Err(bad(format!(
                "node label {l} out of range ({label_names} node labels)"
            )));
        }
        self.aliases
            .validate(self.vocab.node_count as usize)
            .map_err(|e| bad(e.to_string()))?;
        for (name, nodes) in self.aliases.iter() {
            if let Some(&v) = nodes.iter().find(|&&v| !self.owns(v)) {
                return Err(bad(format!(
                    "alias {name:?} names node {v}, which part {} of {} does not own",
                    self.part, self.parts
                )));
            }
        }
        Ok(())
    }

    /// The file bytes: a snapshot of kind [`KIND_PARTITION`] (header, bincode body, checksum).
    pub fn to_bytes(&self) -> Result<Vec<u8>, DistError> {
        Ok(snapshot::encode(self, KIND_PARTITION)?)
    }

    /// Decodes and validates a partition file held in memory; `origin` names it in errors.
    pub fn from_bytes(bytes: &[u8], origin: &Path) -> Result<Partition, DistError> {
        let mut p: Partition = snapshot::decode(bytes, KIND_PARTITION, origin)?;
        p.validate(origin)?;
        // The decoder grows each array by doubling; a part is held for the process's lifetime.
        p.node_labels.shrink_to_fit();
        p.aliases.shrink_to_fit();
        p.out.shrink_to_fit();
        p.inc.shrink_to_fit();
        Ok(p)
    }

    /// Writes the part atomically (a temporary file, then a rename).
    pub fn save(&self, path: &Path) -> Result<(), DistError> {
        Ok(snapshot::write_atomic(path, &self.to_bytes()?)?)
    }

    /// Loads and validates a partition file.
    pub fn load(path: &Path) -> Result<Partition, DistError> {
        Partition::from_bytes(&snapshot::read_file(path)?, path)
    }
}

/// `parts >= 1` and `part < parts`.
fn check_parts(part: u32, parts: u32) -> Result<(), DistError> {
    if parts == 0 {
        return Err(DistError::Setup(
            "cannot split a graph into 0 parts: at least 1".into(),
        ));
    }
    if part >= parts {
        return Err(DistError::Setup(format!(
            "part {part} of {parts}: parts are numbered 0 to {}",
            parts - 1
        )));
    }
    Ok(())
}

/// The file of part `part` of `parts` in `dir`: `part-{part}-of-{parts}.gpsp`. The count is in the
/// name so that cuts for different numbers of processes can share a directory.
pub fn part_path(dir: &Path, part: u32, parts: u32) -> PathBuf {
    dir.join(format!("part-{part}-of-{parts}.gpsp"))
}

/// What [`write_parts_with`] reports of each part written.
#[derive(Clone, Debug, PartialEq)]
pub struct PartWritten {
    pub path: PathBuf,
    pub part: u32,
    /// Nodes the part owns.
    pub nodes: usize,
    /// Entries of its out-lists (its nodes' outgoing edges).
    pub edges: usize,
    /// Bytes of the file.
    pub bytes: u64,
}

/// Cuts `g` into `parts` and writes them into `dir` (created if needed) as [`part_path`] files,
/// one at a time, so that only one part is in memory beside the graph. The paths in part order.
pub fn write_parts(g: &KnowledgeGraph, parts: u32, dir: &Path) -> Result<Vec<PathBuf>, DistError> {
    Ok(write_parts_with(g, parts, dir, |_| {})?
        .into_iter()
        .map(|w| w.path)
        .collect())
}

/// [`write_parts`], telling `written` about each part as soon as its file is in place (a front end
/// prints progress), and returning what was written.
pub fn write_parts_with(
    g: &KnowledgeGraph,
    parts: u32,
    dir: &Path,
    mut written: impl FnMut(&PartWritten),
) -> Result<Vec<PartWritten>, DistError> {
    check_parts(0, parts)?;
    std::fs::create_dir_all(dir).map_err(|source| SnapshotError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let vocab = Vocab::of(g);
    let fp = fingerprint(g);
    let mut out = Vec::with_capacity(parts as usize);
    for part in 0..parts {
        let p = Partition::cut(g, &vocab, fp, part, parts)?;
        let bytes = p.to_bytes()?;
        let path = part_path(dir, part, parts);
        snapshot::write_atomic(&path, &bytes)?;
        let w = PartWritten {
            path,
            part,
            nodes: p.local_count(),
            edges: p.out.targets.len(),
            bytes: bytes.len() as u64,
        };
        written(&w);
        out.push(w);
    }
    Ok(out)
}

/// Loads part `part` of `parts` from `dir` (the file [`part_path`] names) and checks it is that
/// part. A missing file is an error that says which parts the directory does hold (say, a cut for
/// 4 processes when 2 were started) and how to cut the graph for this many.
pub fn load_part(dir: &Path, part: u32, parts: u32) -> Result<Partition, DistError> {
    check_parts(part, parts)?;
    let path = part_path(dir, part, parts);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(DistError::Setup(missing_part(dir, &path, parts)));
        }
        Err(source) => return Err(SnapshotError::Io { path, source }.into()),
    };
    let p = Partition::from_bytes(&bytes, &path)?;
    if (p.part, p.parts) != (part, parts) {
        return Err(DistError::BadPartition {
            path,
            what: format!(
                "holds part {} of {}, not part {part} of {parts} as its name says (a renamed file?)",
                p.part, p.parts
            ),
        });
    }
    Ok(p)
}

/// The message for a missing part file: what the directory holds instead, and the remedy.
fn missing_part(dir: &Path, path: &Path, parts: u32) -> String {
    let remedy = format!(
        "cut the graph for {parts} process{}: gpsense partition GRAPH -n {parts} -o {}",
        if parts == 1 { "" } else { "es" },
        dir.display()
    );
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(_) => {
            return format!(
                "{}: no such part file ({} is not a readable directory); {remedy}",
                path.display(),
                dir.display()
            )
        }
    };
    let mut found: Vec<(u32, u32, String)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let (part, parts) = parse_part_name(&name)?;
            Some((parts, part, name))
        })
        .collect();
    found.sort();
    if found.is_empty() {
        return format!(
            "{}: no such part file, and {} holds no part files; {remedy}",
            path.display(),
            dir.display()
        );
    }
    let names: Vec<&str> = found.iter().map(|f| f.2.as_str()).collect();
    let what = if found.iter().any(|f| f.0 == parts) {
        format!("its cut for {parts} processes is incomplete")
    } else {
        let mut counts: Vec<String> = found.iter().map(|f| f.0.to_string()).collect();
        counts.dedup();
        format!("cut for {} processes, not {parts}", counts.join(" and "))
    };
    format!(
        "{}: no such part file; {} holds {} ({what}); {remedy}",
        path.display(),
        dir.display(),
        names.join(", "),
    )
}

/// `(part, parts)` of a name `part-{part}-of-{parts}.gpsp`.
fn parse_part_name(name: &str) -> Option<(u32, u32)> {
    let middle = name.strip_prefix("part-")?.strip_suffix(".gpsp")?;
    let (part, parts) = middle.split_once("-of-")?;
    Some((part.parse().ok()?, parts.parse().ok()?))
}
