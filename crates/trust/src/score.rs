//! Phases 1 and 2 of TruST: the similarity table `S` and the one-hop table `OH`, both row-major
//! `template nodes x data nodes`, computed in parallel by the kernels of `gpsense_kernels::trust`.

use gpsense_graph::KnowledgeGraph;
use gpsense_kernels::trust::{
    hop_scratch_len, one_hop, Scoring, TemplateView, ABSENT_RELATION, ANY_RELATION,
    MAX_TEMPLATE_DEGREE,
};
use gpsense_kernels::{Dir, GraphView};
use rayon::prelude::*;

use crate::names::{fold, NameIndex};
use crate::template::{NodeLabel, Template};
use crate::TrustError;

/// The most template nodes (a branch is one `u32` per template node).
pub const MAX_TEMPLATE_NODES: usize = 64;

/// Data nodes per parallel work unit of the one-hop table: big enough to amortise the scratch
/// space.
const HOP_CHUNK: usize = 256;

/// A template resolved against a data graph: relation names to ids, incident edges in CSR form.
pub(crate) struct Prepared {
    pub offsets: Vec<u32>,
    pub others: Vec<u32>,
    pub dirs: Vec<Dir>,
    pub relations: Vec<u32>,
    /// Per template edge, its relation as the kernels see it.
    pub edge_relations: Vec<u32>,
    pub max_degree: usize,
}

impl Prepared {
    pub fn new(t: &Template, g: &KnowledgeGraph) -> Result<Prepared, TrustError> {
        check_size(t)?;
        let n = t.nodes.len();
        let edge_relations: Vec<u32> = t
            .edges
            .iter()
            .map(|e| resolve_relation(e.relation.as_deref(), g))
            .collect();
        // Entries per node: Out for an edge's source, In for its target (a self-loop gives both).
        let mut entries: Vec<Vec<(u32, Dir, u32)>> = vec![Vec::new(); n];
        for (e, &rel) in t.edges.iter().zip(&edge_relations) {
            entries[e.source].push((e.target as u32, Dir::Out, rel));
            entries[e.target].push((e.source as u32, Dir::In, rel));
        }
        let mut p = Prepared {
            offsets: vec![0],
            others: Vec::new(),
            dirs: Vec::new(),
            relations: Vec::new(),
            edge_relations,
            max_degree: 0,
        };
        for (node, list) in entries.iter().enumerate() {
            if list.len() > MAX_TEMPLATE_DEGREE {
                return Err(TrustError::DegreeTooLarge {
                    name: t.nodes[node].name.clone(),
                    degree: list.len(),
                    limit: MAX_TEMPLATE_DEGREE,
                });
            }
            p.max_degree = p.max_degree.max(list.len());
            for &(o, d, r) in list {
                p.others.push(o);
                p.dirs.push(d);
                p.relations.push(r);
            }
            p.offsets.push(p.others.len() as u32);
        }
        Ok(p)
    }

    pub fn view(&self) -> TemplateView<'_> {
        TemplateView {
            offsets: &self.offsets,
            others: &self.others,
            dirs: &self.dirs,
            relations: &self.relations,
        }
    }
}

fn check_size(t: &Template) -> Result<(), TrustError> {
    if t.nodes.is_empty() {
        return Err(TrustError::EmptyTemplate);
    }
    if t.nodes.len() > MAX_TEMPLATE_NODES {
        return Err(TrustError::TooLarge {
            what: "nodes",
            count: t.nodes.len(),
            limit: MAX_TEMPLATE_NODES,
        });
    }
    for (i, e) in t.edges.iter().enumerate() {
        if let Some(&node) = [e.source, e.target].iter().find(|&&v| v >= t.nodes.len()) {
            return Err(TrustError::BadEdge {
                edge: i,
                node,
                nodes: t.nodes.len(),
            });
        }
    }
    Ok(())
}

/// A relation name as the kernels see it: its id, [`ANY_RELATION`] for none, [`ABSENT_RELATION`]
/// when the data graph lacks it (such an edge never earns the relation bonus).
pub(crate) fn resolve_relation(name: Option<&str>, g: &KnowledgeGraph) -> u32 {
    match name {
        None => ANY_RELATION,
        Some(r) => g.relation_id(r).map_or(ABSENT_RELATION, u32::from),
    }
}

/// `S`, row-major data nodes x template nodes (the layout the one-hop kernel reads): for a fuzzy
/// node, the similarity to every data node at or above `threshold` (found through the name index,
/// never by a scan of all names unless the threshold is under 0.5), `0` elsewhere; `1` everywhere
/// for a node that matches anything. A data node's similarity is that of its best text (its name
/// or an alias), so everything downstream (the one-hop scores, the reported agreement) sees the
/// lemma `dog` when a synset `dog/02084071-n` is matched; no later step re-reads one text.
pub(crate) fn similarity_table(t: &Template, index: &NameIndex, threshold: f32) -> Vec<f32> {
    similarity_table_from(t, index.len(), |name| index.matches(&fold(name), threshold))
}

/// The table of [`similarity_table`], with `matches(name)` giving a fuzzy name's nodes at or above
/// the threshold and their similarity (the CPU's index, or the device's verified candidates).
pub(crate) fn similarity_table_from(
    t: &Template,
    nd: usize,
    mut matches: impl FnMut(&str) -> Vec<(u32, f32)>,
) -> Vec<f32> {
    let nt = t.nodes.len();
    let mut sim = vec![0.0f32; nt * nd];
    for (u, node) in t.nodes.iter().enumerate() {
        match &node.label {
            NodeLabel::Any => (0..nd).for_each(|d| sim[d * nt + u] = 1.0),
            NodeLabel::Fuzzy(name) => {
                for (v, s) in matches(name) {
                    sim[v as usize * nt + u] = s;
                }
            }
        }
    }
    sim
}

/// `OH` for every (template node, data node) pair, row-major data nodes x template nodes: in
/// parallel over chunks of data nodes, all template nodes of one data node in a row, so its
/// neighbours' similarity rows are read once for all of them. Each worker has its own scratch space
/// for the assignment.
/// Once `stop` is hit, the chunks not started yet are left at 0 (the caller reports a timed-out
/// answer).
pub(crate) fn one_hop_table(
    p: &Prepared,
    sim: &[f32],
    g: &GraphView,
    scoring: &Scoring,
    stop: crate::Stop,
) -> Vec<f32> {
    let tpl = p.view();
    let nt = tpl.node_count();
    let mut oh = vec![0.0f32; nt * g.node_count()];
    let (nf, nu) = hop_scratch_len(p.max_degree);
    oh.par_chunks_mut(nt * HOP_CHUNK).enumerate().for_each_init(
        || (vec![0.0f32; nf], vec![0u32; nu]),
        |(sf, su), (chunk, out)| {
            for (j, o) in out.iter_mut().enumerate() {
                // The clock, once per data node: a chunk of a dense template takes long.
                if j % nt == 0 && stop.hit() {
                    return;
                }
                let d = (chunk * HOP_CHUNK + j / nt) as u32;
                let t = (j % nt) as u32;
                *o = one_hop(t, d, &tpl, sim, g, scoring, sf, su);
            }
        },
    );
    oh
}
