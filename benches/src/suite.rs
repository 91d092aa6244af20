//! The workloads of `cargo xtask bench`: data graphs and queries, written once to a directory (a
//! manifest, graph snapshots for gpsense, edge lists for the peers) so that every engine, ours and
//! the peers, answers exactly the same queries over exactly the same graphs.
//!
//! A query is stored as the [`QueryGraph`] gpsense matches (nodes with an optional label and an
//! optional fixed data node, directed edges with a fixed relation), so that the peers' query texts
//! (SPARQL, Cypher) and pattern graphs (VF2, LAD) are derived from the very graph we count.
//!
//! Everything is seeded: two runs prepare identical workloads.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use gpsense_graph::ingest::{ingest, Format, IngestOptions, NoProgress};
use gpsense_graph::{GraphBuilder, KnowledgeGraph, NodeId};
use gpsense_planner::{
    benchmark_query, compile, EdgeLabel, NodeKind, Projected, QueryEdge, QueryGraph, QueryNode,
};
use serde::{Deserialize, Serialize};

use crate::querygen;
use crate::synth::Rng;

/// Why a workload could not be prepared.
#[derive(Debug)]
pub struct SuiteError(pub String);

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SuiteError {}

fn err(msg: impl Into<String>) -> SuiteError {
    SuiteError(msg.into())
}

/// One query node: a variable (`fixed: None`) or a concept (the data node it must be), with the
/// node label a match must carry (benchmark graphs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeSpec {
    pub label: Option<u32>,
    pub fixed: Option<u32>,
}

/// One query, as gpsense's query graph: edges `[source, relation, target]` over node indexes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuerySpec {
    pub id: String,
    /// A sub-group of the workload (yeast's `dense_8`, ...); the workload name otherwise.
    pub group: String,
    pub nodes: Vec<NodeSpec>,
    pub edges: Vec<[u32; 3]>,
    /// The answer published with the benchmark suite (iso, non-induced), where there is one.
    pub expected: Option<u64>,
    /// The SPARQL text the query was generated as (common-sense queries), for the report.
    pub text: Option<String>,
}

impl QuerySpec {
    /// Whether some edge is a self-loop.
    pub fn has_self_loop(&self) -> bool {
        self.edges.iter().any(|e| e[0] == e[2])
    }
}

/// A data graph as written to the workload directory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphMeta {
    /// File stem under `graphs/`: `<key>.gps` (snapshot), `<key>.edges.tsv`, `<key>.labels.txt`.
    pub key: String,
    pub description: String,
    pub nodes: u64,
    /// Edges as stored in `.edges.tsv` (undirected graphs: once per edge).
    pub edges: u64,
    /// Undirected (benchmark format; gpsense stores both directions, the edge list has one).
    pub undirected: bool,
    /// Node labels are written (`.labels.txt`, one per node) and used by the queries.
    pub labelled: bool,
    pub relations: Vec<String>,
    /// Data edges `v -> v`.
    pub self_loops: u64,
    /// Ordered node pairs joined by more than one relation.
    pub multi_relation_pairs: u64,
}

impl GraphMeta {
    /// Average degree per node: 2 E / V (in + out for directed graphs, edges once for undirected).
    pub fn average_degree(&self) -> f64 {
        2.0 * self.edges as f64 / self.nodes.max(1) as f64
    }
}

/// Queries over one data graph. Workloads with an `experiment` form one curve point each.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    pub name: String,
    pub title: String,
    pub graph: String,
    /// The experiment this workload is a point of (`data-size`, `query-size`, `degree`).
    pub experiment: Option<String>,
    /// The experiment's parameter at this point (nodes, query nodes, average degree).
    pub x: Option<f64>,
    /// How the queries were chosen, for the report.
    pub selection: String,
    pub queries: Vec<QuerySpec>,
    /// Stop each query after this many matches (`MatchOptions::limit`); none: count them all.
    #[serde(default)]
    pub limit: Option<u64>,
}

