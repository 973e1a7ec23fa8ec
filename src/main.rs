//! Thin binary: parse, validate, hand off to the library, exit with its status.

use std::process::ExitCode;

use clap::Parser;
use copyscope::cli::Cli;
use copyscope::config::Config;
use copyscope::exit::ExitStatus;

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
    let config = match Config::try_from(cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("copyscope: {}", copyscope::present::quote::said(&e));
            return ExitStatus::Fatal.into();
        }
    };
    copyscope::run(config).into()
}
