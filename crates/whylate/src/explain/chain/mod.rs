//! A miss's chain of hand-offs: cycles cut from the stream (`cutter`, `cycle`, `queues`),
//! the links back from the reply (`engine`, `handoff`), when the reply was ready
//! (`ready`), waits through other tasks (`waitfor`) and the usual chain learnt from the
//! good cycles (`template`, `learned`).

pub(crate) mod cutter;
pub(crate) mod cycle;
pub(crate) mod engine;
pub(crate) mod handoff;
pub(crate) mod learned;
pub(crate) mod queues;
pub(crate) mod ready;
pub(crate) mod template;
pub(crate) mod waitfor;