/// Everything `prepare` wrote.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub quick: bool,
    pub graphs: Vec<GraphMeta>,
    pub workloads: Vec<Workload>,
}

impl Manifest {
    pub fn graph(&self, key: &str) -> Option<&GraphMeta> {
        self.graphs.iter().find(|g| g.key == key)
    }

    pub fn workload(&self, name: &str) -> Option<&Workload> {
        self.workloads.iter().find(|w| w.name == name)
    }
}

/// The experiments' axes: what `x` means for each.
pub const EXPERIMENTS: &[(&str, &str)] = &[
    ("data-size", "data graph nodes"),
    ("query-size", "query nodes"),
    ("degree", "average degree"),
];

/// How much to prepare.
#[derive(Clone, Debug)]
pub struct Scale {
    pub quick: bool,
    /// HPRD queries (of 200).
    pub hprd: usize,
    /// Yeast queries per size group, and the groups.
    pub yeast_per_group: usize,
    pub yeast_groups: Vec<&'static str>,
    /// Yeast queries are taken among those with a published answer of at most this.
    pub yeast_max_answer: u64,
    /// Generated common-sense queries per workload or curve point.
    pub common_sense: usize,
    /// Also the common-sense workload on the whole of WordNet (its 285k edges are slow to load
    /// into the Python peers).
    pub wordnet_common_sense: bool,
    pub experiment_queries: usize,
    pub data_sizes: Vec<usize>,
    pub query_sizes: Vec<usize>,
    pub degrees: Vec<usize>,
    /// Nodes of the synthetic graphs of the degree experiment.
    pub degree_nodes: usize,
}

impl Scale {
    pub fn full() -> Self {
        Scale {
            quick: false,
            hprd: 200,
            yeast_per_group: 5,
            yeast_groups: vec![
                "dense_4",
                "dense_8",
                "sparse_8",
                "dense_16",
                "sparse_16",
                "dense_24",
                "sparse_24",
                "dense_32",
                "sparse_32",
            ],
            yeast_max_answer: 10_000_000,
            common_sense: 20,
            wordnet_common_sense: true,
            experiment_queries: 10,
            data_sizes: vec![10_000, 20_000, 40_000, 60_000, 80_000, 100_000],
            query_sizes: vec![6, 8, 10, 12, 14],
            degrees: vec![8, 12, 16, 20, 24],
            degree_nodes: 10_000,
        }
    }

    pub fn quick() -> Self {
        Scale {
            quick: true,
            hprd: 3,
            yeast_per_group: 2,
            yeast_groups: vec!["dense_4"],
            yeast_max_answer: 10_000_000,
            common_sense: 2,
            wordnet_common_sense: false,
            experiment_queries: 2,
            data_sizes: vec![10_000, 20_000],
            query_sizes: vec![6],
            degrees: vec![8],
            degree_nodes: 5_000,
        }
    }
}

/// Seed of every generated query set (the `matching` bench uses the same).
pub const SEED: u64 = 2016;
/// Concept share and minimum start degree of generated queries (as the `matching` bench).
const CONCEPT_FRACTION: f64 = 0.34;
const MIN_DEGREE: usize = 8;

