//! Partitioned graphs: every part holds exactly its nodes' lists, names, labels and aliases; files
//! round-trip, and damaged or crafted files are errors that name the problem, never panics.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use gpsense_dist::partition::{local, local_count_of, KIND_PARTITION};
use gpsense_dist::{
    fingerprint, load_part, owner, part_path, write_parts, DistError, Partition, Vocab,
};
use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::{snapshot, Aliases, Dictionary, GraphBuilder, KnowledgeGraph, NodeId};
use gpsense_planner::PlannerStats;
use gpsense_runtime::layout::DataShape;
use gpsense_runtime::Engine;

fn dataset(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets")
        .join(rel)
}

fn load(files: &[&str]) -> KnowledgeGraph {
    let paths: Vec<PathBuf> = files.iter().map(|f| dataset(f)).collect();
    ingest(&paths, &IngestOptions::default(), &NoProgress)
        .unwrap_or_else(|e| panic!("{files:?}: {e}"))
        .0
}

fn hprd() -> &'static KnowledgeGraph {
    static G: OnceLock<KnowledgeGraph> = OnceLock::new();
    G.get_or_init(|| load(&["subgraph-matching/hprd-study/data_graph/HPRD.graph"]))
}

fn conceptnet() -> &'static KnowledgeGraph {
    static G: OnceLock<KnowledgeGraph> = OnceLock::new();
    G.get_or_init(|| load(&["conceptnet-100k/train.txt.gz"]))
}

fn wordnet() -> &'static KnowledgeGraph {
    static G: OnceLock<KnowledgeGraph> = OnceLock::new();
    G.get_or_init(|| {
        load(&[
            "wordnet30/wn30_synset.nodes.tsv.gz",
            "wordnet30/wn30_synset.lemmas.tsv.gz",
            "wordnet30/wn30_synset.edges.tsv.gz",
        ])
    })
}

/// Seven nodes, three relations, node labels, a self-loop, parallel edges with different
/// relations, aliases naming several nodes (one of them also a node's own name), and an isolated
/// node.
fn small() -> KnowledgeGraph {
    let mut b = GraphBuilder::new();
    for (h, r, t) in [
        ("dog", "IsA", "animal"),
        ("cat", "IsA", "animal"),
        ("dog", "AtLocation", "home"),
        ("cat", "AtLocation", "home"),
        ("dog", "RelatedTo", "cat"),
        ("cat", "RelatedTo", "dog"),
        ("dog", "IsA", "pet"),
        ("dog", "RelatedTo", "dog"),
        ("pet", "IsA", "animal"),
        ("pet", "RelatedTo", "animal"),
    ] {
        b.add_triple(h, r, t, 1.0).unwrap();
    }
    let lonely = b.node("lonely").unwrap();
    let puppy = b.node("puppy").unwrap();
    for (name, label) in [
        ("dog", "N"),
        ("cat", "N"),
        ("animal", "N"),
        ("home", "place"),
        ("pet", "N"),
        ("lonely", "A"),
        ("puppy", "N"),
    ] {
        let v = b.existing_node(name).unwrap();
        b.set_node_label(v, label).unwrap();
    }
    let (dog, cat, pet) = (
        b.existing_node("dog").unwrap(),
        b.existing_node("cat").unwrap(),
        b.existing_node("pet").unwrap(),
    );
    for (alias, v) in [
        ("canine", dog),
        ("canine", puppy),
        ("feline", cat),
        ("companion", dog),
        ("companion", cat),
        ("companion", pet),
        ("pet", dog), // also a node's own name
        ("alone", lonely),
    ] {
        b.alias(alias, v).unwrap();
    }
    b.build().unwrap().0
}

