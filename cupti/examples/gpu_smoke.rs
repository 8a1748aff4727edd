//! GPU smoke test (written next).
fn main() {}