/// Builds every workload from `datasets` into `out` (`graphs/`, `manifest.json`).
pub fn prepare(datasets: &Path, out: &Path, scale: &Scale) -> Result<Manifest, SuiteError> {
    let graphs_dir = out.join("graphs");
    std::fs::create_dir_all(&graphs_dir)
        .map_err(|e| err(format!("cannot create {}: {e}", graphs_dir.display())))?;
    let mut manifest = Manifest {
        quick: scale.quick,
        graphs: Vec::new(),
        workloads: Vec::new(),
    };

    // 1. The benchmark suites.
    let sm = datasets.join("subgraph-matching");
    let hprd_dir = sm.join("hprd-study");
    let hprd = load(&hprd_dir.join("data_graph/HPRD.graph"))?;
    manifest.graphs.push(write_graph(
        &graphs_dir,
        "hprd",
        "HPRD (SIGMOD 2020 study)",
        &hprd,
        true,
    )?);
    let expected = read_expected(&hprd_dir.join("expected_output.res"))?;
    let mut files = query_files(&hprd_dir.join("query_graph"))?;
    files.truncate(scale.hprd);
    let mut queries = Vec::new();
    for f in &files {
        let name = stem(f);
        let q = benchmark_query(&load(f)?, &hprd).map_err(|e| err(format!("{name}: {e}")))?;
        let mut spec = spec_of(&q, &name, "hprd")?;
        spec.expected = expected.get(&name).copied();
        queries.push(spec);
    }
    manifest.workloads.push(Workload {
        name: "hprd".into(),
        title: "HPRD, 16-node dense queries (SIGMOD 2020 study)".into(),
        graph: "hprd".into(),
        experiment: None,
        x: None,
        selection: format!(
            "the first {} of the 200 queries by number, published answers from expected_output.res",
            queries.len()
        ),
        queries,
        limit: None,
    });

    let yeast_dir = sm.join("yeast");
    let yeast = load(&yeast_dir.join("data_graph/yeast.graph"))?;
    manifest.graphs.push(write_graph(
        &graphs_dir,
        "yeast",
        "yeast (openGraphMatching)",
        &yeast,
        true,
    )?);
    let answers = read_expected(&yeast_dir.join("yeast_ans.txt"))?;
    let all = query_files(&yeast_dir.join("query_graph"))?;
    let mut queries = Vec::new();
    for group in &scale.yeast_groups {
        let prefix = format!("query_{group}_");
        let picked = all
            .iter()
            .filter(|f| stem(f).starts_with(&prefix))
            .filter(|f| {
                answers
                    .get(&stem(f))
                    .is_some_and(|&a| a <= scale.yeast_max_answer)
            })
            .take(scale.yeast_per_group);
        for f in picked {
            let name = stem(f);
            let q = benchmark_query(&load(f)?, &yeast).map_err(|e| err(format!("{name}: {e}")))?;
            let mut spec = spec_of(&q, &name, group)?;
            spec.expected = answers.get(&name).copied();
            queries.push(spec);
        }
    }
    manifest.workloads.push(Workload {
        name: "yeast".into(),
        title: "yeast, by query size and density".into(),
        graph: "yeast".into(),
        experiment: None,
        x: None,
        selection: format!(
            "per size group ({}), the first {} queries by number whose published answer (yeast_ans.txt) is at most {}",
            scale.yeast_groups.join(", "),
            scale.yeast_per_group,
            scale.yeast_max_answer
        ),
        queries,
        limit: None,
    });

    // 2. Common-sense queries on ConceptNet-100K and WordNet.
    let cn = load(&datasets.join("conceptnet-100k/train.txt.gz"))?;
    manifest.graphs.push(write_graph(
        &graphs_dir,
        "conceptnet",
        "ConceptNet-100K",
        &cn,
        false,
    )?);
    let wn = load_many(&[
        datasets.join("wordnet30/wn30_synset.nodes.tsv.gz"),
        datasets.join("wordnet30/wn30_synset.edges.tsv.gz"),
    ])?;
    manifest.graphs.push(write_graph(
        &graphs_dir,
        "wordnet",
        "WordNet 3.0 synsets",
        &wn,
        false,
    )?);
    for (graph, key, title) in [
        (&cn, "conceptnet", "ConceptNet-100K"),
        (&wn, "wordnet", "WordNet 3.0"),
    ] {
        if key == "wordnet" && !scale.wordnet_common_sense {
            continue;
        }
        let texts = generate(graph, 6, scale.common_sense, SEED);
        manifest.workloads.push(Workload {
            name: format!("{key}-6"),
            title: format!("{title}, 6-node common-sense queries"),
            graph: key.into(),
            experiment: None,
            x: None,
            selection: generated_selection(texts.len(), 6, SEED),
            queries: compile_all(&texts, graph, &format!("{key}-6"))?,
            limit: None,
        });
    }

    // 3. The paper's experiments.
    // Data size: nested BFS prefixes of WordNet, one query set (generated on the smallest).
    let prefixes = nested_subgraphs(&wn, &scale.data_sizes)?;
    let smallest = &prefixes[0];
    let texts = generate(smallest, 6, scale.experiment_queries, SEED);
    for (size, g) in scale.data_sizes.iter().zip(&prefixes) {
        let key = format!("wordnet-{}k", size / 1000);
        manifest.graphs.push(write_graph(
            &graphs_dir,
            &key,
            &format!("WordNet 3.0, first {size} nodes in BFS order from its highest-degree node (induced)"),
            g,
            false,
        )?);
        manifest.workloads.push(Workload {
            name: format!("data-size-{}k", size / 1000),
            title: format!("data size: WordNet subgraph of {size} nodes"),
            graph: key,
            experiment: Some("data-size".into()),
            x: Some(*size as f64),
            selection: format!(
                "{} 6-node queries generated on the smallest subgraph (seed {SEED}), the same at every size",
                texts.len()
            ),
            queries: compile_all(&texts, g, "data-size")?,
            limit: None,
        });
    }
    // Query size: ConceptNet-100K.
    for &k in &scale.query_sizes {
        let texts = generate(&cn, k, scale.experiment_queries, SEED + k as u64);
        manifest.workloads.push(Workload {
            name: format!("query-size-{k}"),
            title: format!("query size: {k}-node queries on ConceptNet-100K"),
            graph: "conceptnet".into(),
            experiment: Some("query-size".into()),
            x: Some(k as f64),
            selection: generated_selection(texts.len(), k, SEED + k as u64),
            queries: compile_all(&texts, &cn, &format!("query-size-{k}"))?,
            limit: None,
        });
    }
    // Average degree: synthetic ConceptNet-shaped graphs (no shipped graph reaches degree 8-24).
    for &d in &scale.degrees {
        let g = degree_graph(scale.degree_nodes, d, SEED)?;
        let key = format!("synthetic-d{d}");
        manifest.graphs.push(write_graph(
            &graphs_dir,
            &key,
            &format!(
                "synthetic ConceptNet-shaped graph, {} nodes, average degree {d} (34 skewed relations)",
                scale.degree_nodes
            ),
            &g,
            false,
        )?);
        let texts = generate(&g, 6, scale.experiment_queries, SEED);
        manifest.workloads.push(Workload {
            name: format!("degree-{d}"),
            title: format!(
                "average degree {d}: synthetic graph of {} nodes",
                scale.degree_nodes
            ),
            graph: key,
            experiment: Some("degree".into()),
            x: Some(d as f64),
            selection: generated_selection(texts.len(), 6, SEED),
            queries: compile_all(&texts, &g, &format!("degree-{d}"))?,
            limit: None,
        });
    }

    let json = serde_json::to_vec_pretty(&manifest).map_err(|e| err(e.to_string()))?;
    let path = out.join("manifest.json");
    std::fs::write(&path, json)
        .map_err(|e| err(format!("cannot write {}: {e}", path.display())))?;
    Ok(manifest)
}

