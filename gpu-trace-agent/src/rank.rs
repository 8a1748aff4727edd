//! A process's place in a multi-process job, from the variables torchrun
//! (and most launchers after it: `torch.distributed`, DeepSpeed,
//! Accelerate) set in each worker: `RANK`, `LOCAL_RANK` and `WORLD_SIZE`.
//!
//! Read once, when tracing starts. Each trace then says which rank it is:
//! the process's name gets ` [rank N/W]` and its descriptor carries the
//! labels `rank=N`, `local_rank=M`, `world_size=W`, which the trace
//! processor shows as the process's `chrome.process_label` args and
//! `gpu-trace stats` reads back to compare the ranks of a job.

use crate::config::Problem;
use gpu_trace_model::rank::whole;
pub use gpu_trace_model::rank::{Rank, labels};

/// The variables read.
pub mod vars {
    /// The process's rank in the job (0-based).
    pub const RANK: &str = "RANK";
    /// Its rank on this machine.
    pub const LOCAL_RANK: &str = "LOCAL_RANK";
    /// How many ranks the job has.
    pub const WORLD_SIZE: &str = "WORLD_SIZE";
    /// All of them.
    pub const ALL: [&str; 3] = [RANK, LOCAL_RANK, WORLD_SIZE];
}

/// Reads the process environment. Problems are returned, not printed.
pub fn from_env() -> (Option<Rank>, Vec<Problem>) {
    from_lookup(crate::config::env_lookup)
}

/// Reads the variables through `get`. A value that is not a whole
/// number is a [`Problem`] and ignored; so is a `WORLD_SIZE` of 0, and
/// a `RANK` or `LOCAL_RANK` not below `WORLD_SIZE`. Without a usable
/// `RANK` there is no rank (the other two alone say nothing useful).
pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> (Option<Rank>, Vec<Problem>) {
    let mut problems = Vec::new();
    let mut read = |var: &'static str, expected: &str| -> Option<u32> {
        let v = get(var)?;
        let n = whole(&v);
        if n.is_none() {
            problems.push(Problem {
                var,
                value: v,
                expected: expected.to_owned(),
                using: "no rank labels".to_owned(),
            });
        }
        n
    };
    let rank = read(vars::RANK, "a whole number (the process's rank, from 0)");
    let local = read(
        vars::LOCAL_RANK,
        "a whole number (the rank on this machine)",
    );
    let world = read(vars::WORLD_SIZE, "a whole number of ranks, at least 1");
    let world = match world {
        Some(0) => {
            problems.push(Problem {
                var: vars::WORLD_SIZE,
                value: "0".to_owned(),
                expected: "a whole number of ranks, at least 1".to_owned(),
                using: "no world size".to_owned(),
            });
            None
        }
        w => w,
    };
    let below = |var: &'static str, n: Option<u32>, problems: &mut Vec<Problem>| match (n, world) {
        (Some(n), Some(w)) if n >= w => {
            problems.push(Problem {
                var,
                value: n.to_string(),
                expected: format!("a rank below WORLD_SIZE={w}"),
                using: "no rank labels".to_owned(),
            });
            None
        }
        _ => n,
    };
    let rank = below(vars::RANK, rank, &mut problems);
    let local = below(vars::LOCAL_RANK, local, &mut problems);
    let r = rank.map(|rank| Rank {
        rank,
        local_rank: local,
        world_size: world,
    });
    (r, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> (Option<Rank>, Vec<String>) {
        let (r, p) = from_lookup(|k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        });
        (r, p.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn torchrun_variables_make_a_rank_with_its_name_and_labels() {
        let (r, p) = read(&[("RANK", "3"), ("LOCAL_RANK", "1"), ("WORLD_SIZE", "8")]);
        assert!(p.is_empty(), "{p:?}");
        let r = r.unwrap();
        assert_eq!(r.name_suffix(), " [rank 3/8]");
        assert_eq!(r.labels(), ["rank=3", "local_rank=1", "world_size=8"]);
        let back = Rank::from_labels(r.labels().iter().map(String::as_str));
        assert_eq!(back, Some(r));
    }

    #[test]
    fn a_rank_alone_has_no_world_size() {
        let (r, p) = read(&[("RANK", " 0 ")]);
        assert!(p.is_empty());
        let r = r.unwrap();
        assert_eq!(r.name_suffix(), " [rank 0]");
        assert_eq!(r.labels(), ["rank=0"]);
    }

    #[test]
    fn bad_values_are_named_once_and_ignored() {
        let (r, p) = read(&[("RANK", "abc"), ("WORLD_SIZE", "2")]);
        assert_eq!(r, None);
        assert_eq!(
            p,
            [
                "RANK=\"abc\": expected a whole number (the process's rank, from 0); using no rank labels"
            ]
        );
        let (r, p) = read(&[("RANK", "1"), ("LOCAL_RANK", "-1"), ("WORLD_SIZE", "x")]);
        assert_eq!(
            r,
            Some(Rank {
                rank: 1,
                local_rank: None,
                world_size: None
            })
        );
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].starts_with("LOCAL_RANK=\"-1\""), "{p:?}");
        assert!(p[1].starts_with("WORLD_SIZE=\"x\""), "{p:?}");
        let (r, p) = read(&[("RANK", "2"), ("WORLD_SIZE", "2")]);
        assert_eq!(r, None);
        assert_eq!(
            p,
            ["RANK=\"2\": expected a rank below WORLD_SIZE=2; using no rank labels"]
        );
        let (r, p) = read(&[("RANK", "0"), ("WORLD_SIZE", "0")]);
        assert_eq!(r.unwrap().world_size, None);
        assert_eq!(p.len(), 1);
    }

    #[test]
    fn no_variables_no_rank() {
        assert_eq!(read(&[]), (None, vec![]));
        assert_eq!(
            read(&[("LOCAL_RANK", "0"), ("WORLD_SIZE", "4")]),
            (None, vec![])
        );
        assert_eq!(Rank::from_labels(["local_rank=0", "x"]), None);
    }
}
