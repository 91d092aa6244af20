//! The way in for a program: [`Graph`] opens a graph from any source, [`Graph::query`] takes a query
//! in either dialect with its options as a builder, and an [`Answer`] holds rows with named
//! columns. TruST ([`Graph::trust`]) and compression ([`Graph::compress`]) hang off the same type.

use std::path::Path;
use std::time::Duration;

use gpsense_compress::CompressOptions;
use gpsense_graph::KnowledgeGraph;
use gpsense_graph::ingest::{NoProgress, Progress};
use gpsense_graph::rdf::term_name;
use gpsense_planner::{Form, Prepared, Projected};
use gpsense_runtime::{EngineKind, MatchOptions, RowBatch, Semantics};
use gpsense_sparql::{Answer as Evaluated, Options, Sparql};
use gpsense_trust::TrustEngine;

use crate::reading::{Reading, read};
use crate::source::Loaded;
use crate::trusts::Trusts;
use crate::{Error, Matcher, solutions};

/// What borrows the loaded graph: its matcher, and TruST's index and devices (made on first use).
struct Engines<'g> {
    matcher: Matcher<'g>,
    trusts: Trusts<'g>,
}

self_cell::self_cell!(
    /// A loaded graph and what borrows it, kept together.
    struct Held {
        owner: Loaded,
        #[not_covariant]
        dependent: Engines,
    }
);

/// A knowledge graph ready to answer queries: the one type most programs need.
///
/// ```
/// let graph = gpsense::Graph::embedded()?; // ConceptNet-100K, built in
/// let q = "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }";
/// for row in graph.query(q).run()?.rows() {
///     println!("{}", row.get("x").unwrap_or_default());
/// }
/// # assert!(graph.query(q).count()? > 0);
/// # Ok::<(), gpsense::Error>(())
/// ```
pub struct Graph {
    held: Held,
}

impl Graph {
    /// The embedded ConceptNet-100K (Li et al. 2016, CC BY-SA 4.0).
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// assert!(graph.knowledge_graph().node_count() > 70_000);
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn embedded() -> Result<Graph, Error> {
        gpsense_runtime::look_ahead();
        Graph::from_loaded(Loaded::embedded()?)
    }

