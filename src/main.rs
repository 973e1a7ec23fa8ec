//! Thin binary: parse, validate, hand off to the library, exit with its status — or say the
//! error that ended the run, once, here.

use std::process::ExitCode;

use clap::Parser;
use copyscope::cli::Cli;
use copyscope::config::Config;
use copyscope::exit::{ExitStatus, Fatal, error_line};

fn main() -> ExitCode {
    use copyscope::copy::writeback;
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == writeback::CHILD_ARG)
    {
        return writeback::child_main().into();
    }
    writeback::allow_child();
    let cli = Cli::parse();
    let run = Config::try_from(cli)
        .map_err(|e| Fatal::new(copyscope::present::quote::said(&e)).into())
        .and_then(copyscope::run);
    match run {
        Ok(status) => status.into(),
        Err(e) => {
            eprintln!("{}", error_line(&e));
            ExitStatus::Fatal.into()
        }
    }
}
