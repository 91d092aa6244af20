//! Which levels of the device's warp join cut their pivot lists into segments.
//!
//! A warp join's work-item is a partial match, and its cost the pivot list it scans. One long list
//! among short ones keeps one warp busy while the others idle; cut into segments that warps take
//! in turn (`pivot_segments` counts them per partial match, a device scan numbers them), it is
//! shared. A cut costs a count launch, three scan launches and a second pivot lookup per partial
//! match, so a level pays it only when one of its lists can be long: the shortest of its checks'
//! longest lists in the data graph (the kernel scans the shortest list of a partial match), and
//! the node's candidates (every list is filtered to them), are above [`LONG_LIST`]; a level with
//! an edge variable scans its pivot check's list (a variable edge's: a node's whole list). The root
//! level's one list, its node's candidates, is cut by the host instead (`RootCut`).

use gpsense_graph::LabelId;
use gpsense_kernels::join::Check;
use gpsense_kernels::{Dir, NONE};
use gpsense_planner::PlannerStats;

/// Entries a level's lists must be able to exceed for the level to be cut: 32 rounds of a warp's
/// 32 lanes, about 30 times a typical partial match's item (the emulator's work-items cost about
/// 35 steps on yeast and HPRD).
pub(crate) const LONG_LIST: u64 = 1024;

/// Entries per segment of a cut level: 8 rounds of a warp, a few times an item's fixed cost (its
/// claim, the search for its partial match, the pivot lookup).
pub(crate) const SEGMENT: u64 = 256;

/// Candidates per segment of the root level's one list (cut by the host): uncut, one warp would
/// scan it all while the others idle; cut, the warps share it, four rounds of a warp's 32 lanes a
/// segment (about the cost of a typical partial match's item). Under a LIMIT the root runs in
/// parts of such segments.
pub(crate) const ROOT_SEGMENT: u64 = 128;

/// The list a level's warps scan for a partial match.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Scan<'c> {
    /// The shortest of these checks' lists (a warp join over fixed relations; with none, the
    /// candidates).
    Shortest(&'c [Check]),
    /// This check's list, of any relation when its edge is a variable (a join of bindings).
    Check(Check),
}

/// The data graph's longest list per relation and direction, for the choice per level.
#[derive(Clone, Debug)]
pub(crate) struct Segments {
    /// Per relation: outgoing, incoming.
    longest: [Vec<u64>; 2],
    /// Of any relation: outgoing, incoming.
    longest_any: [u64; 2],
    /// Entries per segment of a cut level (0: no level is cut).
    segment: u64,
    /// Entries a level's lists must be able to exceed to be cut.
    long_list: u64,
    /// Candidates per segment of the root level's list (at least 1).
    pub(crate) root: u64,
}

impl Segments {
    /// `relations` relations' longest lists from `stats`. `GPSENSE_SEGMENT=N` sets the segment
    /// and, alone, cuts every level after the root (tests set it to cut every list);
    /// `GPSENSE_LONG_LIST=N` sets the length above which a level is cut;
    /// `GPSENSE_ROOT_SEGMENT=N` the root's segment (tests set it to run small roots in parts).
    pub(crate) fn new(stats: &PlannerStats, relations: usize) -> Self {
        let longest = |outgoing: bool| {
            (0..relations)
                .map(|r| stats.longest_list(r as LabelId, outgoing))
                .collect()
        };
        let segment = count_in_env("GPSENSE_SEGMENT", 0);
        Segments {
            longest: [longest(true), longest(false)],
            longest_any: [stats.longest_any(true), stats.longest_any(false)],
            segment: segment.unwrap_or(SEGMENT),
            long_list: count_in_env("GPSENSE_LONG_LIST", 0).unwrap_or(if segment.is_some() {
                0
            } else {
                LONG_LIST
            }),
            root: count_in_env("GPSENSE_ROOT_SEGMENT", 1).unwrap_or(ROOT_SEGMENT),
        }
    }

    /// Entries per segment of a level after the root whose warps scan `scan` for a partial match
    /// and whose node has `candidates` candidates; 0: a warp per partial match.
    pub(crate) fn level(&self, scan: Scan, candidates: u64) -> u64 {
        let longest = match scan {
            // With no edge back (a new component), every partial match scans the candidates.
            Scan::Shortest(checks) => checks
                .iter()
                .filter(|c| c.slot != NONE)
                .map(|c| self.longest_of(c))
                .min()
                .unwrap_or(u64::MAX)
                .min(candidates),
            // A variable edge's list holds a target once per relation that leads there.
            Scan::Check(c) if c.label == NONE => self.longest_any[usize::from(c.dir == Dir::In)],
            Scan::Check(c) => self.longest_of(&c).min(candidates),
        };
        if longest > self.long_list {
            self.segment
        } else {
            0
        }
    }

