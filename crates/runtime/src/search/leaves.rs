//! Counting the matches of the leaves left once every other query node is matched, without
//! enumerating them: the injective assignments of groups of leaves (VEQ's equivalent query nodes:
//! leaves with the very same free candidates) to data nodes.
//!
//! A data node in one group's list only is private to it; one in several is shared. Each assignment
//! is one choice of which group uses each shared node (or none), then, in each group `g` of `k`
//! leaves given `s` shared nodes, `k - s` of its `p` private nodes and an arrangement:
//! `falling(p, k - s) * falling(k, s)` ways. A dynamic programme over the shared nodes, its state the
//! vector of `s` per group, sums the products. With no shared node that is a product of falling
//! factorials.

use gpsense_kernels::space::intersect_count;

use super::bits_of;

/// Leaves with the very same free candidates.
#[derive(Clone, Debug, Default)]
pub struct Group {
    /// Free data nodes, ascending.
    pub list: Vec<u32>,
    pub leaves: u32,
    /// Their ancestors and those of the nodes using their other candidates.
    pub fail: u64,
}

/// Beyond this many (shared node, state) steps the caller enumerates instead.
const MAX_STEPS: u64 = 1 << 20;

/// Why [`count_injective`] gave no count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Uncounted {
    /// Counting would take more than `MAX_STEPS`: the caller enumerates instead.
    TooManySteps,
    /// There are more than `u128::MAX` assignments.
    Overflow,
}

/// Room [`count_injective`] reuses from call to call (it runs once per search node at the bottom of
/// a count).
#[derive(Clone, Debug, Default)]
pub struct Counter {
    owners: Vec<(u32, u8)>,
    private: Vec<u64>,
    shared: Vec<u64>,
    /// Per group its digit's place value (groups of the component being counted only).
    stride: Vec<u64>,
    ways: Vec<u128>,
    /// Bit sets of groups linked by shared nodes.
    components: Vec<u64>,
}

/// The injective assignments of `groups`, exact in `u128`.
///
/// Groups linked (directly or through others) by shared nodes form a component; components are
/// independent, so the count is the product of theirs and of the falling factorials of the groups
/// with private nodes only. The programme then runs per component: on yeast's 32-node queries ten
/// single-leaf groups had one to four shared nodes between two to five of them, and 1,024 states
/// over all ten cost 25 µs a count where the few linked groups need a handful.
pub fn count_injective(groups: &[Group], c: &mut Counter) -> Result<u128, Uncounted> {
    if groups.len() > 64 {
        return Err(Uncounted::TooManySteps);
    }
    if let [a, b] = groups {
        return count_pair(a, b).ok_or(Uncounted::Overflow);
    }
    c.owners.clear();
    c.owners.extend(
        groups
            .iter()
            .enumerate()
            .flat_map(|(g, group)| group.list.iter().map(move |&v| (v, g as u8))),
    );
    c.owners.sort_unstable();
    c.private.clear();
    c.private.resize(groups.len(), 0);
    c.shared.clear();
    for run in c.owners.chunk_by(|a, b| a.0 == b.0) {
        match run {
            [(_, g)] => c.private[*g as usize] += 1,
            _ => c
                .shared
                .push(run.iter().fold(0u64, |m, &(_, g)| m | 1 << g)),
        }
    }
    c.components.clear();
    for &mask in &c.shared {
        let mut joined = mask;
        c.components.retain(|&k| {
            let meets = k & joined != 0;
            if meets {
                joined |= k;
            }
            !meets
        });
        c.components.push(joined);
    }
    let linked = c.components.iter().fold(0u64, |all, &k| all | k);
    let mut total = product(
        groups
            .iter()
            .enumerate()
            .filter(|&(g, _)| linked & 1 << g == 0)
            .map(|(g, group)| falling(c.private[g], group.leaves as u64)),
    );
    if total == Some(0) {
        return Ok(0);
    }
    // A component with no assignment makes the count 0, whatever the others would have said.
    let mut uncounted = None;
    for k in 0..c.components.len() {
        match count_component(groups, c.components[k], c) {
            Ok(0) => return Ok(0),
            Ok(n) => total = product([total, Some(n)]),
            // A component left uncounted may hold none: enumeration decides, not an overflow.
            Err(why) if uncounted != Some(Uncounted::TooManySteps) => uncounted = Some(why),
            Err(_) => {}
        }
    }
    match uncounted {
        Some(why) => Err(why),
        None => total.ok_or(Uncounted::Overflow),
    }
}