    /// Opens a snapshot (`gpsense ingest`), a compressed graph (`gpsense compress`, answered
    /// exactly through its mapping lists), or any text file `gpsense ingest` reads (triples,
    /// ConceptNet CSV, N-Triples, Turtle, RDF/XML, the benchmark `.graph` format), ingested now.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("gpsense-doc-open-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("pets.tsv");
    /// std::fs::write(&path, "cat\tIsA\tpet\ndog\tIsA\tpet\n")?;
    /// let graph = gpsense::Graph::open(&path)?;
    /// assert_eq!(graph.query("SELECT ?x WHERE { ?x IsA pet }").count()?, 2);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Graph, Error> {
        Graph::open_with(path, &NoProgress)
    }

    /// [`Graph::open`], telling `progress` how the ingest of a text file goes (see
    /// [`crate::Progress`]).
    ///
    /// ```no_run
    /// let graph = gpsense::Graph::open_with("conceptnet.csv.gz", &gpsense::NoProgress)?;
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn open_with(path: impl AsRef<Path>, progress: &dyn Progress) -> Result<Graph, Error> {
        gpsense_runtime::look_ahead();
        Graph::from_loaded(Loaded::open(Some(path.as_ref()), progress)?)
    }

    /// A graph from what [`Loaded`] brought (the CLI's way: a base IRI, ingest options).
    ///
    /// ```
    /// let graph = gpsense::Graph::from_loaded(gpsense::Loaded::embedded()?)?;
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn from_loaded(loaded: Loaded) -> Result<Graph, Error> {
        let held = Held::try_new(loaded, |l| {
            Ok::<_, Error>(Engines {
                matcher: Matcher::new(l)?,
                trusts: Trusts::default(),
            })
        })?;
        Ok(Graph { held })
    }

    /// The graph itself: nodes, relations, names, adjacency.
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let g = graph.knowledge_graph();
    /// assert!(g.node_id("dog").is_some());
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn knowledge_graph(&self) -> &KnowledgeGraph {
        &self.held.borrow_owner().graph
    }

    /// Where the graph came from, in words (a path, or the embedded default).
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// assert!(graph.origin().starts_with("ConceptNet-100K"));
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn origin(&self) -> &str {
        &self.held.borrow_owner().origin
    }

    /// A query in either dialect (standard SPARQL 1.1, or gpsense's short one), to configure and
    /// run: see [`Query`].
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let n = graph.query("SELECT ?x WHERE { ?x IsA animal }").count()?;
    /// assert!(n > 100);
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn query(&self, text: impl Into<String>) -> Query<'_> {
        Query {
            graph: self,
            text: text.into(),
            options: MatchOptions::default(),
            semantics: None,
            base: None,
        }
    }

    /// A TruST search: the best near matches of a query whose concepts may be misspelt or absent
    /// (see [`Trust`]).
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let answer = graph.trust(r#"SELECT * WHERE { "chocolate cake" IsA ?x }"#).top(3).run()?;
    /// assert!(!answer.matches.is_empty());
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn trust(&self, text: impl Into<String>) -> Trust<'_> {
        Trust {
            graph: self,
            text: text.into(),
            params: gpsense_trust::Params::default(),
            engine: TrustEngine::Cpu,
        }
    }

    /// Compresses the graph (GpSense section 5: similar nodes merged into weighted hyper-nodes,
    /// level by level); the result answers every query exactly as this graph does, and
    /// [`Graph::save`] writes it as a `.gpsc` file.
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let small = graph.compress(&gpsense::CompressOptions::default())?;
    /// let q = "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }";
    /// assert_eq!(small.query(q).count()?, graph.query(q).count()?);
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn compress(&self, options: &CompressOptions) -> Result<Graph, Error> {
        let original = self.knowledge_graph();
        let compressed =
            gpsense_compress::compress(original, options, &gpsense_compress::NoProgress)?;
        let loaded = Loaded {
            graph: original.clone(),
            compressed: Some(compressed),
            origin: format!("{} (compressed)", self.origin()),
            load_time: Duration::ZERO,
        };
        Graph::from_loaded(loaded)
    }

    /// Writes a snapshot, or a `.gpsc` file for a compressed graph (atomically).
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("gpsense-doc-save-{}.gps", std::process::id()));
    /// let graph = gpsense::Graph::embedded()?;
    /// graph.save(&path)?;
    /// let again = gpsense::Graph::open(&path)?;
    /// assert_eq!(again.knowledge_graph().node_count(), graph.knowledge_graph().node_count());
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        self.held.borrow_owner().save(path.as_ref())
    }

    /// The matcher, for what the builders do not cover (the CLI's and the endpoint's streaming).
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let compressed = graph.with_matcher(|m| m.compressed().is_some());
    /// assert!(!compressed);
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn with_matcher<R>(&self, f: impl for<'g> FnOnce(&Matcher<'g>) -> R) -> R {
        self.held.with_dependent(|_, e| f(&e.matcher))
    }
}

/// A query and its options, built by [`Graph::query`]; [`Query::run`], [`Query::count`] and
/// [`Query::explain`] answer it. A text that parses as standard SPARQL is standard SPARQL (hom,
/// unless its FILTERs make nodes differ); the short dialect is what does not parse as standard.
///
/// ```
/// use std::time::Duration;
/// use gpsense::{EngineKind, Semantics};
///
/// let graph = gpsense::Graph::embedded()?;
/// let answer = graph
///     .query("SELECT ?x ?y WHERE { ?x IsA ?y . ?y IsA animal }")
///     .engine(EngineKind::Dfs)
///     .semantics(Semantics::Iso)
///     .limit(5)
///     .timeout(Duration::from_secs(10))
///     .run()?;
/// assert_eq!(answer.columns(), ["x", "y"]);
/// assert_eq!(answer.len(), 5);
/// # Ok::<(), gpsense::Error>(())
/// ```
#[must_use = "a query does nothing until run, counted or explained"]
pub struct Query<'a> {
    graph: &'a Graph,
    text: String,
    options: MatchOptions,
    semantics: Option<Semantics>,
    base: Option<String>,
}

