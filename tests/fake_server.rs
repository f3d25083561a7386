//! Self-tests of the fake API server.

mod support;

#[test]
fn placeholder() {}