/// The assignments of the groups of `component` (a bit set of groups) to their own private nodes
/// and the shared nodes within it: a dynamic programme over those shared nodes, its state the
/// vector of how many of them each group uses.
fn count_component(groups: &[Group], component: u64, c: &mut Counter) -> Result<u128, Uncounted> {
    // Mixed-radix states: digit g is the number of shared nodes group g uses (0..=k).
    c.stride.clear();
    c.stride.resize(groups.len(), 0);
    let mut states: u64 = 1;
    // Groups of one leaf each (the usual case): every stride a power of two, a digit one bit.
    let mut binary = true;
    for g in bits_of(component) {
        c.stride[g] = states;
        binary &= groups[g].leaves == 1;
        states = states
            .checked_mul(groups[g].leaves as u64 + 1)
            .ok_or(Uncounted::TooManySteps)?;
    }
    let within = |mask: &&u64| **mask & !component == 0;
    let steps = c.shared.iter().filter(within).count() as u64;
    if states.saturating_mul(steps) > MAX_STEPS {
        return Err(Uncounted::TooManySteps);
    }
    let stride = &c.stride;
    let digit = |s: u64, g: usize| {
        if binary {
            u64::from(s & stride[g] != 0)
        } else {
            (s / stride[g]) % (groups[g].leaves as u64 + 1)
        }
    };
    let ways = &mut c.ways;
    ways.clear();
    ways.resize(states as usize, 0);
    ways[0] = 1;
    for &mask in c.shared.iter().filter(within) {
        // In place, highest state first: a transition only raises the state, so each state is read
        // before anything this node contributes reaches it (0/1 knapsack order); the node may also
        // stay unused, which keeps `ways[s]`.
        for s in (0..states).rev() {
            let w = ways[s as usize];
            if w == 0 {
                continue;
            }
            let mut m = mask;
            while m != 0 {
                let g = m.trailing_zeros() as usize;
                m &= m - 1;
                if digit(s, g) < groups[g].leaves as u64 {
                    let t = (s + stride[g]) as usize;
                    // Saturating: `u128::MAX` stands for "at least that many", an overflow below
                    // unless no arrangement completes the state.
                    ways[t] = ways[t].saturating_add(w);
                }
            }
        }
    }
    let mut total = 0u128;
    for s in 0..states {
        let w = ways[s as usize];
        if w == 0 {
            continue;
        }
        let arrangements = product(bits_of(component).map(|g| {
            let used = digit(s, g);
            let k = groups[g].leaves as u64;
            product([falling(c.private[g], k - used), falling(k, used)])
        }));
        let ways_here = product([Some(w), arrangements]).ok_or(Uncounted::Overflow)?;
        if w == u128::MAX && ways_here > 0 {
            return Err(Uncounted::Overflow);
        }
        total = total.checked_add(ways_here).ok_or(Uncounted::Overflow)?;
    }
    Ok(total)
}

