//! Output files and texts that read the model: plain progress lines and JSON objects (their
//! format), recordings, exports and the after-exit summary. No loops live here (see frontend/).

pub mod bench;
pub mod export;
pub mod forum;
pub mod json;
pub mod metrics;
pub mod pipe;
pub mod pipeline;
pub mod plain;
pub mod prompt;
pub mod recording;
pub mod screenshot;
pub mod summary;
pub mod watch;
pub mod whatif;
