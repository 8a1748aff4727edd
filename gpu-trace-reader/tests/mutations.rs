//! The reader against damaged and hostile versions of a real trace: seeded
//! mutations (bit flips, inserted and deleted ranges, huge lengths, runs of
//! zero bytes, cuts, duplicated packets), bounded in number so that it
//! runs in every `cargo test`. Every case must read without a panic, keep
//! the GPU events of the packets before its first damaged byte, and agree
//! between the ways of reading. `examples/mutation_run.rs` runs many more
//! cases, each in its own process under a memory limit.

mod mutate;

use mutate::{CORPUS, case, check, events_before, packet_starts};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Fixed, so that a failure is the same case everywhere.
const SEED: u64 = 0x6770_752d_7472_6163;
const CASES: u64 = 1500;
/// The corpus: the first packets of the committed trace (the reads of
/// each case take a few milliseconds in a debug build).
const CORPUS_BYTES: usize = 24 << 10;

#[test]
fn mutated_traces_read_without_panics_and_keep_what_came_before() {
    let full = std::fs::read(CORPUS).unwrap();
    let starts = packet_starts(&full);
    let end = starts
        .iter()
        .copied()
        .filter(|&s| s <= CORPUS_BYTES)
        .max()
        .unwrap();
    let corpus = &full[..end];
    let starts = packet_starts(corpus);
    let mut failures = Vec::new();
    for i in 0..CASES {
        let (b, m) = case(corpus, &starts, SEED, i);
        let before = events_before(corpus, &starts, m.intact);
        match catch_unwind(AssertUnwindSafe(|| check(&b, before))) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failures.push(format!("case {i} ({}): {e}", m.what)),
            Err(p) => failures.push(format!(
                "case {i} ({}): panicked: {}",
                m.what,
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
