//! `--net IFACE`: the interface's receive counter (`/sys/class/net/IFACE/statistics/rx_bytes`,
//! under the SysRoot), so a watch can tell a sender or link that slowed (the receive rate fell
//! with the writes) from a disk that did. Cumulative bytes; the model takes the rate.

use super::root::SysRoot;

/// The longest interface name Linux accepts (IFNAMSIZ 16, with the NUL).
pub const IFACE_MAX: usize = 15;

/// An interface name as Linux allows it: 1 to 15 bytes, no '/', no whitespace, not "." or "..".
pub fn valid_iface(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= IFACE_MAX
        && name != "."
        && name != ".."
        && !name.contains(['/', ':'])
        && !name.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// A sysfs counter file: one decimal number and a newline.
pub fn parse_counter(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// Reads one interface's received bytes each tick.
#[derive(Debug, Clone)]
pub struct NetReader {
    root: SysRoot,
    iface: String,
}

impl NetReader {
    pub fn new(root: &SysRoot, iface: &str) -> Self {
        NetReader {
            root: root.clone(),
            iface: iface.to_string(),
        }
    }

    /// The sysfs path of the counter, relative to the root.
    fn counter_path(&self) -> String {
        format!("sys/class/net/{}/statistics/rx_bytes", self.iface)
    }

    /// The interface exists (its counter is readable).
    pub fn present(&self) -> bool {
        self.read().is_some()
    }

    /// Bytes received so far; `None` when the interface is gone or the file unreadable.
    pub fn read(&self) -> Option<u64> {
        self.root
            .read_to_string(self.counter_path())
            .ok()
            .as_deref()
            .and_then(parse_counter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_counters() {
        assert!(valid_iface("lo") && valid_iface("enp3s0") && valid_iface("wlp0s20f3"));
        assert!(!valid_iface("") && !valid_iface("..") && !valid_iface("../x"));
        assert!(!valid_iface("a very long name"));
        assert_eq!(parse_counter("118034567\n"), Some(118_034_567));
        assert_eq!(parse_counter("x\n"), None);
    }

    #[test]
    fn reads_under_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sys/class/net/eth0/statistics");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("rx_bytes"), "4242\n").unwrap();
        let root = SysRoot::new(dir.path());
        assert_eq!(NetReader::new(&root, "eth0").read(), Some(4242));
        assert!(!NetReader::new(&root, "eth1").present());
    }
}
