//! Python's keyword arguments as `MatchOptions`.

use std::time::Duration;

use gpsense::{EngineKind, MatchOptions, Semantics};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// What a query call takes besides the text.
#[derive(Clone)]
pub struct Call {
    pub options: MatchOptions,
    /// Whether `semantics=` was given (else a standard SPARQL query brings its own).
    pub semantics_given: bool,
}

pub fn call(
    semantics: Option<&str>,
    limit: Option<u64>,
    timeout: Option<f64>,
    engine: &str,
) -> PyResult<Call> {
    let mut options = MatchOptions {
        engine: engine
            .parse::<EngineKind>()
            .map_err(PyValueError::new_err)?,
        limit,
        timeout: timeout.map(seconds).transpose()?,
        ..MatchOptions::default()
    };
    if let Some(s) = semantics {
        options.semantics = s.parse::<Semantics>().map_err(PyValueError::new_err)?;
    }
    Ok(Call {
        options,
        semantics_given: semantics.is_some(),
    })
}

/// A timeout in seconds (a float, as Python APIs take it).
pub fn seconds(s: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(s).map_err(|_| {
        PyValueError::new_err(format!(
            "timeout must be a non-negative number of seconds, not {s}"
        ))
    })
}
