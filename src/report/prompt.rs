//! `-i` without the TUI: cp's question on stderr ("copyscope: overwrite 'dst/x'? ") and the
//! answer read as a line from stdin, so `echo n | copyscope -i …` and scripts behave as with cp.

use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::copy::{ConflictAnswer, ConflictAsk, ConflictQuestion};
use crate::present::quote::quote;

/// Asks on stderr, reads stdin. The engine asks one question at a time.
#[derive(Debug, Default)]
pub struct StdinAsk {
    /// Set while a question waits for its answer, so the progress lines keep quiet.
    pub asking: Arc<AtomicBool>,
}

/// cp's answer rule in the C locale (rpmatch's `^[yY]`): "y", "Y", "yes" overwrite; anything
/// else, an empty line and end of input keep the destination.
pub fn is_yes(line: &str) -> bool {
    line.starts_with(['y', 'Y'])
}

/// The question, as cp words it.
pub fn question(destination: &Path) -> String {
    format!("copyscope: overwrite {}? ", quote(destination))
}

impl ConflictAsk for StdinAsk {
    fn ask(&self, q: &ConflictQuestion) -> ConflictAnswer {
        let destination = q.destination.as_path();
        self.asking.store(true, Ordering::SeqCst);
        {
            let mut e = std::io::stderr().lock();
            let _ = e.write_all(question(destination).as_bytes());
            let _ = e.flush();
        }
        let mut line = String::new();
        let read = std::io::stdin().lock().read_line(&mut line);
        self.asking.store(false, Ordering::SeqCst);
        match read {
            Ok(n) if n > 0 && is_yes(&line) => ConflictAnswer::Overwrite,
            _ => ConflictAnswer::Skip,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_y_overwrites() {
        for yes in ["y\n", "Y\n", "yes\n", "y"] {
            assert!(is_yes(yes), "{yes:?}");
        }
        for no in ["n\n", "\n", "", " y\n", "no", "oui"] {
            assert!(!is_yes(no), "{no:?}");
        }
        assert_eq!(
            question(Path::new("dst/pass\x1bwd")),
            "copyscope: overwrite 'dst/pass'$'\\033''wd'? "
        );
    }
}
