//! The unit system of a run's outputs: decimal (MB/s, the default, like forum result tables)
//! or binary (MiB/s, `--binary`); the digits are [`super::format`]'s.

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

    /// A rate such as "118 MB/s", in this unit system ([`super::format`]'s rule).
    pub fn rate(self, bps: f64) -> String {
        fmt_rate_with(bps, self == Units::Binary)
    }

    /// A size such as "4.10 GB".
    pub fn size(self, bytes: u64) -> String {
        fmt_bytes_with(bytes, self == Units::Binary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(Units::Decimal.rate(118.4e6), "118 MB/s");
        assert_eq!(Units::Binary.rate(1_048_576.0 * 20.0), "20.0 MiB/s");
        assert_eq!(Units::Decimal.size(4_100_000_000), "4.10 GB");
        assert_eq!(Units::Decimal.rate(3.04e6), "3.04 MB/s");
        assert_eq!(Units::Decimal.rate(0.0), "0 MB/s");
    }
}
