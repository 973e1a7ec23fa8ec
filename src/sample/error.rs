//! Errors of the signal parsers. (Readers never fail: a missing source is n/a in the
//! Sample and a note in the Environment.)

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
