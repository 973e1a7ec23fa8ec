//! Presentation helpers shared by every output (plain lines, errors, summary, TUI).

pub mod quote;
