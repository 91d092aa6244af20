//! Query graphs from the undirected, vertex-labelled subgraph-matching benchmark format.

use gpsense_graph::{KnowledgeGraph, NodeId};

use super::{EdgeLabel, NodeKind, Projected, QueryEdge, QueryError, QueryGraph, QueryNode};

/// The label a query node gets when its label name does not occur in the data: it matches nothing.
pub const ABSENT_LABEL: u32 = u32::MAX;

/// Turns a benchmark query (ingested like the data: vertex `i` is node `i`, every undirected edge
/// stored both ways) into a query graph over `data`.
///
/// Each query vertex becomes a variable node `?u<i>` whose label is the data's id for the same label
/// name ([`ABSENT_LABEL`] if the data has no such label; `None` if the query has no labels at all).
/// Each undirected edge becomes one query edge from the lower to the higher vertex, with the data's
/// id of the same relation name (`edge` unless the file gave edge labels): the data stores both
/// directions, so one suffices. When the data's edges are unlabelled and the query gives all its
/// edges one label (yeast's `e u v 0`), that label is a placeholder and is ignored. Projection: every
/// node; not distinct; no limit.
///
/// Errors if the data lacks a relation the query uses. O(V + E) plus one hash lookup per label.
pub fn benchmark_query(
    query: &KnowledgeGraph,
    data: &KnowledgeGraph,
) -> Result<QueryGraph, QueryError> {
    let nodes: Vec<QueryNode> = (0..query.node_count() as NodeId)
        .map(|v| QueryNode {
            name: format!("?u{v}"),
            kind: NodeKind::Variable,
            label: data_label(query, data, v),
        })
        .collect();
    let unlabelled = unlabelled_edges(query, data);
    let mut edges = Vec::new();
    for (s, r, t) in query.edges() {
        if s > t {
            continue; // the same undirected edge, stored the other way round
        }
        let name = if unlabelled {
            UNLABELLED_RELATION
        } else {
            query.relation_name(r)
        };
        let label = data
            .relation_id(name)
            .ok_or_else(|| QueryError::BenchmarkRelation {
                name: name.to_owned(),
            })?;
        edges.push(QueryEdge {
            source: s as usize,
            target: t as usize,
            label: EdgeLabel::Fixed(label),
        });
    }
    Ok(QueryGraph {
        projection: (0..nodes.len()).map(Projected::Node).collect(),
        nodes,
        edges,
        edge_variables: Vec::new(),
        concept_sets: Vec::new(),
        distinct: false,
        limit: None,
    })
}

/// The relation the benchmark format gives edges without a label.
const UNLABELLED_RELATION: &str = "edge";

/// Whether query edge labels are to be ignored: the data's edges are unlabelled and the query labels
/// every edge alike (yeast's queries write `e u v 0` against a data graph with plain `e u v`).
fn unlabelled_edges(query: &KnowledgeGraph, data: &KnowledgeGraph) -> bool {
    data.relation_count() == 1
        && data.relation_id(UNLABELLED_RELATION).is_some()
        && query.relation_count() == 1
}

/// The data's label id for the label name of query vertex `v`.
fn data_label(query: &KnowledgeGraph, data: &KnowledgeGraph, v: NodeId) -> Option<u32> {
    if !query.has_node_labels() {
        return None;
    }
    let name = query.node_label_names().name(query.node_label(v));
    Some(data.node_label_names().get(name).unwrap_or(ABSENT_LABEL))
}
