//! Fuzzes `skiff::fuzzing::certificates` (see its doc for the input and what is checked).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skiff::fuzzing::certificates(data));
