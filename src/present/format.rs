//! The one family of numbers every output prints (TUI, plain and JSON texts, the summary,
//! exports, compare, bench tables, watch). The rules:
//!
//! - **Sizes and rates**: three significant digits in the largest unit that keeps the number
//!   below 1000 once rounded — `512 B`, `850 kB`, `12.3 kB`, `118 MB`, `4.00 GB`,
//!   `1.10 GB/s`; whole bytes below 1 kB. Decimal units (1 kB = 1000 B) by default, binary
//!   (`KiB`, `MiB`: `--binary`) on request, same digits. A rate below 0.5 kB/s is `0 MB/s`
//!   (a stall reads "0" beside "118 MB/s", not "37 B/s").
//! - **Clock** (a moment of the run: elapsed, ETA, a progress line): `mm:ss`, `h:mm:ss` past
//!   an hour — `00:42`, `1:02:03`. An event's time adds tenths, `00:31.2`, as drops are
//!   sub-second.
//! - **Durations** (how long something took): `0.4 s`, `4.2 s` (one decimal below 10 s),
//!   `42 s`, `76 s` (whole seconds below 100 s), `2 min 05 s`, `1 h 02 min`.
//! - **Percentages**: whole percent after a space, as every other unit — `42 %`, `100 %`. A
//!   reading or a share (busy, of the time, of the limit) is rounded; work done (bytes, a
//!   file, a flush) is rounded down, so `100 %` only once all of it is done.
//!
//! The chart axes' tick labels are [`super::axis`]'s.

const DECIMAL: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
const BINARY: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// A value scaled into its unit: the digits to print and the unit's index.
fn scaled(v: f64, binary: bool) -> (String, usize) {
    let base = if binary { 1024.0 } else { 1000.0 };
    let mut x = v.abs();
    let mut i = 0;
    if x.round() < 1000.0 {
        return (format!("{x:.0}"), 0);
    }
    loop {
        x /= base;
        i += 1;
        let digits = sig3(x);
        // Compare the rounded digits, so 999.7 kB becomes "1.00 MB", not "1000 kB".
        if digits.parse::<f64>().unwrap_or(0.0) < 1000.0 || i + 1 == DECIMAL.len() {
            return (digits, i);
        }
    }
}

/// Three significant digits of `x` (0 < x < 1000 expected): `4.00`, `12.3`, `118`; a value that
/// rounds up into the next decade loses a decimal (9.996 → `10.0`, 99.96 → `100`).
fn sig3(x: f64) -> String {
    for decimals in [2usize, 1, 0] {
        let limit = 10f64.powi(3 - decimals as i32);
        let r = format!("{x:.decimals$}");
        if r.parse::<f64>().unwrap_or(0.0) < limit || decimals == 0 {
            return r;
        }
    }
    unreachable!("the loop returns at decimals 0")
}

fn unit(i: usize, binary: bool) -> &'static str {
    if binary { BINARY[i] } else { DECIMAL[i] }
}

fn bytes_impl(n: f64, binary: bool) -> String {
    let (digits, i) = scaled(n, binary);
    format!("{digits} {}", unit(i, binary))
}

/// Bytes in decimal units: `512 B`, `12.3 kB`, `4.00 GB`.
pub fn fmt_bytes(n: u64) -> String {
    bytes_impl(n as f64, false)
}

/// Bytes in binary units: `1.50 GiB`.
pub fn fmt_bytes_bin(n: u64) -> String {
    bytes_impl(n as f64, true)
}

/// Bytes in decimal or binary units.
pub fn fmt_bytes_with(n: u64, binary: bool) -> String {
    bytes_impl(n as f64, binary)
}

/// A rate in decimal units: `118 MB/s`, `3.24 MB/s`, `950 kB/s`, `1.10 GB/s`.
pub fn fmt_rate(bps: f64) -> String {
    fmt_rate_with(bps, false)
}

/// A rate in decimal or binary units.
pub fn fmt_rate_with(bps: f64, binary: bool) -> String {
    if !bps.is_finite() {
        return "n/a".to_string();
    }
    if bps < 500.0 {
        return format!("0 {}/s", unit(2, binary));
    }
    format!("{}/s", bytes_impl(bps, binary))
}

/// A rate as a bare number of MB/s, for tables whose header names the unit: `41.4`, `118`.
pub fn fmt_mbps(bps: f64) -> String {
    if !bps.is_finite() || bps < 500.0 {
        return "0".to_string();
    }
    let v = bps / 1e6;
    if v.round() >= 1000.0 {
        format!("{v:.0}")
    } else {
        sig3(v)
    }
}

