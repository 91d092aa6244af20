//! `gpsense trust`: inexact subgraph matching (TruST). Ranks the near matches of a query whose
//! concepts may be misspelt or absent, or of a template graph file, by name similarity and topology.

use std::io;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use gpsense_graph::ingest::{ingest, IngestOptions};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::parse::{Projection, Term};
use gpsense_planner::Query;
use gpsense_trust::{
    Answer, EdgeFound, Match, NodeLabel, NodeText, Opened, Params, Template, Trust, TrustEngine,
};

use crate::graph_source;
use crate::progress::Bar;
use crate::rows::{RowFormat, RowWriter};
use gpsense::fmt::millis;

/// The heading of the options that shape TruST's search and score.
const SEARCH: &str = "Search";

/// Options of `gpsense trust`.
#[derive(clap::Args)]
pub struct TrustArgs {
    /// The query (SPARQL basic graph pattern): concepts are fuzzy names, variables match anything,
    /// e.g. 'SELECT * WHERE { "chocolate cakes" IsA ?x . ?x HasProperty sweet }'.
    query: Option<String>,
    /// Read the query from a file.
    #[arg(short = 'f', long = "file", help_heading = crate::help::INPUT)]
    file: Option<PathBuf>,
    /// The graph for a query: a snapshot or any file `ingest` reads (default: the embedded
    /// ConceptNet-100K).
    #[arg(long, conflicts_with = "data", help_heading = crate::help::INPUT)]
    graph: Option<PathBuf>,
    /// A data graph file (snapshot, benchmark .graph, triples...), searched for --template.
    #[arg(long, requires = "template", help_heading = crate::help::INPUT)]
    data: Option<PathBuf>,
    /// A template graph file (benchmark .graph, or triples naming the nodes; a node named `?x`
    /// matches anything).
    #[arg(long, requires = "data", help_heading = crate::help::INPUT)]
    template: Option<PathBuf>,
    /// Branches kept per level of the search, 1 to 1,000,000.
    #[arg(long, default_value_t = Params::default().beam, value_parser = beam_width, help_heading = SEARCH)]
    beam: usize,
    /// Matchings printed (at most --beam).
    #[arg(long, default_value_t = Params::default().top, value_parser = beam_width, help_heading = crate::help::OUTPUT)]
    top: usize,
    /// Stop after this many milliseconds (at most a week), counted from before the name index is
    /// built and the device opened; the matchings complete by then are reported, marked as timed
    /// out (exit status 3).
    #[arg(long, value_parser = crate::parse_timeout_ms, help_heading = crate::help::LIMITS)]
    timeout_ms: Option<u64>,
    /// Memory the score tables may take (two 4-byte scores per template node and data node), e.g.
    /// 512M or 4G, at most this machine's memory. Default: a quarter of RAM.
    #[arg(long, value_parser = crate::parse_memory_budget, help_heading = crate::help::LIMITS)]
    memory_budget: Option<u64>,
    /// Weight of the name similarity in the one-hop score (the rest is the neighbourhood).
    #[arg(long, default_value_t = Params::default().alpha, help_heading = SEARCH)]
    alpha: f32,
    /// Share of an edge's score that needs its relation to match.
    #[arg(long, default_value_t = Params::default().relation_weight, help_heading = SEARCH)]
    relation_weight: f32,
    /// Names less similar than this count as dissimilar (0 compares every pair).
    #[arg(long, default_value_t = Params::default().threshold, help_heading = SEARCH)]
    threshold: f32,
    /// What template names are compared with: name, label (node label names, for the benchmark
    /// format) or auto (labels when both graphs have node labels).
    #[arg(long, default_value = "auto", help_heading = SEARCH)]
    compare: Compare,
    /// Output format of the rows.
    #[arg(long, default_value = "tsv", value_parser = crate::one_of::<RowFormat>(&crate::ROW_FORMATS), help_heading = crate::help::OUTPUT)]
    format: RowFormat,
    /// Print on stderr, per matching, how each template node and edge was matched, and the time
    /// per phase.
    #[arg(long, help_heading = crate::help::OUTPUT)]
    explain: bool,
    /// Worker threads (default: all cores; at most 4 per core).
    #[arg(long, value_parser = crate::parse_threads, help_heading = crate::help::ENGINE)]
    threads: Option<usize>,
    /// Where the search runs: auto (the GPU when one is found, else the CPU; -v says which),
    /// cpu, gpu (NVIDIA GPU), emulated (the GPU's launches run on the CPU by the host emulator).
    #[arg(long, default_value = "auto", help_heading = crate::help::ENGINE)]
    engine: TrustEngineArg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum TrustEngineArg {
    Auto,
    Cpu,
    Gpu,
    Emulated,
}

impl From<TrustEngineArg> for TrustEngine {
    fn from(e: TrustEngineArg) -> Self {
        match e {
            TrustEngineArg::Auto => TrustEngine::Auto,
            TrustEngineArg::Cpu => TrustEngine::Cpu,
            TrustEngineArg::Gpu => TrustEngine::Gpu,
            TrustEngineArg::Emulated => TrustEngine::Emulated,
        }
    }
}

/// The widest `--beam` (and `--top`): each branch holds a row of the template's width, and a
/// level buffers twice the beam's children, so this bounds the search's memory (about 100 MB for a
/// 16-node template).
const MAX_BEAM: usize = 1_000_000;

/// `--beam` and `--top`: 1 to [`MAX_BEAM`].
fn beam_width(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_BEAM).contains(&n) => Ok(n),
        _ => Err(format!("{s:?}: a whole number from 1 to {MAX_BEAM}")),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Compare {
    Auto,
    Name,
    Label,
}

/// A template with what the output needs: its columns (template nodes) and their headers.
pub(crate) struct Job {
    pub template: Template,
    pub columns: Vec<usize>,
    pub headers: Vec<String>,
    pub limit: Option<u64>,
}

pub fn run(args: TrustArgs) -> Result<()> {
    match args.threads {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build()
            .context("cannot start the worker threads")?
            .install(|| run_on_pool(&args)),
        None => run_on_pool(&args),
    }
}

fn run_on_pool(args: &TrustArgs) -> Result<()> {
    let (loaded, job, text) = match (&args.data, &args.template) {
        (Some(data), Some(template)) => {
            let loaded = graph_source::load(Some(data))?;
            let tg = load_template(template)?;
            let text = node_text(args.compare, &loaded.graph, &tg);
            (loaded, template_job(&tg, text), text)
        }
        _ => {
            let query_text = query_text(args)?;
            let (template, query) = Template::parse(&query_text)
                .map_err(|e| anyhow::anyhow!("{}", render(&e, &query_text)))?;
            let loaded = graph_source::load(args.graph.as_deref())?;
            let text = match args.compare {
                Compare::Label => NodeText::Label,
                _ => NodeText::Name,
            };
            (loaded, query_job(template, &query), text)
        }
    };
    let graph = &loaded.graph;
    let mut params = Params {
        alpha: args.alpha,
        relation_weight: args.relation_weight,
        threshold: args.threshold,
        beam: args.beam,
        top: args.top,
        timeout: args.timeout_ms.map(std::time::Duration::from_millis),
        // The limit counts the name index and the device's opening too.
        started: Some(Instant::now()),
        memory_budget: Some(
            args.memory_budget
                .unwrap_or_else(gpsense_runtime::default_memory_budget),
        ),
        cancel: None,
    };
    if let Some(limit) = job.limit {
        params.top = params.top.min(limit as usize);
    }
    if params.top == 0 {
        // LIMIT 0 asks for no rows (the header only), as SPARQL's does.
        return write_rows(graph, &job, &[], args.format, false);
    }
    let start = Instant::now();
    let trust = Trust::with_node_text(graph, text);
    let index_time = start.elapsed();
    let answer = search(args, &trust, &job.template, &params)?;
    for r in &answer.unknown_relations {
        let near = gpsense_planner::relations_near(graph, r, 3);
        let hint = if near.is_empty() {
            String::new()
        } else {
            format!(" (did you mean {}?)", near.join(", "))
        };
        crate::out::note!(
            "note: the graph has no relation {r:?}{hint}; its edges match by topology only"
        );
    }
    write_rows(graph, &job, &answer.matches, args.format, answer.timed_out)?;
    if args.explain {
        eprint!("{}", explain(graph, &job.template, &answer));
    }
    if !args.explain {
        note_unlike(&job.template, &answer.matches);
    }
    let t = answer.timings;
    let cut = if answer.timed_out {
        " (timed out: the answer is incomplete)"
    } else {
        ""
    };
    let on = answer
        .device
        .as_ref()
        .map_or(String::new(), |d| format!(" on {}", d.device));
    crate::out::note!(
        "{} matchings{cut} in {} [TruST{on}, beam {}: name index {}, similarity {}, one-hop {}, traversal {}]",
        answer.matches.len(),
        millis(start.elapsed()),
        params.beam,
        millis(index_time),
        millis(t.similarity),
        millis(t.one_hop),
        millis(t.traversal)
    );
    if answer.timed_out {
        return Err(crate::out::TimedOut.into());
    }
    Ok(())
}

/// The search on the engine `--engine` asks for. `auto` takes the GPU when one opens and passes
/// its self-check, else the CPU (saying why with -v or --explain); a device failure under `auto`
/// is answered again on the CPU, with a note.
fn search(args: &TrustArgs, trust: &Trust, t: &Template, params: &Params) -> Result<Answer> {
    let say = (args.explain || crate::out::verbose()) && !crate::out::quiet();
    let engine = TrustEngine::from(args.engine);
    let opened = match gpsense_trust::open(engine, trust.graph()) {
        Err(e) if engine == TrustEngine::Gpu => bail!("--engine gpu: {e}"),
        other => other?,
    };
    if let (
        Opened::Cpu {
            fallback: Some(why),
        },
        true,
    ) = (&opened, say)
    {
        eprintln!("note: {why}; TruST runs on the CPU");
    }
    let searched = opened.search(trust, t, params, engine == TrustEngine::Auto)?;
    if let Some(why) = &searched.fell_back {
        crate::out::note!("note: the GPU failed during the search ({why}); answered on the CPU");
    } else if let (Some(d), true) = (&searched.answer.device, say) {
        let why = match engine {
            // No GPU has timed TruST's current kernels, so there are no constants to weigh it
            // against the CPU: a GPU that opens is used.
            TrustEngine::Auto => " (auto: a GPU was found; TruST has no cost model yet)",
            _ => "",
        };
        eprintln!("TruST: on {}{why}", d.device);
    }
    Ok(searched.answer)
}

/// A note when some reported matching places a concept on a node whose name is unlike it: such a
/// concept is earned by its neighbourhood alone, and matchings rank first by the concepts they
/// match by name.
fn note_unlike(t: &Template, matches: &[Match]) {
    let concepts = t.nodes.iter().filter(|n| n.label != NodeLabel::Any).count();
    let unlike = matches.iter().filter(|m| m.resembling < concepts).count();
    if unlike > 0 {
        crate::out::note!(
            "note: {unlike} of {} matchings place a concept on a node whose name is unlike it \
             (similarity under --threshold: matched by its neighbourhood only); matchings rank \
             first by how many of the {concepts} concepts they match by name, then by score \
             (--explain shows each node's similarity)",
            matches.len()
        );
    }
}

pub(crate) fn render(e: &gpsense_trust::TrustError, text: &str) -> String {
    match e {
        gpsense_trust::TrustError::Parse(p) => p.render(text),
        other => other.to_string(),
    }
}

fn query_text(args: &TrustArgs) -> Result<String> {
    match (&args.query, &args.file) {
        (Some(t), None) => Ok(t.clone()),
        (None, Some(f)) => {
            let most = crate::input::MAX_QUERY_BYTES;
            crate::input::read_text(f, most as u64, most)
        }
        (Some(_), Some(_)) => {
            bail!("give the query either as an argument or with -f FILE, not both")
        }
        (None, None) => bail!(
            "no query: give one (SELECT * WHERE {{ ... }}), -f FILE, or --data D --template T"
        ),
    }
}

fn load_template(path: &PathBuf) -> Result<KnowledgeGraph> {
    let (g, _) = ingest(
        std::slice::from_ref(path),
        &IngestOptions::default(),
        &Bar::default(),
    )
    .with_context(|| format!("cannot read the template {}", path.display()))?;
    Ok(g)
}

fn node_text(compare: Compare, data: &KnowledgeGraph, template: &KnowledgeGraph) -> NodeText {
    match compare {
        Compare::Name => NodeText::Name,
        Compare::Label => NodeText::Label,
        Compare::Auto if data.has_node_labels() && template.has_node_labels() => NodeText::Label,
        Compare::Auto => NodeText::Name,
    }
}

/// Columns of a query: the projected variables, then the concepts (a fuzzy concept's match is part
/// of the answer).
pub(crate) fn query_job(template: Template, query: &Query) -> Job {
    let variables: Vec<usize> = match &query.projection {
        Projection::All => (0..template.nodes.len())
            .filter(|&i| template.nodes[i].label == NodeLabel::Any)
            .collect(),
        Projection::Variables(vs) => vs
            .iter()
            .filter_map(|v| {
                let name = format!("?{}", v.value);
                template.nodes.iter().position(|n| n.name == name)
            })
            .collect(),
    };
    let concepts = (0..template.nodes.len()).filter(|&i| template.nodes[i].label != NodeLabel::Any);
    let columns: Vec<usize> = variables.into_iter().chain(concepts).collect();
    let headers = columns
        .iter()
        .map(|&i| {
            let n = &template.nodes[i];
            match &n.label {
                NodeLabel::Any => n.name.trim_start_matches('?').to_owned(),
                NodeLabel::Fuzzy(_) => Term::Name(n.name.clone()).to_query_text(),
            }
        })
        .collect();
    Job {
        template,
        columns,
        headers,
        limit: query.limit,
    }
}

/// Columns of a template file: every template node, headed by its name.
fn template_job(tg: &KnowledgeGraph, text: NodeText) -> Job {
    let template = Template::from_graph(tg, text);
    let columns: Vec<usize> = (0..template.nodes.len()).collect();
    let headers = template.nodes.iter().map(|n| n.name.clone()).collect();
    Job {
        template,
        columns,
        headers,
        limit: None,
    }
}

/// The matchings as rows; `timed_out` marks them incomplete.
fn write_rows(
    g: &KnowledgeGraph,
    job: &Job,
    matches: &[Match],
    format: RowFormat,
    timed_out: bool,
) -> Result<()> {
    let mut header = vec!["score".to_owned()];
    header.extend(job.headers.iter().cloned());
    let mut writer = RowWriter::new(io::stdout(), format, &header)?.numeric(0);
    let written = (|| -> io::Result<()> {
        for m in matches {
            let score = format!("{:.4}", m.score);
            let mut row: Vec<&str> = vec![&score];
            row.extend(job.columns.iter().map(|&i| g.node_name(m.nodes[i])));
            writer.row(&row)?;
        }
        writer.end(timed_out)
    })();
    match written {
        // A closed pipe (`| head`) is the reader saying it has enough.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write the results"),
    }
}

/// Per matching: each template node with its data node, similarity and one-hop score; each template
/// edge with what joins the images.
fn explain(g: &KnowledgeGraph, t: &Template, answer: &Answer) -> String {
    let order: Vec<&str> = answer
        .order
        .iter()
        .map(|&i| t.nodes[i].name.as_str())
        .collect();
    let mut out = format!("matching order: {}\n", order.join(", "));
    let concepts = t.nodes.iter().filter(|n| n.label != NodeLabel::Any).count();
    out +=
        "ranked by the concepts matched by name (similarity at least --threshold), then by score\n";
    for (rank, m) in answer.matches.iter().enumerate() {
        out += &format!(
            "#{} score {:.4}, {} of {concepts} concepts by name\n",
            rank + 1,
            m.score,
            m.resembling
        );
        out += &explain_match(g, t, m);
    }
    if let Some(d) = &answer.device {
        let c = d.counters;
        out += &format!(
            "device: {}: {} launches, {} reads, {} allocations, {} uploads, {} bytes up, {} bytes \
             down\n",
            d.device, c.launches, c.syncs, c.allocations, c.uploads, c.bytes_up, c.bytes_down
        );
        let t = d.traversal;
        out += &format!(
            "traversal: {} levels; per level its longest branch, summed: {} candidates judged (one \
             after another with a thread per branch), in {} rounds of a warp\n",
            t.levels, t.judged, t.rounds
        );
    }
    out
}

fn explain_match(g: &KnowledgeGraph, t: &Template, m: &Match) -> String {
    let mut out = String::new();
    for (i, (n, a)) in t.nodes.iter().zip(&m.node_agreement).enumerate() {
        let unlike = if n.label != NodeLabel::Any && a.similarity <= 0.0 {
            "  (name unlike: by its neighbourhood only)"
        } else {
            ""
        };
        out += &format!(
            "  node {:<24} -> {:<24} similarity {:.3}  one-hop {:.3}{unlike}\n",
            n.name,
            g.node_name(m.nodes[i]),
            a.similarity,
            a.one_hop
        );
    }
    for (e, a) in t.edges.iter().zip(&m.edge_agreement) {
        let wanted = e.relation.as_deref().unwrap_or("?");
        let found = match a.found {
            EdgeFound::Exact(r) => format!("present ({})", g.relation_name(r)),
            EdgeFound::OtherRelation(r) => format!("other relation ({})", g.relation_name(r)),
            EdgeFound::Reversed(r) => format!("reversed only ({})", g.relation_name(r)),
            EdgeFound::Missing => "missing".to_owned(),
        };
        out += &format!(
            "  edge {} -{wanted}-> {}: {found}, {:.3}\n",
            t.nodes[e.source].name, t.nodes[e.target].name, a.score
        );
    }
    out
}
