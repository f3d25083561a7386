//! Whether a watcher hears its server: what each list, dial and stream outcome tells the
//! deafness clock of [`crate::kube::liveness`].
//!
//! Hearing is anything the server said: an event, a bookmark, a clean end of the stream, a
//! list, or an error reply (a 403, a 429 and a 410 are all the server talking). Deafness starts
//! when a watch is abandoned for silence, or when a watch cannot be dialed. Nothing else moves
//! the clock: a watch that merely opened has said nothing yet, a suspicion ends streams that
//! may be fine, and a LIST that is slow or failing is not a watch.

use std::time::Instant;

use crate::kube::Error;
use crate::kube::liveness::WatchHealth;

/// One watcher's reports; a watcher without a liveness to report to reports nothing.
pub struct Hearing {
    health: Option<WatchHealth>,
}

impl Hearing {
    pub fn new(health: Option<WatchHealth>) -> Hearing {
        Hearing { health }
    }

    /// A LIST finished, well or with the server's error.
    pub fn listed<T>(&self, result: &Result<T, Error>) {
        if result.as_ref().err().is_none_or(|e| e.code().is_some()) {
            self.heard();
        }
    }

    /// A WATCH request failed before its stream opened.
    pub fn dial_failed(&self, error: &Error, now: Instant) {
        match error {
            e if e.code().is_some() => self.heard(),
            Error::Transport(_) | Error::Timeout(_) | Error::Silent(_) | Error::Suspect(_) => {
                self.silent_since(now);
            }
            _ => {}
        }
    }

    /// What an open stream delivered; `quiet_since` is when it last delivered anything (or
    /// opened).
    pub fn streamed<T>(&self, received: &Option<Result<T, Error>>, quiet_since: Instant) {
        match received {
            Some(Ok(_)) | None => self.heard(),
            Some(Err(Error::Silent(_))) => self.silent_since(quiet_since),
            Some(Err(e)) if e.code().is_some() => self.heard(),
            Some(Err(_)) => {}
        }
    }

    /// The suspicion shared by this watcher's client, if it reports to one.
    pub fn suspect(&self, why: &str) {
        if let Some(health) = &self.health {
            health.liveness().suspect(why);
        }
    }

    fn heard(&self) {
        if let Some(health) = &self.health {
            health.heard();
        }
    }

    fn silent_since(&self, since: Instant) {
        if let Some(health) = &self.health {
            health.silent_since(since);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::Liveness;
    use std::time::Duration;

    #[test]
    fn silence_and_failed_dials_start_deafness_and_any_reply_ends_it() {
        let liveness = Liveness::new();
        let hearing = Hearing::new(Some(liveness.register("Namespace")));
        let t0 = Instant::now();
        let opened = t0 - Duration::from_secs(75);
        hearing.streamed::<()>(&Some(Err(Error::Silent("75 s".into()))), opened);
        assert_eq!(liveness.deafness().map(|d| d.since), Some(opened));
        hearing.dial_failed(&Error::Transport("refused".into()), t0);
        assert_eq!(
            liveness.deafness().map(|d| d.since),
            Some(opened),
            "a failed dial keeps the earlier start"
        );
        for reply in [
            Error::with_code(403),
            Error::with_code(429),
            Error::Expired("gone".into()),
        ] {
            hearing.silent_since(t0);
            hearing.dial_failed(&reply, t0);
            assert_eq!(liveness.deafness(), None, "{reply} is hearing");
        }
        hearing.silent_since(t0);
        hearing.streamed::<()>(&None, t0);
        assert_eq!(liveness.deafness(), None, "a clean end is hearing");
    }

    #[test]
    fn suspicion_lists_and_opening_leave_the_clock_alone() {
        let liveness = Liveness::new();
        let hearing = Hearing::new(Some(liveness.register("Mirror")));
        hearing.streamed::<()>(&Some(Err(Error::Suspect("other".into()))), Instant::now());
        hearing.listed::<()>(&Err(Error::Timeout("slow list".into())));
        assert_eq!(liveness.deafness(), None);
        let t0 = Instant::now();
        hearing.silent_since(t0);
        hearing.listed::<()>(&Err(Error::Timeout("slow list".into())));
        hearing.streamed::<()>(&Some(Err(Error::Transport("reset".into()))), t0);
        assert_eq!(liveness.deafness().map(|d| d.since), Some(t0));
        hearing.listed::<()>(&Ok(()));
        assert_eq!(liveness.deafness(), None, "a list is hearing");
    }
}
