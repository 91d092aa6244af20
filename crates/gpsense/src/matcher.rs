//! The engine a command matches with: the plain engine on a graph, or, for a compressed graph
//! (`gpsense compress`), matching on its hyper-nodes then exact expansion on the original.

use gpsense_compress::CompressError;
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::{Dialect, Prepared, QueryGraph, prepare};
use gpsense_runtime::{
    CompressedEngine, CompressedReport, Engine, ExpansionStats, MatchError, MatchOptions,
    MatchReport, RowBatch,
};
use gpsense_trust::{Opened, TrustEngine, TrustError};

use crate::Error;
use crate::source::Loaded;

/// The engine queries run on: the plain engine, or the compressed graph's (match on hyper-nodes,
/// then expand exactly through the mapping lists).
///
/// ```
/// let loaded = gpsense::Loaded::embedded()?;
/// let m = gpsense::Matcher::new(&loaded)?;
/// assert!(matches!(m, gpsense::Matcher::Plain(_)));
/// # Ok::<(), gpsense::Error>(())
/// ```
pub enum Matcher<'g> {
    /// The engine on the graph itself.
    Plain(Engine<'g>),
    /// The engine on a compressed graph.
    Compressed(CompressedEngine<'g>),
}

/// A match's report, plus what the compressed path did when it ran.
///
/// ```
/// # let loaded = gpsense::Loaded::embedded()?;
/// # let m = gpsense::Matcher::new(&loaded)?;
/// let p = m.prepare("SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }", gpsense::Dialect::Short)?;
/// let r = m.count(&p.graph, &gpsense::MatchOptions::default())?;
/// assert!(r.report.rows > 0 && r.expansion.is_none());
/// # Ok::<(), gpsense::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Reported {
    /// What the engine did.
    pub report: MatchReport,
    /// What the expansion through the mapping lists did (compressed graphs only).
    pub expansion: Option<ExpansionStats>,
}

impl<'g> Matcher<'g> {
    /// The matcher for `loaded`: compressed when it came from a `.gpsc` file.
    ///
    /// ```
    /// let loaded = gpsense::Loaded::embedded()?;
    /// let m = gpsense::Matcher::new(&loaded)?;
    /// # let _ = m;
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn new(loaded: &'g Loaded) -> Result<Self, CompressError> {
        Ok(match &loaded.compressed {
            Some(c) => Matcher::Compressed(CompressedEngine::new(&loaded.graph, c)?),
            None => Matcher::Plain(Engine::new(&loaded.graph)),
        })
    }