/// Workloads whose queries the caller lists (`cargo xtask bench`'s exact-peer table): benchmark-format
/// (`t/v/e`) graphs and, per workload, the query files in order with their published answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Listed {
    pub graphs: Vec<ListedGraph>,
    pub workloads: Vec<ListedWorkload>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ListedGraph {
    pub key: String,
    pub description: String,
    pub file: PathBuf,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ListedWorkload {
    pub name: String,
    pub title: String,
    pub graph: String,
    pub selection: String,
    pub limit: Option<u64>,
    pub queries: Vec<ListedQuery>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ListedQuery {
    pub id: String,
    pub group: String,
    pub file: PathBuf,
    pub expected: Option<u64>,
}

/// Writes the listed graphs and workloads into `out` (`graphs/`, `manifest.json`), as [`prepare`].
pub fn prepare_listed(list: &Listed, out: &Path) -> Result<Manifest, SuiteError> {
    let graphs_dir = out.join("graphs");
    std::fs::create_dir_all(&graphs_dir)
        .map_err(|e| err(format!("cannot create {}: {e}", graphs_dir.display())))?;
    let mut manifest = Manifest {
        quick: false,
        graphs: Vec::new(),
        workloads: Vec::new(),
    };
    let mut loaded = HashMap::new();
    for g in &list.graphs {
        let kg = load(&g.file)?;
        manifest
            .graphs
            .push(write_graph(&graphs_dir, &g.key, &g.description, &kg, true)?);
        loaded.insert(g.key.clone(), kg);
    }
    for w in &list.workloads {
        let g = loaded
            .get(&w.graph)
            .ok_or_else(|| err(format!("{}: no graph {:?}", w.name, w.graph)))?;
        let queries = w
            .queries
            .iter()
            .map(|q| {
                let qg = benchmark_query(&load(&q.file)?, g)
                    .map_err(|e| err(format!("{}: {e}", q.id)))?;
                let mut spec = spec_of(&qg, &q.id, &q.group)?;
                spec.expected = q.expected;
                Ok(spec)
            })
            .collect::<Result<Vec<_>, SuiteError>>()?;
        manifest.workloads.push(Workload {
            name: w.name.clone(),
            title: w.title.clone(),
            graph: w.graph.clone(),
            experiment: None,
            x: None,
            selection: w.selection.clone(),
            queries,
            limit: w.limit,
        });
    }
    let json = serde_json::to_vec_pretty(&manifest).map_err(|e| err(e.to_string()))?;
    let path = out.join("manifest.json");
    std::fs::write(&path, json)
        .map_err(|e| err(format!("cannot write {}: {e}", path.display())))?;
    Ok(manifest)
}

fn generated_selection(n: usize, k: usize, seed: u64) -> String {
    format!(
        "{n} {k}-node queries generated as in the paper (BFS from a node of degree >= {MIN_DEGREE}, \
         {:.0}% of the nodes fixed concepts; seed {seed})",
        CONCEPT_FRACTION * 100.0
    )
}

/// `count` generated queries of `k` nodes (fewer if the graph has no room).
pub fn generate(g: &KnowledgeGraph, k: usize, count: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng::new(seed);
    (0..count)
        .filter_map(|_| querygen::common_sense_query(g, k, CONCEPT_FRACTION, MIN_DEGREE, &mut rng))
        .collect()
}

fn compile_all(
    texts: &[String],
    g: &KnowledgeGraph,
    group: &str,
) -> Result<Vec<QuerySpec>, SuiteError> {
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let q = compile(text, g).map_err(|e| err(format!("generated query {text:?}: {e}")))?;
            let mut spec = spec_of(&q, &format!("{group}-q{i}"), group)?;
            spec.text = Some(text.clone());
            Ok(spec)
        })
        .collect()
}