impl Query<'_> {
    /// The engine: `Auto` (the GPU when one is found, else the CPU), `Dfs` (the CPU search),
    /// `Gpu`, `Emulated` (the GPU pipeline run on the CPU), `Kernels`.
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let q = "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }";
    /// let on_gpu_code = graph.query(q).engine(gpsense::EngineKind::Emulated).count()?;
    /// assert_eq!(on_gpu_code, graph.query(q).engine(gpsense::EngineKind::Dfs).count()?);
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn engine(mut self, engine: EngineKind) -> Self {
        self.options.engine = engine;
        self
    }

    /// Iso (distinct query nodes match distinct data nodes) or hom (as SPARQL). Without it, a
    /// standard SPARQL query brings its own (hom unless its FILTERs make nodes differ), and the
    /// short dialect is iso.
    ///
    /// ```
    /// use gpsense::Semantics;
    /// let graph = gpsense::Graph::embedded()?;
    /// let q = "SELECT * WHERE { ?x IsA ?a . ?x IsA ?b }";
    /// let hom = graph.query(q).semantics(Semantics::Hom).count()?;
    /// let iso = graph.query(q).semantics(Semantics::Iso).count()?;
    /// assert!(hom > iso);
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn semantics(mut self, semantics: Semantics) -> Self {
        self.semantics = Some(semantics);
        self.options.semantics = semantics;
        self
    }

    /// At most `rows` rows (the query's own LIMIT and this, whichever is smaller).
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// assert_eq!(graph.query("SELECT ?x WHERE { ?x IsA animal }").limit(3).run()?.len(), 3);
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn limit(mut self, rows: u64) -> Self {
        self.options.limit = Some(rows);
        self
    }

    /// Stops after `limit`: [`Query::run`] then fails with the time limit named, and
    /// [`Query::count`] likewise (a partial answer is never passed off as whole).
    ///
    /// ```
    /// # use std::time::Duration;
    /// let graph = gpsense::Graph::embedded()?;
    /// let n = graph.query("SELECT ?x WHERE { ?x IsA animal }").timeout(Duration::from_secs(30)).count()?;
    /// # assert!(n > 0);
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.options.timeout = Some(limit);
        self
    }

    /// Memory the join may hold in partial matches before it works in batches (bytes).
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let n = graph.query("SELECT ?x WHERE { ?x IsA animal }").memory_budget(64 << 20).count()?;
    /// # assert!(n > 0);
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn memory_budget(mut self, bytes: u64) -> Self {
        self.options.memory_budget = bytes;
        self
    }

    /// Resolves relative IRIs in the query (the text is then standard SPARQL or an error).
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let q = "SELECT ?x WHERE { ?x <IsA> <animal> } LIMIT 1";
    /// let answer = graph.query(q).base("http://conceptnet.io/r/").run();
    /// # let _ = answer;
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn base(mut self, iri: impl Into<String>) -> Self {
        self.base = Some(iri.into());
        self
    }

    /// Every other option at once (threads, refinement rounds, cancellation), replacing those
    /// set so far.
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let options = gpsense::MatchOptions { single_thread: true, ..Default::default() };
    /// let n = graph.query("SELECT ?x WHERE { ?x IsA animal }").options(options).count()?;
    /// # assert!(n > 0);
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn options(mut self, options: MatchOptions) -> Self {
        self.semantics = None;
        self.options = options;
        self
    }

    /// The answer, in memory: rows with named columns (SELECT), a boolean (ASK), or triples as
    /// rows of `subject`, `predicate`, `object` (CONSTRUCT, DESCRIBE).
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let q = "PREFIX c: <http://conceptnet.io/c/en/> PREFIX r: <http://conceptnet.io/r/> ASK { c:dog r:IsA c:domestic_animal }";
    /// let yes = graph.query(q).run()?;
    /// assert_eq!(yes.boolean(), Some(true));
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn run(self) -> Result<Answer, Error> {
        let (text, base, given) = (&self.text, self.base.as_deref(), self.semantics);
        let options = &self.options;
        self.graph.with_matcher(|m| match read(m, text, base)? {
            Reading::Graph(p) => graph_answer(m, &p, &solutions::options_for(&p, options, given)),
            Reading::Algebra(q) => algebra_answer(m, *q, options, base),
        })
    }

    /// The number of solutions (rows a SELECT would give; 1 or 0 for ASK; triples for
    /// CONSTRUCT), counted without listing them where the engine can.
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let n = graph.query("SELECT * WHERE { ?x IsA ?a . ?x IsA ?b . ?x IsA ?c }").count()?;
    /// assert!(n > 1_000_000_000);
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn count(self) -> Result<u128, Error> {
        let (text, base, given) = (&self.text, self.base.as_deref(), self.semantics);
        let options = &self.options;
        self.graph.with_matcher(|m| match read(m, text, base)? {
            Reading::Graph(p) => {
                let opts = solutions::options_for(&p, options, given);
                let reported = match p.form {
                    Form::Ask => solutions::ask(m, &p, &opts)?.1,
                    Form::Select | Form::Count { .. } => solutions::count(m, &p, &opts)?,
                };
                stopped(&reported.report)?;
                Ok(reported.report.rows)
            }
            Reading::Algebra(q) => Ok(algebra_answer(m, *q, options, base)?.len() as u128),
        })
    }

    /// What `gpsense query --explain` prints: the dialect, semantics, plan, candidates, engine and
    /// times (the query is run to count its solutions).
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let text = graph.query("SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }").explain()?;
    /// assert!(text.contains("plan"));
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn explain(mut self) -> Result<String, Error> {
        self.options.explain = true;
        let (text, base, given) = (&self.text, self.base.as_deref(), self.semantics);
        let options = &self.options;
        self.graph.with_matcher(|m| match read(m, text, base)? {
            Reading::Graph(p) => {
                let opts = solutions::options_for(&p, options, given);
                let reported = solutions::count(m, &p, &opts)?;
                Ok(crate::explain::report(
                    &p.graph,
                    m.graph(),
                    &reported.report,
                ))
            }
            Reading::Algebra(q) => {
                let sparql = Sparql::new(m);
                let evaluation = sparql.evaluate_query(*q, &sparql_options(options, base))?;
                let u = &evaluation.matcher;
                Ok(format!(
                    "dialect:   standard SPARQL 1.1, full algebra\nevaluator: {}\nmatcher:   {} \
                     basic graph pattern(s){}\n",
                    u.evaluator(),
                    u.patterns,
                    if u.declined.is_empty() {
                        String::new()
                    } else {
                        format!("; left to spareval: {}", u.declined.join("; "))
                    }
                ))
            }
        })
    }
}

