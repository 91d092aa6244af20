//! Rust errors as the Python exceptions of `gpsense._errors`, with the CLI's messages.

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// The message with its causes, as the CLI prints an error (`anyhow`'s `{:#}`).
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let next = c.to_string();
        // Transparent wrappers repeat their source's message.
        if !text.ends_with(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        cause = c.source();
    }
    text
}

/// One of the exception classes defined in Python (`_errors.py`), which can inherit from two
/// bases (`QueryError` is a `ValueError` too).
fn class<'py>(py: Python<'py>, name: &'static str) -> PyResult<Bound<'py, PyType>> {
    static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    let module = MODULE.get_or_try_init(py, || py.import("gpsense._errors").map(|m| m.unbind()))?;
    Ok(module.bind(py).getattr(name)?.cast_into::<PyType>()?)
}

/// An exception of class `name` built from `args`.
pub fn raise<'py, A>(py: Python<'py>, name: &'static str, args: A) -> PyErr
where
    A: pyo3::call::PyCallArgs<'py>,
{
    match class(py, name).and_then(|c| c.call1(args)) {
        Ok(value) => PyErr::from_value(value),
        Err(e) => e,
    }
}

/// Whether `e` is one of `_errors.py`'s exceptions of class `name`.
pub fn is(py: Python<'_>, e: &PyErr, name: &'static str) -> bool {
    class(py, name).is_ok_and(|c| e.is_instance(py, &c))
}

pub fn graph_error(py: Python<'_>, message: String) -> PyErr {
    raise(py, "GraphError", (message,))
}

pub fn match_error(py: Python<'_>, message: String) -> PyErr {
    raise(py, "MatchError", (message,))
}

pub fn timeout(py: Python<'_>, message: String, partial: Py<PyAny>) -> PyErr {
    raise(py, "QueryTimeout", (message, partial))
}

/// A count, or `QueryTimeout` (its `partial` the count so far) when the time limit cut it.
pub fn counted(py: Python<'_>, reported: &gpsense::Reported) -> PyResult<u128> {
    let n = reported.report.rows;
    if reported.report.timed_out {
        let message = format!("the time limit stopped the count at {n} matches");
        let partial = n.into_pyobject(py)?.into_any().unbind();
        return Err(timeout(py, message, partial));
    }
    Ok(n)
}

pub fn interrupted() -> PyErr {
    PyKeyboardInterrupt::new_err("the query was interrupted")
}

/// A library error as the matching Python exception.
pub fn from_gpsense(py: Python<'_>, e: gpsense::Error) -> PyErr {
    use gpsense::Error as E;
    match &e {
        E::Query { error, rendered } => {
            let (line, column) = error.position().unzip();
            raise(py, "QueryError", (rendered.clone(), line, column))
        }
        E::Match(_) => match_error(py, chain(&e)),
        E::Sparql(s) => match s {
            gpsense::sparql::SparqlError::Syntax(_)
            | gpsense::sparql::SparqlError::Unsupported { .. }
            | gpsense::sparql::SparqlError::Evaluation(_) => raise(py, "QueryError", (chain(&e),)),
            _ => match_error(py, chain(&e)),
        },
        _ => graph_error(py, chain(&e)),
    }
}
