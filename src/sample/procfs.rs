//! Pure parsers for /proc/meminfo, /proc/vmstat and /proc/pressure/io, and the vm
//! tunables list. Units are converted here: meminfo kB → bytes, vmstat pages stay
//! pages until [`page_cache`] multiplies by the real page size.

use super::error::ParseError;
use super::{PageCache, Psi};

/// The /proc/meminfo fields copyscope uses, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Meminfo {
    pub mem_total: Option<u64>,
    pub dirty: u64,
    pub writeback: u64,
    /// FUSE writeback (absent on old kernels).
    pub writeback_tmp: Option<u64>,
}

/// Value of a meminfo line body such as `   1234 kB` in bytes; a bare number is taken as bytes
/// (HugePages_* counts have no unit).
fn meminfo_value(body: &str) -> Option<u64> {
    let mut it = body.split_ascii_whitespace();
    let n: u64 = it.next()?.parse().ok()?;
    match it.next() {
        Some("kB") => Some(n.saturating_mul(1024)),
        None => Some(n),
        Some(_) => None,
    }
}

/// Parses /proc/meminfo. `Dirty` and `Writeback` are required.
pub fn parse_meminfo(text: &str) -> Result<Meminfo, ParseError> {
    const FILE: &str = "meminfo";
    let mut m = Meminfo::default();
    let (mut dirty, mut writeback) = (None, None);
    for line in text.lines() {
        let Some((key, body)) = line.split_once(':') else {
            continue;
        };
        let slot = match key.trim() {
            "MemTotal" => &mut m.mem_total,
            "Dirty" => &mut dirty,
            "Writeback" => &mut writeback,
            "WritebackTmp" => &mut m.writeback_tmp,
            _ => continue,
        };
        *slot = Some(meminfo_value(body).ok_or(ParseError::BadValue {
            file: FILE,
            field: "value",
        })?);
    }
    m.dirty = dirty.ok_or(ParseError::Missing {
        file: FILE,
        field: "Dirty",
    })?;
    m.writeback = writeback.ok_or(ParseError::Missing {
        file: FILE,
        field: "Writeback",
    })?;
    Ok(m)
}

/// The /proc/vmstat counters copyscope uses, in **pages**.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Vmstat {
    pub nr_dirty: u64,
    pub nr_writeback: u64,
    pub nr_dirty_threshold: u64,
    pub nr_dirty_background_threshold: u64,
    pub nr_dirtied: u64,
    pub nr_written: u64,
}

/// Parses /proc/vmstat (`name value` per line). The two thresholds are required because
/// the page-cache model is meaningless without them; the counters default to 0.
pub fn parse_vmstat(text: &str) -> Result<Vmstat, ParseError> {
    const FILE: &str = "vmstat";
    let mut v = Vmstat::default();
    let (mut thresh, mut bg) = (None, None);
    for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        let (Some(key), Some(val)) = (it.next(), it.next()) else {
            continue;
        };
        let slot = match key {
            "nr_dirty" => &mut v.nr_dirty,
            "nr_writeback" => &mut v.nr_writeback,
            "nr_dirtied" => &mut v.nr_dirtied,
            "nr_written" => &mut v.nr_written,
            "nr_dirty_threshold" => {
                thresh = val.parse::<u64>().ok();
                continue;
            }
            "nr_dirty_background_threshold" => {
                bg = val.parse::<u64>().ok();
                continue;
            }
            _ => continue,
        };
        *slot = val.parse().map_err(|_| ParseError::BadValue {
            file: FILE,
            field: "counter",
        })?;
    }
    v.nr_dirty_threshold = thresh.ok_or(ParseError::Missing {
        file: FILE,
        field: "nr_dirty_threshold",
    })?;
    v.nr_dirty_background_threshold = bg.ok_or(ParseError::Missing {
        file: FILE,
        field: "nr_dirty_background_threshold",
    })?;
    Ok(v)
}

