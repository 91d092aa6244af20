//! TruST on ConceptNet-100K: planted templates are found, and exact templates score 1 with exactly
//! the exact engine's embeddings. The 200-trial version of the first test is the `trust` bench
//! (`cargo bench -p gpsense-benches --bench trust`).

use std::collections::HashSet;
use std::path::Path;
use std::sync::OnceLock;

use gpsense_benches::synth::Rng;
use gpsense_benches::trust_trials::{plant, run_trials, TrialConfig};
use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::{KnowledgeGraph, NodeId};
use gpsense_planner::compile;
use gpsense_planner::parse::Term;
use gpsense_runtime::{Engine, MatchOptions, Semantics};
use gpsense_trust::{NodeLabel, Params, Template, Trust};

fn conceptnet() -> &'static KnowledgeGraph {
    static G: OnceLock<KnowledgeGraph> = OnceLock::new();
    G.get_or_init(|| {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/conceptnet-100k/train.txt.gz");
        ingest(&[path], &IngestOptions::default(), &NoProgress)
            .expect("ingest ConceptNet-100K")
            .0
    })
}

#[test]
fn planted_templates_are_the_top_answer() {
    let g = conceptnet();
    let trust = Trust::new(g);
    let cfg = TrialConfig {
        trials: 40,
        seed: 99,
        ..TrialConfig::default()
    };
    let report = run_trials(&trust, &cfg, &Params::default());
    assert_eq!(report.trials, 40);
    assert!(
        report.rate() >= 0.95,
        "{}/{} planted matchings on top; misses:\n{}",
        report.hits,
        report.trials,
        report.misses.join("\n")
    );
}

/// The query text of a template (concepts quoted as needed, variables `?vN`).
fn query_text(t: &Template) -> String {
    let term = |i: usize| match &t.nodes[i].label {
        NodeLabel::Any => t.nodes[i].name.clone(),
        NodeLabel::Fuzzy(n) => Term::Name(n.clone()).to_query_text(),
    };
    let triples: Vec<String> = t
        .edges
        .iter()
        .map(|e| {
            let rel = Term::Name(e.relation.clone().expect("relation")).to_query_text();
            format!("{} {rel} {}", term(e.source), term(e.target))
        })
        .collect();
    format!("SELECT * WHERE {{ {} }}", triples.join(" . "))
}

/// Checks one exact template: the best TruST score is 1, the score-1 matchings are exactly the
/// exact engine's embeddings (when they fit in the answer), and nothing scores above 1. Returns
/// whether the embeddings fitted (so the sets were compared).
fn check_exact(trust: &Trust, t: &Template) -> bool {
    let g = trust.graph();
    let text = query_text(t);
    let q = compile(&text, g).unwrap_or_else(|e| panic!("{text}: {e}"));
    let opts = MatchOptions {
        semantics: Semantics::Iso,
        ..MatchOptions::default()
    };
    let (rows, _) = Engine::new(g).collect(&q, &opts).expect("exact engine");
    assert!(
        !rows.is_empty(),
        "{text}: the template was copied from the graph"
    );
    let params = Params {
        beam: 512,
        top: 512,
        ..Params::default()
    };
    let answer = trust.search(t, &params).expect("search");
    let best = &answer.matches[0];
    assert!(
        (best.score - 1.0).abs() < 1e-5,
        "{text}: best {}",
        best.score
    );
    assert!(answer.matches.iter().all(|m| m.score <= 1.0 + 1e-5));
    // Exact rows hold the variables in order of first appearance, as the template does.
    let variables: Vec<usize> = (0..t.nodes.len())
        .filter(|&i| t.nodes[i].label == NodeLabel::Any)
        .collect();
    let exact: HashSet<Vec<NodeId>> = rows.into_iter().collect();
    let perfect: HashSet<Vec<NodeId>> = answer
        .matches
        .iter()
        .filter(|m| m.score > 1.0 - 1e-5)
        .map(|m| variables.iter().map(|&i| m.nodes[i]).collect())
        .collect();
    let top_vars: Vec<NodeId> = variables.iter().map(|&i| best.nodes[i]).collect();
    assert!(exact.contains(&top_vars), "{text}: top answer is not exact");
    for m in answer.matches.iter().filter(|m| m.score > 1.0 - 1e-5) {
        for (i, n) in t.nodes.iter().enumerate() {
            if let NodeLabel::Fuzzy(name) = &n.label {
                assert_eq!(g.node_name(m.nodes[i]), name, "{text}");
            }
        }
    }
    if exact.len() < params.top {
        assert_eq!(perfect, exact, "{text}");
        return true;
    }
    false
}