/// Everything a part must agree on with the graph it was cut from.
fn check_cut(g: &KnowledgeGraph, parts: u32) -> Vec<Partition> {
    let ps = Partition::cut_all(g, parts).unwrap();
    assert_eq!(ps.len(), parts as usize);
    let n = g.node_count();
    let fp = fingerprint(g);
    for (i, p) in ps.iter().enumerate() {
        assert_eq!((p.part, p.parts, p.fingerprint), (i as u32, parts, fp));
        assert_eq!(p.vocab, ps[0].vocab);
        p.validate(Path::new("test")).unwrap();
        assert_eq!(p.local_count(), local_count_of(n as u32, p.part, parts));
    }
    let total: usize = ps.iter().map(|p| p.local_count()).sum();
    assert_eq!(total, n);
    let edges: usize = ps.iter().map(|p| p.out.targets.len()).sum();
    assert_eq!(edges, g.edge_count());
    let edges: usize = ps.iter().map(|p| p.inc.targets.len()).sum();
    assert_eq!(edges, g.edge_count());
    for v in 0..n as NodeId {
        let p = &ps[owner(v, parts) as usize];
        let l = local(v, parts);
        assert!(p.owns(v));
        assert!(ps.iter().filter(|q| q.owns(v)).count() == 1);
        assert_eq!(p.global(l), v);
        assert_eq!(p.name(v), g.node_name(v));
        assert_eq!(p.node_label(v), g.node_label(v));
        assert_eq!(p.degree(v), g.degree(v));
        for (adj, csr, local_csr) in [
            (p.out_adj(), g.out(), &p.out),
            (p.inc_adj(), g.inc(), &p.inc),
        ] {
            let (targets, labels) = adj.list(l);
            let (want_t, want_l) = csr.neighbours(v);
            assert_eq!((targets, labels), (want_t, want_l), "node {v}");
            if g.has_node_labels() {
                let (s, e) = adj.range(l);
                let tl: Vec<u32> = want_t.iter().map(|&t| g.node_label(t)).collect();
                assert_eq!(&local_csr.target_labels[s..e], &tl[..]);
            } else {
                assert!(local_csr.target_labels.is_empty());
            }
        }
    }
    assert!(!ps[0].owns(n as NodeId));
    ps
}

fn check_vocab(g: &KnowledgeGraph) {
    let v = Vocab::of(g);
    let stats = PlannerStats::new(g);
    assert_eq!(v.node_count as u64, stats.node_count());
    assert_eq!(v.edge_count, stats.edge_count());
    assert_eq!(v.relations, *g.relations());
    assert_eq!(v.node_label_names, *g.node_label_names());
    assert_eq!(v.node_labels, g.has_node_labels());
    for r in 0..g.relation_count() {
        let r16 = r as u16;
        assert_eq!(v.relation_edges[r], stats.relation_frequency(r16));
        assert_eq!(v.relation_sources[r], stats.relation_endpoints(r16, true));
        assert_eq!(v.relation_targets[r], stats.relation_endpoints(r16, false));
    }
    for (l, &f) in v.label_frequency.iter().enumerate() {
        assert_eq!(f, stats.label_frequency(l as u32));
    }
    let engine = Engine::new(g);
    assert_eq!(v.symmetric, DataShape::of(&engine.view()).symmetric);
}

/// The parts' answers to `nodes_named`, merged: the graph's answer.
fn union_named(ps: &[Partition], name: &str) -> Vec<NodeId> {
    let mut all: Vec<NodeId> = ps.iter().flat_map(|p| p.nodes_named(name)).collect();
    for p in ps {
        let mine = p.nodes_named(name);
        assert!(mine.windows(2).all(|w| w[0] < w[1]), "{name}: {mine:?}");
        assert!(mine.iter().all(|&v| p.owns(v)));
    }
    all.sort_unstable();
    all
}

/// The graph's arrays and names, as the parts' heap bytes count them.
fn graph_bytes(g: &KnowledgeGraph) -> usize {
    g.out().heap_bytes() + g.inc().heap_bytes() + 4 * g.node_labels().len() + g.stats().name_bytes
}

#[test]
fn small_graph_parts_hold_their_nodes() {
    let g = small();
    check_vocab(&g);
    for parts in 1..=8 {
        let ps = check_cut(&g, parts);
        for name in [
            "dog",
            "cat",
            "pet",
            "canine",
            "companion",
            "feline",
            "alone",
            "lonely",
            "nothing",
            "",
        ] {
            assert_eq!(union_named(&ps, name), g.nodes_named(name), "{name}");
        }
    }
    // More parts than nodes: the last parts are empty and still valid.
    let ps = check_cut(&g, 10);
    assert_eq!(ps[9].local_count(), 0);
    assert!(ps[9].nodes_named("dog").is_empty());
    assert!(ps[9].suggestion_candidates("dog", 3).is_empty());
}