/// Two rates in the unit of the larger one, as drops are told: `118 → 3.40 MB/s`.
pub fn fmt_rate_pair(from: f64, to: f64) -> String {
    let hi = from.max(to).max(0.0);
    let (_, i) = scaled(hi, false);
    let lo = from.min(to);
    if lo >= 500.0 && scaled(lo, false).1 != i {
        // "1.20 GB/s → 3.00 MB/s": one unit would round the smaller rate to zero.
        return format!("{} → {}", fmt_rate(from), fmt_rate(to));
    }
    let div = 1000f64.powi(i as i32);
    let show = |x: f64| {
        if x < 500.0 {
            "0".to_string()
        } else if i == 0 {
            format!("{x:.0}")
        } else {
            sig3(x / div)
        }
    };
    format!("{} → {} {}/s", show(from), show(to), unit(i, false))
}

/// A duration: `37 ms` (below 0.05 s, so a copy shorter than a tick is not "0.0 s"), `0.4 s`,
/// `4.2 s`, `42 s`, `76 s`, `2 min 05 s`, `1 h 02 min`.
pub fn fmt_secs(secs: f64) -> String {
    if !secs.is_finite() || secs < 0.0 {
        return "n/a".to_string();
    }
    let tenths = (secs * 10.0).round();
    if secs > 0.0 && tenths < 1.0 {
        let ms = (secs * 1000.0).round();
        if ms < 1.0 {
            "<1 ms".to_string()
        } else {
            format!("{ms:.0} ms")
        }
    } else if tenths < 100.0 {
        format!("{:.1} s", tenths / 10.0)
    } else if secs.round() < 100.0 {
        format!("{secs:.0} s")
    } else if secs.round() < 3600.0 {
        let s = secs.round() as u64;
        format!("{} min {:02} s", s / 60, s % 60)
    } else {
        let m = (secs / 60.0).round() as u64;
        format!("{} h {:02} min", m / 60, m % 60)
    }
}

/// A moment of the run, elapsed or ETA: `00:42`, `12:03`, `1:02:03`.
pub fn fmt_clock(secs: f64) -> String {
    let s = if secs.is_finite() {
        secs.max(0.0).round() as u64
    } else {
        0
    };
    let (h, m, s) = (s / 3600, (s % 3600) / 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m:02}:{s:02}")
    }
}

/// An event's time since the start, with tenths: `00:31.2`, `1:02:03.4` past an hour.
pub fn fmt_event_time(t_ns: u64) -> String {
    let tenths = t_ns / 100_000_000;
    let secs = tenths / 10;
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}.{}", tenths % 10)
    } else {
        format!("{m:02}:{s:02}.{}", tenths % 10)
    }
}

/// A count with thin grouping, as the progress line shows it: `14 139`.
pub fn fmt_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// "1 file", "14 139 files".
pub fn fmt_files(n: u64) -> String {
    if n == 1 {
        "1 file".to_string()
    } else {
        format!("{} files", fmt_count(n))
    }
}

/// A percentage `p` (0–100: a reading or a share already times 100), rounded: `42 %`.
pub fn fmt_pct(p: f64) -> String {
    if !p.is_finite() {
        return "n/a".to_string();
    }
    format!("{p:.0} %")
}

/// How much of `total` is done, rounded down: `99 %` one byte short, `100 %` only when done
/// is total (or there is nothing to do).
pub fn fmt_pct_done(done: u64, total: u64) -> String {
    if total == 0 {
        return "100 %".to_string();
    }
    let pct = u128::from(done.min(total)) * 100 / u128::from(total);
    format!("{pct} %")
}

