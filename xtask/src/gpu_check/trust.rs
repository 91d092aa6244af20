//! The seed paper's Figure 13 through `gpsense trust`, on the CPU and on the engine under test:
//! for each row the random data graph and misspelt template of `benches/examples/trust_table.rs`
//! (same sizes, same seeds), written as a snapshot and a query file, searched [`RUNS`] times by
//! each engine in its own process. Each engine's time per phase (similarity, one-hop, traversal) is
//! the median of the in-process times the binary prints; the ranked rows (scores included) must be
//! the same on both engines. The engine's column is whatever ran (`gpu` measured on the GPU,
//! `emulated` on the CPU): nothing here is estimated.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use gpsense_benches::trust_trials::{random_data_graph, random_template, FIGURE_13};
use gpsense_planner::parse::Term;
use gpsense_trust::{NodeLabel, Template};

use super::exec;
use super::Ctx;

/// Searches per engine and row; the median is reported (one with `--quick`).
pub const RUNS: usize = 3;

/// One engine's median time per phase, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Phases {
    pub similarity: f64,
    pub one_hop: f64,
    pub traversal: f64,
}

impl Phases {
    pub fn total(&self) -> f64 {
        self.similarity + self.one_hop + self.traversal
    }
}

/// A traversal's candidates judged and rounds of a warp.
pub type Span = (u64, u64);

/// One row of Figure 13 as measured here.
#[derive(Clone, Debug, PartialEq)]
pub struct TrustRow {
    pub sizes: (usize, usize, usize, usize),
    /// The seed's GPU column, one-hop plus traversal, in seconds.
    pub seed_gpu_s: f64,
    pub cpu: Option<Phases>,
    pub engine: Option<Phases>,
    /// The engine's traversal span (`--explain`'s `traversal:` line): candidates judged and rounds
    /// of a warp, each per level its longest branch's, summed.
    pub span: Option<Span>,
    /// Both engines gave the same ranked rows.
    pub agree: bool,
    /// A run that failed, and why.
    pub failure: Option<String>,
}

/// The query text of a template (concepts quoted as needed).
fn query_text(t: &Template) -> String {
    let term = |i: usize| match &t.nodes[i].label {
        NodeLabel::Any => t.nodes[i].name.clone(),
        NodeLabel::Fuzzy(n) => Term::Name(n.clone()).to_query_text(),
    };
    let triples: Vec<String> = t
        .edges
        .iter()
        .map(|e| {
            let rel = e.relation.clone().unwrap_or_else(|| "?r".into());
            format!(
                "{} {} {}",
                term(e.source),
                Term::Name(rel).to_query_text(),
                term(e.target)
            )
        })
        .collect();
    format!("SELECT * WHERE {{ {} }}", triples.join(" . "))
}

/// The phase times of a `gpsense trust` summary line (`similarity 1.2 ms, one-hop 3.4 ms,
/// traversal 5.6 ms`).
pub fn phases(stderr: &str) -> Option<Phases> {
    let line = stderr.lines().rev().find(|l| l.contains("[TruST"))?;
    let after = |key: &str| -> Option<f64> {
        let rest = &line[line.find(key)? + key.len()..];
        rest.split_whitespace().next()?.parse().ok()
    };
    Some(Phases {
        similarity: after("similarity ")?,
        one_hop: after("one-hop ")?,
        traversal: after("traversal ")?,
    })
}

/// Candidates judged and rounds of a warp from `--explain`'s `traversal: N levels; per level its
/// longest branch, summed: J candidates judged (...), in R rounds of a warp` line.
pub fn span(stderr: &str) -> Option<Span> {
    let line = stderr.lines().find(|l| l.starts_with("traversal: "))?;
    let before =
        |key: &str| -> Option<u64> { line[..line.find(key)?].rsplit(' ').next()?.parse().ok() };
    Some((before(" candidates judged")?, before(" rounds of a warp")?))
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// `RUNS` searches on `engine`: the median phases, the rows printed and, off the CPU, the
/// traversal's span (`--explain` leaves the rows as they are).
fn measure(
    ctx: &Ctx,
    graph: &Path,
    query: &Path,
    engine: &str,
) -> Result<(Phases, String, Option<Span>)> {
    let (mut runs, mut rows, mut traversal) = (Vec::new(), String::new(), None);
    for _ in 0..if ctx.quick { 1 } else { RUNS } {
        let mut cmd = std::process::Command::new(&ctx.bin);
        cmd.args(["trust", "--engine", engine, "--graph"])
            .arg(graph)
            .arg("-f")
            .arg(query);
        if engine != "cpu" {
            cmd.arg("--explain");
        }
        let out = exec::run(&mut cmd, ctx.silence())?;
        if let Some(why) = out.failure() {
            anyhow::bail!("gpsense trust --engine {engine}: {why}");
        }
        runs.push(phases(&out.stderr).context("no TruST summary line")?);
        traversal = span(&out.stderr);
        rows = out.stdout;
    }
    let med = |f: fn(&Phases) -> f64| median(runs.iter().map(f).collect());
    let p = Phases {
        similarity: med(|p| p.similarity),
        one_hop: med(|p| p.one_hop),
        traversal: med(|p| p.traversal),
    };
    Ok((p, rows, traversal))
}

/// Every row of Figure 13, files in `dir`.
pub fn run(ctx: &Ctx, dir: &Path) -> Vec<TrustRow> {
    FIGURE_13
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let mut r = TrustRow {
                sizes: (
                    row.data_nodes,
                    row.data_edges,
                    row.template_nodes,
                    row.template_edges,
                ),
                seed_gpu_s: row.gpu_one_hop + row.gpu_traversal,
                cpu: None,
                engine: None,
                span: None,
                agree: false,
                failure: None,
            };
            if let Err(e) = one_row(ctx, dir, i, &mut r) {
                r.failure = Some(format!("{e:#}"));
            }
            r
        })
        .collect()
}

