//! Points into chart columns, one way for every chart (the TUI's, the pictures', the text
//! chart's): which column a position on the axis falls in, and what a column keeps of the
//! points in it — their mean, weighted by what each point covers, their lowest and their
//! highest, so a drop shorter than a column still shows as a notch.

/// The column, of `ncols` equal slices of an axis, that the position `frac` (0 the axis's
/// start, 1 its end) falls in: the end belongs to the last column, a position off the axis
/// to the nearer end column.
pub fn column_of(frac: f64, ncols: usize) -> usize {
    (frac * ncols as f64)
        .floor()
        .clamp(0.0, ncols.saturating_sub(1) as f64) as usize
}

/// What one point gives its column: its value, weighted by `weight` in the mean (the time it
/// covers, or 1 for points that each cover the same), and the extremes within it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    pub value: f64,
    pub min: f64,
    pub max: f64,
    pub weight: f64,
}

impl Reading {
    /// A value that is its own extremes, weighted 1.
    pub fn of(value: f64) -> Reading {
        Reading {
            value,
            min: value,
            max: value,
            weight: 1.0,
        }
    }
}

/// What a column keeps of the points that fell in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    /// The weighted mean of the values.
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Points that fell in the column.
    pub count: u32,
}

/// The points in `ncols` columns: `place` gives a point's position on the axis (0..=1; `None`
/// for a point off it), `read` its reading (`None` when the point has no value of this
/// series). A column no reading fell in is `None`.
pub fn bucket<P>(
    points: &[P],
    ncols: usize,
    place: impl Fn(&P) -> Option<f64>,
    read: impl Fn(&P) -> Option<Reading>,
) -> Vec<Option<Bucket>> {
    let mut sums: Vec<Option<(f64, f64, Bucket)>> = vec![None; ncols];
    if ncols == 0 {
        return Vec::new();
    }
    for p in points {
        let (Some(x), Some(r)) = (place(p), read(p)) else {
            continue;
        };
        let (sum, weight, b) = sums[column_of(x, ncols)].get_or_insert((
            0.0,
            0.0,
            Bucket {
                mean: 0.0,
                min: f64::INFINITY,
                max: f64::NEG_INFINITY,
                count: 0,
            },
        ));
        *sum += r.value * r.weight;
        *weight += r.weight;
        b.min = b.min.min(r.min);
        b.max = b.max.max(r.max);
        b.count += 1;
    }
    sums.into_iter()
        .map(|c| {
            c.map(|(sum, weight, b)| Bucket {
                mean: sum / weight,
                ..b
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_equal_slices_with_the_end_in_the_last() {
        assert_eq!(column_of(0.0, 10), 0);
        assert_eq!(column_of(0.099, 10), 0);
        assert_eq!(column_of(0.1, 10), 1);
        assert_eq!(column_of(1.0, 10), 9);
        assert_eq!(column_of(1.5, 10), 9);
        assert_eq!(column_of(-0.2, 10), 0);
        assert_eq!(column_of(f64::NAN, 10), 0);
        assert_eq!(column_of(0.5, 0), 0);
    }

    #[test]
    fn a_column_keeps_the_weighted_mean_and_the_extremes() {
        // (position, value, min, max, weight)
        let pts = [
            (0.05, 100.0, 90.0, 110.0, 3.0),
            (0.06, 20.0, 2.0, 30.0, 1.0),
            (0.95, 50.0, 50.0, 50.0, 1.0),
            (2.0, 7.0, 7.0, 7.0, 1.0),
        ];
        let cols = bucket(
            &pts,
            4,
            |p| (p.0 <= 1.0).then_some(p.0),
            |p| {
                Some(Reading {
                    value: p.1,
                    min: p.2,
                    max: p.3,
                    weight: p.4,
                })
            },
        );
        assert_eq!(
            cols[0],
            Some(Bucket {
                mean: 80.0,
                min: 2.0,
                max: 110.0,
                count: 2
            })
        );
        assert_eq!(cols[1], None);
        assert_eq!(cols[2], None);
        assert_eq!(cols[3].map(|b| (b.mean, b.count)), Some((50.0, 1)));
        // A series some points lack: only those that have it count.
        let some = bucket(
            &pts,
            4,
            |p| Some(p.0),
            |p| (p.1 > 60.0).then(|| Reading::of(p.1)),
        );
        assert_eq!(some[0].map(|b| b.count), Some(1));
        assert_eq!(some[3], None);
        assert!(bucket(&pts, 0, |p| Some(p.0), |p| Some(Reading::of(p.1))).is_empty());
    }
}
