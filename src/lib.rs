//! copyscope: a copier that charts its own speed and explains every drop.
//!
//! Module map (DESIGN §9): `cli` → `config`; `copy` (engine on blocking threads);
//! `sample` (root-relative /proc and kstat readers, sampler thread); `model`
//! (bounded series, drop detection and attribution; time is passed in);
//! `ui` (pure rendering); `tui` (terminal lifecycle and the main loop);
//! `report` (plain/JSON output, recordings, exports).

pub mod cli;
pub mod config;
pub mod copy;
pub mod demo;
pub mod exit;
pub mod live;
pub mod model;
pub mod replay;
pub mod report;
pub mod run;
pub mod sample;
pub mod session;
pub mod tui;
pub mod ui;

pub use run::run;
