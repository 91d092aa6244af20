//! Running a plan: each operator gives a table. A join's right side that is one triple pattern
//! or a path is looked up per left row (the CSR by bound subject or object, as an index would);
//! any other right side starts from the left's values (the matcher's concept sets: a semi-join)
//! and is joined by hashing on the shared columns bound in every row of both.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use gpsense_planner::NodeKind;
use gpsense_runtime::{MatchError, RowBatch, Semantics};
use oxrdf::Variable;

use super::expr::{key_order, Env, Ex, SortKey};
use super::path::Walker;
use super::plan::{Node, Op, Pos};
use super::{group, Ctx, Decoded, FxMap, Table, UNBOUND};
use crate::{Matching, SparqlError};

/// Values a variable can take on the other side of a join (sorted): rows with another value
/// would join nothing.
pub(crate) type Seeds = HashMap<Variable, Vec<u32>>;

type Out = Result<Option<Table>, SparqlError>;

pub(crate) fn run<M: Matching + ?Sized>(ctx: &Ctx<'_, '_, M>, n: &Node, seeds: &Seeds) -> Out {
    let t = match &n.op {
        Op::Unit => {
            let mut t = Table::new(0);
            t.rows = 1;
            t
        }
        Op::Empty => Table::new(n.vars.len()),
        Op::Scan(pos) => scan_alone(ctx, n, *pos, seeds)?,
        Op::Bgp {
            graph,
            relation_columns,
        } => match matched(ctx, n, graph, relation_columns, seeds)? {
            Some(t) => t,
            None => return Ok(None),
        },
        Op::Path {
            subject,
            path,
            object,
        } => {
            // Both ends free and a zero-length path: every term of the graph, which spareval
            // enumerates its own way.
            if free_ends(*subject, *object, path, |_| false) {
                return Ok(None);
            }
            let empty = Table::new(0);
            let mut out = Table::new(n.vars.len());
            let looked = Lookup::Path(*subject, path, *object);
            let seeded = seeded_starts(n, *subject, seeds);
            lookup(
                ctx,
                &empty,
                &[],
                0,
                &looked,
                n.vars.len(),
                seeded.as_deref(),
                &mut out,
            )?;
            out
        }
        Op::Join(l, r) => return join(ctx, n, l, r, None, false, seeds),
        Op::LeftJoin(l, r, e) => return join(ctx, n, l, r, e.as_ref(), true, seeds),
        Op::Union(l, r) => {
            let mut out = Table::new(n.vars.len());
            for side in [l, r] {
                let Some(t) = run(ctx, side, seeds)? else {
                    return Ok(None);
                };
                let map: Vec<usize> = side.vars.iter().map(|v| col(&n.vars, v)).collect();
                let mut row = vec![UNBOUND; n.vars.len()];
                for i in 0..t.rows {
                    row.fill(UNBOUND);
                    for (c, &to) in map.iter().enumerate() {
                        row[to] = t.row(i)[c];
                    }
                    out.push(&row);
                }
            }
            out
        }
        Op::Minus(l, r) => {
            let Some(lt) = run(ctx, l, seeds)? else {
                return Ok(None);
            };
            let rs = seeds_of(&lt, &l.vars, &r.vars);
            let Some(rt) = run(ctx, r, &rs)? else {
                return Ok(None);
            };
            minus(&lt, &l.vars, &rt, &r.vars)
        }
        Op::Filter(inner, e) => {
            let Some(t) = run(ctx, inner, seeds)? else {
                return Ok(None);
            };
            filter(ctx, t, e)?
        }
        Op::Extend(inner, e) => {
            let Some(t) = run(ctx, inner, seeds)? else {
                return Ok(None);
            };
            extend(ctx, t, e)?
        }
        Op::Values(t) => t.clone(),
        Op::Project(inner, columns) => {
            let Some(t) = run(ctx, inner, &Seeds::new())? else {
                return Ok(None);
            };
            project(&t, columns)
        }
        Op::Distinct(inner) | Op::Reduced(inner) => {
            let Some(t) = run(ctx, inner, &Seeds::new())? else {
                return Ok(None);
            };
            // REDUCED may drop any duplicate: all of them, as spareval's optimiser does.
            distinct(&t)
        }
        Op::Slice(inner, start, length) => {
            let ran = match length {
                Some(l) => limited(ctx, inner, start.saturating_add(*l))?,
                None => run(ctx, inner, &Seeds::new())?,
            };
            let Some(t) = ran else {
                return Ok(None);
            };
            let from = (*start).min(t.rows);
            let to = length.map_or(t.rows, |l| from.saturating_add(l).min(t.rows));
            Table {
                width: t.width,
                rows: to - from,
                cells: t.cells[from * t.width..to * t.width].to_vec(),
            }
        }
        Op::OrderBy(inner, keys) => {
            let Some(t) = run(ctx, inner, &Seeds::new())? else {
                return Ok(None);
            };
            order(ctx, t, keys, None)
        }
        Op::Group(inner, keys, aggs) => {
            let Some(t) = run(ctx, inner, &Seeds::new())? else {
                return Ok(None);
            };
            group::group(&env(ctx), &t, keys, aggs)
        }
    };
    Ok(Some(t))
}

