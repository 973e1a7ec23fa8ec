//! Output that is not the live TUI: plain progress lines, JSON lines, recordings and exports.

pub mod export;
pub mod recording;
