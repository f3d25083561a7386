//! Progress of a long fan-out, shown in the Mirror's status while it runs.
//!
//! A fan-out to thousands of namespaces is paced by the client's token bucket and can take
//! minutes. Without progress, the status would show nothing (or the last result) until the
//! end; with it, `kubectl get mirrors` shows the count climbing and `kubectl wait
//! --for=condition=Ready` waits for the truth. Reports are bounded: at most one per
//! [`PROGRESS_EVERY`], and only when the count moved.

use crate::mirror::copy::Owner;
use crate::mirror::mirror_writer::MirrorWriter;
use crate::mirror::status::{Observed, Reason};
use crate::mirror::types::Mirror;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How often a fan-out reports its progress in the status, at most.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// The copies a fan-out has brought up to date so far, and when it last said so.
pub struct Progress {
    every: Duration,
    /// Copies already right before the fan-out began.
    in_sync: u32,
    /// Copies written so far; the write tasks count here.
    written: Arc<AtomicU32>,
    last_report: Instant,
    last_synced: Option<u32>,
}

impl Progress {
    pub fn new(in_sync: u32) -> Progress {
        Progress::every(PROGRESS_EVERY, in_sync, Instant::now())
    }

    fn every(every: Duration, in_sync: u32, started: Instant) -> Progress {
        Progress {
            every,
            in_sync,
            written: Arc::default(),
            last_report: started,
            last_synced: None,
        }
    }

    /// The counter each successful write increments.
    pub fn counter(&self) -> Arc<AtomicU32> {
        Arc::clone(&self.written)
    }

    /// The synced count to report at `now`, if a report is due and the count moved.
    pub fn due(&mut self, now: Instant) -> Option<u32> {
        if now.duration_since(self.last_report) < self.every {
            return None;
        }
        let synced = self.in_sync + self.written.load(Ordering::Relaxed);
        if self.last_synced == Some(synced) {
            return None;
        }
        self.last_report = now;
        self.last_synced = Some(synced);
        Some(synced)
    }
}

/// Where a fan-out's progress goes: the Mirror's status, with what it says besides the count.
pub struct ProgressReport<'a> {
    pub mirrors: &'a MirrorWriter,
    pub mirror: &'a Mirror,
    pub owner: &'a Owner,
    pub hash: &'a str,
    pub selected: usize,
    pub conflicts: &'a [String],
}

impl ProgressReport<'_> {
    /// Writes a `Progressing` status. Best effort: a failed report (for example a 409 because
    /// someone else changed the Mirror) is left to the final status write.
    pub async fn send(&self, synced: u32) {
        let mirror = self.mirrors.refreshed(self.mirror);
        let observed = Observed {
            source_hash: Some(self.hash.to_owned()),
            selected: u32::try_from(self.selected).unwrap_or(u32::MAX),
            synced,
            conflicts: self.conflicts.to_vec(),
            ..Observed::default()
        };
        if let Err(e) = self
            .mirrors
            .write_status(&mirror, &observed, Reason::Progressing, "")
            .await
        {
            log::debug!(
                "Mirror {}/{}: progress not reported: {e}",
                self.owner.namespace,
                self.owner.name
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_at_most_once_a_period_and_only_when_the_count_moved() {
        let t0 = Instant::now();
        let mut p = Progress::every(Duration::from_secs(5), 10, t0);
        let written = p.counter();
        written.fetch_add(3, Ordering::Relaxed);
        assert_eq!(p.due(t0 + Duration::from_secs(4)), None, "too soon");
        assert_eq!(p.due(t0 + Duration::from_secs(5)), Some(13));
        written.fetch_add(1, Ordering::Relaxed);
        assert_eq!(
            p.due(t0 + Duration::from_secs(9)),
            None,
            "within the period"
        );
        assert_eq!(p.due(t0 + Duration::from_secs(10)), Some(14));
        assert_eq!(p.due(t0 + Duration::from_secs(20)), None, "nothing moved");
    }
}
