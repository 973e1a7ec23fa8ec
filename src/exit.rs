//! Exit statuses: 0 all copied, 1 some files failed, 2 usage or fatal error,
//! 130 cancelled (SIGINT, SIGTERM and SIGHUP alike: the user or the session ended the copy),
//! 141 when the reader of `copyscope pipe`'s output closed it (128 + SIGPIPE, what a shell
//! reports for `cat` in its place), and the one error a run that could not go on ends with.

/// How a run ended, as a process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitStatus {
    Success,
    /// Some files failed or did not verify; the others were copied.
    Partial,
    /// Usage error, refusal, or a fatal error (disk full, read-only destination).
    Fatal,
    Cancelled,
    /// `copyscope pipe`: the reader downstream closed the pipe (EPIPE) before the end of input.
    BrokenPipe,
}

impl ExitStatus {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Partial => 1,
            ExitStatus::Fatal => 2,
            ExitStatus::Cancelled => 130,
            ExitStatus::BrokenPipe => 141,
        }
    }
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(s: ExitStatus) -> Self {
        std::process::ExitCode::from(s.code())
    }
}

/// Why a command could not run: said once, by `main`, as "copyscope: WHY" — or "copyscope
/// bench: WHY" when a subcommand speaks — and the exit status is [`ExitStatus::Fatal`].
#[derive(Debug, thiserror::Error)]
pub struct Fatal {
    /// The subcommand whose words these are ("bench", "demo"), if not the program's.
    command: Option<&'static str>,
    why: String,
}

impl Fatal {
    /// The program's words: "copyscope: WHY".
    pub fn new(why: impl Into<String>) -> Fatal {
        Fatal {
            command: None,
            why: why.into(),
        }
    }

    /// A subcommand's words: "copyscope COMMAND: WHY".
    pub fn of(command: &'static str, why: impl Into<String>) -> Fatal {
        Fatal {
            command: Some(command),
            why: why.into(),
        }
    }
}

impl std::fmt::Display for Fatal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.command {
            Some(c) => write!(f, "copyscope {c}: {}", self.why),
            None => write!(f, "copyscope: {}", self.why),
        }
    }
}

/// The one line a failed run ends with on stderr: a [`Fatal`]'s words, or "copyscope: "
/// and the error with its causes.
pub fn error_line(e: &anyhow::Error) -> String {
    match e.downcast_ref::<Fatal>() {
        Some(f) => f.to_string(),
        None => Fatal::new(crate::present::quote::error_chain(e)).to_string(),
    }
}
