//! Number formatting for the screen: rates, sizes, durations, in decimal (MB/s, the default,
//! like forum result tables) or binary (MiB/s, `--binary`) units.

use crate::present::format::{fmt_bytes_with, fmt_rate_with};

/// Unit system for rates and sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Units {
    #[default]
    Decimal,
    Binary,
}

impl Units {
    /// Bytes per chart unit (MB or MiB).
    pub fn scale(self) -> f64 {
        match self {
            Units::Decimal => 1e6,
            Units::Binary => 1_048_576.0,
        }
    }

    pub fn rate_label(self) -> &'static str {
        match self {
            Units::Decimal => "MB/s",
            Units::Binary => "MiB/s",
        }
    }

    /// A rate such as "118 MB/s" (three significant figures), in this unit system.
    pub fn rate(self, bps: f64) -> String {
        if bps.is_finite() && bps < 500.0 {
            // "0 MB/s" reads better than "0 B/s" next to "118 MB/s".
            return format!("0 {}", self.rate_label());
        }
        fmt_rate_with(bps, self == Units::Binary)
    }

    /// A size such as "4.1 GB".
    pub fn size(self, bytes: u64) -> String {
        fmt_bytes_with(bytes, self == Units::Binary)
    }
}

/// "0s", "10s", "1m", "1m30s", "2h", "1h05m": short labels for the time axis.
pub fn fmt_duration_axis(secs: f64) -> String {
    let s = secs.round() as u64;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        let (m, r) = (s / 60, s % 60);
        if r == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{r:02}s")
        }
    } else {
        let (h, m) = (s / 3600, (s % 3600) / 60);
        if m == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{m:02}m")
        }
    }
}

/// "00:42", "12:03", "1:02:03": elapsed time and ETA.
pub fn fmt_clock(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    let (h, m, s) = (s / 3600, (s % 3600) / 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m:02}:{s:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(Units::Decimal.rate(118.4e6), "118 MB/s");
        assert_eq!(Units::Binary.rate(1_048_576.0 * 20.0), "20 MiB/s");
        assert_eq!(Units::Decimal.size(4_100_000_000), "4.1 GB");
        assert_eq!(Units::Decimal.rate(3.04e6), "3.0 MB/s");
        assert_eq!(fmt_duration_axis(90.0), "1m30s");
        assert_eq!(fmt_duration_axis(3900.0), "1h05m");
        assert_eq!(fmt_clock(42.0), "00:42");
        assert_eq!(fmt_clock(3723.0), "1:02:03");
    }
}
