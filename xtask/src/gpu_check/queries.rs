//! The common-sense tests: fixed queries on the default graph (ConceptNet-100K, embedded in the
//! binary), covering concepts, variables, fixed and variable relations (`?r`, also shared by two
//! edges), projection with repeats, DISTINCT, cycles, both semantics, counting and LIMIT.
//! Answers on this graph (dfs) are in the comments; all take milliseconds.

/// One query; its rows (or count) are compared between the engine and dfs.
pub struct CommonSense {
    pub name: &'static str,
    /// `iso` or `hom`.
    pub semantics: &'static str,
    /// `--count`: compare the number only. A query with a LIMIT must count, since which rows a
    /// limit keeps depends on the engine's order.
    pub count: bool,
    pub text: &'static str,
}

const fn q(name: &'static str, semantics: &'static str, text: &'static str) -> CommonSense {
    CommonSense {
        name,
        semantics,
        count: false,
        text,
    }
}

const fn counted(name: &'static str, semantics: &'static str, text: &'static str) -> CommonSense {
    CommonSense {
        name,
        semantics,
        count: true,
        text,
    }
}

pub const QUERIES: &[CommonSense] = &[
    // 2 rows: the README's first query.
    q("animals-at-home", "iso", "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }"),
    q("animals-at-home-hom", "hom", "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }"),
    // 455 rows.
    q("animal-abilities", "iso", "SELECT * WHERE { ?x IsA animal . ?x CapableOf ?y }"),
    // 23 rows: a variable relation from a quoted concept.
    q("chocolate-relations", "iso", "SELECT DISTINCT ?r ?y WHERE { \"chocolate\" ?r ?y }"),
    // 42 rows: one relation variable on two edges.
    q("dog-and-cat-alike", "iso", "SELECT ?y ?r WHERE { dog ?r ?y . cat ?r ?y }"),
    // 327 rows: a chain through a variable.
    q("kinds-of-animals", "iso", "SELECT ?x ?y WHERE { ?x IsA ?y . ?y IsA animal }"),
    // 80 rows.
    q("kitchen-tools", "iso", "SELECT DISTINCT ?x WHERE { ?x AtLocation kitchen . ?x UsedFor ?y }"),
    // 370 rows: a triangle.
    q("isa-triangles", "iso", "SELECT * WHERE { ?a IsA ?b . ?b IsA ?c . ?a IsA ?c }"),
    // 666 rows: a shared relation variable along a chain.
    q("same-relation-chain", "iso", "SELECT * WHERE { ?a ?r ?b . ?b ?r ?c . ?c IsA animal }"),
    // 1,840 / 1,909 rows: 2-cycles with variable relations, no concept (a scan); hom adds
    // self-loops.
    q("two-cycles", "iso", "SELECT * WHERE { ?a ?r ?b . ?b ?s ?a }"),
    q("two-cycles-hom", "hom", "SELECT * WHERE { ?a ?r ?b . ?b ?s ?a }"),
    // 3,320 / 4,228 rows: projection that repeats rows; hom lets ?x and ?y coincide.
    q(
        "animals-sharing-a-place",
        "iso",
        "SELECT ?x ?y WHERE { ?x IsA animal . ?y IsA animal . ?x AtLocation ?z . ?y AtLocation ?z }",
    ),
    q(
        "animals-sharing-a-place-hom",
        "hom",
        "SELECT ?x ?y WHERE { ?x IsA animal . ?y IsA animal . ?x AtLocation ?z . ?y AtLocation ?z }",
    ),
    // 31 rows.
    q("sweet-things", "iso", "SELECT DISTINCT ?x WHERE { ?x HasProperty sweet }"),
    // 18 rows.
    q("relations-into-animals-hom", "hom", "SELECT DISTINCT ?r WHERE { ?x ?r ?y . ?y IsA animal }"),
    // 67,892 rows: a large answer.
    q("things-and-places", "iso", "SELECT ?x ?z WHERE { ?x IsA ?y . ?x AtLocation ?z }"),
    // 6,949 matches.
    counted("use-then-place-hom", "hom", "SELECT * WHERE { ?a UsedFor ?b . ?b AtLocation ?c }"),
    // 745,576 matches: a star counted without listing.
    counted("star", "iso", "SELECT * WHERE { ?x IsA ?y . ?x AtLocation ?z . ?x UsedFor ?w }"),
    // 1,000 matches: LIMIT stops an unanchored edge query.
    counted("any-edge-limit", "iso", "SELECT * WHERE { ?a ?r ?b } LIMIT 1000"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_limits_only_count() {
        let mut names: Vec<&str> = QUERIES.iter().map(|q| q.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), QUERIES.len());
        assert!((10..=20).contains(&QUERIES.len()));
        for q in QUERIES {
            assert!(q.count || !q.text.contains("LIMIT"), "{}", q.name);
            assert!(["iso", "hom"].contains(&q.semantics), "{}", q.name);
        }
    }
}
