//! Pure parsers for the OpenZFS kstats (docs/signals.md): `txgs` in the 0.7 layout (kstat
//! line first), the 0.8+ layout and FreeBSD's leading newline; named kstats (`dmu_tx`,
//! `arcstats`, `objset-0x…`) including type-7 strings; `zpool list -vHP` output; and the
//! txg state transitions (S = sync started, C = committed) between two reads.

use std::collections::BTreeMap;

use super::error::ParseError;
use super::{DmuTx, TxgRow};

/// The SPL kstat line `kid type flags ndata data_size crtime snaptime` (0.7 txgs, named kstats).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KstatHeader {
    pub kid: u64,
    pub ktype: u32,
    pub flags: u32,
    pub ndata: u64,
    pub data_size: u64,
    pub crtime: u64,
    /// gethrtime() at read time: on 0.7, snaptime − birth is each txg's age.
    pub snaptime: u64,
}

/// Parses a kstat header line; `None` unless it is exactly 7 integers (flags in hex).
pub fn parse_kstat_header(line: &str) -> Option<KstatHeader> {
    let t: Vec<&str> = line.split_ascii_whitespace().collect();
    if t.len() != 7 {
        return None;
    }
    let flags = t[2].strip_prefix("0x")?;
    Some(KstatHeader {
        kid: t[0].parse().ok()?,
        ktype: t[1].parse().ok()?,
        flags: u32::from_str_radix(flags, 16).ok()?,
        ndata: t[3].parse().ok()?,
        data_size: t[4].parse().ok()?,
        crtime: t[5].parse().ok()?,
        snaptime: t[6].parse().ok()?,
    })
}

/// A parsed `txgs` file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Txgs {
    /// Present on 0.6.3–0.7 only.
    pub kstat: Option<KstatHeader>,
    /// Rows keyed by txg, ascending (oldest first), one per txg.
    pub rows: Vec<TxgRow>,
}

fn parse_txg_row(line: &str) -> Option<TxgRow> {
    let mut toks = [""; 12];
    let mut it = line.split_ascii_whitespace();
    for slot in &mut toks {
        *slot = it.next()?;
    }
    if it.next().is_some() {
        return None;
    }
    let mut chars = toks[2].chars();
    let state = chars.next()?;
    if chars.next().is_some() || !(state.is_ascii_uppercase() || state == '?') {
        return None;
    }
    let mut v = [0u64; 11];
    for (slot, tok) in v
        .iter_mut()
        .zip(toks.iter().enumerate().filter(|(i, _)| *i != 2))
    {
        *slot = tok.1.parse().ok()?;
    }
    Some(TxgRow {
        txg: v[0],
        birth: v[1],
        state,
        ndirty: v[2],
        nread: v[3],
        nwritten: v[4],
        reads: v[5],
        writes: v[6],
        otime: v[7],
        qtime: v[8],
        wtime: v[9],
        stime: v[10],
    })
}

/// Parses a `txgs` file. Lines before the `txg …` header are skipped (the 0.7 kstat line is
/// kept, FreeBSD's leading newline and garbage are ignored); columns are split on whitespace
/// since padding and wide txg numbers break alignment. A last line without its newline may be
/// a cut-off read, so it is dropped. Malformed rows are skipped.
pub fn parse_txgs(text: &str) -> Result<Txgs, ParseError> {
    let mut lines: Vec<&str> = text.split('\n').collect();
    // The tail after the last newline is either empty or a cut-off line.
    lines.pop();
    let mut kstat = None;
    let mut header_at = None;
    for (i, line) in lines.iter().enumerate() {
        if line.split_ascii_whitespace().next() == Some("txg") {
            header_at = Some(i);
            break;
        }
        if let Some(h) = parse_kstat_header(line) {
            kstat = Some(h);
        }
    }
    let start = header_at.ok_or(ParseError::NoHeader { file: "txgs" })? + 1;
    let mut by_txg = BTreeMap::new();
    for line in &lines[start..] {
        if let Some(row) = parse_txg_row(line) {
            by_txg.insert(row.txg, row);
        }
    }
    Ok(Txgs {
        kstat,
        rows: by_txg.into_values().collect(),
    })
}