fn one_row(ctx: &Ctx, dir: &Path, i: usize, r: &mut TrustRow) -> Result<()> {
    let (n, m, tn, tm) = r.sizes;
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // The seeds of `trust_table`, so that the rows are the same workloads.
    let data = random_data_graph(n, m, 1 + i as u64);
    let template = random_template(&data, tn, tm, 100 + i as u64);
    let graph = dir.join(format!("fig13-{i}.gps"));
    let query = dir.join(format!("fig13-{i}.rq"));
    data.save(&graph)?;
    fs::write(&query, query_text(&template))?;
    let (cpu, cpu_rows, _) = measure(ctx, &graph, &query, "cpu")?;
    r.cpu = Some(cpu);
    let (engine, rows, span) = measure(ctx, &graph, &query, &ctx.engine)?;
    (r.engine, r.span) = (Some(engine), span);
    r.agree = rows == cpu_rows && !rows.is_empty();
    Ok(())
}

/// The table in the report.
pub fn render(md: &mut String, rows: &[TrustRow], engine: &str) {
    use std::fmt::Write as _;
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "## TruST: the seed's Figure 13\n\n`gpsense trust` on the workloads of \
         `benches/examples/trust_table.rs` (data graph nodes / edges, template nodes / edges), the \
         median of {RUNS} searches per engine (one with --quick): similarity + one-hop + traversal in ms, as the \
         binary reports them in-process. The seed's column: its GPU (Tesla K80), one-hop + \
         traversal, in seconds. `{engine}` is measured on this machine's {engine} engine; rows \
         must agree to the score. Span: the traversal's candidates judged and its rounds of a \
         warp, each per level its longest branch's, summed (a thread per branch would judge them \
         one after another).\n"
    );
    let _ = writeln!(
        md,
        "| data | template | seed GPU | cpu ms | {engine} ms | {engine} one-hop | {engine} traversal | \
         span | agree |\n|---|---|---:|---:|---:|---:|---:|---:|---|"
    );
    let ms = |p: Option<Phases>, f: fn(&Phases) -> f64| {
        p.map_or("-".into(), |p| format!("{:.2}", f(&p)))
    };
    for r in rows {
        let (n, m, tn, tm) = r.sizes;
        let agree = match &r.failure {
            Some(why) => format!("failed: {why}"),
            None if r.agree => "yes".into(),
            None => "**no**".into(),
        };
        let span = r.span.map_or("-".into(), |(judged, rounds)| {
            format!("{judged} → {rounds}")
        });
        let _ = writeln!(
            md,
            "| {n} / {m} | {tn} / {tm} | {:.2} s | {} | {} | {} | {} | {span} | {agree} |",
            r.seed_gpu_s,
            ms(r.cpu, Phases::total),
            ms(r.engine, Phases::total),
            ms(r.engine, |p| p.one_hop),
            ms(r.engine, |p| p.traversal),
        );
    }
    md.push('\n');
}

/// Rows that failed or disagree.
pub fn problems(rows: &[TrustRow]) -> usize {
    rows.iter()
        .filter(|r| r.failure.is_some() || !r.agree)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_are_read_from_the_summary_line() {
        let err = "note: x\n3 matchings in 9.0 ms [TruST on NVIDIA H100 (sm_90), beam 128: name \
                   index 1.0 ms, similarity 1.5 ms, one-hop 2.25 ms, traversal 3.0 ms]\n";
        let p = phases(err).expect("summary");
        assert_eq!((p.similarity, p.one_hop, p.traversal), (1.5, 2.25, 3.0));
        assert!(phases("nothing").is_none());
    }

    #[test]
    fn the_span_is_read_from_the_explain_line() {
        let err = "device: x\ntraversal: 7 levels; per level its longest branch, summed: 626 \
                   candidates judged (one after another with a thread per branch), in 22 rounds \
                   of a warp\n";
        assert_eq!(span(err), Some((626, 22)));
        assert_eq!(span("no such line"), None);
    }

    #[test]
    fn a_template_becomes_the_query_it_was_made_from() {
        let mut t = Template::new();
        let a = t.add_fuzzy("chocolat cake");
        let b = t.add_any("?x");
        t.add_edge(a, b, Some("IsA")).expect("edge");
        let text = query_text(&t);
        assert_eq!(text, r#"SELECT * WHERE { "chocolat cake" IsA ?x }"#);
        assert_eq!(Template::parse(&text).expect("parse").0, t);
    }
}
