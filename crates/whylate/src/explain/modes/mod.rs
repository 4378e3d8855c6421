//! The analyses `explain` runs, one file per mode: what each takes as late (a cycle
//! past its deadline, a late timer period, a slow softirq or call, an outlier across the
//! measures, a kernel report) and how it hands its misses to the shared machinery
//! ([`super::chain`], [`super::blame`], [`super::advice`]).

pub(crate) mod auto;
pub(crate) mod auto_inversion;
pub(crate) mod cycle_miss;
pub(crate) mod cycles;
pub(crate) mod expect;
pub(crate) mod function;
pub(crate) mod kernlog;
pub(crate) mod softirq;
pub(crate) mod timer;
pub(crate) mod timerlat;
pub(crate) mod timerlat_join;
