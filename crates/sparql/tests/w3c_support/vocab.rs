//! The IRIs of the manifest (`mf:`, `qt:`) and result-set (`rs:`) vocabularies the harness reads.

use oxrdf::NamedNodeRef;

const fn iri(text: &'static str) -> NamedNodeRef<'static> {
    NamedNodeRef::new_unchecked(text)
}

pub mod mf {
    use super::*;
    pub const ENTRIES: NamedNodeRef<'static> =
        iri("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#entries");
    pub const ACTION: NamedNodeRef<'static> =
        iri("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#action");
    pub const RESULT: NamedNodeRef<'static> =
        iri("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#result");
    pub const QUERY_EVALUATION_TEST: NamedNodeRef<'static> =
        iri("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#QueryEvaluationTest");
    pub const RESULT_CARDINALITY: NamedNodeRef<'static> =
        iri("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#resultCardinality");
    /// REDUCED: each expected row must come at least once and at most as often as expected.
    pub const LAX_CARDINALITY: NamedNodeRef<'static> =
        iri("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#LaxCardinality");
    /// A query evaluation test whose expected result is CSV (lossy: compared as text cells).
    pub const CSV_RESULT_FORMAT_TEST: NamedNodeRef<'static> =
        iri("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#CSVResultFormatTest");
}

pub mod qt {
    use super::*;
    pub const QUERY: NamedNodeRef<'static> =
        iri("http://www.w3.org/2001/sw/DataAccess/tests/test-query#query");
    pub const DATA: NamedNodeRef<'static> =
        iri("http://www.w3.org/2001/sw/DataAccess/tests/test-query#data");
    pub const GRAPH_DATA: NamedNodeRef<'static> =
        iri("http://www.w3.org/2001/sw/DataAccess/tests/test-query#graphData");
}

pub mod rs {
    use super::*;
    pub const RESULT_SET: NamedNodeRef<'static> =
        iri("http://www.w3.org/2001/sw/DataAccess/tests/result-set#ResultSet");
    pub const RESULT_VARIABLE: NamedNodeRef<'static> =
        iri("http://www.w3.org/2001/sw/DataAccess/tests/result-set#resultVariable");
    pub const SOLUTION: NamedNodeRef<'static> =
        iri("http://www.w3.org/2001/sw/DataAccess/tests/result-set#solution");
    pub const BINDING: NamedNodeRef<'static> =
        iri("http://www.w3.org/2001/sw/DataAccess/tests/result-set#binding");
    pub const VARIABLE: NamedNodeRef<'static> =
        iri("http://www.w3.org/2001/sw/DataAccess/tests/result-set#variable");
    pub const VALUE: NamedNodeRef<'static> =
        iri("http://www.w3.org/2001/sw/DataAccess/tests/result-set#value");
    pub const INDEX: NamedNodeRef<'static> =
        iri("http://www.w3.org/2001/sw/DataAccess/tests/result-set#index");
    pub const BOOLEAN: NamedNodeRef<'static> =
        iri("http://www.w3.org/2001/sw/DataAccess/tests/result-set#boolean");
}
