//! The Mirror controller against the in-repo fake API server: selection, fan-out, drift,
//! conflicts, relists, watches and scale, in-process or as the built binary.
//! One test program, one module per concern; shared helpers in `tests/support`.

#[path = "../support/mod.rs"]
mod support;

mod conflicts;
mod drift;
mod fairness;
mod fanout;
mod lifecycle;
mod relist;
mod resilience;
mod scale;
mod secret_targets;
mod selection;
mod stacks;
mod watches;
mod write_bytes;