#[test]
fn hprd_parts_hold_their_nodes() {
    let g = hprd();
    check_vocab(g);
    assert!(Vocab::of(g).symmetric && Vocab::of(g).node_labels);
    for parts in [1, 2, 3, 4] {
        let ps = check_cut(g, parts);
        let sum: usize = ps.iter().map(|p| p.heap_bytes()).sum();
        // Beside the graph's arrays: each target's node label, and the vocabulary in every part.
        let expected = graph_bytes(g)
            + 4 * 2 * g.edge_count()
            + (parts as usize - 1) * Vocab::of(g).heap_bytes();
        let ratio = sum as f64 / expected as f64;
        assert!(
            (0.85..1.15).contains(&ratio),
            "{parts} parts: {sum} bytes, expected about {expected}"
        );
    }
}

#[test]
fn conceptnet_parts_hold_their_nodes_and_suggest_what_the_graph_does() {
    let g = conceptnet();
    check_vocab(g);
    for parts in [1, 2, 4] {
        let ps = check_cut(g, parts);
        let sum: usize = ps.iter().map(|p| p.heap_bytes()).sum();
        let expected = graph_bytes(g) + (parts as usize - 1) * Vocab::of(g).heap_bytes();
        let ratio = sum as f64 / expected as f64;
        assert!(
            (0.85..1.15).contains(&ratio),
            "{parts} parts: {sum} bytes, expected about {expected}"
        );
        for name in ["dog", "ice cream", "animal", "no such concept"] {
            assert_eq!(union_named(&ps, name), g.nodes_named(name), "{name}");
        }
        // Without aliases a name ranks the same in its part as in the graph, so the parts' top 5
        // hold the graph's top 5, and ranking them together gives the graph's suggestions.
        for wanted in [
            "dgo",
            "chocolate cakes",
            "animl",
            "hose",
            "kittne",
            "zzzzzzzzzz",
        ] {
            let candidates: Vec<(String, u64)> = ps
                .iter()
                .flat_map(|p| p.suggestion_candidates(wanted, 5))
                .collect();
            for (name, popularity) in &candidates {
                let v = g.node_id(name).unwrap();
                assert_eq!(*popularity, g.degree(v) as u64, "{name}");
            }
            let merged = gpsense_planner::nearest_names(
                wanted,
                candidates.iter().map(|(n, p)| (n.as_str(), *p)),
                5,
            );
            assert_eq!(
                merged,
                gpsense_planner::concept_names(g, wanted, 5),
                "{wanted}"
            );
        }
    }
}

#[test]
fn wordnet_aliases_are_split_by_owner() {
    let g = wordnet();
    assert!(!g.aliases().is_empty());
    for parts in [2, 3] {
        let ps = Partition::cut_all(g, parts).unwrap();
        for p in &ps {
            p.validate(Path::new("wordnet")).unwrap();
        }
        for (i, (name, _)) in g.aliases().iter().enumerate() {
            if i % 97 == 0 || name == "dog" {
                assert_eq!(union_named(&ps, name), g.nodes_named(name), "{name}");
            }
        }
        assert!(g.nodes_named("dog").len() > 1);
        let with_alias: usize = ps.iter().map(|p| p.aliases.names().len()).sum();
        assert!(with_alias >= g.aliases().names().len());
        // An alias's popularity is the summed degree of the part's nodes it names.
        let p = &ps[0];
        for (name, popularity) in p.suggestion_candidates("dgo", 10) {
            let want: u64 = if p.names.get(&name).is_some() {
                p.nodes_named(&name)
                    .into_iter()
                    .filter(|&v| p.name(v) == name)
                    .map(|v| p.degree(v) as u64)
                    .sum()
            } else {
                p.nodes_named(&name)
                    .iter()
                    .map(|&v| p.degree(v) as u64)
                    .sum()
            };
            assert_eq!(popularity, want, "{name}");
        }
    }
}

#[test]
fn bad_part_numbers_are_setup_errors() {
    let g = small();
    for (part, parts) in [(0, 0), (2, 2), (5, 3)] {
        let e = Partition::cut(&g, &Vocab::of(&g), 0, part, parts).unwrap_err();
        assert!(matches!(e, DistError::Setup(_)), "{e}");
        assert!(e.to_string().contains("part"), "{e}");
    }
    assert!(Partition::cut_all(&g, 0).is_err());
    let other = hprd();
    let e = Partition::cut(&g, &Vocab::of(other), 0, 0, 2).unwrap_err();
    assert!(e.to_string().contains("not the graph's"), "{e}");
}