/// Two groups, by one merge: with `s` shared nodes, group `a` takes `j` of them and the rest from
/// its own; group `b` then chooses among what is left of its list. `None`: more than `u128::MAX`.
pub fn count_pair(a: &Group, b: &Group) -> Option<u128> {
    let s = intersect_count(&a.list, &b.list) as u64;
    let (pa, pb) = (a.list.len() as u64 - s, b.list.len() as u64 - s);
    let (ka, kb) = (a.leaves as u64, b.leaves as u64);
    let mut total = 0u128;
    for j in 0..=ka.min(s) {
        // Which `j` of the shared nodes `a` uses, in which of its leaves, and its private nodes for
        // the others; `b` arranges its leaves among its private nodes and the `s - j` shared left.
        let ways = product([
            binomial(s, j),
            falling(ka, j),
            falling(pa, ka - j),
            falling(pb + s - j, kb),
        ])?;
        total = total.checked_add(ways)?;
    }
    Some(total)
}

/// The product of `factors` (`None`: a factor past `u128::MAX`), `None` when it passes
/// `u128::MAX`; 0 when a factor is 0, however large the others.
pub fn product(factors: impl IntoIterator<Item = Option<u128>>) -> Option<u128> {
    let mut acc = Some(1u128);
    for f in factors {
        match f {
            Some(0) => return Some(0),
            Some(f) => acc = acc.and_then(|a| a.checked_mul(f)),
            None => acc = None,
        }
    }
    acc
}