fn env<'e, 'g, M: Matching + ?Sized>(ctx: &'e Ctx<'_, 'g, M>) -> Env<'e, 'g> {
    Env {
        view: ctx.view,
        terms: &ctx.terms,
    }
}

fn col(vars: &[Variable], v: &Variable) -> usize {
    vars.iter().position(|x| x == v).unwrap_or(usize::MAX)
}

/// The values of `right`'s variables that `left` binds in every row.
fn seeds_of(left: &Table, lvars: &[Variable], rvars: &[Variable]) -> Seeds {
    let mut seeds = Seeds::new();
    for v in rvars {
        let Some(c) = lvars.iter().position(|x| x == v) else {
            continue;
        };
        if !left.always_bound(c) {
            continue;
        }
        let mut values: Vec<u32> = (0..left.rows).map(|i| left.row(i)[c]).collect();
        values.sort_unstable();
        values.dedup();
        seeds.insert(v.clone(), values);
    }
    seeds
}

/// What a per-row lookup reads.
enum Lookup<'p> {
    Scan([Pos; 3]),
    Path(Pos, &'p super::path::Path, Pos),
}

fn join<M: Matching + ?Sized>(
    ctx: &Ctx<'_, '_, M>,
    n: &Node,
    l: &Node,
    r: &Node,
    e: Option<&Ex>,
    optional: bool,
    seeds: &Seeds,
) -> Out {
    let Some(lt) = run(ctx, l, seeds)? else {
        return Ok(None);
    };
    // The right side's columns in the output, and which of them the left has.
    let rmap: Vec<usize> = r.vars.iter().map(|v| col(&n.vars, v)).collect();
    let shared: Vec<(usize, usize)> = r
        .vars
        .iter()
        .enumerate()
        .filter_map(|(rc, v)| l.vars.iter().position(|x| x == v).map(|lc| (lc, rc)))
        .collect();
    let looked = match &r.op {
        Op::Scan(pos) => Some(Lookup::Scan(*pos)),
        Op::Path {
            subject,
            path,
            object,
        } => Some(Lookup::Path(*subject, path, *object)),
        _ => None,
    };
    if let Op::Path {
        subject,
        path,
        object,
    } = &r.op
    {
        let bound = |c: usize| rmap[c] < l.vars.len() && lt.always_bound(rmap[c]);
        if free_ends(*subject, *object, path, bound) {
            return Ok(None);
        }
    }
    let mut out = Table::new(n.vars.len());
    // Without a shared variable a lookup per row would read the same edges each time.
    if let (Some(looked), false) = (looked, shared.is_empty()) {
        let mut matched = Table::new(n.vars.len());
        for i in 0..lt.rows {
            matched.rows = 0;
            matched.cells.clear();
            let lrow = lt.row(i);
            lookup(
                ctx,
                &lt,
                &rmap,
                i,
                &looked,
                r.vars.len(),
                None,
                &mut matched,
            )?;
            emit_joined(ctx, lrow, &matched, e, optional, &mut out)?;
        }
        return Ok(Some(out));
    }
    let rs = seeds_of(&lt, &l.vars, &r.vars);
    let Some(rt) = run(ctx, r, &rs)? else {
        return Ok(None);
    };
    hash_join(ctx, &lt, &rt, &shared, &rmap, e, optional, &mut out)?;
    Ok(Some(out))
}