#[test]
fn files_round_trip_and_load_by_part() {
    let g = hprd();
    let dir = tempfile::tempdir().unwrap();
    let paths = write_parts(g, 3, dir.path()).unwrap();
    let ps = Partition::cut_all(g, 3).unwrap();
    for (i, path) in paths.iter().enumerate() {
        assert_eq!(*path, part_path(dir.path(), i as u32, 3));
        assert!(path.ends_with(format!("part-{i}-of-3.gpsp")));
        let loaded = Partition::load(path).unwrap();
        assert_eq!(loaded, ps[i]);
        assert_eq!(load_part(dir.path(), i as u32, 3).unwrap(), ps[i]);
        assert_eq!(
            Partition::from_bytes(&ps[i].to_bytes().unwrap(), path).unwrap(),
            ps[i]
        );
    }
    // save/load of one part, into a directory that write_parts creates when missing.
    let nested = dir.path().join("a/b");
    write_parts(&small(), 2, &nested).unwrap();
    let p = load_part(&nested, 1, 2).unwrap();
    let again = dir.path().join("again.gpsp");
    p.save(&again).unwrap();
    assert_eq!(Partition::load(&again).unwrap(), p);
}

#[test]
fn a_missing_part_names_what_the_directory_holds() {
    let dir = tempfile::tempdir().unwrap();
    write_parts(&small(), 4, dir.path()).unwrap();
    let e = load_part(dir.path(), 0, 2).unwrap_err().to_string();
    for needle in [
        "part-0-of-2.gpsp",
        "part-0-of-4.gpsp, part-1-of-4.gpsp, part-2-of-4.gpsp, part-3-of-4.gpsp",
        "cut for 4 processes, not 2",
        "gpsense partition GRAPH -n 2 -o",
    ] {
        assert!(e.contains(needle), "{needle:?} not in {e}");
    }
    // An incomplete cut.
    std::fs::remove_file(part_path(dir.path(), 3, 4)).unwrap();
    let e = load_part(dir.path(), 3, 4).unwrap_err().to_string();
    assert!(e.contains("its cut for 4 processes is incomplete"), "{e}");
    // An empty directory, and none at all.
    let empty = tempfile::tempdir().unwrap();
    let e = load_part(empty.path(), 0, 1).unwrap_err().to_string();
    assert!(
        e.contains("holds no part files") && e.contains("-n 1 -o"),
        "{e}"
    );
    let e = load_part(&empty.path().join("nope"), 0, 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a readable directory"), "{e}");
    // A file renamed to another part's name.
    std::fs::copy(part_path(dir.path(), 1, 4), part_path(dir.path(), 3, 4)).unwrap();
    let e = load_part(dir.path(), 3, 4).unwrap_err().to_string();
    assert!(e.contains("holds part 1 of 4, not part 3 of 4"), "{e}");
    assert!(load_part(dir.path(), 4, 4).is_err());
}

/// The error of loading `bytes` as a partition file.
fn load_error(bytes: &[u8]) -> String {
    match Partition::from_bytes(bytes, Path::new("crafted.gpsp")) {
        Ok(_) => panic!("a damaged partition loaded"),
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains("crafted.gpsp"), "{text}");
            text
        }
    }
}

/// A change to a valid partition that makes it invalid.
type Mutation = Box<dyn Fn(&mut Partition)>;

/// The error of a partition mutated by `f`, re-encoded with a valid header and checksum.
fn crafted(p: &Partition, f: impl FnOnce(&mut Partition)) -> String {
    let mut p = p.clone();
    f(&mut p);
    let bytes = snapshot::encode(&p, KIND_PARTITION).unwrap();
    let e = load_error(&bytes);
    match Partition::from_bytes(&bytes, Path::new("crafted.gpsp")) {
        Err(DistError::BadPartition { .. }) => {}
        other => panic!("not a BadPartition: {other:?}"),
    }
    e
}

