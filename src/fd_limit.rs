//! The open-file limit, raised at start from the soft limit to the hard one.
//!
//! Container runtimes start pods with a soft limit as low as 1,024 open files and a far higher
//! hard limit. Every connection is a file descriptor: the API clients' connections and watches,
//! and whatever the probe and metrics servers hold. Raising the soft limit (as the Go runtime
//! does for controller-runtime operators) keeps a flood on the servers from leaving the lease
//! client unable to dial (EMFILE); the servers' connection caps
//! ([`crate::serve::limits::connection_cap`]) keep a reserve free even at the hard limit.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// What [`raise`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Raised {
    /// The soft limit went from the first number to the second (the hard limit).
    From(u64, u64),
    /// The soft limit already was the hard limit (or unlimited).
    AlreadyAt(Option<u64>),
}

/// Raises the soft open-file limit to the hard one.
pub fn raise() -> Result<Raised, String> {
    let limit = getrlimit(Resource::Nofile);
    let (Some(soft), Some(hard)) = (limit.current, limit.maximum) else {
        return Ok(Raised::AlreadyAt(limit.current));
    };
    if hard <= soft {
        return Ok(Raised::AlreadyAt(Some(soft)));
    }
    let raised = Rlimit {
        current: Some(hard),
        maximum: Some(hard),
    };
    setrlimit(Resource::Nofile, raised)
        .map_err(|e| format!("cannot raise the open-file limit from {soft} to {hard}: {e}"))?;
    Ok(Raised::From(soft, hard))
}

/// Raises the limit and logs what happened; a failure is a warning, not fatal: the servers'
/// caps still fit the limit there is.
pub fn raise_and_log() {
    match raise() {
        Ok(Raised::From(soft, hard)) => {
            log::info!("raised the open-file limit from {soft} to {hard} (the hard limit)")
        }
        Ok(Raised::AlreadyAt(_)) => {}
        Err(e) => log::warn!("{e}; the probe and metrics servers keep fewer connections"),
    }
}

/// The current soft limit on open files, if there is one.
pub fn soft_limit() -> Option<u64> {
    getrlimit(Resource::Nofile).current
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_low_soft_limit_is_raised_to_the_hard_one() {
        let hard = getrlimit(Resource::Nofile).maximum;
        let low = hard.map_or(1024, |hard| hard.min(1024) - 1);
        let lowered = Rlimit {
            current: Some(low),
            maximum: hard,
        };
        setrlimit(Resource::Nofile, lowered).expect("lower the soft limit");
        let result = raise().expect("raise");
        assert_eq!(soft_limit(), hard.or(Some(low)));
        if let Some(hard) = hard {
            assert_eq!(result, Raised::From(low, hard));
        }
        assert_eq!(raise(), Ok(Raised::AlreadyAt(soft_limit())));
    }
}
