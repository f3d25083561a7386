//! The binary as launched with its flags: leader election, probes, shutdown, liveness,
//! metrics reviews, flag parsing and bad input, against the in-repo fake API server.
//! One test program, one module per concern; shared helpers in `tests/support`.

#[path = "../support/mod.rs"]
mod support;

mod bad_input;
mod cli_flags;
mod deafness;
mod hostile_fds;
mod leader_expiry;
mod leader_isolation;
mod leader_probes;
mod leader_replicas;
mod leader_shutdown;
mod leader_stall;
mod liveness;
mod metrics_reviews;
mod review_budget;
mod smoke;