/// What happened to a txg between two reads of `txgs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxgTransition {
    /// The row entered `S`: spa_sync started.
    SyncStarted { txg: u64 },
    /// The row entered `C`: the sync finished; sizes and times are now final.
    Committed { row: TxgRow },
}

/// Transitions from `prev` to `cur` (both oldest first). A txg first seen already in `S` or `C`
/// counts as having entered it, so a sync shorter than one tick is not lost; a txg seen in `C`
/// without an `S` before also reports the sync start first.
pub fn txg_transitions(prev: &[TxgRow], cur: &[TxgRow]) -> Vec<TxgTransition> {
    let mut out = Vec::new();
    for row in cur {
        let before = prev.iter().find(|p| p.txg == row.txg).map(|p| p.state);
        let was_synced_or_syncing = matches!(before, Some('S') | Some('C'));
        match row.state {
            'S' if !was_synced_or_syncing => out.push(TxgTransition::SyncStarted { txg: row.txg }),
            'C' if before != Some('C') => {
                if !was_synced_or_syncing {
                    out.push(TxgTransition::SyncStarted { txg: row.txg });
                }
                out.push(TxgTransition::Committed { row: *row });
            }
            _ => {}
        }
    }
    out
}

/// A value of a named kstat row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KstatData<'a> {
    /// Types 0–6 (char, int32, uint32, int64, uint64, long, ulong) as a number.
    Int(i128),
    /// Type 7 (string), or an unparsable value.
    Text(&'a str),
}

/// One named-kstat row: `name type data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KstatRow<'a> {
    pub name: &'a str,
    pub ktype: u32,
    pub data: KstatData<'a>,
}

impl KstatRow<'_> {
    /// The value as u64 when it is a non-negative number.
    pub fn as_u64(&self) -> Option<u64> {
        match self.data {
            KstatData::Int(v) => u64::try_from(v).ok(),
            KstatData::Text(_) => None,
        }
    }
}

const STRING_TYPE: u32 = 7;

fn make_row<'a>(name: &'a str, ktype: u32, data: &'a str) -> Option<KstatRow<'a>> {
    if name.is_empty() {
        return None;
    }
    let data = data.trim();
    let value = if ktype == STRING_TYPE {
        KstatData::Text(data)
    } else {
        data.parse::<i128>()
            .map(KstatData::Int)
            .unwrap_or(KstatData::Text(data))
    };
    Some(KstatRow {
        name,
        ktype,
        data: value,
    })
}

/// Parses one row. The kernel prints `"%-31s %-4d "` then the value, so the fixed columns
/// are tried first (names may contain spaces, e.g. `"1 ns"` in dmu_tx_assign); longer names
/// shift the layout, and then tokens are used: numeric types have a one-token value, strings
/// take the rest of the line after the first `7`.
pub fn parse_kstat_row(line: &str) -> Option<KstatRow<'_>> {
    let b = line.as_bytes();
    if b.len() >= 37
        && b[31] == b' '
        && b[36] == b' '
        && line.is_char_boundary(31)
        && line.is_char_boundary(32)
        && line.is_char_boundary(36)
        && line.is_char_boundary(37)
        && let Ok(t) = line[32..36].trim().parse::<u32>()
    {
        return make_row(line[..31].trim_end(), t, &line[37..]);
    }
    let toks: Vec<&str> = line.split_ascii_whitespace().collect();
    if toks.len() >= 3
        && let Ok(t) = toks[toks.len() - 2].parse::<u32>()
        && t != STRING_TYPE
        && toks[toks.len() - 1].parse::<i128>().is_ok()
    {
        let data = toks[toks.len() - 1];
        let type_tok = toks[toks.len() - 2];
        let name_end = line.rfind(data)?;
        let name_end = line[..name_end].rfind(type_tok)?;
        return make_row(line[..name_end].trim(), t, data);
    }
    // String rows: the first standalone "7" after the name.
    let mut offset = 0;
    let mut seen_name = false;
    for tok in line.split_ascii_whitespace() {
        let at = offset + line[offset..].find(tok)?;
        offset = at + tok.len();
        if seen_name && tok == "7" {
            return make_row(line[..at].trim(), STRING_TYPE, &line[offset..]);
        }
        seen_name = true;
    }
    None
}