#[test]
fn damaged_and_crafted_files_are_errors_naming_the_problem() {
    let g = small();
    let ps = Partition::cut_all(&g, 2).unwrap();
    let p = &ps[0];
    let bytes = p.to_bytes().unwrap();
    assert!(load_error(&bytes[..bytes.len() - 10]).contains("truncated"));
    assert!(load_error(&bytes[..20]).contains("truncated"));
    let mut flipped = bytes.clone();
    let at = flipped.len() - 5;
    flipped[at] ^= 0x40;
    assert!(load_error(&flipped).contains("checksum"));
    let graph_file = g.to_snapshot_bytes().unwrap();
    assert!(load_error(&graph_file).contains("kind 1, expected kind 3"));

    let n = p.vocab.node_count;
    let cases: Vec<(&str, Mutation)> = vec![
        (
            "target 7 out of range",
            Box::new(move |p| p.out.targets[0] = n),
        ),
        (
            "in-lists: target",
            Box::new(move |p| p.inc.targets[0] = n + 5),
        ),
        ("relation 3 out of range", Box::new(|p| p.out.labels[0] = 3)),
        ("not sorted", Box::new(|p| p.out.targets.swap(0, 1))),
        ("offsets decrease", Box::new(|p| p.out.offsets[1] = 100)),
        (
            "offsets end at",
            Box::new(|p| {
                p.out.targets.pop();
                p.out.labels.pop();
                p.out.target_labels.pop();
            }),
        ),
        (
            "offsets for",
            Box::new(|p| {
                p.out.offsets.pop();
            }),
        ),
        ("do not start at 0", Box::new(|p| p.out.offsets[0] = 1)),
        (
            "target labels for",
            Box::new(|p| p.out.target_labels.clear()),
        ),
        (
            "target node label 9 out of range",
            Box::new(|p| p.inc.target_labels[0] = 9),
        ),
        (
            "node labels for",
            Box::new(|p| {
                p.node_labels.pop();
            }),
        ),
        (
            "node label 4 out of range",
            Box::new(|p| p.node_labels[0] = 4),
        ),
        (
            "node names, but part 0 of 2",
            Box::new(|p| p.vocab.node_count += 2),
        ),
        ("0 parts", Box::new(|p| p.parts = 0)),
        ("part 2 of 2", Box::new(|p| p.part = 2)),
        (
            "relation edges counts",
            Box::new(|p| {
                p.vocab.relation_edges.pop();
            }),
        ),
        (
            "relation targets counts",
            Box::new(|p| p.vocab.relation_targets.push(1)),
        ),
        (
            "node-label counts",
            Box::new(|p| p.vocab.label_frequency.push(1)),
        ),
        (
            "which part 0 of 2 does not own",
            Box::new(|p| {
                let mut names = Dictionary::new();
                let id = names.intern("stranger").unwrap();
                p.aliases = Aliases::from_pairs(names, vec![(id, 1)]);
            }),
        ),
        (
            "aliases: a node out of range",
            Box::new(move |p| {
                let mut names = Dictionary::new();
                let id = names.intern("stranger").unwrap();
                p.aliases = Aliases::from_pairs(names, vec![(id, n + 2)]);
            }),
        ),
        (
            "aliases: a name without nodes",
            Box::new(|p| {
                let mut names = Dictionary::new();
                names.intern("empty").unwrap();
                p.aliases = Aliases::from_pairs(names, vec![]);
            }),
        ),
    ];
    for (needle, f) in cases {
        let e = crafted(p, f);
        assert!(e.contains(needle), "{needle:?} not in {e}");
    }
    // Names of another part's length: one name too many.
    let e = crafted(p, |p| {
        p.names.intern("extra").unwrap();
    });
    assert!(e.contains("node names"), "{e}");
}

#[test]
fn every_truncation_and_flip_is_an_error() {
    let g = small();
    let bytes = Partition::cut_all(&g, 3).unwrap()[1].to_bytes().unwrap();
    for len in 0..bytes.len() {
        load_error(&bytes[..len]);
    }
    for at in 0..bytes.len() {
        let mut b = bytes.clone();
        b[at] ^= 1;
        load_error(&b);
    }
}

#[test]
fn fingerprints_tell_graphs_apart() {
    let g = small();
    assert_eq!(fingerprint(&g), fingerprint(&small()));
    assert_ne!(fingerprint(&g), fingerprint(hprd()));
    let mut b = GraphBuilder::new();
    for (h, r, t) in g.edges() {
        b.add_triple(g.node_name(h), g.relation_name(r), g.node_name(t), 1.0)
            .unwrap();
    }
    // The same triples without the node labels and aliases.
    assert_ne!(fingerprint(&g), fingerprint(&b.build().unwrap().0));
}
