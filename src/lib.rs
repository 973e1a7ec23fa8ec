//! copyscope: a copier that charts its own speed and explains every drop.
//!
//! Module map (DESIGN §9): `cli` → `config`; `copy` (engine on blocking threads);
//! `sample` (root-relative /proc and kstat readers, sampler thread); `model`
//! (bounded series, drop detection and attribution; time is passed in);
//! `ui` (pure rendering); `frontend` (the live TUI, replay, plain/JSON streaming, demo, and
//! the choice between them); `report` (plain/JSON formatting, recordings, exports).

pub mod cli;
pub mod config;
pub mod copy;
pub mod exit;
pub mod frontend;
pub mod model;
pub mod present;
pub mod report;
pub mod sample;
pub mod ui;

pub use frontend::run;