/// The spec of a query graph (edge variables and concept sets are not generated, so not
/// supported).
pub fn spec_of(q: &QueryGraph, id: &str, group: &str) -> Result<QuerySpec, SuiteError> {
    let nodes = q
        .nodes
        .iter()
        .map(|n| {
            let fixed = match n.kind {
                NodeKind::Concept(v) => Some(v),
                NodeKind::Variable => None,
                NodeKind::ConceptSet(_) => {
                    return Err(err(format!("{id}: concept sets are not benchmarked")))
                }
            };
            Ok(NodeSpec {
                label: n.label,
                fixed,
            })
        })
        .collect::<Result<_, _>>()?;
    let edges = q
        .edges
        .iter()
        .map(|e| match e.label {
            EdgeLabel::Fixed(r) => Ok([e.source as u32, u32::from(r), e.target as u32]),
            EdgeLabel::Variable(_) => Err(err(format!("{id}: edge variables are not benchmarked"))),
        })
        .collect::<Result<_, _>>()?;
    Ok(QuerySpec {
        id: id.into(),
        group: group.into(),
        nodes,
        edges,
        expected: None,
        text: None,
    })
}

/// The query graph of a spec: every node projected, in order (row slot `i` is query node `i`).
pub fn query_graph(spec: &QuerySpec) -> QueryGraph {
    let nodes = spec
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| QueryNode {
            name: match n.fixed {
                Some(v) => format!("node{v}"),
                None => format!("?u{i}"),
            },
            kind: match n.fixed {
                Some(v) => NodeKind::Concept(v),
                None => NodeKind::Variable,
            },
            label: n.label,
        })
        .collect::<Vec<_>>();
    QueryGraph {
        projection: (0..nodes.len()).map(Projected::Node).collect(),
        nodes,
        edges: spec
            .edges
            .iter()
            .map(|e| QueryEdge {
                source: e[0] as usize,
                target: e[2] as usize,
                label: EdgeLabel::Fixed(e[1] as u16),
            })
            .collect(),
        edge_variables: Vec::new(),
        concept_sets: Vec::new(),
        distinct: false,
        limit: None,
    }
}