/// Appends the merged rows of one left row (`matched` holds its compatible right rows, already
/// merged) that pass `e`; for OPTIONAL the left row alone when none does.
fn emit_joined<M: Matching + ?Sized>(
    ctx: &Ctx<'_, '_, M>,
    lrow: &[u32],
    matched: &Table,
    e: Option<&Ex>,
    optional: bool,
    out: &mut Table,
) -> Result<(), SparqlError> {
    let env = env(ctx);
    let mut any = false;
    for j in 0..matched.rows {
        let row = matched.row(j);
        if e.is_none_or(|e| env.ebv(e, row) == Some(true)) {
            ctx.tick()?;
            out.push(row);
            any = true;
        }
    }
    if optional && !any {
        let mut row = lrow.to_vec();
        row.resize(out.width, UNBOUND);
        out.push(&row);
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn hash_join<M: Matching + ?Sized>(
    ctx: &Ctx<'_, '_, M>,
    lt: &Table,
    rt: &Table,
    shared: &[(usize, usize)],
    rmap: &[usize],
    e: Option<&Ex>,
    optional: bool,
    out: &mut Table,
) -> Result<(), SparqlError> {
    let key: Vec<(usize, usize)> = shared
        .iter()
        .copied()
        .filter(|&(lc, rc)| lt.always_bound(lc) && rt.always_bound(rc))
        .collect();
    let hash = |row: &[u32], pick: &dyn Fn(&(usize, usize)) -> usize| {
        key.iter().fold(0u64, |h, k| {
            (h.rotate_left(5) ^ u64::from(row[pick(k)])).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
        })
    };
    let mut index: FxMap<u64, Vec<u32>> = FxMap::default();
    for j in 0..rt.rows {
        index
            .entry(hash(rt.row(j), &|k| k.1))
            .or_default()
            .push(j as u32);
    }
    let mut matched = Table::new(out.width);
    let mut merged = vec![UNBOUND; out.width];
    for i in 0..lt.rows {
        let lrow = lt.row(i);
        matched.rows = 0;
        matched.cells.clear();
        if let Some(candidates) = index.get(&hash(lrow, &|k| k.0)) {
            for &j in candidates {
                if merge(lrow, rt.row(j as usize), rmap, &mut merged) {
                    matched.push(&merged);
                }
            }
        }
        emit_joined(ctx, lrow, &matched, e, optional, out)?;
    }
    Ok(())
}

/// `lrow` and `rrow` merged into `into` (the left's columns first), if compatible.
fn merge(lrow: &[u32], rrow: &[u32], rmap: &[usize], into: &mut [u32]) -> bool {
    into[..lrow.len()].copy_from_slice(lrow);
    into[lrow.len()..].fill(UNBOUND);
    for (rc, &to) in rmap.iter().enumerate() {
        let v = rrow[rc];
        if v == UNBOUND {
            continue;
        }
        match into[to] {
            UNBOUND => into[to] = v,
            w if w == v => {}
            _ => return false,
        }
    }
    true
}

/// Per left row `i` of `lt` (or once, with `lt` of width 0), the right pattern's matches
/// merged into `out`. `starts` restricts a free path subject.
#[allow(clippy::too_many_arguments)]
fn lookup<M: Matching + ?Sized>(
    ctx: &Ctx<'_, '_, M>,
    lt: &Table,
    rmap: &[usize],
    i: usize,
    looked: &Lookup<'_>,
    rwidth: usize,
    starts: Option<&[u32]>,
    out: &mut Table,
) -> Result<(), SparqlError> {
    let lrow: &[u32] = if lt.width == 0 { &[] } else { lt.row(i) };
    // A right column's value bound by the left row, if any.
    let bound = |p: Pos| -> Option<u32> {
        match p {
            Pos::Const(id) => Some(id),
            Pos::Var(c) => rmap
                .get(c)
                .and_then(|&to| lrow.get(to))
                .copied()
                .filter(|&v| v != UNBOUND),
        }
    };
    let mut rrow = vec![UNBOUND; rwidth];
    let mut merged = vec![UNBOUND; out.width.max(rwidth)];
    let mut emit = |vals: [(Pos, u32); 3], out: &mut Table| -> Result<(), SparqlError> {
        rrow.fill(UNBOUND);
        for (p, v) in vals {
            if let Pos::Var(c) = p {
                if rrow[c] != UNBOUND && rrow[c] != v {
                    return Ok(());
                }
                rrow[c] = v;
            }
        }
        ctx.tick()?;
        if rmap.is_empty() {
            out.push(&rrow);
        } else if merge(lrow, &rrow, rmap, &mut merged) {
            out.push(&merged);
        }
        Ok(())
    };
    match looked {
        Lookup::Scan([s, p, o]) => {
            let (bs, bp, bo) = (bound(*s), bound(*p), bound(*o));
            let terms = ctx.terms.borrow();
            let rel = match bp {
                None => None,
                Some(id) => match relation_of(ctx, &terms, id) {
                    Some(r) => Some(r),
                    None => return Ok(()),
                },
            };
            let node = |id: Option<u32>| match id {
                None => Some(None),
                Some(id) if terms.is_node(id) => Some(Some(id)),
                Some(_) => None,
            };
            let (Some(ns), Some(no)) = (node(bs), node(bo)) else {
                return Ok(());
            };
            drop(terms);
            let ids = ctx.relation_ids.as_slice();
            let mut err = Ok(());
            ctx.view.triples(ns, rel, no, &mut |a, r, b| {
                if err.is_ok() {
                    err = emit([(*s, a), (*p, ids[r as usize]), (*o, b)], out);
                }
                err.is_ok()
            });
            err
        }
        Lookup::Path(s, path, o) => {
            let terms = ctx.terms.borrow();
            // A value a row binds that is no node of the graph reaches nothing, itself
            // included (a zero-length path only joins terms of the graph; a constant written
            // in the path pattern is another matter: it reaches itself).
            let foreign =
                |p: Pos| matches!(p, Pos::Var(_)) && bound(p).is_some_and(|v| !terms.is_node(v));
            if foreign(*s) || foreign(*o) {
                return Ok(());
            }
            let walker = Walker {
                view: ctx.view,
                terms: &terms,
            };
            let mut ends = Vec::new();
            match (bound(*s), bound(*o)) {
                (Some(a), b) => {
                    walker.step(path, a, true, &mut ends);
                    for e in ends.iter().copied().filter(|&e| b.is_none_or(|b| b == e)) {
                        emit([(*s, a), (*o, e), (*o, e)], out)?;
                    }
                }
                (None, Some(b)) => {
                    walker.step(path, b, false, &mut ends);
                    for &a in &ends {
                        emit([(*s, a), (*o, b), (*o, b)], out)?;
                    }
                }
                (None, None) => {
                    let all: Vec<u32>;
                    let starts = match starts {
                        Some(s) => s,
                        None => {
                            all = (0..ctx.view.graph.node_count() as u32).collect();
                            &all
                        }
                    };
                    for &a in starts {
                        ends.clear();
                        walker.step(path, a, true, &mut ends);
                        for &e in &ends {
                            emit([(*s, a), (*o, e), (*o, e)], out)?;
                        }
                    }
                }
            }
            Ok(())
        }
    }
}

fn relation_of<M: Matching + ?Sized>(
    ctx: &Ctx<'_, '_, M>,
    terms: &super::Terms,
    id: u32,
) -> Option<gpsense_graph::LabelId> {
    match terms.decode(id) {
        Decoded::Relation(r) => Some(r),
        Decoded::Node(v) => ctx.view.relation_of(&crate::dataset::Id::Node(v)),
        Decoded::Computed(_) => None,
    }
}

/// Whether a zero-length path would start from every term: both ends variables that `bound`
/// (a column of the path's own) does not say are bound.
fn free_ends(s: Pos, o: Pos, path: &super::path::Path, bound: impl Fn(usize) -> bool) -> bool {
    let free = |p: Pos| matches!(p, Pos::Var(c) if !bound(c));
    path.nullable() && free(s) && free(o)
}

/// A free path subject the join above restricts.
fn seeded_starts(n: &Node, subject: Pos, seeds: &Seeds) -> Option<Vec<u32>> {
    match subject {
        Pos::Var(c) => seeds.get(&n.vars[c]).cloned(),
        Pos::Const(_) => None,
    }
}

/// One triple pattern on its own, from the seeds of a variable where there are some.
fn scan_alone<M: Matching + ?Sized>(
    ctx: &Ctx<'_, '_, M>,
    n: &Node,
    pos: [Pos; 3],
    seeds: &Seeds,
) -> Result<Table, SparqlError> {
    let mut out = Table::new(n.vars.len());
    let looked = Lookup::Scan(pos);
    // Seed through the subject or object: a lookup per seed value, unless a constant end
    // already narrows the scan to one adjacency list.
    let fixed_end = matches!(pos[0], Pos::Const(_)) || matches!(pos[2], Pos::Const(_));
    let seeded = [pos[0], pos[2]].into_iter().find_map(|p| match p {
        Pos::Var(c) if !fixed_end => seeds.get(&n.vars[c]).map(|s| (c, s)),
        _ => None,
    });
    match seeded {
        Some((c, values)) => {
            let identity: Vec<usize> = (0..n.vars.len()).collect();
            let mut row = Table::new(n.vars.len());
            row.push(&vec![UNBOUND; n.vars.len()]);
            for &v in values {
                row.cells[c] = v;
                lookup(
                    ctx,
                    &row,
                    &identity,
                    0,
                    &looked,
                    n.vars.len(),
                    None,
                    &mut out,
                )?;
            }
        }
        None => lookup(
            ctx,
            &Table::new(0),
            &[],
            0,
            &looked,
            n.vars.len(),
            None,
            &mut out,
        )?,
    }
    Ok(out)
}

/// A pattern of two or more triples, by the matcher, its variables seeded.
fn matched<M: Matching + ?Sized>(
    ctx: &Ctx<'_, '_, M>,
    n: &Node,
    graph: &gpsense_planner::QueryGraph,
    relation_columns: &[bool],
    seeds: &Seeds,
) -> Result<Option<Table>, SparqlError> {
    let mut q = graph.clone();
    for (v, values) in seeds {
        let name = format!("?{}", v.as_str());
        if let Some(u) = q.nodes.iter().position(|x| x.name == name) {
            if matches!(q.nodes[u].kind, NodeKind::Variable) {
                let terms = ctx.terms.borrow();
                q.concept_sets.push(
                    values
                        .iter()
                        .copied()
                        .filter(|&x| terms.is_node(x))
                        .collect(),
                );
                q.nodes[u].kind = NodeKind::ConceptSet(q.concept_sets.len() - 1);
            }
        }
    }
    let mut opts = ctx.options.clone();
    opts.semantics = Semantics::Hom;
    opts.limit = None;
    if let Some(d) = ctx.deadline {
        opts.timeout = Some(
            d.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1)),
        );
    }
    let width = n.vars.len();
    let budget = ctx.options.memory_budget;
    let ids = &ctx.relation_ids;
    let mut out = Table::new(width);
    let mut over = false;
    let mut take = |batch: RowBatch| {
        for row in batch.iter() {
            for (i, &v) in row.iter().enumerate() {
                out.cells.push(if relation_columns[i] {
                    ids[v as usize]
                } else {
                    v
                });
            }
            out.rows += 1;
        }
        over = out.cells.len() as u64 * 4 > budget;
        !over
    };
    let report = match ctx.matcher.run(&q, &opts, &mut take) {
        Ok(r) => r,
        Err(MatchError::QueryTooLarge { .. }) => return Ok(None),
        Err(e) => return Err(SparqlError::Matcher(e.to_string())),
    };
    if over {
        return Err(SparqlError::MemoryBudget {
            rows: out.rows as u64,
            budget,
        });
    }
    if report.timed_out {
        return Err(SparqlError::TimedOut);
    }
    let mut used = ctx.used.borrow_mut();
    used.patterns += 1;
    used.rows += out.rows as u64;
    Ok(Some(out))
}

