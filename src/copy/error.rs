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
    #[error("{}: {}", crate::present::quote::quote(path), io_reason(source))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// An I/O error's reason as cp words it: "No such file or directory", without Rust's
/// " (os error 2)" tail.
pub fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