    /// The engine that runs the join (on the compressed graph for a compressed file): the one to
    /// open a GPU for.
    ///
    /// ```
    /// # let loaded = gpsense::Loaded::embedded()?;
    /// # let m = gpsense::Matcher::new(&loaded)?;
    /// println!("{}", m.engine().graph().node_count());
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn engine(&self) -> &Engine<'g> {
        match self {
            Matcher::Plain(e) => e,
            Matcher::Compressed(c) => c.inner(),
        }
    }

    /// The graph answers refer to (the original, for a compressed file).
    ///
    /// ```
    /// # let loaded = gpsense::Loaded::embedded()?;
    /// # let m = gpsense::Matcher::new(&loaded)?;
    /// assert_eq!(m.graph().node_name(m.graph().node_id("dog").unwrap()), "dog");
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn graph(&self) -> &'g KnowledgeGraph {
        match self {
            Matcher::Plain(e) => e.graph(),
            Matcher::Compressed(c) => c.original(),
        }
    }

    /// Matches `q`, handing projected rows to `on_rows` in batches (it returns false to stop).
    ///
    /// ```
    /// # let loaded = gpsense::Loaded::embedded()?;
    /// # let m = gpsense::Matcher::new(&loaded)?;
    /// let p = m.prepare("SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }", gpsense::Dialect::Short)?;
    /// let g = m.graph();
    /// m.run(&p.graph, &gpsense::MatchOptions::default(), &mut |batch| {
    ///     for row in batch.iter() {
    ///         println!("{}", g.node_name(row[0]));
    ///     }
    ///     true // go on
    /// })?;
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn run(
        &self,
        q: &QueryGraph,
        opts: &MatchOptions,
        on_rows: &mut (dyn FnMut(RowBatch) -> bool + Send),
    ) -> Result<Reported, MatchError> {
        match self {
            Matcher::Plain(e) => e.run(q, opts, on_rows).map(plain),
            Matcher::Compressed(c) => c.run(q, opts, on_rows).map(compressed),
        }
    }

    /// Counts the matches of `q` without listing them where the engine can.
    ///
    /// ```
    /// # let loaded = gpsense::Loaded::embedded()?;
    /// # let m = gpsense::Matcher::new(&loaded)?;
    /// let p = m.prepare("SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }", gpsense::Dialect::Short)?;
    /// let r = m.count(&p.graph, &gpsense::MatchOptions::default())?;
    /// assert!(r.report.rows > 0);
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn count(&self, q: &QueryGraph, opts: &MatchOptions) -> Result<Reported, MatchError> {
        match self {
            Matcher::Plain(e) => e.count(q, opts).map(plain),
            Matcher::Compressed(c) => c.count(q, opts).map(compressed),
        }
    }

    /// The compressed engine, for a compressed graph.
    ///
    /// ```
    /// # let loaded = gpsense::Loaded::embedded()?;
    /// # let m = gpsense::Matcher::new(&loaded)?;
    /// assert!(m.compressed().is_none());
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn compressed(&self) -> Option<&CompressedEngine<'g>> {
        match self {
            Matcher::Plain(_) => None,
            Matcher::Compressed(c) => Some(c),
        }
    }

    /// Where TruST's searches on this graph run for `kind`: for a device, the device state the
    /// matching opens for its own queries (one upload of the graph for both, TruST's searches
    /// counted among its users), unless the matching runs on a compressed graph, whose device
    /// holds that graph and not the original.
    ///
    /// ```
    /// # let loaded = gpsense::Loaded::embedded()?;
    /// # let m = gpsense::Matcher::new(&loaded)?;
    /// let on = m.open_trust(gpsense::trust::TrustEngine::Cpu)?;
    /// assert!(matches!(on, gpsense::trust::Opened::Cpu { .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_trust(&self, kind: TrustEngine) -> Result<Opened, TrustError> {
        match self {
            Matcher::Plain(e) => gpsense_trust::open_beside(kind, e),
            Matcher::Compressed(c) => gpsense_trust::open(kind, c.original()),
        }
    }

    /// Parses `text` against the graph answers refer to: `prefer`'s dialect first, then the other.
    ///
    /// ```
    /// # let loaded = gpsense::Loaded::embedded()?;
    /// # let m = gpsense::Matcher::new(&loaded)?;
    /// let p = m.prepare("SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }", gpsense::Dialect::Short)?;
    /// assert_eq!(p.dialect, gpsense::Dialect::Short);
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn prepare(&self, text: &str, prefer: Dialect) -> Result<Prepared, Error> {
        prepare(text, self.graph(), prefer).map_err(|e| Error::query(e, text))
    }
}

fn plain(report: MatchReport) -> Reported {
    Reported {
        report,
        expansion: None,
    }
}

fn compressed(r: CompressedReport) -> Reported {
    Reported {
        report: r.report,
        expansion: Some(r.expansion),
    }
}

impl gpsense_sparql::Matching for Matcher<'_> {
    fn graph(&self) -> &KnowledgeGraph {
        Matcher::graph(self)
    }

    fn run(
        &self,
        q: &QueryGraph,
        opts: &MatchOptions,
        on_rows: &mut (dyn FnMut(RowBatch) -> bool + Send),
    ) -> Result<MatchReport, MatchError> {
        Matcher::run(self, q, opts, on_rows).map(|r| r.report)
    }
}
