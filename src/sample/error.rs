//! Errors of the signal readers and parsers.

use thiserror::Error;

/// Why a text could not be parsed. Parsers return this instead of panicking.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseError {
    /// A field the caller needs is absent.
    #[error("{file}: field {field} missing")]
    Missing {
        file: &'static str,
        field: &'static str,
    },
    /// The header line that starts the table was not found.
    #[error("{file}: no header line")]
    NoHeader { file: &'static str },
    /// A value could not be read as a number.
    #[error("{file}: bad value for {field}")]
    BadValue {
        file: &'static str,
        field: &'static str,
    },
}

/// Errors of reading signals (I/O plus parsing).
#[derive(Debug, Error)]
pub enum SampleError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Parse(#[from] ParseError),
}
