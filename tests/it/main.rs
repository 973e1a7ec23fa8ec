//! The integration tests that run in process (the model, the parsers, the outputs, the UI
//! drawn into a test backend) and those that run the binary without racing the clock (cp
//! compatibility, the hostile-user and safety suites): one test binary, so the suite links
//! resvg, ratatui and tokio once for all of them. Tests that
//! drive the binary in a terminal, on a slow disk or against the live kernel keep binaries
//! of their own (tests/*.rs), run one binary at a time.

#[allow(dead_code)]
#[path = "../../build.rs"]
mod build_script;
#[path = "../export_support/mod.rs"]
mod export_support;
#[path = "../util/mod.rs"]
mod util;

mod architecture;
mod cli_commands;
mod compare;
mod copy_engine_api;
mod copy_failures;
mod copy_refusals;
mod copy_tree;
mod corpus;
mod cp_compat;
mod cp_compat_peers;
mod cp_safety;
mod dependencies;
mod eta;
mod export_data;
mod export_png;
mod export_png_nofonts;
mod export_text;
mod frontend_keys;
mod frontend_update;
mod help_texts;
mod hostile;
mod key_table;
mod model_props;
mod model_scenarios;
mod model_zfs_capture;
mod one_format;
mod one_voice;
mod package_version;
mod pipeline_stages;
mod recording_bounds;
mod recording_replay;
mod recording_roundtrip;
mod replay_outputs;
mod sample_fixture_tree;
mod sample_fuzz;
mod sample_parsers;
mod svg_fonts;
mod ui_snapshots;
mod ui_terminal_caps;
mod verdict;
mod watch_net_outputs;
mod whatif;
mod zfs_recording;
