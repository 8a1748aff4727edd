//! Duration statistics of one group (a kernel name, an API function ...),
//! exact: every duration is kept until the row is computed.

use serde::Serialize;

/// The durations of one group, in ns. Kept whole so that medians and
/// percentiles are exact: 4 bytes a duration below 2³² ns (4.3 s), 8 above.
#[derive(Debug, Default, Clone)]
pub(crate) struct Durations {
    small: Vec<u32>,
    large: Vec<u64>,
    sorted: bool,
}

impl Durations {
    /// Adds one duration, ns.
    #[inline]
    pub(crate) fn push(&mut self, d: u64) {
        match u32::try_from(d) {
            Ok(s) => self.small.push(s),
            Err(_) => self.large.push(d),
        }
        self.sorted = false;
    }

    /// How many durations.
    pub(crate) fn len(&self) -> usize {
        self.small.len() + self.large.len()
    }

    /// Takes `other`'s durations too.
    pub(crate) fn append(&mut self, mut other: Durations) {
        if self.len() < other.len() {
            std::mem::swap(self, &mut other);
        }
        self.small.extend_from_slice(&other.small);
        self.large.extend_from_slice(&other.large);
        self.sorted = false;
    }

    fn sort(&mut self) {
        if !self.sorted {
            self.small.sort_unstable();
            self.large.sort_unstable();
            self.sorted = true;
        }
    }

    /// The `k`-th smallest (0-based), once sorted: every large one is above
    /// every small one.
    fn nth(&self, k: usize) -> u64 {
        match self.small.get(k) {
            Some(&s) => s as u64,
            None => self.large[k - self.small.len()],
        }
    }

    /// Count, median, p99 (nearest rank) and max, as [`row`] has them,
    /// without sorting: selections, linear in the count.
    pub(crate) fn quantiles(&mut self) -> (u64, f64, u64, u64) {
        let n = self.len();
        if n == 0 {
            return (0, 0.0, 0, 0);
        }
        if !self.large.is_empty() || self.sorted {
            self.sort();
            let median = if n % 2 == 1 {
                self.nth(n / 2) as f64
            } else {
                (self.nth(n / 2 - 1) as f64 + self.nth(n / 2) as f64) / 2.0
            };
            let rank = (99 * n).div_ceil(100).max(1);
            return (n as u64, median, self.nth(rank - 1), self.nth(n - 1));
        }
        let v = &mut self.small;
        let mut at = |k: usize| -> u64 { *v.select_nth_unstable(k).1 as u64 };
        let max = at(n - 1);
        let rank = (99 * n).div_ceil(100).max(1);
        let p99 = at(rank - 1);
        let median = if n % 2 == 1 {
            at(n / 2) as f64
        } else {
            (at(n / 2 - 1) as f64 + at(n / 2) as f64) / 2.0
        };
        (n as u64, median, p99, max)
    }

    fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.small
            .iter()
            .map(|&s| s as u64)
            .chain(self.large.iter().copied())
    }
}

/// The statistics of one group: a row of the kernels, memory operations,
/// API calls or ranges table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Group name, whole.
    pub name: String,
    /// Number of instances.
    pub count: u64,
    /// Sum of durations, ns.
    #[serde(rename = "total_ns")]
    pub total: u64,
    /// Share of the table's total time, %.
    #[serde(rename = "time_pct")]
    pub pct: f64,
    /// Mean, ns.
    #[serde(rename = "avg_ns")]
    pub avg: f64,
    /// Median, ns: the middle value, or the mean of the two middle values
    /// of an even count.
    #[serde(rename = "median_ns")]
    pub median: f64,
    /// 99th percentile, ns (nearest rank: the smallest value with at least
    /// 99% of the values at or below it).
    #[serde(rename = "p99_ns")]
    pub p99: u64,
    /// Minimum, ns.
    #[serde(rename = "min_ns")]
    pub min: u64,
    /// Maximum, ns.
    #[serde(rename = "max_ns")]
    pub max: u64,
    /// Standard deviation (of the population), ns.
    #[serde(rename = "stddev_ns")]
    pub stddev: f64,
    /// Bytes (memory operations), summed; `None` in the other tables.
    pub bytes: Option<u64>,
    /// A kernel's unique short name (see [`crate::names`]); `None` in the
    /// other tables.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_name: Option<String>,
    /// A kernel's mangled name, where the trace has one; `None` in the
    /// other tables.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mangled: Option<String>,
}