/// One graph file (a benchmark `.graph` file as such, others by detection).
pub fn load(path: &Path) -> Result<KnowledgeGraph, SuiteError> {
    load_many(&[path.to_path_buf()])
}

fn load_many(paths: &[PathBuf]) -> Result<KnowledgeGraph, SuiteError> {
    let opts = IngestOptions {
        format: if paths[0].extension().is_some_and(|x| x == "graph") {
            Some(Format::Benchmark)
        } else {
            None
        },
        ..IngestOptions::default()
    };
    ingest(paths, &opts, &NoProgress)
        .map(|(g, _)| g)
        .map_err(|e| err(format!("cannot ingest {}: {e}", paths[0].display())))
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("?")
        .to_owned()
}

/// `.graph` files of a directory, sorted by their trailing number within a common prefix
/// (`query_dense_16_2` before `query_dense_16_10`).
fn query_files(dir: &Path) -> Result<Vec<PathBuf>, SuiteError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| err(format!("cannot list {}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|f| f.extension().is_some_and(|x| x == "graph"))
        .collect();
    files.sort_by_key(|f| {
        let s = stem(f);
        let (prefix, n) = s.rsplit_once('_').unwrap_or((&s, "0"));
        (prefix.to_owned(), n.parse::<u64>().unwrap_or(u64::MAX))
    });
    Ok(files)
}

/// `name:count` or `name count` lines (`.graph` suffixes dropped).
pub fn read_expected(path: &Path) -> Result<HashMap<String, u64>, SuiteError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| err(format!("cannot read {}: {e}", path.display())))?;
    let mut map = HashMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (name, count) = line
            .rsplit_once(':')
            .or_else(|| line.split_once(char::is_whitespace))
            .ok_or_else(|| err(format!("{}: bad line {line:?}", path.display())))?;
        let count = count
            .trim()
            .parse()
            .map_err(|_| err(format!("{}: bad count in {line:?}", path.display())))?;
        map.insert(name.trim().trim_end_matches(".graph").to_owned(), count);
    }
    Ok(map)
}

