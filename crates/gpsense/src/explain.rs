//! What `--explain` prints: the semantics, the plan, candidate set sizes after each phase, and time
//! per phase.

use std::fmt::Write;

use gpsense_graph::KnowledgeGraph;
use gpsense_planner::QueryGraph;
use gpsense_runtime::MatchReport;

use crate::fmt::thousands;

/// What `--explain` prints for a query the matcher ran: dialect, semantics, plan, candidates,
/// engine, device counters and times.
///
/// ```
/// # let loaded = gpsense::Loaded::embedded()?;
/// # let m = gpsense::Matcher::new(&loaded)?;
/// let p = m.prepare("SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }", gpsense::Dialect::Short)?;
/// let r = m.count(&p.graph, &gpsense::MatchOptions { explain: true, ..Default::default() })?;
/// let text = gpsense::explain::report(&p.graph, m.graph(), &r.report);
/// assert!(text.contains("plan"));
/// # Ok::<(), gpsense::Error>(())
/// ```
pub fn report(q: &QueryGraph, g: &KnowledgeGraph, r: &MatchReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "semantics: {}", r.semantics.describe());
    let _ = writeln!(out, "engine:    {}", r.engine);
    if let Some(auto) = &r.auto {
        // Without a device, what the estimates would pick on the constants' device.
        let here = match &r.fallback {
            Some(why) if auto.pick != r.engine => format!("; dfs ran instead ({why})"),
            _ => String::new(),
        };
        let _ = writeln!(out, "engine auto: {auto}{here}");
    }
    if let Some(device) = &r.device {
        let _ = writeln!(out, "device:    {device}");
    }
    // `describe` opens with its own "query graph: ..." line.
    let described = q.describe(g);
    let mut lines = described.lines();
    let _ = writeln!(out, "{}", lines.next().unwrap_or("query graph:"));
    for l in lines {
        let _ = writeln!(out, "  {l}");
    }
    let _ = writeln!(
        out,
        "plan ({} component{}):",
        r.plan.components.len(),
        if r.plan.components.len() == 1 {
            ""
        } else {
            "s"
        }
    );
    for why in &r.plan.rationale {
        let _ = writeln!(out, "  {why}");
    }
    if r.join_plan.order != r.plan.order {
        let _ = writeln!(
            out,
            "join order (re-chosen from the candidate counts after filtering; dfs: its query DAG):"
        );
        for why in &r.join_plan.rationale {
            let _ = writeln!(out, "  {why}");
        }
    }
    let _ = writeln!(
        out,
        "candidates per query node:   after filtering   after refinement"
    );
    for &u in &r.plan.order {
        let size = |v: &Vec<usize>| v.get(u).map_or("-".to_owned(), |&n| thousands(n as u64));
        let _ = writeln!(
            out,
            "  {:<26} {:>15}   {:>16}",
            q.nodes[u].name,
            size(&r.filter.after_filter),
            size(&r.filter.after_refine)
        );
    }
    if let Some(n) = r.edge_candidates {
        let _ = writeln!(out, "edge candidates: {}", thousands(n));
    }
    if let Some(d) = &r.device_report {
        let c = &d.counters;
        // A batch's calls serve all its queries: they are not this query's alone. A query is
        // answered as soon as its answer is final: the calls are the batch's up to then.
        let whose = match d.batch {
            0 => String::new(),
            1 => " (a batch of 1 query)".to_owned(),
            n => format!(
                " (its batch of {} queries, together, up to this answer)",
                thousands(n)
            ),
        };
        let _ = writeln!(
            out,
            "device{whose}: {} launches, {} reads (each waits for the device), {} allocations, {} uploads, {} bytes up, {} bytes down; {} join level runs, {} partial matches; {} bytes of buffers kept for the next query",
            thousands(c.launches),
            thousands(c.syncs),
            thousands(c.allocations),
            thousands(c.uploads),
            thousands(c.bytes_up),
            thousands(c.bytes_down),
            thousands(d.levels),
            thousands(d.partial_matches),
            thousands(d.arena_bytes)
        );
        // Only the emulator measures the balance (`device::balance`).
        if c.warp_span > 0 {
            let _ = writeln!(
                out,
                "warp joins on a model H100 (the emulator's replay): span {} warp steps, at least {} on any schedule, {} with each warp on its own stride",
                thousands(c.warp_span),
                thousands(c.warp_span_bound),
                thousands(c.warp_span_strided)
            );
        }
    }
    if let Some(s) = &r.search {
        let _ = writeln!(
            out,
            "search: {} partial matches grown, {} sibling loops cut by failing sets, {} leaf groups counted, {} pieces of work stolen",
            thousands(s.nodes),
            thousands(s.backjumps),
            thousands(s.leaf_counts),
            thousands(s.splits)
        );
    }
    let t = &r.times;
    let ms = |d: std::time::Duration| format!("{:.3} ms", d.as_secs_f64() * 1e3);
    let _ = writeln!(
        out,
        "time: plan {}, filter {}, refine {}, edge candidates {}, join {}, total {}",
        ms(t.plan),
        ms(t.filter),
        ms(t.refine),
        ms(t.edge_candidates),
        ms(t.join),
        ms(t.total)
    );
    out
}