/// One group's statistics; `pct` is left 0 (see [`table`]).
pub(crate) fn row(name: String, d: &mut Durations, bytes: Option<u64>) -> Row {
    d.sort();
    let n = d.len();
    let total: u64 = d.iter().sum();
    let avg = total as f64 / n.max(1) as f64;
    let var = d.iter().map(|x| (x as f64 - avg).powi(2)).sum::<f64>() / n.max(1) as f64;
    let (median, p99, min, max) = if n == 0 {
        (0.0, 0, 0, 0)
    } else {
        let median = if n % 2 == 1 {
            d.nth(n / 2) as f64
        } else {
            (d.nth(n / 2 - 1) as f64 + d.nth(n / 2) as f64) / 2.0
        };
        // ceil(0.99 n), 1-based.
        let rank = (99 * n).div_ceil(100).max(1);
        (median, d.nth(rank - 1), d.nth(0), d.nth(n - 1))
    };
    Row {
        name,
        count: n as u64,
        total,
        pct: 0.0,
        avg,
        median,
        p99,
        min,
        max,
        stddev: var.sqrt(),
        bytes,
        short_name: None,
        mangled: None,
    }
}

/// Rows with their share of the total time, by total (most first), then
/// name.
pub(crate) fn table(mut rows: Vec<Row>) -> Vec<Row> {
    let grand: u64 = rows.iter().map(|r| r.total).sum();
    for r in &mut rows {
        r.pct = 100.0 * r.total as f64 / grand.max(1) as f64;
    }
    rows.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.name.cmp(&b.name)));
    rows
}

/// Mean, min and max of values (NaN-free: values are counter readings).
pub(crate) fn mean_min_max(v: &[f64]) -> (f64, f64, f64) {
    let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, min, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(v: &[u64]) -> Row {
        let mut d = Durations::default();
        v.iter().for_each(|&x| d.push(x));
        row("x".into(), &mut d, None)
    }

    #[test]
    fn medians_are_the_middle_value_or_the_mean_of_the_two_middle_ones() {
        assert_eq!(of(&[30, 10, 20]).median, 20.0);
        assert_eq!(of(&[40, 10, 30, 20]).median, 25.0);
        assert_eq!(of(&[7, 8]).median, 7.5);
        assert_eq!(of(&[5]).median, 5.0);
    }

    #[test]
    fn durations_above_four_seconds_sort_after_the_small_ones() {
        let big = 5_000_000_000u64;
        let r = of(&[big + 1, 3, big, 1]);
        assert_eq!((r.min, r.max, r.count), (1, big + 1, 4));
        assert_eq!(r.median, (3 + big) as f64 / 2.0);
        assert_eq!(r.total, 2 * big + 5);
        let mut a = Durations::default();
        a.push(big);
        let mut b = Durations::default();
        b.push(2);
        b.push(4);
        a.append(b);
        assert_eq!(row("m".into(), &mut a, None).median, 4.0);
    }

    #[test]
    fn quantiles_without_sorting_are_those_of_the_row() {
        for v in [
            vec![5u64],
            vec![4, 9],
            (1..=200).rev().collect::<Vec<_>>(),
            vec![7, 7, 1, 9, 3, 3, 8, 0, 12, 5],
            vec![3, 5_000_000_000, 1],
        ] {
            let r = of(&v);
            let mut d = Durations::default();
            v.iter().for_each(|&x| d.push(x));
            assert_eq!(d.quantiles(), (r.count, r.median, r.p99, r.max), "{v:?}");
        }
    }

    #[test]
    fn p99_is_the_nearest_rank() {
        let v: Vec<u64> = (1..=200).collect();
        assert_eq!(of(&v).p99, 198);
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(of(&v).p99, 99);
        assert_eq!(of(&[4, 9]).p99, 9);
        assert_eq!(of(&[4]).p99, 4);
    }

    #[test]
    fn rows_are_sorted_by_total_with_their_share_and_exact_statistics() {
        let g = |v: &[u64], name: &str| {
            let mut d = Durations::default();
            v.iter().for_each(|&x| d.push(x));
            row(name.into(), &mut d, None)
        };
        let r = table(vec![g(&[10, 30, 20], "a"), g(&[140], "b")]);
        assert_eq!(r[0].name, "b");
        assert_eq!(r[0].pct, 70.0);
        let a = &r[1];
        assert_eq!(
            (a.count, a.total, a.min, a.max, a.median, a.pct),
            (3, 60, 10, 30, 20.0, 30.0)
        );
        assert!((a.avg - 20.0).abs() < 1e-9);
        assert!((a.stddev - (200.0f64 / 3.0).sqrt()).abs() < 1e-9);
    }
}
