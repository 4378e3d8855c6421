#![no_main]
mod common;
libfuzzer_sys::fuzz_target!(|data: &[u8]| common::run(data, Some(common::format("kernel-log"))));