/// `n` choose `k`; `None` past `u128::MAX`.
fn binomial(n: u64, k: u64) -> Option<u128> {
    if k > n {
        return Some(0);
    }
    let k = k.min(n - k);
    (0..k).try_fold(1u128, |acc, i| {
        // C(n, i+1) = C(n, i) (n - i) / (i + 1), divided first so that no step overflows before
        // the result does: (i + 1) / gcd divides n - i, as C(n, i+1) is whole.
        let d = (i + 1) as u128;
        let g = gcd(acc, d);
        (acc / g).checked_mul((n - i) as u128 / (d / g))
    })
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// A lower bound on the injective assignments of `groups` (each list ascending), cheap next to
/// [`count_injective`]: groups taken from the shortest list up, each given only the nodes of its
/// list that the leaves of the earlier groups whose lists meet it cannot have used. Enough when a
/// limit needs no more than that. A cruder bound first (every earlier group's leaves taken, met or
/// not: no list compared) is returned when it already reaches `want`. Saturates at `u64::MAX`
/// (limits are `u64`).
pub fn lower_bound(groups: &[Group], order: &mut Vec<usize>, want: u64) -> u64 {
    order.clear();
    order.extend(0..groups.len());
    order.sort_unstable_by_key(|&g| groups[g].list.len());
    let mut crude = 1u64;
    let mut taken = 0u64;
    for &g in order.iter() {
        let free = (groups[g].list.len() as u64).saturating_sub(taken);
        crude = crude.saturating_mul(falling_u64(free, groups[g].leaves as u64));
        taken += groups[g].leaves as u64;
    }
    if crude >= want {
        return crude;
    }
    let mut bound = 1u64;
    for (at, &g) in order.iter().enumerate() {
        let taken: u64 = order[..at]
            .iter()
            .filter(|&&h| meet(&groups[g].list, &groups[h].list))
            .map(|&h| groups[h].leaves as u64)
            .sum();
        let free = (groups[g].list.len() as u64).saturating_sub(taken);
        bound = bound.saturating_mul(falling_u64(free, groups[g].leaves as u64));
        if bound == 0 {
            break;
        }
    }
    bound
}

/// Whether two ascending lists share a value.
fn meet(a: &[u32], b: &[u32]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

/// `n (n - 1) ... (n - k + 1)`: ordered choices of `k` distinct items among `n`; `None` past
/// `u128::MAX`.
pub fn falling(n: u64, k: u64) -> Option<u128> {
    if k > n {
        return Some(0);
    }
    (0..k).try_fold(1u128, |a, j| a.checked_mul((n - j) as u128))
}

/// [`falling`], saturating at `u64::MAX`.
fn falling_u64(n: u64, k: u64) -> u64 {
    falling(n, k).map_or(u64::MAX, |f| u64::try_from(f).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(groups: &[(Vec<u32>, u32)]) -> u64 {
        let lists: Vec<&Vec<u32>> = groups
            .iter()
            .flat_map(|g| std::iter::repeat_n(&g.0, g.1 as usize))
            .collect();
        fn go(lists: &[&Vec<u32>], used: &mut Vec<u32>) -> u64 {
            let Some((l, rest)) = lists.split_first() else {
                return 1;
            };
            let mut n = 0;
            for &v in l.iter() {
                if !used.contains(&v) {
                    used.push(v);
                    n += go(rest, used);
                    used.pop();
                }
            }
            n
        }
        go(&lists, &mut Vec::new())
    }

    #[test]
    fn counts_equal_enumeration() {
        let mut cases: Vec<Vec<(Vec<u32>, u32)>> = vec![
            vec![(vec![1, 2, 3], 2), (vec![4, 5], 1)],
            vec![(vec![1, 2, 3], 2), (vec![3, 4], 2)],
            vec![(vec![1, 2], 3)],
            vec![(vec![1, 2, 3, 4], 1), (vec![2, 3], 1), (vec![3], 1)],
            vec![(vec![], 1), (vec![1], 1)],
            vec![
                (vec![1, 2, 3, 4, 5], 3),
                (vec![2, 4, 6], 2),
                (vec![1, 6, 7], 1),
            ],
            // Two components ({1,2},{2,3}: 3 ways; {10,11},{11,12}: 3) and a private group: 9.
            vec![
                (vec![1, 2], 1),
                (vec![10, 11], 1),
                (vec![2, 3], 1),
                (vec![20], 1),
                (vec![11, 12], 1),
            ],
            // One component with no assignment beside others: 0.
            vec![(vec![1], 1), (vec![1], 1), (vec![5, 6], 1), (vec![6, 7], 2)],
        ];
        // And seeded random ones.
        let mut seed = 7u64;
        let mut next = |m: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            (seed >> 33) % m
        };
        // `least + next(4)` groups of up to `len - 1` nodes below `values`, each of `1 + next(leaves)`
        // leaves (1: one leaf each).
        let mut random_case = |least: u64, len: u64, values: u64, leaves: u64| {
            (0..least + next(4))
                .map(|_| {
                    let mut l: Vec<u32> = (0..next(len)).map(|_| next(values) as u32).collect();
                    l.sort_unstable();
                    l.dedup();
                    let k = if leaves > 1 {
                        1 + next(leaves) as u32
                    } else {
                        1
                    };
                    (l, k)
                })
                .collect::<Vec<_>>()
        };
        for _ in 0..300 {
            cases.push(random_case(1, 7, 9, 3));
        }
        // Single leaves only, three groups and more: the bit-set states.
        for _ in 0..200 {
            cases.push(random_case(3, 6, 8, 1));
        }
        // Many groups over a wider range, few nodes shared: several components.
        for _ in 0..200 {
            cases.push(random_case(6, 4, 30, 1));
        }
        for _ in 0..100 {
            cases.push(random_case(4, 4, 20, 3));
        }
        for groups in cases {
            let gs: Vec<Group> = groups
                .iter()
                .map(|(list, leaves)| Group {
                    list: list.clone(),
                    leaves: *leaves,
                    fail: 0,
                })
                .collect();
            let exact = brute(&groups);
            assert_eq!(
                count_injective(&gs, &mut Counter::default()),
                Ok(exact as u128),
                "{groups:?}"
            );
            let crude = lower_bound(&gs, &mut Vec::new(), 0);
            assert!(crude <= exact, "crude bound {crude} > {exact}: {groups:?}");
            let bound = lower_bound(&gs, &mut Vec::new(), u64::MAX);
            assert!(bound <= exact, "bound {bound} > {exact}: {groups:?}");
            if gs.iter().all(|g| {
                gs.iter()
                    .all(|h| std::ptr::eq(g, h) || !meet(&g.list, &h.list))
            }) {
                assert_eq!(bound, exact, "disjoint groups: {groups:?}");
            }
        }
    }

    fn group(list: std::ops::Range<u32>, leaves: u32) -> Group {
        Group {
            list: list.collect(),
            leaves,
            fail: 0,
        }
    }

    /// The old counts saturated at `u64::MAX`: 4 leaves on 65,538 nodes gave 2^64 - 1.
    #[test]
    fn counts_at_the_edge_of_64_bits_are_exact() {
        let mut c = Counter::default();
        // Just below 2^64 (falling(65537, 4) = 2^64 - 562,954,248,257,536), then just above.
        let below = count_injective(&[group(0..65_537, 4)], &mut c);
        assert_eq!(below, Ok(18_446_181_119_461_294_080));
        assert!(below.unwrap() < 1 << 64);
        let above = count_injective(&[group(0..65_538, 4)], &mut c);
        assert_eq!(above, Ok(18_447_307_019_367_874_560));
        assert!(above.unwrap() > 1 << 64);
        // Two disjoint groups, one merge: (65,536 x 65,535)^2 below, (65,538 x 65,537)^2 above.
        let pair = |n: u32| count_pair(&group(0..n, 2), &group(n..2 * n, 2));
        assert_eq!(pair(65_536), Some((65_536u128 * 65_535).pow(2)));
        assert_eq!(pair(65_538), Some((65_538u128 * 65_537).pow(2)));
        assert!(pair(65_538).unwrap() > 1 << 64);
        // Shared candidates (the dynamic programme): two overlapping groups, 8,010,349,400
        // assignments (counted by hand from how many of the first group's nodes the second has),
        // times a disjoint third group's falling(5000, 3).
        let groups = [group(0..300, 2), group(200..500, 2), group(1000..6000, 3)];
        assert_eq!(
            count_injective(&groups, &mut c),
            Ok(1_000_692_978_898_494_000_000)
        );
        // The hom product of leaf candidate counts.
        let wide = |n: u128| Some(n);
        assert_eq!(
            product([wide((1 << 32) - 1), wide((1 << 32) + 1)]),
            Some(u64::MAX as u128)
        );
        assert_eq!(product([wide(1 << 32), wide(1 << 32)]), Some(1 << 64));
    }

    #[test]
    fn counts_past_128_bits_are_an_overflow() {
        let mut c = Counter::default();
        // falling(65536, 8) is 2^128 less about 2^118; falling(70000, 8) is past 2^128.
        assert_eq!(
            count_injective(&[group(0..65_536, 8)], &mut c),
            Ok(340_137_008_117_998_448_138_762_147_145_370_828_800)
        );
        assert_eq!(
            count_injective(&[group(0..70_000, 8)], &mut c),
            Err(Uncounted::Overflow)
        );
        assert_eq!(
            count_pair(&group(0..70_000, 4), &group(70_000..140_000, 4)),
            None
        );
        let wide = |n: u128| Some(n);
        assert_eq!(product([wide(1 << 64), wide(1 << 64)]), None);
        assert_eq!(
            product([wide(1 << 64), wide((1 << 64) - 1)]),
            Some(u128::MAX - (1 << 64) + 1)
        );
        // A factor of 0 makes the product 0, even beside one past 128 bits.
        assert_eq!(product([None, Some(0)]), Some(0));
        assert_eq!(falling(3, 5), Some(0));
        assert_eq!(
            binomial(130, 65),
            Some(95_067_625_827_960_698_145_584_333_020_095_113_100)
        );
        assert_eq!(binomial(140, 70), None);
    }

    #[test]
    fn too_many_states_is_left_to_enumeration() {
        let groups: Vec<Group> = (0..40)
            .map(|_| Group {
                list: (0..50).collect(),
                leaves: 3,
                fail: 0,
            })
            .collect();
        assert_eq!(
            count_injective(&groups, &mut Counter::default()),
            Err(Uncounted::TooManySteps)
        );
    }
}
