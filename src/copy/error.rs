//! Errors of planning a copy (refusals happen here, before anything is written).

use std::path::PathBuf;

/// Why a copy cannot start.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// Bad combination of operands (cp's usage errors).
    #[error("{0}")]
    Usage(String),
    /// A copy that would destroy or loop (into itself, same file, dir onto file, ...).
    #[error("{0}")]
    Refused(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