/// FILTER: a row stays when every conjunct of `a && b && ...` is true (an error or false in
/// any drops it, as for the whole); a conjunct of one column is evaluated once per distinct
/// value.
fn filter<M: Matching + ?Sized>(
    ctx: &Ctx<'_, '_, M>,
    t: Table,
    e: &Ex,
) -> Result<Table, SparqlError> {
    let env = env(ctx);
    let mut conjuncts = Vec::new();
    conjoined(e, &mut conjuncts);
    let mut tests: Vec<(&Ex, Option<usize>, FxMap<u32, bool>)> = conjuncts
        .into_iter()
        .map(|e| {
            let mut columns = Vec::new();
            e.columns(&mut columns);
            let single = match columns.as_slice() {
                [c] => Some(*c),
                _ => None,
            };
            (e, single, FxMap::default())
        })
        .collect();
    let mut out = Table::new(t.width);
    for i in 0..t.rows {
        ctx.tick()?;
        let row = t.row(i);
        let keep = tests.iter_mut().all(|(e, single, memo)| match single {
            Some(c) => *memo
                .entry(row[*c])
                .or_insert_with(|| env.ebv(e, row) == Some(true)),
            None => env.ebv(e, row) == Some(true),
        });
        if keep {
            out.push(row);
        }
    }
    Ok(out)
}

