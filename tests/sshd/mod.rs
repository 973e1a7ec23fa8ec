//! A throwaway sshd on 127.0.0.1 for the end-to-end tests that go through SSH: its own host
//! and client keys, root login by key only, killed when dropped. Each test binary that
//! includes it uses part of it.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A running sshd; `dir/client_key` logs in as the user running the test.
pub struct Sshd {
    child: Child,
    pub dir: PathBuf,
    pub port: u16,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The sshd binary, when installed.
pub fn binary() -> Option<&'static str> {
    ["/usr/sbin/sshd", "/usr/bin/sshd"]
        .into_iter()
        .find(|p| Path::new(p).exists())
}

fn keygen(path: &Path) {
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen");
    assert!(st.success());
}

/// Starts `sshd` with its keys and config in `dir` (which must exist), on a free port, and
/// waits until it accepts connections.
pub fn start(sshd: &str, dir: &Path) -> Sshd {
    fs::create_dir_all("/run/sshd").unwrap();
    keygen(&dir.join("host_key"));
    keygen(&dir.join("client_key"));
    fs::copy(dir.join("client_key.pub"), dir.join("authorized_keys")).unwrap();
    let port = crate::util::free_port();
    let config = format!(
        "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
         PermitRootLogin yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nStrictModes no\n\
         UsePAM no\nPidFile {d}/sshd.pid\nPrintMotd no\nPrintLastLog no\nAcceptEnv COPYSCOPE_*\n",
        d = dir.display()
    );
    fs::write(dir.join("sshd_config"), config).unwrap();
    let child = Command::new(sshd)
        .args(["-D", "-f"])
        .arg(dir.join("sshd_config"))
        .arg("-E")
        .arg(dir.join("sshd.log"))
        .spawn()
        .expect("start sshd");
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "sshd did not start: {}",
            fs::read_to_string(dir.join("sshd.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Sshd {
        child,
        dir: dir.to_path_buf(),
        port,
    }
}