/// Writes `<key>.gps`, `<key>.edges.tsv` (`source<TAB>relation<TAB>target`; undirected graphs once
/// per edge, lower id first) and, for labelled graphs, `<key>.labels.txt`.
fn write_graph(
    dir: &Path,
    key: &str,
    description: &str,
    g: &KnowledgeGraph,
    undirected: bool,
) -> Result<GraphMeta, SuiteError> {
    let io = |e: std::io::Error| err(format!("cannot write graph {key}: {e}"));
    g.save(&dir.join(format!("{key}.gps")))
        .map_err(|e| err(format!("cannot write snapshot {key}: {e}")))?;
    let mut w = std::io::BufWriter::new(
        std::fs::File::create(dir.join(format!("{key}.edges.tsv"))).map_err(io)?,
    );
    let (mut edges, mut self_loops) = (0u64, 0u64);
    let mut pairs: HashSet<(NodeId, NodeId)> = HashSet::new();
    let mut multi: HashSet<(NodeId, NodeId)> = HashSet::new();
    for (s, r, t) in g.edges() {
        if undirected && s > t {
            continue;
        }
        writeln!(w, "{s}\t{r}\t{t}").map_err(io)?;
        edges += 1;
        self_loops += u64::from(s == t);
        if !pairs.insert((s, t)) {
            multi.insert((s, t));
        }
    }
    w.flush().map_err(io)?;
    let labelled = undirected && g.has_node_labels();
    if labelled {
        let mut w = std::io::BufWriter::new(
            std::fs::File::create(dir.join(format!("{key}.labels.txt"))).map_err(io)?,
        );
        for &l in g.node_labels() {
            writeln!(w, "{l}").map_err(io)?;
        }
        w.flush().map_err(io)?;
    }
    Ok(GraphMeta {
        key: key.into(),
        description: description.into(),
        nodes: g.node_count() as u64,
        edges,
        undirected,
        labelled,
        relations: (0..g.relation_count())
            .map(|r| g.relation_name(r as u16).to_owned())
            .collect(),
        self_loops,
        multi_relation_pairs: multi.len() as u64,
    })
}

/// Induced subgraphs on the first `n` nodes (for each `n` of `sizes`, ascending) of a BFS over both
/// edge directions from the highest-degree node, restarted from the next unvisited node of highest
/// degree when a component is exhausted. Names are kept, so a query compiles on every size.
pub fn nested_subgraphs(
    g: &KnowledgeGraph,
    sizes: &[usize],
) -> Result<Vec<KnowledgeGraph>, SuiteError> {
    let n = g.node_count();
    let mut by_degree: Vec<NodeId> = (0..n as NodeId).collect();
    by_degree.sort_by_key(|&v| (std::cmp::Reverse(g.degree(v)), v));
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut queue = VecDeque::new();
    for &root in &by_degree {
        if seen[root as usize] {
            continue;
        }
        seen[root as usize] = true;
        queue.push_back(root);
        while let Some(v) = queue.pop_front() {
            order.push(v);
            for &w in g
                .out()
                .neighbours(v)
                .0
                .iter()
                .chain(g.inc().neighbours(v).0)
            {
                if !seen[w as usize] {
                    seen[w as usize] = true;
                    queue.push_back(w);
                }
            }
        }
    }
    sizes
        .iter()
        .map(|&size| {
            if size > n {
                return Err(err(format!("a subgraph of {size} nodes of a graph of {n}")));
            }
            induced(g, &order[..size])
        })
        .collect()
}

fn induced(g: &KnowledgeGraph, nodes: &[NodeId]) -> Result<KnowledgeGraph, SuiteError> {
    let mut keep = vec![u32::MAX; g.node_count()];
    let mut b = GraphBuilder::new();
    let e = |x: gpsense_graph::GraphError| err(x.to_string());
    for &v in nodes {
        keep[v as usize] = b.node(g.node_name(v)).map_err(e)?;
    }
    let mut rel = HashMap::new();
    for &v in nodes {
        let (targets, labels) = g.out().neighbours(v);
        for (&w, &r) in targets.iter().zip(labels) {
            if keep[w as usize] == u32::MAX {
                continue;
            }
            let id = match rel.get(&r) {
                Some(&id) => id,
                None => {
                    let id = b.relation(g.relation_name(r)).map_err(e)?;
                    rel.insert(r, id);
                    id
                }
            };
            b.add_edge(keep[v as usize], id, keep[w as usize], 1.0);
        }
    }
    Ok(b.build().map_err(e)?.0)
}

