//! Pure parser for /proc/diskstats, and the per-tick sum over a set of devices
//! (looked up by major:minor, never by name, as block/stat.rst advises).

use super::DiskCounters;

/// One /proc/diskstats line (fields after the name, per iostats.rst).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskStat {
    pub major: u32,
    pub minor: u32,
    pub name: String,
    pub reads: u64,
    /// Field 3; always 512-byte sectors.
    pub sectors_read: u64,
    pub writes: u64,
    /// Field 7.
    pub sectors_written: u64,
    /// Field 8.
    pub write_ms: u64,
    /// Field 9.
    pub in_flight: u64,
    /// Field 10.
    pub io_ticks_ms: u64,
    /// Field 11.
    pub weighted_ms: u64,
}

/// The numeric fields 1–11 of a line whose first three tokens were consumed.
fn fields(rest: &mut std::str::SplitAsciiWhitespace<'_>) -> Option<[u64; 11]> {
    let mut f = [0u64; 11];
    for slot in &mut f {
        *slot = rest.next()?.parse().ok()?;
    }
    Some(f)
}

fn major_minor(it: &mut std::str::SplitAsciiWhitespace<'_>) -> Option<(u32, u32)> {
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// Parses every well-formed line; malformed or short lines are skipped.
pub fn parse_diskstats(text: &str) -> Vec<DiskStat> {
    text.lines()
        .filter_map(|line| {
            let mut it = line.split_ascii_whitespace();
            let (major, minor) = major_minor(&mut it)?;
            let name = it.next()?.to_string();
            let f = fields(&mut it)?;
            Some(DiskStat {
                major,
                minor,
                name,
                reads: f[0],
                sectors_read: f[2],
                writes: f[4],
                sectors_written: f[6],
                write_ms: f[7],
                in_flight: f[8],
                io_ticks_ms: f[9],
                weighted_ms: f[10],
            })
        })
        .collect()
}

/// Sums the counters of the devices `devs` (major, minor) without allocating; `None` when
/// none of them has a well-formed line. Counters are summed with wrapping, like the kernel's.
pub fn sum_diskstats(text: &str, devs: &[(u32, u32)]) -> Option<DiskCounters> {
    let mut out = DiskCounters::default();
    let mut found = 0u32;
    for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        let Some(mm) = major_minor(&mut it) else {
            continue;
        };
        if !devs.contains(&mm) || it.next().is_none() {
            continue;
        }
        let Some(f) = fields(&mut it) else {
            continue;
        };
        out.sectors_read = out.sectors_read.wrapping_add(f[2]);
        out.sectors_written = out.sectors_written.wrapping_add(f[6]);
        out.io_ticks_ms = out.io_ticks_ms.wrapping_add(f[9]);
        out.weighted_ms = out.weighted_ms.wrapping_add(f[10]);
        found += 1;
    }
    out.disks = found;
    (found > 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = " 254       0 vda 26477 4484 2297290 8404 180074 47283 7823944 102699 0 11268 113157 12142 8 1342936 1131 42860 921\n   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n 253 0 short 1 2 3\n";

    #[test]
    fn parses_fields_by_position() {
        let d = parse_diskstats(TEXT);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].name, "vda");
        assert_eq!((d[0].major, d[0].minor), (254, 0));
        assert_eq!(d[0].sectors_read, 2_297_290);
        assert_eq!(d[0].sectors_written, 7_823_944);
        assert_eq!(d[0].io_ticks_ms, 11_268);
        assert_eq!(d[0].weighted_ms, 113_157);
    }

    #[test]
    fn sums_only_requested_devices() {
        let s = sum_diskstats(TEXT, &[(254, 0), (7, 0)]).unwrap();
        assert_eq!(s.disks, 2);
        assert_eq!(s.sectors_written, 7_823_944);
        assert!(sum_diskstats(TEXT, &[(253, 0)]).is_none());
        assert!(sum_diskstats(TEXT, &[]).is_none());
    }
}
