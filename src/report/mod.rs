//! Output that is not the live TUI: plain progress lines, JSON lines, recordings, exports and
//! the after-exit summary.

pub mod export;
pub mod json;
pub mod plain;
pub mod recording;
pub mod stream;
pub mod summary;
