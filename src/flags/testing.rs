//! What the flag tests share: a command line parsed as `main` parses it, and addresses written
//! out as the flags take them, so each test states only its arguments and expectations.

use super::{FlagError, Settings, parse};
use std::net::SocketAddr;

/// `args` (the command line without the program name) parsed and validated.
pub fn try_parse(args: &[&str]) -> Result<Settings, FlagError> {
    parse(&args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>())
}

/// A socket address a test expects, e.g. `addr("0.0.0.0:8081")`.
pub fn addr(text: &str) -> SocketAddr {
    text.parse().expect("a socket address")
}