fn conjoined<'e>(e: &'e Ex, out: &mut Vec<&'e Ex>) {
    match e {
        Ex::And(a, b) => {
            conjoined(a, out);
            conjoined(b, out);
        }
        other => out.push(other),
    }
}

/// BIND: one more column (unbound where the expression fails).
fn extend<M: Matching + ?Sized>(
    ctx: &Ctx<'_, '_, M>,
    t: Table,
    e: &Ex,
) -> Result<Table, SparqlError> {
    let env = env(ctx);
    let mut columns = Vec::new();
    e.columns(&mut columns);
    let mut memo: FxMap<u32, u32> = FxMap::default();
    let mut out = Table::new(t.width + 1);
    let mut row = vec![UNBOUND; t.width + 1];
    for i in 0..t.rows {
        ctx.tick()?;
        row[..t.width].copy_from_slice(t.row(i));
        let value = |row: &[u32]| env.eval(e, row).map_or(UNBOUND, |v| env.id(v));
        row[t.width] = match columns.as_slice() {
            [c] => *memo
                .entry(row[*c])
                .or_insert_with(|| value(&row[..t.width])),
            _ => value(&row[..t.width]),
        };
        out.push(&row);
    }
    Ok(out)
}

fn distinct(t: &Table) -> Table {
    let mut seen: FxMap<&[u32], ()> = FxMap::default();
    let mut out = Table::new(t.width);
    for i in 0..t.rows {
        if seen.insert(t.row(i), ()).is_none() {
            out.push(t.row(i));
        }
    }
    out
}