/// An answer in memory: named columns and rows of optional values (a value is unbound only in
/// the full evaluator's answers, e.g. under OPTIONAL), or a boolean for ASK.
///
/// Values are the graph's names: a concept's name (`dog`), a relation's (`IsA`), an IRI as
/// written, or a literal as N-Triples writes it (`"5"^^<http://www.w3.org/2001/XMLSchema#integer>`).
///
/// ```
/// let graph = gpsense::Graph::embedded()?;
/// let answer = graph.query("SELECT ?r WHERE { dog ?r pet }").run()?;
/// assert_eq!(answer.columns(), ["r"]);
/// assert!(answer.rows().any(|row| row.get("r") == Some("UsedFor")));
/// # Ok::<(), gpsense::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answer {
    columns: Vec<String>,
    rows: Vec<Vec<Option<String>>>,
    boolean: Option<bool>,
}

impl Answer {
    /// The column names, without `?`.
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let answer = graph.query("SELECT ?thing WHERE { ?thing IsA animal } LIMIT 1").run()?;
    /// assert_eq!(answer.columns(), ["thing"]);
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The rows, each reading its values by column name.
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let answer = graph.query("SELECT ?x WHERE { ?x IsA animal } LIMIT 2").run()?;
    /// let names: Vec<&str> = answer.rows().filter_map(|row| row.get("x")).collect();
    /// assert_eq!(names.len(), 2);
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn rows(&self) -> impl ExactSizeIterator<Item = Row<'_>> {
        self.rows.iter().map(|values| Row {
            columns: &self.columns,
            values,
        })
    }

    /// The number of rows (0 for ASK).
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// assert!(graph.query("SELECT ?x WHERE { ?x IsA animal }").limit(0).run()?.is_empty());
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there is no row.
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// assert!(!graph.query("SELECT ?x WHERE { ?x IsA animal }").limit(1).run()?.is_empty());
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// ASK's answer; `None` for the other forms.
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let q = "SELECT * WHERE { dog IsA pet }"; // short dialect, no variable: a yes/no question
    /// assert_eq!(graph.query(q).run()?.boolean(), Some(false));
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn boolean(&self) -> Option<bool> {
        self.boolean
    }
}

/// One row of an [`Answer`].
///
/// ```
/// let graph = gpsense::Graph::embedded()?;
/// let answer = graph.query("SELECT ?x ?y WHERE { ?x IsA ?y } LIMIT 1").run()?;
/// let row = answer.rows().next().unwrap();
/// assert_eq!(row.values().len(), 2);
/// assert!(row.get("x").is_some() && row.get("nope").is_none());
/// # Ok::<(), gpsense::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Row<'a> {
    columns: &'a [String],
    values: &'a [Option<String>],
}

