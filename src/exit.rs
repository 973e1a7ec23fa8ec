//! Exit statuses (DESIGN §3): 0 all copied, 1 some files failed, 2 usage or fatal error,
//! 130 cancelled (SIGINT, SIGTERM and SIGHUP alike: the user or the session ended the copy).

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
}

impl ExitStatus {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Partial => 1,
            ExitStatus::Fatal => 2,
            ExitStatus::Cancelled => 130,
        }
    }
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(s: ExitStatus) -> Self {
        std::process::ExitCode::from(s.code())
    }
}