/// MINUS: left rows that no right row shares a bound variable with, compatibly.
fn minus(lt: &Table, lvars: &[Variable], rt: &Table, rvars: &[Variable]) -> Table {
    let shared: Vec<(usize, usize)> = rvars
        .iter()
        .enumerate()
        .filter_map(|(rc, v)| lvars.iter().position(|x| x == v).map(|lc| (lc, rc)))
        .collect();
    if shared.is_empty() {
        return lt.clone();
    }
    let removes = |l: &[u32], r: &[u32]| {
        let mut common = false;
        for &(lc, rc) in &shared {
            let (a, b) = (l[lc], r[rc]);
            if a == UNBOUND || b == UNBOUND {
                continue;
            }
            if a != b {
                return false;
            }
            common = true;
        }
        common
    };
    // Index the right by one shared column bound in all its rows, where there is one.
    let key = shared.iter().copied().find(|&(_, rc)| rt.always_bound(rc));
    let mut index: FxMap<u32, Vec<u32>> = FxMap::default();
    if let Some((_, rc)) = key {
        for j in 0..rt.rows {
            index.entry(rt.row(j)[rc]).or_default().push(j as u32);
        }
    }
    let mut out = Table::new(lt.width);
    for i in 0..lt.rows {
        let l = lt.row(i);
        let gone = match key {
            Some((lc, _)) if l[lc] != UNBOUND => index
                .get(&l[lc])
                .is_some_and(|js| js.iter().any(|&j| removes(l, rt.row(j as usize)))),
            _ => (0..rt.rows).any(|j| removes(l, rt.row(j))),
        };
        if !gone {
            out.push(l);
        }
    }
    out
}

