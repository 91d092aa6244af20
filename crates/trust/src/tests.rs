//! Unit tests on small hand-made graphs.

use std::sync::Arc;

use gpsense_graph::ingest::{ingest_bytes, Format, IngestOptions};

use super::*;

/// A graph from `head<TAB>relation<TAB>tail` lines.
fn graph(triples: &str) -> KnowledgeGraph {
    let text = format!("#head\trelation\ttail\n{triples}");
    ingest_bytes(text.as_bytes(), Format::Triples, &IngestOptions::default())
        .expect("ingest")
        .0
}

fn kitchen() -> KnowledgeGraph {
    graph(
        "chocolate cake\tIsA\tdessert\n\
         dessert\tHasProperty\tsweet\n\
         chocolate cake\tHasProperty\tsweet\n\
         lemon\tHasProperty\tsour\n\
         lemon\tIsA\tfruit\n\
         fruit\tHasProperty\tsweet\n\
         cake\tIsA\tbaked good\n\
         dessert\tAtLocation\trestaurant\n",
    )
}

fn names(g: &KnowledgeGraph, m: &Match) -> Vec<String> {
    m.nodes.iter().map(|&v| g.node_name(v).to_owned()).collect()
}

#[test]
fn misspelt_query_finds_the_intended_concepts() {
    let g = kitchen();
    let (t, _) =
        Template::parse(r#"SELECT * WHERE { "chocolate cakes" IsA ?x . ?x HasProperty sweet }"#)
            .expect("parse");
    let a = search(&g, &t, &Params::default()).expect("search");
    let best = &a.matches[0];
    assert_eq!(names(&g, best), ["chocolate cake", "dessert", "sweet"]);
    assert!(best.score < 1.0 && best.score > 0.9, "{}", best.score);
    assert!(best
        .edge_agreement
        .iter()
        .all(|e| matches!(e.found, EdgeFound::Exact(_)) && e.score == 1.0));
    let s = best.node_agreement[0].similarity;
    assert!((s - (1.0 - 1.0 / 15.0)).abs() < 1e-6, "{s}");
    // Ranked by resembling concepts, then score; every match a distinct, injective matching.
    for w in a.matches.windows(2) {
        assert!((w[0].resembling, w[0].score) >= (w[1].resembling, w[1].score));
        assert_ne!(w[0].nodes, w[1].nodes);
    }
}

#[test]
fn an_exact_template_scores_one_and_nothing_scores_more() {
    let g = kitchen();
    let (t, _) =
        Template::parse("SELECT * WHERE { lemon IsA ?f . ?f HasProperty sweet }").expect("parse");
    let a = search(&g, &t, &Params::default()).expect("search");
    assert_eq!(names(&g, &a.matches[0]), ["lemon", "fruit", "sweet"]);
    assert!((a.matches[0].score - 1.0).abs() < 1e-6);
    assert!(a.matches[1..].iter().all(|m| m.score < 1.0 - 1e-6));
}

#[test]
fn direction_and_relation_count() {
    let g = kitchen();
    // The relation is wrong: the edge still matches, with the relation part of its score lost.
    let (t, _) = Template::parse("SELECT * WHERE { lemon AtLocation fruit }").expect("parse");
    let a = search(&g, &t, &Params::default()).expect("search");
    let best = &a.matches[0];
    assert_eq!(names(&g, best), ["lemon", "fruit"]);
    assert_eq!(best.edge_agreement[0].score, 0.5);
    assert!(matches!(
        best.edge_agreement[0].found,
        EdgeFound::OtherRelation(_)
    ));
    // Reversed: the search follows the template's direction, so lemon is never reached from fruit.
    let (t, _) = Template::parse("SELECT * WHERE { fruit IsA lemon }").expect("parse");
    let a = search(&g, &t, &Params::default()).expect("search");
    assert!(a.matches.iter().all(|m| names(&g, m) != ["fruit", "lemon"]));
}

#[test]
fn unknown_relations_are_reported_and_still_matched_by_topology() {
    let g = kitchen();
    let (t, _) = Template::parse("SELECT * WHERE { lemon Tastes sour }").expect("parse");
    let a = search(&g, &t, &Params::default()).expect("search");
    assert_eq!(a.unknown_relations, ["Tastes"]);
    assert_eq!(names(&g, &a.matches[0]), ["lemon", "sour"]);
    assert_eq!(a.matches[0].edge_agreement[0].score, 0.5);
}

#[test]
fn parameters_and_templates_are_checked() {
    let g = kitchen();
    let (t, _) = Template::parse("SELECT * WHERE { lemon IsA ?x }").expect("parse");
    for bad in [
        Params {
            alpha: 1.5,
            ..Params::default()
        },
        Params {
            threshold: -0.1,
            ..Params::default()
        },
        Params {
            beam: 0,
            ..Params::default()
        },
        Params {
            top: 200,
            beam: 100,
            ..Params::default()
        },
    ] {
        assert!(matches!(
            search(&g, &t, &bad),
            Err(TrustError::BadParameter { .. })
        ));
    }
    assert_eq!(
        search(&g, &Template::new(), &Params::default()),
        Err(TrustError::EmptyTemplate)
    );
    let mut t = Template::new();
    t.add_fuzzy("x");
    assert!(matches!(
        t.add_edge(0, 3, None),
        Err(TrustError::BadEdge { .. })
    ));
    let hub = t.add_fuzzy("hub");
    for i in 0..=MAX_TEMPLATE_DEGREE {
        let leaf = t.add_any(&format!("?l{i}"));
        t.add_edge(hub, leaf, None).expect("edge");
    }
    assert!(matches!(
        search(&g, &t, &Params::default()),
        Err(TrustError::DegreeTooLarge { .. })
    ));
}

#[test]
fn disconnected_templates_are_matched_per_component() {
    let g = kitchen();
    let (t, _) =
        Template::parse("SELECT * WHERE { lemon IsA fruit . dessert AtLocation restaurant }")
            .expect("parse");
    let a = search(&g, &t, &Params::default()).expect("search");
    assert_eq!(
        names(&g, &a.matches[0]),
        ["lemon", "fruit", "dessert", "restaurant"]
    );
    assert!((a.matches[0].score - 1.0).abs() < 1e-6);
}

#[test]
fn reported_score_equals_the_beam_score() {
    // The beam's cumulative score and the score recomputed from the agreements agree.
    let g = kitchen();
    let (t, _) = Template::parse(
        "SELECT * WHERE { ?c IsA dessert . ?c HasProperty ?p . dessert HasProperty ?p }",
    )
    .expect("parse");
    let a = search(&g, &t, &Params::default()).expect("search");
    assert_eq!(
        names(&g, &a.matches[0]),
        ["chocolate cake", "dessert", "sweet"]
    );
    assert!((a.matches[0].score - 1.0).abs() < 1e-6);
}

/// WordNet's shape: synsets named `lemma/id`, the lemmas as aliases (`dog` names two synsets). The
/// root `entity` is node 0, so with no name matched it would win every tie.
fn synsets() -> KnowledgeGraph {
    let mut b = gpsense_graph::GraphBuilder::new();
    let entity = b.node("entity/3-n").expect("node");
    let canine = b.node("canine/4-n").expect("node");
    let dog = b.node("dog/1-n").expect("node");
    let frump = b.node("frump/2-n").expect("node");
    let hypernym = b.relation("hypernym").expect("relation");
    for (s, t) in [(canine, entity), (dog, canine), (frump, entity)] {
        b.add_edge(s, hypernym, t, 1.0);
    }
    for (alias, v) in [
        ("entity", entity),
        ("canine", canine),
        ("dog", dog),
        ("domestic dog", dog),
        ("dog", frump),
        ("frump", frump),
    ] {
        b.alias(alias, v).expect("alias");
    }
    b.build().expect("build").0
}

#[test]
fn a_misspelt_lemma_ranks_its_synsets_first() {
    let g = synsets();
    let mut t = Template::new();
    t.add_fuzzy("dgo");
    let a = search(&g, &t, &Params::default()).expect("search");
    // Both senses of `dog` first, at the alias's similarity; everything else below them.
    let ranked: Vec<String> = a.matches.iter().map(|m| names(&g, m).concat()).collect();
    assert_eq!(ranked[..2], ["dog/1-n", "frump/2-n"], "{ranked:?}");
    for m in &a.matches[..2] {
        let s = m.node_agreement[0].similarity;
        assert!(
            (s - 2.0 / 3.0).abs() < 1e-6,
            "the alias `dog`, not the name: {s}"
        );
    }
    assert!(a.matches[2..].iter().all(|m| m.score < a.matches[1].score));
}

#[test]
fn lemmas_and_topology_pick_the_sense() {
    let g = synsets();
    let (t, _) = Template::parse("SELECT * WHERE { dgo hypernym canine }").expect("parse");
    let a = search(&g, &t, &Params::default()).expect("search");
    assert_eq!(names(&g, &a.matches[0]), ["dog/1-n", "canine/4-n"]);
    assert_eq!(a.matches[0].node_agreement[1].similarity, 1.0);
    // The exact lemmas embed exactly.
    let (t, _) = Template::parse("SELECT * WHERE { dog hypernym canine }").expect("parse");
    let a = search(&g, &t, &Params::default()).expect("search");
    assert!(
        (a.matches[0].score - 1.0).abs() < 1e-6,
        "{}",
        a.matches[0].score
    );
}

#[test]
fn the_score_tables_stay_within_the_memory_budget() {
    let g = kitchen();
    let (t, _) = Template::parse("SELECT * WHERE { lemon IsA ?x }").expect("parse");
    let need = 2 * g.node_count() as u64 * 2 * 4;
    let tight = Params {
        memory_budget: Some(need - 1),
        ..Params::default()
    };
    match search(&g, &t, &tight) {
        Err(TrustError::MemoryBudget { bytes, .. }) => assert_eq!(bytes, need),
        other => panic!("expected the budget to refuse: {other:?}"),
    }
    let enough = Params {
        memory_budget: Some(need),
        ..Params::default()
    };
    assert!(search(&g, &t, &enough).is_ok());
}

/// A matching that earns its concept only through the neighbourhood (`bone`: similarity 0, but the
/// relation right) scores more than one whose name resembles (`chocolate`: the relation wrong),
/// yet ranks after it.
#[test]
fn a_matching_unlike_every_concept_never_outranks_one_that_resembles() {
    let g = graph(
        "chocolate\tIsA\tsweet\n\
         bone\tHasProperty\twhite\n",
    );
    let (t, _) =
        Template::parse(r#"SELECT * WHERE { "chocolate cake" HasProperty ?x }"#).expect("parse");
    let a = search(&g, &t, &Params::default()).expect("search");
    let concept = t.nodes.iter().position(|n| n.name == "chocolate cake");
    let concept = concept.expect("concept node");
    let named: Vec<&str> = a
        .matches
        .iter()
        .map(|m| g.node_name(m.nodes[concept]))
        .collect();
    assert_eq!(named[0], "chocolate", "{named:?}");
    let bone = a
        .matches
        .iter()
        .find(|m| g.node_name(m.nodes[concept]) == "bone")
        .expect("bone is still an answer");
    // By score alone (the seed's ranking) bone would come first.
    assert!(
        bone.score > a.matches[0].score,
        "{} {}",
        bone.score,
        a.matches[0].score
    );
    assert_eq!((a.matches[0].resembling, bone.resembling), (1, 0));
}

/// The emulated device (writes checked: no two threads write one element) gives the CPU's answer
/// bit for bit, with the launches and reads the pipeline promises; so it does when every level's
/// children are merged down to one run before they are placed, and with a time limit (a read per
/// level, to see it).
#[test]
fn the_emulated_device_ranks_as_the_cpu_does() {
    let g = kitchen();
    let trust = Trust::new(&g);
    let mut dev = gpsense_runtime::device::host::HostDevice::default();
    dev.check_writes = true;
    let mut device = TrustDevice::new(dev, &g).expect("upload");
    for text in [
        r#"SELECT * WHERE { "chocolate cakes" IsA ?x . ?x HasProperty sweet }"#,
        "SELECT * WHERE { lemon IsA ?f . ?f HasProperty sweet }",
        "SELECT * WHERE { ?x ?r swet . ?x AtLocation ?y . lemmon IsA ?z }",
    ] {
        let (t, _) = Template::parse(text).expect("parse");
        let levels = t.nodes.len() as u64;
        for beam in [1, 3, 128] {
            let params = Params {
                beam,
                top: beam.min(10),
                ..Params::default()
            };
            let cpu = trust.search(&t, &params).expect("cpu");
            device.place_work = crate::device::PLACE_WORK;
            let emulated = trust.search_on(&device, &t, &params).expect("emulated");
            assert_eq!(cpu.matches, emulated.matches, "{text}, beam {beam}");
            assert_eq!(cpu.order, emulated.order);
            let c = emulated.device.as_ref().expect("device run").counters;
            // Similarity: a launch per fuzzy node; one-hop: one chunk; two launches per level
            // (extend, select: the kitchen's levels need no merging). A read each for the
            // similarities, the one-hop table and the whole traversal, whose levels run without
            // the host between them.
            let fuzzy = t.nodes.iter().filter(|n| n.label != NodeLabel::Any).count() as u64;
            assert_eq!(c.launches, fuzzy + 1 + 2 * levels, "{text}");
            assert_eq!(c.syncs, 3, "{text}");
            // Four buffers for the similarities, four for the one-hop table, one for the
            // traversal.
            assert!(c.allocations <= 4 + 4 + 1, "{text}: {c:?}");
            let span = emulated.device.as_ref().expect("device run").traversal;
            assert_eq!(span.levels, levels, "{text}");
            assert!(
                span.rounds <= span.judged && span.rounds >= span.levels,
                "{span:?}"
            );

            // Every level merged down to one run: more launches, the same answer.
            device.place_work = 1;
            let merged = trust.search_on(&device, &t, &params).expect("merged");
            assert_eq!(cpu.matches, merged.matches, "{text}, beam {beam}, merged");
            let m = merged.device.as_ref().expect("device run").counters;
            if beam > 1 {
                assert!(m.launches > c.launches, "{text}: {m:?}");
            }

            let timed = Params {
                timeout: Some(std::time::Duration::from_secs(3600)),
                ..params
            };
            let limited = trust.search_on(&device, &t, &timed).expect("timed");
            assert_eq!(cpu.matches, limited.matches, "{text}, beam {beam}, timed");
            let l = limited.device.as_ref().expect("device run").counters;
            assert!(l.syncs >= 3 + levels, "{text}: {l:?}");
        }
    }
}

/// The device's memory is checked before a phase allocates: too small a budget is refused with
/// the phase named.
#[test]
fn the_device_budget_is_checked_per_phase() {
    let g = kitchen();
    let trust = Trust::new(&g);
    let dev = gpsense_runtime::device::host::HostDevice::default();
    let device = TrustDevice::new(dev, &g).expect("upload");
    let (t, _) = Template::parse("SELECT * WHERE { lemon IsA ?x }").expect("parse");
    let tables = 2 * g.node_count() as u64 * 2 * 4;
    let tight = Params {
        memory_budget: Some(tables),
        ..Params::default()
    };
    match trust.search_on(&device, &t, &tight) {
        Err(TrustError::DeviceBudget { budget, phase, .. }) => {
            assert_eq!((budget, phase), (tables, "the name similarities"))
        }
        other => panic!("expected the device budget to refuse: {other:?}"),
    }
}

/// A time limit holds on the device: the search stops between launches and says so.
#[test]
fn the_time_limit_holds_on_the_device() {
    let g = kitchen();
    let trust = Trust::new(&g);
    let device =
        TrustDevice::new(gpsense_runtime::device::host::HostDevice::default(), &g).expect("upload");
    let (t, _) = Template::parse("SELECT * WHERE { lemon IsA ?x }").expect("parse");
    let params = Params {
        timeout: Some(std::time::Duration::ZERO),
        ..Params::default()
    };
    let a = trust.search_on(&device, &t, &params).expect("search");
    assert!(a.timed_out && a.matches.is_empty(), "{a:?}");
    // No launch starts after the limit, the similarity phase's included (it once ran whole:
    // 6.8 s of a 1 ms limit on ConceptNet-100K in the emulator).
    assert_eq!(a.device.expect("device run").counters.launches, 0);
}

/// Under `auto`, a device that fails during the search (here the emulator's injected fault in
/// `trust_extend`) is answered again on the CPU, with why; asked for by name, the failure is the
/// search's error.
#[test]
fn a_device_failing_mid_search_falls_back_to_the_cpu_under_auto() {
    let g = kitchen();
    let trust = Trust::new(&g);
    let mut dev = gpsense_runtime::device::host::HostDevice::default();
    dev.fault_in = Some("trust_extend".to_owned());
    let opened = Opened::Emulated(Box::new(TrustDevice::new(dev, &g).expect("upload")));
    let (t, _) =
        Template::parse("SELECT * WHERE { lemon IsA ?f . ?f HasProperty sweet }").expect("parse");
    let params = Params::default();
    let cpu = trust.search(&t, &params).expect("cpu");
    let searched = opened.search(&trust, &t, &params, true).expect("auto");
    assert_eq!(searched.answer.matches, cpu.matches);
    let why = searched.fell_back.expect("fell back");
    assert!(why.contains("trust_extend raised the fault flag"), "{why}");
    match opened.search(&trust, &t, &params, false) {
        Err(TrustError::Device(e)) => assert!(e.to_string().contains("trust_extend"), "{e}"),
        other => panic!("expected the device's error: {other:?}"),
    }
    let fine = Opened::Cpu { fallback: None }.search(&trust, &t, &params, true);
    assert!(fine.expect("cpu").fell_back.is_none());
}

/// A branch on the device gets rooms for the children it can have, not for a whole beam: a wide
/// beam on a small graph fits a budget that a beam of rooms per branch (3 x 5,000 x 5,000 words)
/// would pass many times, and ranks as the CPU does.
#[test]
fn a_wide_beam_on_a_small_graph_fits_the_device() {
    let g = kitchen();
    let trust = Trust::new(&g);
    let device =
        TrustDevice::new(gpsense_runtime::device::host::HostDevice::default(), &g).expect("upload");
    let (t, _) =
        Template::parse("SELECT * WHERE { lemmon IsA ?f . ?f HasProperty ?p }").expect("parse");
    let params = Params {
        beam: 5_000,
        memory_budget: Some(16 << 20),
        ..Params::default()
    };
    let cpu = trust.search(&t, &params).expect("cpu");
    let on_device = trust.search_on(&device, &t, &params).expect("fits");
    assert_eq!(cpu.matches, on_device.matches);
    assert!(!cpu.matches.is_empty());
}

/// A name over 64 code points is scored on the device by the dynamic programme (the bit-parallel
/// distance holds 64), and found as on the CPU.
#[test]
fn a_long_name_is_scored_on_the_device_as_on_the_cpu() {
    let long = "chocolate cake with lemon and a sweet icing, baked in the kitchen oven";
    let g = graph(&format!("{long}\tIsA\tcake\nlemon cake\tIsA\tcake\n"));
    let trust = Trust::new(&g);
    let device =
        TrustDevice::new(gpsense_runtime::device::host::HostDevice::default(), &g).expect("upload");
    let misspelt = long.replace("lemon", "lemmon").replace("sweet", "swet");
    assert!(misspelt.chars().count() > 64);
    let text = format!(r#"SELECT * WHERE {{ "{misspelt}" IsA ?x }}"#);
    let (t, _) = Template::parse(&text).expect("parse");
    let params = Params::default();
    let cpu = trust.search(&t, &params).expect("cpu");
    let emulated = trust.search_on(&device, &t, &params).expect("emulated");
    assert_eq!(cpu.matches, emulated.matches);
    assert_eq!(names(&g, &cpu.matches[0])[0], long);
    let c = emulated.device.expect("device run").counters;
    assert!(c.launches > 3, "the similarity kernel ran: {c:?}");
}

/// The time limit counts from `Params::started` when given (the CLI's, before it builds the name
/// index and opens the device): a limit already spent by then stops the search before its
/// one-hop phase, on the CPU and on the device, where without `started` it runs whole.
#[test]
fn the_time_limit_counts_from_when_the_caller_started() {
    let g = kitchen();
    let trust = Trust::new(&g);
    let device =
        TrustDevice::new(gpsense_runtime::device::host::HostDevice::default(), &g).expect("upload");
    let (t, _) = Template::parse("SELECT * WHERE { lemon IsA ?x }").expect("parse");
    let hour = std::time::Duration::from_secs(3600);
    let spent = Params {
        timeout: Some(hour),
        started: std::time::Instant::now().checked_sub(2 * hour),
        ..Params::default()
    };
    assert!(spent.started.is_some(), "the clock goes back two hours");
    let fresh = Params {
        started: None,
        ..spent
    };
    let whole = trust.search(&t, &fresh).expect("cpu");
    assert!(!whole.timed_out && !whole.matches.is_empty(), "{whole:?}");
    let cpu = trust.search(&t, &spent).expect("cpu");
    assert!(cpu.timed_out && cpu.matches.is_empty(), "{cpu:?}");
    let on_device = trust.search_on(&device, &t, &spent).expect("device");
    assert!(on_device.timed_out && on_device.matches.is_empty());
    assert_eq!(on_device.device.expect("device run").counters.launches, 0);
}

/// A device keeps the name index's texts after its first search, so the next ones upload only
/// their candidates' ids; a search with another index (labels, not names and aliases) replaces
/// them, and every search ranks as the CPU does.
#[test]
fn the_device_keeps_the_name_index_between_searches() {
    let g = synsets();
    let by_name = Trust::new(&g);
    let by_label = Trust::with_node_text(&g, NodeText::Label);
    let device =
        TrustDevice::new(gpsense_runtime::device::host::HostDevice::default(), &g).expect("upload");
    let (t, _) = Template::parse("SELECT * WHERE { dgo hypernym canine }").expect("parse");
    let params = Params::default();
    let up = |trust: &Trust| {
        let a = trust.search_on(&device, &t, &params).expect("device");
        assert_eq!(a.matches, trust.search(&t, &params).expect("cpu").matches);
        let c = a.device.expect("device run").counters;
        (c.bytes_up, c.allocations)
    };
    let first = up(&by_name);
    let again = up(&by_name);
    let (chars, ends) = by_name.index.texts();
    let texts = 4 * (chars.len() + ends.len()) as u64;
    assert!(
        again.0 + texts <= first.0 && again.1 == first.1 - 1,
        "{first:?} then {again:?}: the texts ({texts} bytes) went up once"
    );
    let other = up(&by_label);
    assert_eq!(
        other.1, first.1,
        "another index's texts are uploaded: {other:?}"
    );
    assert_eq!(up(&by_name).1, first.1, "and the names' again");
}

/// A template node of high degree (here 12: 11.6 KB of scratch per pair) runs its one-hop table
/// in launches of as many pairs as the device budget holds, where a fixed chunk's scratch would
/// pass it; the answer is the CPU's. A budget too small for one pair is refused, naming the phase.
#[test]
fn a_high_degree_template_node_runs_its_one_hop_table_within_the_budget() {
    let triples: String = (0..15)
        .map(|i| format!("cake\tHasProperty\tproperty {i}\n"))
        .collect();
    let g = graph(&triples);
    let trust = Trust::new(&g);
    let device =
        TrustDevice::new(gpsense_runtime::device::host::HostDevice::default(), &g).expect("upload");
    let edges: Vec<String> = (0..12).map(|i| format!("?x HasProperty ?p{i}")).collect();
    let text = format!("SELECT * WHERE {{ {} }}", edges.join(" . "));
    let (t, _) = Template::parse(&text).expect("parse");
    let pairs = (t.nodes.len() * g.node_count()) as u64;
    let (fl, ul) = gpsense_kernels::trust::hop_scratch_len(12);
    let per_pair = 4 * (fl + ul) as u64;
    let budget = 256 << 10;
    assert!(
        pairs * per_pair > budget,
        "one launch's scratch would pass the budget"
    );
    let params = Params {
        memory_budget: Some(budget),
        ..Params::default()
    };
    let cpu = trust.search(&t, &params).expect("cpu");
    let on_device = trust
        .search_on(&device, &t, &params)
        .expect("within the budget");
    assert_eq!(cpu.matches, on_device.matches);
    assert!(!cpu.matches.is_empty());
    let c = on_device.device.expect("device run").counters;
    // No fuzzy node: no similarity launch; the one-hop table in several; two per level.
    let one_hop = c.launches - 2 * t.nodes.len() as u64;
    assert!(
        one_hop >= pairs * per_pair / budget,
        "{one_hop} one-hop launches"
    );
    let tight = Params {
        memory_budget: Some(per_pair / 2),
        ..Params::default()
    };
    match trust.search_on(&device, &t, &tight) {
        Err(TrustError::DeviceBudget { phase, .. }) => assert_eq!(phase, "the one-hop table"),
        other => panic!("expected the one-hop table's refusal: {other:?}"),
    }
}

/// TruST opened beside the matching engine runs on the engine's device state: no second upload
/// of the graph, and its searches are users of that device beside the matching queries (the
/// emulator, writes checked, fails a call made outside a user once users run: on a GPU it would
/// go to no user's stream).
#[test]
fn trust_beside_the_matching_shares_its_device() {
    use gpsense_runtime::{Engine, EngineKind, MatchOptions};
    let g = kitchen();
    let engine = Engine::new(&g);
    let state = engine.emulated().expect("emulator");
    let before = state.device().counters();
    let Opened::Emulated(device) = open_beside(TrustEngine::Emulated, &engine).expect("open")
    else {
        panic!("expected the emulator");
    };
    assert!(Arc::ptr_eq(device.state(), &state), "a second device state");
    assert_eq!(
        state.device().counters().uploads,
        before.uploads,
        "the graph uploaded again"
    );

    let trust = Trust::new(&g);
    let (t, _) =
        Template::parse(r#"SELECT * WHERE { "chocolate cakes" IsA ?x . ?x HasProperty sweet }"#)
            .expect("parse");
    let params = Params::default();
    let cpu = trust.search(&t, &params).expect("cpu");
    let q = gpsense_planner::compile("SELECT * WHERE { ?x IsA ?y . ?y HasProperty ?z }", &g)
        .expect("query");
    let opts = MatchOptions {
        engine: EngineKind::Emulated,
        ..MatchOptions::default()
    };
    let rows = |o: &MatchOptions| {
        let mut r = engine.collect(&q, o).expect("match").0;
        r.sort_unstable();
        r
    };
    let want = rows(&MatchOptions {
        engine: EngineKind::Dfs,
        ..opts.clone()
    });
    std::thread::scope(|s| {
        let matching = s.spawn(|| (0..20).for_each(|_| assert_eq!(rows(&opts), want)));
        for _ in 0..20 {
            let got = trust.search_on(&device, &t, &params).expect("beside");
            assert_eq!(got.matches, cpu.matches);
        }
        matching.join().expect("matching");
    });
}

/// `f` run while another user of `state`'s device holds nearly all its memory, which it gives
/// back after `ms` milliseconds.
fn beside_a_hog<D: gpsense_runtime::device::Device, R>(
    state: &gpsense_runtime::DeviceState<D>,
    ms: u64,
    f: impl FnOnce() -> R,
) -> R {
    let held = std::sync::Barrier::new(2);
    std::thread::scope(|s| {
        s.spawn(|| {
            let user = state.user();
            let free = state.device().free_memory().expect("free");
            let hog = state
                .device()
                .alloc_zeroed(free as usize - 4096)
                .expect("hog");
            held.wait();
            std::thread::sleep(std::time::Duration::from_millis(ms));
            drop(hog);
            drop(user);
        });
        held.wait();
        f()
    })
}

/// A search refused for device memory that another user of the device held waits for it to end
/// and runs then, as a matching query does; its own budget's refusal stays its answer.
#[test]
fn a_search_short_of_memory_others_hold_waits_for_them() {
    let g = kitchen();
    let trust = Trust::new(&g);
    let mut dev = gpsense_runtime::device::host::HostDevice::default();
    dev.total_memory = Some(8 << 20);
    let state = Arc::new(gpsense_runtime::DeviceState::new(dev, &g).expect("upload"));
    let device = TrustDevice::beside(state.clone(), &g).expect("beside");
    let (t, _) =
        Template::parse("SELECT * WHERE { lemon IsA ?f . ?f HasProperty sweet }").expect("parse");
    let params = Params::default();
    let cpu = trust.search(&t, &params).expect("cpu");
    let got = beside_a_hog(&state, 200, || trust.search_on(&device, &t, &params));
    assert_eq!(got.expect("after the other user").matches, cpu.matches);
    // With nobody else on the device, a refusal is the answer.
    let hog = state.device().alloc_zeroed((8 << 20) - 8192).expect("hog");
    match trust.search_on(&device, &t, &params) {
        Err(TrustError::DeviceBudget { .. }) => {}
        other => panic!("expected the device budget to refuse: {other:?}"),
    }
    drop(hog);
}

/// The name index's texts count in the similarity phase's bytes when that search uploads them:
/// a budget that a device holding them passes refuses a device that would upload them first,
/// and the refusal leaves any texts the device held in place.
#[test]
fn the_index_texts_count_in_the_budget_of_the_search_that_uploads_them() {
    // Long names, so that the texts outweigh every phase's buffers.
    let triples: String = (0..300)
        .map(|i| format!("a rather long concept name number {i:04} of the kitchen\tIsA\tlemon\n"))
        .collect();
    let g = graph(&triples);
    let trust = Trust::new(&g);
    let (t, _) = Template::parse("SELECT * WHERE { lemon IsA ?x }").expect("parse");
    let fresh = || TrustDevice::new(gpsense_runtime::device::host::HostDevice::default(), &g);
    let with = |budget: u64| Params {
        beam: 1,
        top: 1,
        memory_budget: Some(budget),
        ..Params::default()
    };
    let passes =
        |device: &TrustDevice<_>, budget| trust.search_on(device, &t, &with(budget)).is_ok();
    // The smallest budget a device that already holds the texts passes.
    let warm = fresh().expect("upload");
    assert!(passes(&warm, 1 << 30));
    let (mut lo, mut hi) = (0u64, 1u64 << 30);
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        if passes(&warm, mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let cold = fresh().expect("upload");
    match trust.search_on(&cold, &t, &with(hi)) {
        Err(TrustError::DeviceBudget { phase, bytes, .. }) => {
            assert_eq!(phase, "the name similarities");
            let texts: usize = g.node_count() * 4;
            assert!(
                bytes > hi + texts as u64,
                "{bytes} for {texts} bytes of ends"
            );
        }
        other => panic!("expected the texts' upload to be refused: {other:?}"),
    }
    assert!(passes(&cold, 1 << 30), "after the refusal");
    assert!(passes(&cold, hi), "once the device holds the texts");
}

/// The emulator with every launch slowed down (a GPU's long kernels, so that a search takes a
/// known while).
struct Slow(
    gpsense_runtime::device::host::HostDevice,
    std::time::Duration,
);

impl gpsense_runtime::device::Device for Slow {
    type Buffer = gpsense_runtime::device::host::HostBuffer;
    fn describe(&self) -> String {
        self.0.describe()
    }
    fn free_memory(&self) -> Result<u64, DeviceError> {
        self.0.free_memory()
    }
    fn alloc_zeroed(&self, bytes: usize) -> Result<Self::Buffer, DeviceError> {
        self.0.alloc_zeroed(bytes)
    }
    fn map_host_bytes(&self, bytes: &[u8]) -> Result<Self::Buffer, DeviceError> {
        self.0.map_host_bytes(bytes)
    }
    fn write_bytes(&self, b: &Self::Buffer, at: usize, bytes: &[u8]) -> Result<(), DeviceError> {
        self.0.write_bytes(b, at, bytes)
    }
    fn zero_bytes(&self, b: &Self::Buffer, at: usize, len: usize) -> Result<(), DeviceError> {
        self.0.zero_bytes(b, at, len)
    }
    fn read_bytes(&self, b: &Self::Buffer, at: usize, out: &mut [u8]) -> Result<(), DeviceError> {
        self.0.read_bytes(b, at, out)
    }
    fn address(&self, b: &Self::Buffer) -> u64 {
        self.0.address(b)
    }
    fn launch(
        &self,
        launch: &gpsense_runtime::device::Launch,
        items: u64,
    ) -> Result<(), DeviceError> {
        std::thread::sleep(self.1);
        self.0.launch(launch, items)
    }
    fn counters(&self) -> DeviceCounters {
        self.0.counters()
    }
    fn user_starts(&self) {
        self.0.user_starts();
    }
    fn user_ends(&self) {
        self.0.user_ends();
    }
}

/// A search that waited for another user's memory and tries again keeps the time limit of its
/// first try: here the other user holds the device for 700 ms of a 1 s limit, and the search
/// (9 launches of 60 ms) then has 300 ms, not a second, so the limit stops it.
#[test]
fn a_search_tried_again_keeps_its_first_time_limit() {
    let g = kitchen();
    let trust = Trust::new(&g);
    let mut dev = gpsense_runtime::device::host::HostDevice::default();
    dev.total_memory = Some(8 << 20);
    let slow = Slow(dev, std::time::Duration::from_millis(60));
    let state = Arc::new(gpsense_runtime::DeviceState::new(slow, &g).expect("upload"));
    let device = TrustDevice::beside(state.clone(), &g).expect("beside");
    let (t, _) =
        Template::parse("SELECT * WHERE { lemon IsA ?f . ?f HasProperty sweet }").expect("parse");
    let params = Params {
        timeout: Some(std::time::Duration::from_secs(1)),
        ..Params::default()
    };
    let answer = beside_a_hog(&state, 700, || trust.search_on(&device, &t, &params));
    let answer = answer.expect("search");
    assert!(answer.timed_out, "{answer:?}");
}