/// The rows of a named kstat file after its `name type data` header (the kstat line before
/// it is optional). Without that header the text is not a named kstat and nothing is yielded.
pub fn named_kstat_rows(text: &str) -> impl Iterator<Item = KstatRow<'_>> {
    let mut lines = text.lines();
    let found = lines
        .by_ref()
        .any(|l| l.split_ascii_whitespace().eq(["name", "type", "data"]));
    lines.filter(move |_| found).filter_map(parse_kstat_row)
}

/// The kstat header line of a named kstat file, if present.
pub fn named_kstat_header(text: &str) -> Option<KstatHeader> {
    text.lines().take(2).find_map(parse_kstat_header)
}

/// One u64 field of a named kstat, scanning without allocation (cheap enough per tick).
pub fn named_kstat_u64(text: &str, name: &str) -> Option<u64> {
    named_kstat_rows(text)
        .find(|r| r.name == name)
        .and_then(|r| r.as_u64())
}

/// One string field (type 7) of a named kstat.
pub fn named_kstat_str<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    named_kstat_rows(text)
        .find(|r| r.name == name)
        .and_then(|r| match r.data {
            KstatData::Text(s) => Some(s),
            KstatData::Int(_) => None,
        })
}

/// Parses `/proc/spl/kstat/zfs/dmu_tx`; fields absent in a version stay 0. Errors when the
/// text has no named-kstat rows at all.
pub fn parse_dmu_tx(text: &str) -> Result<DmuTx, ParseError> {
    let mut d = DmuTx::default();
    let mut any = false;
    for row in named_kstat_rows(text) {
        let Some(v) = row.as_u64() else { continue };
        let slot = match row.name {
            "dmu_tx_assigned" => &mut d.assigned,
            "dmu_tx_delay" => &mut d.delay,
            "dmu_tx_dirty_throttle" => &mut d.dirty_throttle,
            "dmu_tx_dirty_delay" => &mut d.dirty_delay,
            "dmu_tx_dirty_over_max" => &mut d.dirty_over_max,
            _ => {
                any = true;
                continue;
            }
        };
        *slot = v;
        any = true;
    }
    if any {
        Ok(d)
    } else {
        Err(ParseError::NoHeader { file: "dmu_tx" })
    }
}

/// A dataset's objset kstat (0.8+): `dataset_name` plus cumulative logical intake counters.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Objset {
    pub dataset_name: String,
    pub writes: u64,
    pub nwritten: u64,
    pub reads: u64,
    pub nread: u64,
}

/// Parses `/proc/spl/kstat/zfs/POOL/objset-0x…`; `dataset_name` and `nwritten` are required.
pub fn parse_objset(text: &str) -> Result<Objset, ParseError> {
    const FILE: &str = "objset";
    let mut o = Objset::default();
    let (mut name, mut nwritten) = (None, None);
    for row in named_kstat_rows(text) {
        match (row.name, row.data) {
            ("dataset_name", KstatData::Text(s)) => name = Some(s.to_string()),
            ("nwritten", _) => nwritten = row.as_u64(),
            ("writes", _) => o.writes = row.as_u64().unwrap_or(0),
            ("reads", _) => o.reads = row.as_u64().unwrap_or(0),
            ("nread", _) => o.nread = row.as_u64().unwrap_or(0),
            _ => {}
        }
    }
    o.dataset_name = name.ok_or(ParseError::Missing {
        file: FILE,
        field: "dataset_name",
    })?;
    o.nwritten = nwritten.ok_or(ParseError::Missing {
        file: FILE,
        field: "nwritten",
    })?;
    Ok(o)
}