impl<'a> Row<'a> {
    /// The value of column `name` (with or without `?`); `None` when unbound or no such column.
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let answer = graph.query("SELECT ?x WHERE { ?x IsA animal } LIMIT 1").run()?;
    /// let row = answer.rows().next().unwrap();
    /// assert_eq!(row.get("x"), row.get("?x"));
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn get(&self, name: &str) -> Option<&'a str> {
        let name = name.trim_start_matches('?');
        let i = self.columns.iter().position(|c| c == name)?;
        self.values[i].as_deref()
    }

    /// The values in column order.
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let answer = graph.query("SELECT ?r WHERE { dog ?r pet }").run()?;
    /// let row = answer.rows().next().unwrap();
    /// assert!(row.values()[0].is_some());
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn values(&self) -> &'a [Option<String>] {
        self.values
    }
}

/// A TruST search, built by [`Graph::trust`]: the `top` best near matches by name similarity and
/// topology, from a beam search keeping `beam` branches per level.
///
/// ```
/// let graph = gpsense::Graph::embedded()?;
/// let answer = graph
///     .trust(r#"SELECT * WHERE { "chocolate cakes" IsA ?x . ?x HasProperty sweet }"#)
///     .beam(64)
///     .top(5)
///     .run()?;
/// for m in &answer.matches {
///     let names: Vec<&str> = m.nodes.iter().map(|&v| graph.knowledge_graph().node_name(v)).collect();
///     println!("{:.3} {}", m.score, names.join(" "));
/// }
/// # assert!(answer.matches.len() <= 5);
/// # Ok::<(), gpsense::Error>(())
/// ```
#[must_use = "a search does nothing until run"]
pub struct Trust<'a> {
    graph: &'a Graph,
    text: String,
    params: gpsense_trust::Params,
    engine: TrustEngine,
}

impl Trust<'_> {
    /// Branches kept per level of the search.
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let a = graph.trust(r#"SELECT * WHERE { "dgo" IsA ?x }"#).beam(8).top(3).run()?;
    /// # let _ = a;
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn beam(mut self, branches: usize) -> Self {
        self.params.beam = branches.max(1);
        self
    }

    /// Matchings returned (at most the beam).
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let a = graph.trust(r#"SELECT * WHERE { "dgo" IsA ?x }"#).top(2).run()?;
    /// assert!(a.matches.len() <= 2);
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn top(mut self, matchings: usize) -> Self {
        self.params.top = matchings;
        self
    }

    /// Stops after `limit`; the answer then says `timed_out` and holds the matchings complete by
    /// then.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let graph = gpsense::Graph::embedded()?;
    /// let a = graph.trust(r#"SELECT * WHERE { "dgo" IsA ?x }"#).timeout(Duration::from_secs(30)).run()?;
    /// # let _ = a;
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.params.timeout = Some(limit);
        self
    }

    /// Every parameter at once (weights, threshold, memory budget), replacing those set so far.
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let params = gpsense::trust::Params { alpha: 0.7, ..Default::default() };
    /// let a = graph.trust(r#"SELECT * WHERE { "dgo" IsA ?x }"#).params(params).run()?;
    /// # let _ = a;
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn params(mut self, params: gpsense_trust::Params) -> Self {
        self.params = params;
        self
    }

    /// Where the search runs (the CPU unless set): `Auto` takes a GPU when one opens (and
    /// answers on the CPU if it fails mid-search), `Gpu` is an error without one, `Emulated` runs
    /// the device's kernels on the CPU. The graph's name index and each device are made by the
    /// first search that needs them and kept with the graph; a device holds the graph once for
    /// TruST and the matching queries alike.
    ///
    /// ```
    /// use gpsense::trust::TrustEngine;
    /// let graph = gpsense::Graph::embedded()?;
    /// let q = r#"SELECT * WHERE { "chocolate cakes" IsA ?x . ?x HasProperty sweet }"#;
    /// let cpu = graph.trust(q).run()?;
    /// let device = graph.trust(q).engine(TrustEngine::Emulated).run()?;
    /// assert_eq!(device.matches, cpu.matches);
    /// assert!(device.device.is_some());
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn engine(mut self, engine: TrustEngine) -> Self {
        self.engine = engine;
        self
    }

    /// The ranked matchings, best first: by how many concepts a matching matches by name
    /// (`resembling`), then by score.
    ///
    /// ```
    /// let graph = gpsense::Graph::embedded()?;
    /// let a = graph.trust(r#"SELECT * WHERE { "chocolate cakes" IsA ?x . ?x HasProperty sweet }"#).run()?;
    /// let rank = |m: &gpsense::trust::Match| (m.resembling, m.score);
    /// assert!(a.matches.windows(2).all(|w| rank(&w[0]) >= rank(&w[1])));
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn run(self) -> Result<gpsense_trust::Answer, Error> {
        let text = &self.text;
        let (template, _) =
            gpsense_trust::Template::parse(text).map_err(|e| trust_error(e, text))?;
        let searched = self.graph.held.with_dependent(|_, e| {
            e.trusts
                .search(&e.matcher, self.engine, &template, &self.params)
        });
        Ok(searched.map_err(|e| trust_error(e, text))?.answer)
    }
}