/// Combines meminfo (bytes) and vmstat (pages) into the [`PageCache`] sample part.
pub fn page_cache(mem: &Meminfo, vm: &Vmstat, page_size: u64) -> PageCache {
    PageCache {
        dirty: mem.dirty,
        writeback: mem.writeback,
        bg_thresh: vm.nr_dirty_background_threshold.saturating_mul(page_size),
        thresh: vm.nr_dirty_threshold.saturating_mul(page_size),
        written: vm.nr_written.saturating_mul(page_size),
    }
}

/// Parses /proc/pressure/io: the cumulative `total=` µs of the `some` and `full` lines.
/// `some` is required; `full` is 0 when absent.
pub fn parse_psi(text: &str) -> Result<Psi, ParseError> {
    const FILE: &str = "pressure/io";
    let mut some = None;
    let mut full = None;
    for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        let slot = match it.next() {
            Some("some") => &mut some,
            Some("full") => &mut full,
            _ => continue,
        };
        let total = it
            .find_map(|t| t.strip_prefix("total="))
            .ok_or(ParseError::Missing {
                file: FILE,
                field: "total",
            })?;
        *slot = Some(total.parse::<u64>().map_err(|_| ParseError::BadValue {
            file: FILE,
            field: "total",
        })?);
    }
    Ok(Psi {
        some_us: some.ok_or(ParseError::Missing {
            file: FILE,
            field: "some",
        })?,
        full_us: full.unwrap_or(0),
    })
}

/// Parses a one-number file (sysctl or module parameter), tolerating surrounding whitespace.
pub fn parse_u64_value(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// The vm sysctls that shape page-cache writeback, read at start and shown.
pub const VM_TUNABLES: &[&str] = &[
    "dirty_ratio",
    "dirty_background_ratio",
    "dirty_bytes",
    "dirty_background_bytes",
    "dirty_expire_centisecs",
    "dirty_writeback_centisecs",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_converts_kb_to_bytes() {
        let m = parse_meminfo(
            "MemTotal: 100 kB\nDirty:   7 kB\nWriteback:  3 kB\nHugePages_Total: 0\n",
        )
        .unwrap();
        assert_eq!(m.mem_total, Some(102_400));
        assert_eq!(m.dirty, 7 * 1024);
        assert_eq!(m.writeback, 3 * 1024);
        assert_eq!(m.writeback_tmp, None);
    }

    #[test]
    fn meminfo_without_dirty_is_an_error() {
        assert!(matches!(
            parse_meminfo("MemTotal: 1 kB\nWriteback: 0 kB\n"),
            Err(ParseError::Missing { field: "Dirty", .. })
        ));
    }

    #[test]
    fn vmstat_needs_thresholds_and_page_cache_uses_page_size() {
        let v = parse_vmstat(
            "nr_dirty 10\nnr_writeback 2\nnr_dirty_threshold 200\nnr_dirty_background_threshold 100\nnr_written 5\n",
        )
        .unwrap();
        let m = Meminfo {
            dirty: 40960,
            writeback: 8192,
            ..Default::default()
        };
        let pc = page_cache(&m, &v, 4096);
        assert_eq!(pc.thresh, 200 * 4096);
        assert_eq!(pc.bg_thresh, 100 * 4096);
        assert_eq!(pc.freerun(), 150 * 4096);
        assert_eq!(pc.written, 5 * 4096);
        assert!(parse_vmstat("nr_dirty 1\n").is_err());
    }

    #[test]
    fn psi_reads_totals_and_tolerates_missing_full() {
        let p = parse_psi(
            "some avg10=0.00 avg60=0.13 avg300=0.55 total=4849398\nfull avg10=0.00 avg60=0.06 avg300=0.37 total=3597326\n",
        )
        .unwrap();
        assert_eq!((p.some_us, p.full_us), (4_849_398, 3_597_326));
        let p = parse_psi("some avg10=1.00 avg60=0.00 avg300=0.00 total=12\n").unwrap();
        assert_eq!((p.some_us, p.full_us), (12, 0));
        assert!(parse_psi("").is_err());
    }
}
