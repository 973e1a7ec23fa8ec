//! Human-readable numbers for event texts, the TUI and reports: decimal units (MB/s)
//! by default, binary (MiB/s) on request, three significant figures.

const DECIMAL: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
const BINARY: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// Picks the unit whose scaled value, once rounded for display, is below the base.
fn scaled(v: f64, binary: bool) -> (f64, &'static str) {
    let (base, units) = if binary {
        (1024.0, &BINARY)
    } else {
        (1000.0, &DECIMAL)
    };
    let mut x = v.abs();
    let mut i = 0;
    // Compare against the rounded display value so 999.7 kB becomes "1.0 MB", not "1000 kB".
    while i + 1 < units.len() && round_display(x) >= base {
        x /= base;
        i += 1;
    }
    (if v < 0.0 { -x } else { x }, units[i])
}

/// Three significant figures: one decimal below 10, none above.
fn round_display(x: f64) -> f64 {
    if x < 10.0 {
        (x * 10.0).round() / 10.0
    } else {
        x.round()
    }
}

fn number(x: f64, unit_is_bytes: bool) -> String {
    if unit_is_bytes || x >= 10.0 || x == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

fn bytes_impl(n: f64, binary: bool) -> String {
    let (x, unit) = scaled(n, binary);
    format!("{} {unit}", number(x, unit == "B"))
}

/// Bytes in decimal units: `512 B`, `12 kB`, `1.1 GB`.
pub fn fmt_bytes(n: u64) -> String {
    bytes_impl(n as f64, false)
}

/// Bytes in binary units: `1.5 GiB`.
pub fn fmt_bytes_bin(n: u64) -> String {
    bytes_impl(n as f64, true)
}

/// Bytes in decimal or binary units.
pub fn fmt_bytes_with(n: u64, binary: bool) -> String {
    bytes_impl(n as f64, binary)
}

/// A rate in decimal units: `118 MB/s`, `3.2 MB/s`, `950 kB/s`.
pub fn fmt_rate(bps: f64) -> String {
    fmt_rate_with(bps, false)
}

/// A rate in decimal or binary units.
pub fn fmt_rate_with(bps: f64, binary: bool) -> String {
    if !bps.is_finite() {
        return "n/a".to_string();
    }
    format!("{}/s", bytes_impl(bps.max(0.0), binary))
}

/// Two rates in the unit of the larger one, as drops are told: `118 → 3 MB/s`.
pub fn fmt_rate_pair(from: f64, to: f64) -> String {
    let hi = from.max(to).max(0.0);
    let (_, unit) = scaled(hi, false);
    let lo = from.min(to);
    if lo > 0.0 && scaled(lo, false).1 != unit {
        // "1.2 GB/s → 3.0 MB/s": one unit would round the smaller rate to zero.
        return format!("{} → {}", fmt_rate(from), fmt_rate(to));
    }
    let div = match unit {
        "B" => 1.0,
        "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        "PB" => 1e15,
        _ => 1e18,
    };
    let a = from.max(0.0) / div;
    let b = to.max(0.0) / div;
    let show = |x: f64| {
        let r = round_display(x);
        // "118 → 3 MB/s" reads better than "118 → 3.0 MB/s".
        if unit == "B" || r == r.trunc() {
            format!("{r:.0}")
        } else {
            number(r, false)
        }
    };
    format!("{} → {} {unit}/s", show(a), show(b))
}

/// A duration in seconds: `0.4 s`, `12 s`, `2 min 05 s`, `1 h 02 min`.
pub fn fmt_secs(secs: f64) -> String {
    if !secs.is_finite() || secs < 0.0 {
        return "n/a".to_string();
    }
    if secs < 10.0 {
        format!("{:.1} s", (secs * 10.0).round() / 10.0)
    } else if secs < 60.0 {
        format!("{secs:.0} s")
    } else if secs < 3600.0 {
        let s = secs.round() as u64;
        format!("{} min {:02} s", s / 60, s % 60)
    } else {
        let m = (secs / 60.0).round() as u64;
        format!("{} h {:02} min", m / 60, m % 60)
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

/// A timestamp relative to the start: `00:31.2`, or `1:02:03.4` past an hour.
pub fn fmt_clock(t_ns: u64) -> String {
    let tenths = t_ns / 100_000_000;
    let secs = tenths / 10;
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}.{}", tenths % 10)
    } else {
        format!("{m:02}:{s:02}.{}", tenths % 10)
    }
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
    fn bytes_decimal_and_binary() {
        assert_eq!(fmt_bytes(0), "0 B");
        assert_eq!(fmt_bytes(512), "512 B");
        assert_eq!(fmt_bytes(12_345), "12 kB");
        assert_eq!(fmt_bytes(999_700), "1.0 MB");
        assert_eq!(fmt_bytes(1_100_000_000), "1.1 GB");
        assert_eq!(fmt_bytes(410_327_040), "410 MB");
        assert_eq!(fmt_bytes_bin(1 << 30), "1.0 GiB");
        assert_eq!(fmt_bytes_bin(3 * (1 << 20) / 2), "1.5 MiB");
    }

    #[test]
    fn rates() {
        assert_eq!(fmt_rate(118e6), "118 MB/s");
        assert_eq!(fmt_rate(3.24e6), "3.2 MB/s");
        assert_eq!(fmt_rate(950e3), "950 kB/s");
        assert_eq!(fmt_rate(f64::NAN), "n/a");
        assert_eq!(fmt_rate_pair(118e6, 3e6), "118 → 3 MB/s");
        assert_eq!(fmt_rate_pair(118e6, 3.4e6), "118 → 3.4 MB/s");
        assert_eq!(fmt_rate_pair(118e6, 0.0), "118 → 0 MB/s");
        assert_eq!(fmt_rate_pair(118e6, 12.4e6), "118 → 12 MB/s");
        assert_eq!(fmt_rate_pair(1.2e9, 3e6), "1.2 GB/s → 3.0 MB/s");
        assert_eq!(fmt_rate_pair(1.2e9, 0.0), "1.2 → 0 GB/s");
    }

    #[test]
    fn durations_counts_clock() {
        assert_eq!(fmt_secs(1.44), "1.4 s");
        assert_eq!(fmt_secs(12.4), "12 s");
        assert_eq!(fmt_secs(125.0), "2 min 05 s");
        assert_eq!(fmt_secs(3720.0), "1 h 02 min");
        assert_eq!(fmt_count(14_139), "14 139");
        assert_eq!(fmt_count(999), "999");
        assert_eq!(fmt_count(1_000_000), "1 000 000");
        assert_eq!(fmt_clock(31_200_000_000), "00:31.2");
        assert_eq!(fmt_clock(3_723_400_000_000), "1:02:03.4");
    }
}
