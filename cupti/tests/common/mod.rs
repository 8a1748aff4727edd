//! A `Cupti` over the simulator's CUPTI functions, called in this process
//! ([`cupti_sim::inproc`]): the tests drive the real safe layer.
#![allow(dead_code)]

use cupti::Cupti;

/// A `Cupti` over the fake, without the symbols named in `missing`.
pub(crate) fn cupti(missing: &[&str]) -> Cupti {
    try_cupti(missing).expect("fake CUPTI loads")
}

/// As [`cupti`], returning the version check's outcome.
pub(crate) fn try_cupti(missing: &[&str]) -> cupti::Result<Cupti> {
    // SAFETY: the table resolves every name to the simulator's function of
    // that name, with its C prototype; they are functions of this binary,
    // never unloaded.
    unsafe { Cupti::from_table(cupti_sim::inproc::api(missing), "fake") }
}
