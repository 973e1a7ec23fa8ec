//! The chart axes of every face (TUI chart, SVG/PNG, text chart, compare): the axis unit, the
//! one y-step rule ([`nice_step`]), time steps, and the short tick labels that fit under a
//! tick (`2.5`, `30s`, `1m10s`, `50%`). Everything else is formatted by [`super::format`].

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

/// The round numbers a step may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steps {
    /// 1, 2, 2.5 or 5 × 10^k: the TUI chart, the pictures, compare, day-long time steps.
    Round,
    /// Also 1.5, 3, 4, 6 and 8 × 10^k, for an axis of few rows: the text chart's eight rows
    /// would waste half their height on an axis at 200 for a 112 MB/s copy (labels 30, 60,
    /// 90, 120 instead).
    Fine,
}

/// The smallest step among `steps` such that `max / step <= target`: the one y-step rule of
/// every chart. 1 for a `max` that is zero, negative or not finite.
pub fn nice_step(max: f64, target: usize, steps: Steps) -> f64 {
    const ROUND: &[f64] = &[1.0, 2.0, 2.5, 5.0, 10.0];
    const FINE: &[f64] = &[1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0];
    let target = target.max(1) as f64;
    if !(max.is_finite() && max > 0.0) {
        return 1.0;
    }
    let raw = max / target;
    let mag = 10f64.powf(raw.log10().floor());
    let mantissas = match steps {
        Steps::Round => ROUND,
        Steps::Fine => FINE,
    };
    mantissas
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag)
}

/// A tick of an axis whose ticks are `step` apart, with as many decimals as the step needs,
/// the same for every tick: step 0.25 gives "0.25", "0.50", "0.75"; step 2.5 gives "2.5",
/// "5.0"; step 10 gives "10", "20" (one decimal for a 0.25 step would print 0.2 and 0.8).
pub fn fmt_tick_at(v: f64, step: f64) -> String {
    let decimals = (0..3)
        .find(|d| {
            let m = step * 10f64.powi(*d);
            (m - m.round()).abs() < 1e-6 * m.max(1.0)
        })
        .unwrap_or(3) as usize;
    format!("{v:.decimals$}")
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

/// A tick label of the percent axis (the TUI chart's `t`): `0%`, `50%`, `100%`, as short as
/// the time axis's `30s`.
pub fn fmt_axis_pct(frac: f64) -> String {
    format!("{}%", (frac * 100.0).round() as u32)
}

/// A time-axis tick label for ticks `step` seconds apart (the TUI chart, the pictures, the
/// text chart): "0.5s" for sub-second steps, "30s" under a minute, then "1m", "1m10s",
/// "2h", "1h05m".
pub fn fmt_axis_time(t_s: f64, step: f64) -> String {
    if step < 1.0 {
        return format!("{t_s:.1}s");
    }
    let s = t_s.round() as u64;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_round() {
        use Steps::{Fine, Round};
        assert_eq!(nice_step(126.0, 5, Round), 50.0);
        assert_eq!(nice_step(100.0, 4, Round), 25.0);
        assert_eq!(nice_step(9.0, 4, Round), 2.5);
        assert_eq!(nice_step(0.0, 4, Round), 1.0);
        assert_eq!(nice_step(f64::NAN, 4, Round), 1.0);
        assert_eq!(nice_step(7.0, 1, Round), 10.0);
        assert_eq!(nice_step(1.7, 1, Round), 2.0);
        assert_eq!(nice_step(23.0, 1, Round), 25.0);
        assert_eq!(nice_step(120.0, 1, Round), 200.0);
        // A step that already is round stays: 100 in 4 is 25, not 50.
        assert_eq!(nice_step(100.0, 0, Round), 100.0);
        // The text chart's four labels over 112 MB/s: 30, not 50.
        assert_eq!(nice_step(112.0, 4, Fine), 30.0);
        assert_eq!(nice_step(112.0, 4, Round), 50.0);
        assert_eq!(nice_step(31.0, 4, Fine), 8.0);
        assert_eq!(nice_step(33.0, 4, Fine), 10.0);
        assert_eq!(time_step(76.0, 10), 10.0);
        assert_eq!(time_step(3600.0, 10), 600.0);
    }

    #[test]
    fn labels() {
        assert_eq!(fmt_axis_time(30.0, 10.0), "30s");
        assert_eq!(fmt_axis_time(150.0, 30.0), "2m30s");
        assert_eq!(fmt_axis_time(0.5, 0.5), "0.5s");
        assert_eq!(fmt_tick(2.5), "2.5");
        assert_eq!(fmt_tick(100.0), "100");
        assert_eq!(fmt_axis_time(60.0, 60.0), "1m");
        assert_eq!(fmt_axis_time(70.0, 10.0), "1m10s");
        assert_eq!(fmt_axis_time(90.0, 30.0), "1m30s");
        assert_eq!(fmt_axis_time(3900.0, 300.0), "1h05m");
        assert_eq!(rate_unit(41e6).label, "MB/s");
        let ticks = |step: f64| -> Vec<String> {
            (0..5).map(|i| fmt_tick_at(i as f64 * step, step)).collect()
        };
        assert_eq!(ticks(0.25), ["0.00", "0.25", "0.50", "0.75", "1.00"]);
        assert_eq!(ticks(2.5), ["0.0", "2.5", "5.0", "7.5", "10.0"]);
        assert_eq!(ticks(0.5), ["0.0", "0.5", "1.0", "1.5", "2.0"]);
        assert_eq!(ticks(25.0), ["0", "25", "50", "75", "100"]);
        assert_eq!(fmt_tick_at(0.3, 0.1), "0.3");
        assert_eq!(fmt_axis_pct(0.5), "50%");
        assert_eq!(fmt_axis_pct(1.0), "100%");
    }
}