#[test]
fn exact_templates_score_one_with_the_exact_engines_embeddings() {
    let g = conceptnet();
    let trust = Trust::new(g);
    let mut compared = 0;
    for text in [
        "SELECT * WHERE { ?x IsA animal . ?x AtLocation home }",
        "SELECT * WHERE { ?x HasProperty sweet . ?x IsA dessert }",
    ] {
        let (t, _) = Template::parse(text).expect("parse");
        compared += check_exact(&trust, &t) as usize;
    }
    // Templates copied from the graph (all their edges), one or two nodes turned into variables.
    let mut rng = Rng::new(5);
    let mut checked = 0;
    while checked < 6 {
        let Some(p) = plant(g, &mut rng, 3 + checked % 3, 0) else {
            continue;
        };
        let mut t = p.template.clone();
        let (s, rel, o) = &p.removed;
        t.add_edge(*s, *o, Some(rel)).expect("edge");
        let variables = 1 + rng.below(2) as usize;
        let n = t.nodes.len() as u64;
        for k in 0..variables {
            let i = rng.below(n) as usize;
            t.nodes[i].label = NodeLabel::Any;
            t.nodes[i].name = format!("?v{k}_{i}");
        }
        // Variables are numbered in order of first appearance by the parser; keep the template's
        // own order by renaming them in that order.
        reorder_variables(&mut t);
        compared += check_exact(&trust, &t) as usize;
        checked += 1;
    }
    assert!(
        compared >= 6,
        "only {compared} of 8 templates had their embeddings compared"
    );
}

/// Renames the variables `?v0, ?v1, ...` in the order they first appear in the edges, so that the
/// exact engine's columns (first appearance) and the template's variable order agree.
fn reorder_variables(t: &mut Template) {
    let mut seen: Vec<usize> = Vec::new();
    for e in &t.edges {
        for v in [e.source, e.target] {
            if t.nodes[v].label == NodeLabel::Any && !seen.contains(&v) {
                seen.push(v);
            }
        }
    }
    for (k, &v) in seen.iter().enumerate() {
        t.nodes[v].name = format!("?v{k}");
    }
    // Node order: the parser numbers nodes by first appearance too; permute the template to match.
    let mut order: Vec<usize> = Vec::new();
    for e in &t.edges {
        for v in [e.source, e.target] {
            if !order.contains(&v) {
                order.push(v);
            }
        }
    }
    let position = |v: usize| order.iter().position(|&x| x == v).expect("in order");
    let nodes = order.iter().map(|&v| t.nodes[v].clone()).collect();
    for e in &mut t.edges {
        e.source = position(e.source);
        e.target = position(e.target);
    }
    t.nodes = nodes;
}

/// TruST through the emulated device (the same kernel bodies, launched as a GPU runs them) gives
/// the CPU's ranked answer, scores equal to the bit, on ConceptNet-100K (the README's queries and
/// planted misspelt templates) and on workloads of the seed's Figure 13. Each phase computes every
/// value with the same function on both sides (a pair's similarity, one `OH` cell, a branch's
/// children and their cumulative score), so no summation order differs.
#[test]
fn the_emulated_device_gives_the_cpus_ranked_answers() {
    use gpsense_benches::trust_trials::{random_data_graph, random_template, FIGURE_13};
    use gpsense_runtime::device::host::HostDevice;
    use gpsense_trust::{Answer, TrustDevice};

    fn same(what: &str, cpu: &Answer, dev: &Answer) {
        assert!(!cpu.matches.is_empty(), "{what}: no matching");
        assert_eq!(cpu.order, dev.order, "{what}");
        assert_eq!(cpu.matches.len(), dev.matches.len(), "{what}");
        for (c, d) in cpu.matches.iter().zip(&dev.matches) {
            assert_eq!(c.nodes, d.nodes, "{what}");
            assert_eq!(c.score.to_bits(), d.score.to_bits(), "{what}");
            assert_eq!(c, d, "{what}");
        }
    }
    // Writes unchecked here (the crate's own test checks them on a small graph): the shadow map
    // would cost minutes on 78,000 nodes in a debug build.
    let emulator = || {
        let mut d = HostDevice::default();
        d.check_writes = false;
        d
    };
    let g = conceptnet();
    let trust = Trust::new(g);
    let device = TrustDevice::new(emulator(), g).expect("upload");
    let params = Params::default();
    let mut templates: Vec<Template> = [
        r#"SELECT * WHERE { "chocolate cakes" IsA ?x . ?x HasProperty sweet }"#,
        "SELECT ?x WHERE { ?x IsA animl . ?x AtLocation hom }",
    ]
    .iter()
    .map(|q| Template::parse(q).expect("parse").0)
    .collect();
    let mut rng = Rng::new(7);
    while templates.len() < 5 {
        if let Some(p) = plant(g, &mut rng, 4, 2) {
            templates.push(p.template);
        }
    }
    for t in &templates {
        let cpu = trust.search(t, &params).expect("cpu");
        let dev = trust.search_on(&device, t, &params).expect("emulated");
        same(&format!("{t:?}"), &cpu, &dev);
    }
    // Figure 13: the smallest and a mid-sized data graph, each with its smallest and largest
    // template.
    for i in [0, 3, 8, 11] {
        let row = FIGURE_13[i];
        let data = random_data_graph(row.data_nodes, row.data_edges, 1 + i as u64);
        let trust = Trust::new(&data);
        let device = TrustDevice::new(emulator(), &data).expect("upload");
        let t = random_template(
            &data,
            row.template_nodes,
            row.template_edges,
            100 + i as u64,
        );
        let cpu = trust.search(&t, &params).expect("cpu");
        let dev = trust.search_on(&device, &t, &params).expect("emulated");
        same(&format!("Figure 13 row {i}"), &cpu, &dev);
    }
}
