//! A process's place in a multi-process job (`RANK`, `LOCAL_RANK`,
//! `WORLD_SIZE` as torchrun sets them), as a trace names it: the process's
//! name gets ` [rank N/W]` and its descriptor carries the labels `rank=N`,
//! `local_rank=M`, `world_size=W`, which the trace processor shows as the
//! process's `chrome.process_label` args and `gpu-trace stats` reads back
//! to compare the ranks of a job. The agent reads the variables.

/// A process's rank in its job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rank {
    /// `RANK`.
    pub rank: u32,
    /// `LOCAL_RANK`, when set.
    pub local_rank: Option<u32>,
    /// `WORLD_SIZE`, when set.
    pub world_size: Option<u32>,
}

/// The label keys of the process descriptor.
pub mod labels {
    /// `rank=N`.
    pub const RANK: &str = "rank";
    /// `local_rank=M`.
    pub const LOCAL_RANK: &str = "local_rank";
    /// `world_size=W`.
    pub const WORLD_SIZE: &str = "world_size";
}

/// `v` as a whole number: digits only, around blanks.
pub fn whole(v: &str) -> Option<u32> {
    let v = v.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

impl Rank {
    /// What the process's name gets: ` [rank N/W]`, or ` [rank N]`
    /// without a world size.
    pub fn name_suffix(&self) -> String {
        match self.world_size {
            Some(w) => format!(" [rank {}/{w}]", self.rank),
            None => format!(" [rank {}]", self.rank),
        }
    }

    /// The process descriptor's labels: `rank=N`, then `local_rank=M` and
    /// `world_size=W` where known.
    pub fn labels(&self) -> Vec<String> {
        let mut l = vec![format!("{}={}", labels::RANK, self.rank)];
        if let Some(m) = self.local_rank {
            l.push(format!("{}={m}", labels::LOCAL_RANK));
        }
        if let Some(w) = self.world_size {
            l.push(format!("{}={w}", labels::WORLD_SIZE));
        }
        l
    }

    /// The rank that `labels` (`key=value` strings, as a trace's process
    /// descriptor has them) describe; `None` without a whole `rank=`.
    pub fn from_labels<'a>(labels: impl IntoIterator<Item = &'a str>) -> Option<Rank> {
        let (mut rank, mut local_rank, mut world_size) = (None, None, None);
        for l in labels {
            let Some((k, v)) = l.split_once('=') else {
                continue;
            };
            match k {
                labels::RANK => rank = whole(v),
                labels::LOCAL_RANK => local_rank = whole(v),
                labels::WORLD_SIZE => world_size = whole(v),
                _ => {}
            }
        }
        Some(Rank {
            rank: rank?,
            local_rank,
            world_size,
        })
    }
}
