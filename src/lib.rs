//! copyscope: a copier that charts its own speed and explains every drop.
//!
//! Module map (ARCHITECTURE.md has the whole picture): `cli` → `config` (the flags, then a
//! validated `Config`); `copy` (the engine on blocking threads, and the bench's phases);
//! `sample` (readers of /proc, /sys and the kstats under one root, the sampler thread);
//! `model` (the only interpreter of samples: series, drops, causes, stats; time is passed
//! in); `present` (the one format of every number, the axes and chart columns, markers, the
//! key table, text and name quoting); `ui` (pure rendering of a per-frame view); `frontend`
//! (the commands, one run's session, the TUI, plain/JSON and replay faces, watch, bench,
//! demo, the man page, the metrics endpoint); `report` (plain/JSON texts, recordings,
//! exports, summaries, screenshots); `exit` (exit statuses and the error that ended a run).

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