fn trust_error(e: gpsense_trust::TrustError, text: &str) -> Error {
    let rendered = match &e {
        gpsense_trust::TrustError::Parse(p) => p.render(text),
        other => other.to_string(),
    };
    Error::Trust { error: e, rendered }
}

/// A whole answer from the graph's own path, or the time limit named.
fn graph_answer(m: &Matcher, p: &Prepared, opts: &MatchOptions) -> Result<Answer, Error> {
    let g = m.graph();
    match &p.form {
        Form::Ask => {
            let (yes, reported) = solutions::ask(m, p, opts)?;
            stopped(&reported.report)?;
            Ok(Answer {
                boolean: Some(yes),
                ..Answer::default()
            })
        }
        Form::Count { variable, .. } => {
            let reported = solutions::count(m, p, opts)?;
            stopped(&reported.report)?;
            Ok(Answer {
                columns: vec![variable.trim_start_matches('?').to_owned()],
                rows: vec![vec![Some(reported.report.rows.to_string())]],
                boolean: None,
            })
        }
        Form::Select => {
            let q = &p.graph;
            let mut rows = Vec::new();
            let reported = solutions::select(m, p, opts, &mut |batch: RowBatch| {
                rows.extend(batch.iter().map(|row| {
                    q.projection
                        .iter()
                        .zip(row)
                        .map(|(col, &id)| {
                            Some(match col {
                                Projected::Edge(_) => g.relation_name(id as u16).to_owned(),
                                Projected::Node(_) => g.node_name(id).to_owned(),
                            })
                        })
                        .collect()
                }));
                true
            })?;
            stopped(&reported.report)?;
            Ok(Answer {
                columns: solutions::column_names(q),
                rows,
                boolean: None,
            })
        }
    }
}

/// A whole answer from the full evaluator.
fn algebra_answer(
    m: &Matcher,
    query: spargebra::Query,
    options: &MatchOptions,
    base: Option<&str>,
) -> Result<Answer, Error> {
    let sparql = Sparql::new(m);
    let evaluation = sparql.evaluate_query(query, &sparql_options(options, base))?;
    let limit = options.limit.unwrap_or(u64::MAX) as usize;
    let name = |t: &gpsense_sparql::Term| term_name(t).into_owned();
    Ok(match evaluation.answer {
        Evaluated::Boolean(yes) => Answer {
            boolean: Some(yes),
            ..Answer::default()
        },
        Evaluated::Solutions { variables, rows } => Answer {
            columns: variables.iter().map(|v| v.as_str().to_owned()).collect(),
            rows: rows
                .take(limit)
                .map(|row| Ok(row?.iter().map(|t| t.as_ref().map(name)).collect()))
                .collect::<Result<_, gpsense_sparql::SparqlError>>()?,
            boolean: None,
        },
        Evaluated::Graph(triples) => Answer {
            columns: ["subject", "predicate", "object"]
                .map(String::from)
                .to_vec(),
            rows: triples
                .take(limit)
                .map(|t| {
                    let t = t?;
                    Ok(vec![
                        Some(t.subject.to_string()),
                        Some(t.predicate.to_string()),
                        Some(t.object.to_string()),
                    ])
                })
                .collect::<Result<_, gpsense_sparql::SparqlError>>()?,
            boolean: None,
        },
    })
}

fn sparql_options(options: &MatchOptions, base: Option<&str>) -> Options {
    Options {
        base_iri: base.map(str::to_owned),
        matching: options.clone(),
    }
}

/// A timed-out match is an error here: an in-memory answer is whole or not given.
fn stopped(report: &gpsense_runtime::MatchReport) -> Result<(), Error> {
    if report.timed_out {
        return Err(Error::TimedOut);
    }
    Ok(())
}