/// A file's modification time as a calendar date in UTC, `2026-11-30 19:42:07` (a file
/// time from stat, not the clock; UTC because the local zone needs the C library's tz tables).
pub fn fmt_utc_datetime(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's days-to-civil, exact for the proleptic Gregorian calendar.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (h, mi, s) = (rem / 3600, (rem / 60) % 60, rem % 60);
    format!("{y:04}-{m:02}-{d:02} {h:02}:{mi:02}:{s:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_datetimes() {
        assert_eq!(fmt_utc_datetime(0), "1970-01-01 00:00:00");
        assert_eq!(fmt_utc_datetime(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(fmt_utc_datetime(1_796_067_727), "2026-11-30 19:42:07");
        assert_eq!(fmt_utc_datetime(-1), "1969-12-31 23:59:59");
    }

    #[test]
    fn three_significant_digits_at_every_boundary() {
        assert_eq!(fmt_bytes(0), "0 B");
        assert_eq!(fmt_bytes(512), "512 B");
        assert_eq!(fmt_bytes(999), "999 B");
        assert_eq!(fmt_bytes(1_000), "1.00 kB");
        assert_eq!(fmt_bytes(9_994), "9.99 kB");
        assert_eq!(fmt_bytes(9_996), "10.0 kB");
        assert_eq!(fmt_bytes(12_345), "12.3 kB");
        assert_eq!(fmt_bytes(99_960), "100 kB");
        assert_eq!(fmt_bytes(850_000), "850 kB");
        assert_eq!(fmt_bytes(999_000), "999 kB");
        assert_eq!(fmt_bytes(999_499), "999 kB");
        assert_eq!(fmt_bytes(999_500), "1.00 MB");
        assert_eq!(fmt_bytes(999_700), "1.00 MB");
        assert_eq!(fmt_bytes(118_400_000), "118 MB");
        assert_eq!(fmt_bytes(410_327_040), "410 MB");
        assert_eq!(fmt_bytes(1_100_000_000), "1.10 GB");
        assert_eq!(fmt_bytes(4_000_000_000), "4.00 GB");
        assert_eq!(fmt_bytes(u64::MAX), "18.4 EB");
        assert_eq!(fmt_bytes_bin(1023), "1.00 KiB");
        assert_eq!(fmt_bytes_bin(1 << 30), "1.00 GiB");
        assert_eq!(fmt_bytes_bin(3 * (1 << 20) / 2), "1.50 MiB");
        assert_eq!(fmt_bytes_bin(1_023 * 1024), "1.00 MiB");
    }

    #[test]
    fn rates() {
        assert_eq!(fmt_rate(118e6), "118 MB/s");
        assert_eq!(fmt_rate(3.24e6), "3.24 MB/s");
        assert_eq!(fmt_rate(950e3), "950 kB/s");
        assert_eq!(fmt_rate(1.1e9), "1.10 GB/s");
        assert_eq!(fmt_rate(0.0), "0 MB/s");
        assert_eq!(fmt_rate(499.0), "0 MB/s");
        assert_eq!(fmt_rate_with(0.0, true), "0 MiB/s");
        assert_eq!(fmt_rate_with(20.0 * 1_048_576.0, true), "20.0 MiB/s");
        assert_eq!(fmt_rate(f64::NAN), "n/a");
        assert_eq!(fmt_mbps(41.44e6), "41.4");
        assert_eq!(fmt_mbps(1234e6), "1234");
        assert_eq!(fmt_mbps(0.0), "0");
        assert_eq!(fmt_rate_pair(118e6, 3e6), "118 → 3.00 MB/s");
        assert_eq!(fmt_rate_pair(118e6, 3.4e6), "118 → 3.40 MB/s");
        assert_eq!(fmt_rate_pair(118e6, 0.0), "118 → 0 MB/s");
        assert_eq!(fmt_rate_pair(118e6, 12.4e6), "118 → 12.4 MB/s");
        assert_eq!(fmt_rate_pair(1.2e9, 3e6), "1.20 GB/s → 3.00 MB/s");
        assert_eq!(fmt_rate_pair(1.2e9, 0.0), "1.20 → 0 GB/s");
    }

    #[test]
    fn durations_counts_clock() {
        assert_eq!(fmt_secs(0.04), "40 ms");
        assert_eq!(fmt_secs(0.0004), "<1 ms");
        assert_eq!(fmt_secs(0.0), "0.0 s");
        assert_eq!(fmt_secs(0.05), "0.1 s");
        assert_eq!(fmt_secs(1.44), "1.4 s");
        assert_eq!(fmt_secs(9.96), "10 s");
        assert_eq!(fmt_secs(12.4), "12 s");
        assert_eq!(fmt_secs(59.6), "60 s");
        assert_eq!(fmt_secs(99.4), "99 s");
        assert_eq!(fmt_secs(99.6), "1 min 40 s");
        assert_eq!(fmt_secs(125.0), "2 min 05 s");
        assert_eq!(fmt_secs(3720.0), "1 h 02 min");
        assert_eq!(fmt_count(14_139), "14 139");
        assert_eq!(fmt_count(999), "999");
        assert_eq!(fmt_count(1_000_000), "1 000 000");
        assert_eq!(fmt_clock(42.0), "00:42");
        assert_eq!(fmt_clock(3599.6), "1:00:00");
        assert_eq!(fmt_clock(3723.0), "1:02:03");
        assert_eq!(fmt_event_time(31_200_000_000), "00:31.2");
        assert_eq!(fmt_event_time(3_723_400_000_000), "1:02:03.4");
    }

    #[test]
    fn percentages() {
        assert_eq!(fmt_pct(42.4), "42 %");
        assert_eq!(fmt_pct(99.6), "100 %");
        assert_eq!(fmt_pct(0.0), "0 %");
        assert_eq!(fmt_pct(f64::NAN), "n/a");
        assert_eq!(fmt_pct_done(29, 100), "29 %");
        assert_eq!(fmt_pct_done(996, 1000), "99 %");
        assert_eq!(fmt_pct_done(u64::MAX - 1, u64::MAX), "99 %");
        assert_eq!(fmt_pct_done(7, 7), "100 %");
        assert_eq!(fmt_pct_done(8, 7), "100 %");
        assert_eq!(fmt_pct_done(0, 0), "100 %");
        assert_eq!(fmt_pct_done(0, 5), "0 %");
    }
}