/// Leaf vdev device paths of `pool` from `zpool list -vHP` output. Scripted mode prints the
/// pool line unindented and vdev lines with a leading tab, tab-separated; with `-P` leaves are
/// absolute paths while mirror-N/raidz-N and the `logs`/`cache`/`spare` headers are not.
/// Cache (L2ARC) and spare devices are left out: they are not on the write path of a copy.
pub fn parse_zpool_list_vhp(text: &str, pool: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_pool = false;
    let mut excluded_section = false;
    for line in text.lines() {
        let indented = line.starts_with(['\t', ' ']);
        let Some(name) = line.split('\t').map(str::trim).find(|t| !t.is_empty()) else {
            continue;
        };
        // Allocation-class headers appear unindented in some versions and indented in
        // others; either way they belong to the pool above them.
        match name {
            "cache" | "spare" | "spares" if in_pool => {
                excluded_section = true;
                continue;
            }
            "logs" | "log" | "special" | "dedup" if in_pool => {
                excluded_section = false;
                continue;
            }
            _ => {}
        }
        if !indented {
            in_pool = name == pool;
            excluded_section = false;
        } else if in_pool && !excluded_section && name.starts_with('/') {
            out.push(name.to_string());
        }
    }
    out
}

/// The ZFS module parameters shown and used; absent ones are skipped.
pub const ZFS_TUNABLES: &[&str] = &[
    "zfs_dirty_data_max",
    "zfs_dirty_data_max_max",
    "zfs_dirty_data_max_percent",
    "zfs_dirty_data_sync_percent",
    "zfs_dirty_data_sync",
    "zfs_delay_min_dirty_percent",
    "zfs_delay_scale",
    "zfs_txg_timeout",
    "zfs_txg_history",
    "zfs_vdev_async_write_active_min_dirty_percent",
    "zfs_vdev_async_write_active_max_dirty_percent",
    "zfs_wrlog_data_max",
    "zfs_arc_max",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kstat_row_with_spaces_in_name_uses_columns() {
        let r = parse_kstat_row("1048576 ns                      4    3").unwrap();
        assert_eq!(r.name, "1048576 ns");
        assert_eq!(r.as_u64(), Some(3));
    }

    #[test]
    fn kstat_row_with_long_name_falls_back_to_tokens() {
        let r = parse_kstat_row("a_name_that_is_longer_than_thirty_one 4 17").unwrap();
        assert_eq!(r.name, "a_name_that_is_longer_than_thirty_one");
        assert_eq!(r.as_u64(), Some(17));
        let r = parse_kstat_row("dataset_name_but_much_longer_than_31 7 tank/a b").unwrap();
        assert_eq!(r.data, KstatData::Text("tank/a b"));
    }

    #[test]
    fn string_row_keeps_spaces() {
        let line = format!("{:<31} {:<4} {}", "dataset_name", 7, "tank/my share");
        let r = parse_kstat_row(&line).unwrap();
        assert_eq!(r.data, KstatData::Text("tank/my share"));
    }

    #[test]
    fn transitions_report_s_and_c_once() {
        let row = |txg, state| TxgRow {
            txg,
            state,
            ..Default::default()
        };
        let a = [row(1, 'C'), row(2, 'S'), row(3, 'O')];
        let b = [row(2, 'C'), row(3, 'S'), row(4, 'O')];
        let t = txg_transitions(&a, &b);
        assert_eq!(
            t,
            vec![
                TxgTransition::Committed { row: row(2, 'C') },
                TxgTransition::SyncStarted { txg: 3 }
            ]
        );
        assert!(txg_transitions(&b, &b).is_empty());
        // A sync that started and finished between two reads still yields both events.
        let c = [row(3, 'C'), row(4, 'O')];
        let t = txg_transitions(&[row(3, 'O')], &c);
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn zpool_list_sections() {
        let text = "tank\t7.5G\t1G\n\tmirror-0\t4G\n\t/dev/sda1\t4G\n\t/dev/sdb1\t4G\nlogs\t-\n\t/dev/nvme0n1p1\t1G\ncache\t-\n\t/dev/sdc\t1G\nother\t1G\n\t/dev/sdz\t1G\n";
        let v = parse_zpool_list_vhp(text, "tank");
        assert_eq!(v, vec!["/dev/sda1", "/dev/sdb1", "/dev/nvme0n1p1"]);
        assert_eq!(parse_zpool_list_vhp(text, "other"), vec!["/dev/sdz"]);
    }
}
