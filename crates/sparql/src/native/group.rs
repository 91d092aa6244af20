//! GROUP BY on id keys and the aggregates, as spareval computes them: an error or unbound value
//! fails SUM, MIN, MAX and GROUP_CONCAT for the group (unbound result), COUNT counts the values
//! that are neither, SAMPLE takes the first value there is.

use std::borrow::Cow;
use std::cmp::Ordering;

use oxrdf::Variable;
use spargebra::algebra::{AggregateExpression, AggregateFunction};

use super::expr::{Env, Ex, Val};
use super::plan::Planner;
use super::{FxMap, Table, UNBOUND};

pub(crate) enum Agg {
    /// COUNT(*), DISTINCT over whole rows.
    CountRows {
        distinct: bool,
    },
    Of {
        f: Fold,
        e: Ex,
        distinct: bool,
    },
}

#[derive(Clone)]
pub(crate) enum Fold {
    Count,
    Sum,
    Min,
    Max,
    Sample,
    Concat(String),
}

impl Agg {
    pub fn compile(
        a: &AggregateExpression,
        vars: &[Variable],
        p: &mut Planner<'_, '_>,
    ) -> Option<Agg> {
        Some(match a {
            AggregateExpression::CountSolutions { distinct } => Agg::CountRows {
                distinct: *distinct,
            },
            AggregateExpression::FunctionCall {
                name,
                expr,
                distinct,
            } => {
                let f = match name {
                    AggregateFunction::Count => Fold::Count,
                    AggregateFunction::Sum => Fold::Sum,
                    AggregateFunction::Min => Fold::Min,
                    AggregateFunction::Max => Fold::Max,
                    AggregateFunction::Sample => Fold::Sample,
                    AggregateFunction::GroupConcat { separator } => {
                        Fold::Concat(separator.clone().unwrap_or_else(|| " ".into()))
                    }
                    // AVG gives decimals; custom aggregates are spareval's.
                    _ => return None,
                };
                Agg::Of {
                    f,
                    e: p.expr(expr, vars)?,
                    distinct: *distinct,
                }
            }
        })
    }
}

/// Groups `t`'s rows by `keys` and computes `aggs` per group: key columns, then one column each.
pub(crate) fn group(env: &Env<'_, '_>, t: &Table, keys: &[Option<usize>], aggs: &[Agg]) -> Table {
    let mut index: FxMap<Vec<u32>, usize> = FxMap::default();
    let mut members: Vec<Vec<u32>> = Vec::new();
    let mut key = Vec::with_capacity(keys.len());
    // One key column: no key vector per row.
    if let [Some(c)] = keys {
        let mut one: FxMap<u32, usize> = FxMap::default();
        for i in 0..t.rows {
            let k = t.row(i)[*c];
            let g = *one.entry(k).or_insert(members.len());
            if g == members.len() {
                members.push(Vec::new());
                index.insert(vec![k], g);
            }
            members[g].push(i as u32);
        }
    }
    for i in (0..t.rows).filter(|_| !matches!(keys, [Some(_)])) {
        let row = t.row(i);
        key.clear();
        key.extend(keys.iter().map(|k| k.map_or(UNBOUND, |c| row[c])));
        let g = match index.get(&key) {
            Some(&g) => g,
            None => {
                members.push(Vec::new());
                index.insert(key.clone(), members.len() - 1);
                members.len() - 1
            }
        };
        members[g].push(i as u32);
    }
    // No key and no row: one group, of nothing.
    if keys.is_empty() && t.rows == 0 {
        index.insert(Vec::new(), 0);
        members.push(Vec::new());
    }
    let mut groups: Vec<(Vec<u32>, usize)> = index.into_iter().collect();
    groups.sort_unstable_by_key(|(_, g)| *g);
    let mut out = Table::new(keys.len() + aggs.len());
    let mut row = Vec::with_capacity(out.width);
    for (key, g) in groups {
        row.clear();
        row.extend_from_slice(&key);
        for a in aggs {
            row.push(aggregate(env, t, &members[g], a));
        }
        out.push(&row);
    }
    out
}

fn aggregate(env: &Env<'_, '_>, t: &Table, rows: &[u32], a: &Agg) -> u32 {
    let (f, e, distinct) = match a {
        Agg::CountRows { distinct: false } => return env.id(Val::Int(rows.len() as i64)),
        Agg::CountRows { distinct: true } => {
            let mut seen = FxMap::default();
            for &r in rows {
                seen.insert(t.row(r as usize), ());
            }
            return env.id(Val::Int(seen.len() as i64));
        }
        Agg::Of { f, e, distinct } => (f, e, *distinct),
    };
    let mut seen: FxMap<u32, ()> = FxMap::default();
    let mut values = rows.iter().map(|&r| env.eval(e, t.row(r as usize)));
    let mut fold = Folding::new(f);
    for v in &mut values {
        let Some(v) = v else {
            fold.error();
            continue;
        };
        if distinct && seen.insert(env.id(v.clone()), ()).is_some() {
            continue;
        }
        fold.add(env, v);
    }
    fold.finish().map_or(UNBOUND, |v| env.id(v))
}

struct Folding<'g> {
    f: Fold,
    count: i64,
    /// `None` once failed (SUM, MIN, MAX, GROUP_CONCAT) or while empty (SAMPLE, MIN, MAX).
    acc: Option<Val<'g>>,
    failed: bool,
    started: bool,
}

impl<'g> Folding<'g> {
    fn new(f: &Fold) -> Self {
        Folding {
            f: f.clone(),
            count: 0,
            acc: match f {
                Fold::Sum => Some(Val::Int(0)),
                Fold::Concat(_) => Some(Val::Str(Cow::Borrowed(""))),
                _ => None,
            },
            failed: false,
            started: false,
        }
    }

    fn error(&mut self) {
        if !matches!(self.f, Fold::Count | Fold::Sample) {
            self.failed = true;
        }
    }

    fn add(&mut self, env: &Env<'_, 'g>, v: Val<'g>) {
        if self.failed {
            return;
        }
        match &self.f {
            Fold::Count => self.count += 1,
            Fold::Sample => {
                if self.acc.is_none() {
                    self.acc = Some(v)
                }
            }
            Fold::Sum => match (&self.acc, v) {
                (Some(Val::Int(a)), Val::Int(b)) => match a.checked_add(b) {
                    Some(s) => self.acc = Some(Val::Int(s)),
                    None => self.failed = true,
                },
                _ => self.failed = true,
            },
            Fold::Min | Fold::Max => {
                let want = if matches!(self.f, Fold::Max) {
                    Ordering::Greater
                } else {
                    Ordering::Less
                };
                if self.acc.is_none() || env.order(Some(&v), self.acc.as_ref()) == want {
                    self.acc = Some(v);
                }
            }
            Fold::Concat(sep) => match (&mut self.acc, v) {
                (Some(Val::Str(a)), Val::Str(b)) => {
                    let a = a.to_mut();
                    if self.started {
                        a.push_str(sep);
                    }
                    a.push_str(&b);
                    self.started = true;
                }
                _ => self.failed = true,
            },
        }
    }

    fn finish(self) -> Option<Val<'g>> {
        match self.f {
            Fold::Count => Some(Val::Int(self.count)),
            _ if self.failed => None,
            _ => self.acc,
        }
    }
}