/// A synthetic ConceptNet-shaped graph: `nodes` concepts, `nodes * degree / 2` distinct triples over
/// 34 relations of skewed frequency, heads skewed towards a few hubs, tails uniform.
pub fn degree_graph(nodes: usize, degree: usize, seed: u64) -> Result<KnowledgeGraph, SuiteError> {
    let e = |x: gpsense_graph::GraphError| err(x.to_string());
    let mut rng = Rng::new(seed ^ degree as u64);
    let mut b = GraphBuilder::new();
    for i in 0..nodes {
        b.node(&format!("c{i}")).map_err(e)?;
    }
    let rels = (0..34)
        .map(|r| b.relation(&format!("Rel{r}")))
        .collect::<Result<Vec<_>, _>>()
        .map_err(e)?;
    let want = nodes * degree / 2;
    let mut seen = HashSet::with_capacity(want);
    let n = nodes as u64;
    let mut guard = 0usize;
    while seen.len() < want {
        guard += 1;
        if guard > want * 20 {
            return Err(err(format!(
                "cannot place {want} distinct edges on {nodes} nodes"
            )));
        }
        // Heads: half skewed towards hubs, half uniform, so hubs exist but every node has edges.
        let s = if rng.below(2) == 0 {
            rng.skewed(n)
        } else {
            rng.below(n)
        } as NodeId;
        let t = rng.below(n) as NodeId;
        let r = rels[rng.skewed(34) as usize];
        if s == t || !seen.insert((s, r, t)) {
            continue;
        }
        b.add_edge(s, r, t, 1.0);
    }
    Ok(b.build().map_err(e)?.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_round_trips_a_query_graph() {
        let mut b = GraphBuilder::new();
        b.add_triple("cake", "IsA", "dessert", 1.0).unwrap();
        b.add_triple("pie", "IsA", "dessert", 1.0).unwrap();
        let g = b.build().unwrap().0;
        let q = compile("SELECT * WHERE { ?x IsA dessert }", &g).unwrap();
        let spec = spec_of(&q, "q", "g").unwrap();
        assert_eq!(spec.nodes.len(), 2);
        assert_eq!(spec.edges.len(), 1);
        let back = query_graph(&spec);
        assert_eq!(back.edges, q.edges);
        assert_eq!(back.nodes.len(), 2);
    }

    #[test]
    fn listed_workloads_keep_their_order_answers_and_limit() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("d.graph");
        std::fs::write(
            &data,
            "t 4 4\nv 0 1 2\nv 1 2 2\nv 2 1 3\nv 3 2 1\ne 0 1\ne 1 2\ne 0 2\ne 2 3\n",
        )
        .unwrap();
        let q = dir.path().join("q_1.graph");
        std::fs::write(&q, "t 2 1\nv 0 1 1\nv 1 2 1\ne 0 1\n").unwrap();
        let list = Listed {
            graphs: vec![ListedGraph {
                key: "d".into(),
                description: "tiny".into(),
                file: data,
            }],
            workloads: vec![ListedWorkload {
                name: "w".into(),
                title: "t".into(),
                graph: "d".into(),
                selection: "s".into(),
                limit: Some(7),
                queries: vec![ListedQuery {
                    id: "q_1".into(),
                    group: "g".into(),
                    file: q,
                    expected: Some(3),
                }],
            }],
        };
        let out = dir.path().join("out");
        let m = prepare_listed(&list, &out).unwrap();
        assert_eq!(m.graphs[0].nodes, 4);
        let w = &m.workloads[0];
        assert_eq!((w.limit, w.queries.len()), (Some(7), 1));
        assert_eq!(w.queries[0].expected, Some(3));
        assert_eq!(w.queries[0].nodes.len(), 2);
        let back: Manifest =
            serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn degree_graph_has_the_asked_degree() {
        let g = degree_graph(1000, 12, 1).unwrap();
        assert_eq!(g.node_count(), 1000);
        assert_eq!(g.edge_count(), 6000);
    }

    #[test]
    fn nested_subgraphs_are_nested_and_sized() {
        let g = degree_graph(500, 8, 3).unwrap();
        let subs = nested_subgraphs(&g, &[100, 300]).unwrap();
        assert_eq!(subs[0].node_count(), 100);
        assert_eq!(subs[1].node_count(), 300);
        for v in 0..100u32 {
            assert_eq!(subs[1].node_id(subs[0].node_name(v)), Some(v));
        }
        assert!(subs[0].edge_count() <= subs[1].edge_count());
    }
}
