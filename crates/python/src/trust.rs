//! `Graph.trust`: TruST's ranked near matches, as `gpsense.TrustMatch` objects.

use gpsense_trust::{EdgeFound, Match, Params, Template, TrustEngine, TrustError};
use pyo3::exceptions::{PyRuntimeWarning, PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors;
use crate::graph::inline;
use crate::shared::Shared;

/// One near match: `score` in [0, 1] (1 for an exact embedding); `nodes`, the data node matched to
/// each query node (by name, `?x` for a variable); `node_agreement`, per query node the name
/// similarity and the one-hop score; `edge_agreement`, per query edge a dict with its `source`,
/// `relation` (None for a variable relation) and `target`, what the graph has between the matched
/// nodes (`found`: "exact", "other_relation", "reversed" or "missing", with `data_relation`), and
/// the edge's `score`; `resembling`, how many concepts match their data node by name (matches rank
/// by it first, then by `score`).
#[pyclass(module = "gpsense", frozen, get_all)]
pub struct TrustMatch {
    score: f32,
    resembling: usize,
    nodes: Py<PyDict>,
    node_agreement: Py<PyDict>,
    edge_agreement: Py<PyList>,
}

#[pymethods]
impl TrustMatch {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "<gpsense.TrustMatch {:.3}: {}>",
            self.score,
            self.nodes.bind(py).repr()?
        ))
    }
}

pub fn search(
    py: Python<'_>,
    shared: &Shared,
    text: &str,
    mut params: Params,
    engine: &str,
) -> PyResult<Vec<TrustMatch>> {
    let engine: TrustEngine = engine.parse().map_err(PyValueError::new_err)?;
    let (template, query) = Template::parse(text).map_err(|e| query_error(py, e, text))?;
    if let Some(limit) = query.limit {
        params.top = params.top.min(limit as usize).max(1);
    }
    let searched = inline(py, |_| {
        shared.with_dependent(|_, e| e.trusts.search(&e.matcher, engine, &template, &params))
    })?
    .map_err(|e| match e {
        TrustError::NoGpu(why) => errors::match_error(py, format!("engine=\"gpu\": {why}")),
        e => query_error(py, e, text),
    })?;
    let answer = searched.answer;
    if let Some(why) = searched.fell_back {
        let message = format!("the GPU failed during TruST's search ({why}); answered on the CPU");
        PyErr::warn(
            py,
            &py.get_type::<PyRuntimeWarning>(),
            &std::ffi::CString::new(message)?,
            1,
        )?;
    }
    let g = shared.graph();
    for r in &answer.unknown_relations {
        let message = format!("the graph has no relation {r:?}; its edges match by topology only");
        PyErr::warn(
            py,
            &py.get_type::<PyUserWarning>(),
            &std::ffi::CString::new(message)?,
            1,
        )?;
    }
    let matches = answer
        .matches
        .iter()
        .map(|m| convert(py, g, &template, m))
        .collect::<PyResult<Vec<_>>>()?;
    if answer.timed_out {
        let message = format!(
            "the time limit stopped TruST's search with {} complete matchings",
            matches.len()
        );
        let partial = PyList::new(py, matches)?.into_any().unbind();
        return Err(errors::timeout(py, message, partial));
    }
    Ok(matches)
}

fn query_error(py: Python<'_>, e: TrustError, text: &str) -> PyErr {
    match &e {
        TrustError::Parse(p) => errors::raise(
            py,
            "QueryError",
            (p.render(text), Some(p.line), Some(p.column)),
        ),
        TrustError::BadParameter { .. } => PyValueError::new_err(e.to_string()),
        _ => errors::match_error(py, errors::chain(&e)),
    }
}

fn convert(
    py: Python<'_>,
    g: &gpsense_graph::KnowledgeGraph,
    t: &Template,
    m: &Match,
) -> PyResult<TrustMatch> {
    let nodes = PyDict::new(py);
    let node_agreement = PyDict::new(py);
    for (i, node) in t.nodes.iter().enumerate() {
        nodes.set_item(&node.name, g.node_name(m.nodes[i]))?;
        let a = m.node_agreement[i];
        node_agreement.set_item(&node.name, (a.similarity, a.one_hop))?;
    }
    let edge_agreement = PyList::empty(py);
    for (k, edge) in t.edges.iter().enumerate() {
        let a = m.edge_agreement[k];
        let (found, data_relation) = match a.found {
            EdgeFound::Exact(r) => ("exact", Some(g.relation_name(r))),
            EdgeFound::OtherRelation(r) => ("other_relation", Some(g.relation_name(r))),
            EdgeFound::Reversed(r) => ("reversed", Some(g.relation_name(r))),
            EdgeFound::Missing => ("missing", None),
        };
        let d = PyDict::new(py);
        d.set_item("source", &t.nodes[edge.source].name)?;
        d.set_item("relation", edge.relation.as_deref())?;
        d.set_item("target", &t.nodes[edge.target].name)?;
        d.set_item("found", found)?;
        d.set_item("data_relation", data_relation)?;
        d.set_item("score", a.score)?;
        edge_agreement.append(d)?;
    }
    Ok(TrustMatch {
        score: m.score,
        resembling: m.resembling,
        nodes: nodes.unbind(),
        node_agreement: node_agreement.unbind(),
        edge_agreement: edge_agreement.unbind(),
    })
}