/// ORDER BY; with `keep`, only the first `keep` rows in order are needed (a LIMIT above):
/// they are selected first and only they are sorted.
fn order<M: Matching + ?Sized>(
    ctx: &Ctx<'_, '_, M>,
    t: Table,
    keys: &[(Ex, bool)],
    keep: Option<usize>,
) -> Table {
    let env = env(ctx);
    let values: Vec<Vec<SortKey<'_>>> = (0..t.rows)
        .map(|i| {
            keys.iter()
                .map(|(e, _)| env.sort_key(env.eval(e, t.row(i))))
                .collect()
        })
        .collect();
    let cmp = |&a: &usize, &b: &usize| {
        for (k, (_, desc)) in keys.iter().enumerate() {
            let o = key_order(&values[a][k], &values[b][k]);
            let o = if *desc { o.reverse() } else { o };
            if o != std::cmp::Ordering::Equal {
                return o;
            }
        }
        std::cmp::Ordering::Equal
    };
    let mut idx: Vec<usize> = (0..t.rows).collect();
    match keep {
        Some(k) if k < idx.len() => {
            if k > 0 {
                idx.select_nth_unstable_by(k - 1, cmp);
            }
            idx.truncate(k);
            idx.sort_by(cmp);
        }
        _ => idx.sort_by(cmp),
    }
    let mut out = Table::new(t.width);
    for i in idx {
        out.push(t.row(i));
    }
    out
}

/// `n` run for a LIMIT that keeps its first `keep` rows: an ORDER BY below (under a
/// projection or not) sorts only those.
fn limited<M: Matching + ?Sized>(ctx: &Ctx<'_, '_, M>, n: &Node, keep: usize) -> Out {
    match &n.op {
        Op::OrderBy(inner, keys) => {
            let Some(t) = run(ctx, inner, &Seeds::new())? else {
                return Ok(None);
            };
            Ok(Some(order(ctx, t, keys, Some(keep))))
        }
        Op::Project(inner, columns) if matches!(inner.op, Op::OrderBy(..)) => {
            let Some(t) = limited(ctx, inner, keep)? else {
                return Ok(None);
            };
            Ok(Some(project(&t, columns)))
        }
        _ => run(ctx, n, &Seeds::new()),
    }
}

fn project(t: &Table, columns: &[Option<usize>]) -> Table {
    let mut out = Table::new(columns.len());
    let mut row = vec![UNBOUND; columns.len()];
    for i in 0..t.rows {
        for (k, c) in columns.iter().enumerate() {
            row[k] = c.map_or(UNBOUND, |c| t.row(i)[c]);
        }
        out.push(&row);
    }
    out
}