    /// The longest list of check `c`'s relation, seen from its earlier endpoint.
    fn longest_of(&self, c: &Check) -> u64 {
        let table = &self.longest[usize::from(c.dir == Dir::In)];
        // A relation the graph lacks has no list; an unknown one is not bounded.
        table.get(c.label as usize).copied().unwrap_or(u64::MAX)
    }
}

/// A count of at least `least` in the environment; another value is ignored with a warning (a
/// tuning variable mistyped should not pass for the default).
fn count_in_env(name: &str, least: u64) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    match value.trim().parse::<u64>() {
        Ok(n) if n >= least => Some(n),
        _ => {
            let what = match least {
                0 => "not a whole number".to_owned(),
                _ => format!("not a whole number of at least {least}"),
            };
            eprintln!("warning: {name}={value} is ignored: {what}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segments(out: Vec<u64>, inc: Vec<u64>) -> Segments {
        Segments {
            longest: [out, inc],
            longest_any: [6000, 20],
            segment: SEGMENT,
            long_list: LONG_LIST,
            root: ROOT_SEGMENT,
        }
    }

    fn check(label: u32, dir: Dir) -> Check {
        Check {
            slot: 0,
            dir,
            label,
            var: NONE,
        }
    }

    #[test]
    fn a_level_is_cut_only_when_its_shortest_check_can_be_long() {
        // Relation 0 has a node with 5,000 outgoing edges, relation 1 none over 10.
        let s = segments(vec![5000, 10], vec![3, 2000]);
        let shortest = |checks: &[Check], candidates| s.level(Scan::Shortest(checks), candidates);
        assert_eq!(shortest(&[check(0, Dir::Out)], 1 << 20), SEGMENT);
        // The kernel scans the shorter list: relation 1's bounds it.
        assert_eq!(
            shortest(&[check(0, Dir::Out), check(1, Dir::Out)], 1 << 20),
            0
        );
        assert_eq!(shortest(&[check(0, Dir::In)], 1 << 20), 0);
        assert_eq!(shortest(&[check(1, Dir::In)], 1 << 20), SEGMENT);
        // Lists are filtered to the node's candidates.
        assert_eq!(shortest(&[check(0, Dir::Out)], 900), 0);
        // A self-loop is no list; with nothing else, the candidates are the list.
        let self_loop = Check {
            slot: NONE,
            ..check(1, Dir::Out)
        };
        assert_eq!(shortest(&[self_loop], 500), 0);
        assert_eq!(shortest(&[self_loop], 5000), SEGMENT);
    }

    #[test]
    fn a_join_of_bindings_is_cut_by_its_pivot_s_list() {
        let s = segments(vec![5000, 10], vec![3, 2000]);
        assert_eq!(s.level(Scan::Check(check(0, Dir::Out)), 1 << 20), SEGMENT);
        assert_eq!(s.level(Scan::Check(check(0, Dir::In)), 1 << 20), 0);
        // A variable edge: a node's whole list, its targets not bounded by the candidates.
        assert_eq!(s.level(Scan::Check(check(NONE, Dir::Out)), 10), SEGMENT);
        assert_eq!(s.level(Scan::Check(check(NONE, Dir::In)), 1 << 20), 0);
    }

    #[test]
    fn a_tuning_variable_that_is_not_a_count_is_ignored() {
        // A name of this test's own: the environment is the process's.
        let name = "GPSENSE_SEGMENTS_UNIT_TEST";
        let read = |value: &str| {
            std::env::set_var(name, value);
            count_in_env(name, 1)
        };
        assert_eq!(read("12"), Some(12));
        assert_eq!(read(" 7 "), Some(7));
        assert_eq!(read("0"), None, "below the least");
        assert_eq!(read("1k"), None);
        assert_eq!(read("-3"), None);
        std::env::remove_var(name);
        assert_eq!(count_in_env(name, 1), None);
    }

    #[test]
    fn every_level_is_cut_from_a_length_of_0() {
        let s = Segments {
            segment: 16,
            long_list: 0,
            ..segments(vec![1], vec![1])
        };
        assert_eq!(s.level(Scan::Shortest(&[check(0, Dir::Out)]), 3), 16);
        assert_eq!(s.level(Scan::Check(check(NONE, Dir::Out)), 3), 16);
    }
}
