//! The union of time intervals, `[start, end)` in ns, as sorted disjoint
//! stretches: what busy time is made of (overlapping kernels of one engine
//! count once), for the writer's busy tracks and for anyone who measures
//! busy time from a trace.

/// Sorts `v` and merges what overlaps or touches, so that it holds the
/// union as disjoint stretches in order.
pub fn union(v: &mut Vec<(u64, u64)>) {
    v.sort_unstable();
    let mut n = 0;
    for i in 0..v.len() {
        let (s, e) = v[i];
        if n > 0 && s <= v[n - 1].1 {
            v[n - 1].1 = v[n - 1].1.max(e);
        } else {
            v[n] = (s, e);
            n += 1;
        }
    }
    v.truncate(n);
}

/// [`union`], then, past `max` stretches, merges the shortest gaps between
/// them (those gaps then count as covered) until at most `max` are left.
/// Returns whether it had to.
pub fn union_at_most(v: &mut Vec<(u64, u64)>, max: usize) -> bool {
    union(v);
    if v.len() <= max.max(1) {
        return false;
    }
    while v.len() > max.max(1) {
        merge_shortest_gaps(v);
    }
    true
}

/// Merges the shortest quarter of the gaps of the disjoint sorted `v`
/// (ties: the earlier gap).
fn merge_shortest_gaps(v: &mut Vec<(u64, u64)>) {
    let mut gaps: Vec<(u64, usize)> = (1..v.len()).map(|k| (v[k].0 - v[k - 1].1, k)).collect();
    let q = (gaps.len() / 4).max(1);
    gaps.select_nth_unstable(q - 1);
    let mut merge = vec![false; v.len()];
    for &(_, k) in &gaps[..q] {
        merge[k] = true;
    }
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len() - q);
    for (k, &piece) in v.iter().enumerate() {
        match out.last_mut() {
            Some(last) if merge[k] => last.1 = piece.1,
            _ => out.push(piece),
        }
    }
    *v = out;
}

/// Adds `[a, b)` to the disjoint sorted stretches `v`, merging it with
/// those it overlaps or touches.
pub fn insert(v: &mut Vec<(u64, u64)>, a: u64, b: u64) {
    let i = v.partition_point(|&(_, e)| e < a);
    let mut j = i;
    let (mut na, mut nb) = (a, b);
    while j < v.len() && v[j].0 <= b {
        na = na.min(v[j].0);
        nb = nb.max(v[j].1);
        j += 1;
    }
    v.splice(i..j, [(na, nb)]);
}

/// The time the disjoint stretches `v` cover, ns.
pub fn covered(v: &[(u64, u64)]) -> u64 {
    v.iter().map(|&(s, e)| e.saturating_sub(s)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_and_touching_stretches_merge_in_any_order() {
        let mut v = vec![(30, 40), (0, 10), (5, 20), (20, 25), (50, 60)];
        union(&mut v);
        assert_eq!(v, [(0, 25), (30, 40), (50, 60)]);
        assert_eq!(covered(&v), 45);
    }

    #[test]
    fn inserting_keeps_the_stretches_disjoint_and_sorted() {
        let mut v = vec![(0, 10), (20, 30), (40, 50)];
        insert(&mut v, 8, 22);
        assert_eq!(v, [(0, 30), (40, 50)]);
        insert(&mut v, 60, 70);
        insert(&mut v, 32, 35);
        assert_eq!(v, [(0, 30), (32, 35), (40, 50), (60, 70)]);
        insert(&mut v, 35, 40);
        assert_eq!(v, [(0, 30), (32, 50), (60, 70)]);
    }

    #[test]
    fn past_the_limit_the_shortest_gaps_are_merged() {
        // Gaps of 1, 5, 2 and 9: the shortest quarter (one) goes each round.
        let mut v = vec![(0, 1), (2, 3), (8, 9), (11, 12), (21, 22)];
        assert!(!union_at_most(&mut v.clone(), 5));
        assert!(union_at_most(&mut v, 3));
        assert_eq!(v, [(0, 3), (8, 12), (21, 22)]);
    }
}
