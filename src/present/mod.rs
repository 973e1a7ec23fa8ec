//! One voice for every output: units, times and percentages, chart axes and columns, marker
//! glyphs and names, the key table, text shaping and name quoting. The TUI, plain and JSON
//! lines, the summary and every export go through here.

pub mod axis;
pub mod columns;
pub mod format;
pub mod keys;
pub mod markers;
pub mod quote;
pub mod text;
pub mod units;
