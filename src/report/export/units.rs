//! Number formatting and axis ticks shared by every export (decimal units: 1 MB = 10^6 B).

/// A rate unit for an axis: the divisor and its label.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateUnit {
    pub divisor: f64,
    pub label: &'static str,
}

/// The unit that shows `max_bps` with 1–3 integer digits (MB/s for typical copies).
pub fn rate_unit(max_bps: f64) -> RateUnit {
    const UNITS: [(f64, &str); 4] = [(1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s"), (1.0, "B/s")];
    for (divisor, label) in UNITS {
        if max_bps >= divisor {
            return RateUnit { divisor, label };
        }
    }
    RateUnit {
        divisor: 1e6,
        label: "MB/s",
    }
}

/// The smallest "round" step (1, 2, 2.5 or 5 × 10^k) such that `max / step <= target`.
pub fn nice_step(max: f64, target: usize) -> f64 {
    let target = target.max(1) as f64;
    if !(max.is_finite() && max > 0.0) {
        return 1.0;
    }
    let raw = max / target;
    let mag = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * mag >= raw * (1.0 - 1e-9) {
            return m * mag;
        }
    }
    10.0 * mag
}

/// Time tick step in seconds giving at most `target` ticks over `span_s`.
pub fn time_step(span_s: f64, target: usize) -> f64 {
    const STEPS: [f64; 22] = [
        0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0,
        1200.0, 1800.0, 3600.0, 7200.0, 10800.0, 21600.0, 43200.0,
    ];
    let raw = span_s / target.max(1) as f64;
    STEPS.iter().copied().find(|s| *s >= raw).unwrap_or(86400.0)
}

/// A tick number in an axis unit without trailing zeros: 2.5, 10, 120.
pub fn fmt_tick(v: f64) -> String {
    if (v - v.round()).abs() < 1e-6 {
        format!("{}", v.round() as i64)
    } else if (v * 10.0 - (v * 10.0).round()).abs() < 1e-6 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Three significant digits: 126, 41.4, 3.13, 0.52.
fn sig3(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Bytes in decimal units: "3.13 GB", "410 MB", "512 B".
pub fn fmt_bytes(b: f64) -> String {
    const UNITS: [(f64, &str); 5] = [
        (1e12, "TB"),
        (1e9, "GB"),
        (1e6, "MB"),
        (1e3, "kB"),
        (1.0, "B"),
    ];
    let a = b.abs();
    for (div, label) in UNITS {
        if a >= div * 0.9995 {
            if div == 1.0 {
                return format!("{} B", b.round() as i64);
            }
            return format!("{} {label}", sig3(b / div));
        }
    }
    "0 B".to_string()
}

/// A rate in decimal units: "41.4 MB/s".
pub fn fmt_rate(bps: f64) -> String {
    if !bps.is_finite() || bps.abs() < 0.5 {
        return "0 MB/s".to_string();
    }
    let unit = rate_unit(bps);
    format!("{} {}", sig3(bps / unit.divisor), unit.label)
}

/// A rate as a bare number of MB/s for tables: "41.4".
pub fn fmt_mbps(bps: f64) -> String {
    let v = bps / 1e6;
    if v.abs() < 0.005 {
        "0".to_string()
    } else {
        sig3(v)
    }
}

/// A duration: "0.40 s", "4.3 s", "75.8 s", "2 min 05 s", "1 h 02 min".
pub fn fmt_secs(s: f64) -> String {
    if !s.is_finite() {
        return "n/a".to_string();
    }
    if s < 1.0 {
        format!("{s:.2} s")
    } else if s < 100.0 {
        format!("{s:.1} s")
    } else if s < 3600.0 {
        let t = s.round() as u64;
        format!("{} min {:02} s", t / 60, t % 60)
    } else {
        let t = (s / 60.0).round() as u64;
        format!("{} h {:02} min", t / 60, t % 60)
    }
}

/// A position on the time axis: "0:04.1" (m:ss.d), or "1:02:03" past an hour.
pub fn fmt_clock(t_s: f64) -> String {
    let t_s = t_s.max(0.0);
    if t_s >= 3600.0 {
        let t = t_s.round() as u64;
        format!("{}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60)
    } else {
        let tenths = (t_s * 10.0).round() as u64;
        format!("{}:{:02}.{}", tenths / 600, (tenths / 10) % 60, tenths % 10)
    }
}

/// A time-axis tick label: "10s" under 100 s, "1:30" under an hour, "1:02:00" beyond.
pub fn fmt_axis_time(t_s: f64, step: f64) -> String {
    if t_s < 100.0 && step < 60.0 {
        if step < 1.0 {
            format!("{t_s:.1}s")
        } else {
            format!("{}s", t_s.round() as i64)
        }
    } else if t_s < 3600.0 {
        let t = t_s.round() as u64;
        format!("{}:{:02}", t / 60, t % 60)
    } else {
        let t = t_s.round() as u64;
        format!("{}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60)
    }
}

/// Shortens `s` to at most `max` characters, keeping both ends ("/tank/…/file.iso").
pub fn ellipsize_middle(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max || max < 5 {
        return s.to_string();
    }
    let keep = max - 1;
    let head = keep / 2;
    let tail = keep - head;
    let start: String = s.chars().take(head).collect();
    let end: String = s.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_round() {
        assert_eq!(nice_step(126.0, 5), 50.0);
        assert_eq!(nice_step(100.0, 4), 25.0);
        assert_eq!(nice_step(9.0, 4), 2.5);
        assert_eq!(nice_step(0.0, 4), 1.0);
        assert_eq!(time_step(76.0, 10), 10.0);
        assert_eq!(time_step(3600.0, 10), 600.0);
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_bytes(3_133_149_482.0), "3.13 GB");
        assert_eq!(fmt_bytes(410_327_040.0), "410 MB");
        assert_eq!(fmt_bytes(512.0), "512 B");
        assert_eq!(fmt_rate(41_400_000.0), "41.4 MB/s");
        assert_eq!(fmt_rate(0.0), "0 MB/s");
        assert_eq!(fmt_secs(75.75), "75.8 s");
        assert_eq!(fmt_secs(125.0), "2 min 05 s");
        assert_eq!(fmt_clock(4.14), "0:04.1");
        assert_eq!(fmt_clock(75.0), "1:15.0");
        assert_eq!(fmt_axis_time(30.0, 10.0), "30s");
        assert_eq!(fmt_axis_time(150.0, 30.0), "2:30");
        assert_eq!(ellipsize_middle("abcdefghij", 7), "abc…hij");
        assert_eq!(fmt_tick(2.5), "2.5");
        assert_eq!(fmt_tick(100.0), "100");
    }
}
