//! The recording of the run in progress: to `--record FILE`, to a temporary file that the
//! TUI's `s` can save, or none; a write error stops recording, never the run. A paced run's
//! samples are also kept for the comparison with its unpaced twin at the end.

use std::path::Path;

use crate::copy::EngineEvent;
use crate::model::Event;
use crate::model::whatif::Hindsight;
use crate::report::recording::{Header, RecordingError, RecordingWriter, Summary};
use crate::sample::Sample;

/// The recording of the run in progress: to the user's file or to a temporary one. A write
/// error stops recording (and is reported at the end); it never stops the copy.
pub struct Recorder {
    writer: Option<RecordingWriter>,
    /// Written only for the TUI's `s` to save: removed unread otherwise.
    temporary: bool,
    /// Holds the temporary directory alive (removed when the recorder is dropped).
    _temp: Option<tempfile::TempDir>,
    failed: Option<String>,
    /// `--pace auto`: what the comparison with the unpaced run needs of the samples.
    hindsight: Option<Hindsight>,
}

impl Recorder {
    /// No recording: a plain or JSON copy without `--record` has no `s` key to save one
    /// (writing the temporary file anyway serialised two JSON lines per file of a tree into
    /// a file nobody read: most of the copy's user time over 10 000 small files).
    pub fn none() -> Recorder {
        Recorder {
            writer: None,
            temporary: false,
            _temp: None,
            failed: None,
            hindsight: None,
        }
    }

    /// Opens the recording: `record` if given, else a temporary file — unnamed where the
    /// filesystem allows (a SIGKILLed run left its /tmp/copyscope-run-* directory behind),
    /// else in a temporary directory.
    pub fn open(record: Option<&Path>, header: &Header) -> Recorder {
        if record.is_none()
            && let Ok(w) = RecordingWriter::create_unnamed(&std::env::temp_dir(), header)
        {
            return Recorder {
                writer: Some(w),
                temporary: true,
                _temp: None,
                failed: None,
                hindsight: None,
            };
        }
        let (path, temp) = match record {
            Some(p) => (p.to_path_buf(), None),
            None => match tempfile::Builder::new().prefix("copyscope-run-").tempdir() {
                Ok(d) => (d.path().join("run.jsonl"), Some(d)),
                Err(e) => {
                    return Recorder {
                        writer: None,
                        temporary: true,
                        _temp: None,
                        hindsight: None,
                        failed: Some(format!(
                            "cannot create a temporary recording: {}",
                            crate::present::quote::said(&e)
                        )),
                    };
                }
            },
        };
        match RecordingWriter::create(&path, header) {
            Ok(w) => Recorder {
                writer: Some(w),
                temporary: record.is_none(),
                _temp: temp,
                failed: None,
                hindsight: None,
            },
            Err(e) => Recorder {
                writer: None,
                temporary: record.is_none(),
                _temp: temp,
                failed: Some(e.to_string()),
                hindsight: None,
            },
        }
    }

    fn write(&mut self, f: impl FnOnce(&mut RecordingWriter) -> Result<(), RecordingError>) {
        if let Some(w) = self.writer.as_mut()
            && let Err(e) = f(w)
        {
            self.failed.get_or_insert(e.to_string());
            self.writer = None;
        }
    }

    pub fn sample(&mut self, s: &Sample) {
        if let Some(h) = self.hindsight.as_mut() {
            h.sample(s);
        }
        self.write(|w| w.write_sample(s));
    }

    /// What a paced run kept for its comparison with the unpaced one.
    pub fn take_hindsight(&mut self) -> Option<Hindsight> {
        self.hindsight.take()
    }

    pub fn event(&mut self, e: &Event) {
        self.write(|w| w.write_event(e));
    }

    pub fn events(&mut self, evs: &[Event]) {
        for e in evs {
            self.event(e);
        }
    }

    /// Engine events carry paths; non-UTF-8 ones are written lossily (JSON has no other way).
    pub fn engine_event(&mut self, t_ns: u64, e: &EngineEvent) {
        if self.writer.is_none() {
            return;
        }
        let e = crate::report::json::lossy_event(e);
        self.write(|w| w.write_engine_event(t_ns, &e));
    }

    /// Copies the run so far to `dest`.
    pub fn save_to(&mut self, dest: &Path) -> Result<(), String> {
        match self.writer.as_mut() {
            Some(w) => w.save_copy_to(dest).map_err(|e| e.to_string()),
            None => Err(self.failed.clone().unwrap_or_else(|| "no recording".into())),
        }
    }

    /// Writes the summary line and closes the file; returns the first error, if any. A
    /// temporary recording is removed unread, so it gets no summary and no sync (its fsync
    /// on a busy root disk held a cancel's exit for up to 0.3 s).
    pub fn finish(mut self, summary: &Summary) -> Option<String> {
        if self.temporary {
            return self.failed;
        }
        if let Some(w) = self.writer.take()
            && let Err(e) = w.finish(summary)
        {
            self.failed.get_or_insert(e.to_string());
        }
        self.failed
    }
}

impl Recorder {
    /// The recording a run asks for: `record` if given; else, when `savable`, a temporary
    /// one (the TUI's `s` saves it); else none.
    pub fn for_run(record: Option<&Path>, savable: bool, header: &Header) -> Recorder {
        let mut r = match record {
            None if !savable => Recorder::none(),
            record => Recorder::open(record, header),
        };
        r.hindsight = Hindsight::for_run(&header.environment);
        r
    }
}
