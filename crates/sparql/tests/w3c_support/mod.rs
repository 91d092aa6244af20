//! The W3C SPARQL conformance harness behind `tests/w3c.rs`.

pub mod compare;
pub mod manifest;
pub mod report;
pub mod results;
pub mod run;
pub mod vocab;
