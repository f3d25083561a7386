//! The last Lease this replica saw, and *when* (local monotonic time) its content last changed.
//!
//! Expiry is judged only from that local observation time plus the Lease's own
//! leaseDurationSeconds, never by comparing the remote renewTime with the local clock: clocks of
//! different machines disagree, monotonic time on one machine does not.

use crate::kube::api::{Lease, LeaseSpec};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct ObservedLease {
    lease: Lease,
    observed_at: Instant,
}

impl ObservedLease {
    pub fn new(lease: Lease, now: Instant) -> ObservedLease {
        ObservedLease {
            lease,
            observed_at: now,
        }
    }

    /// Records `lease` as seen at `now`. The observation time moves only when the spec changed
    /// (a renewal changes renewTime), so re-reading an abandoned lease never extends it.
    /// Returns whether the spec changed.
    pub fn observe(&mut self, lease: Lease, now: Instant) -> bool {
        let changed = lease.spec != self.lease.spec;
        if changed {
            self.observed_at = now;
        }
        self.lease = lease;
        changed
    }

    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    pub fn observed_at(&self) -> Instant {
        self.observed_at
    }

    /// The holder, `None` when the lease is free (absent or empty holderIdentity).
    pub fn holder(&self) -> Option<&str> {
        holder_of(&self.lease.spec)
    }

    pub fn is_held_by(&self, identity: &str) -> bool {
        self.holder() == Some(identity)
    }

    /// The Lease's own duration; a missing or non-positive value counts as already expired.
    pub fn duration(&self) -> Duration {
        let seconds = self.lease.spec.lease_duration_seconds.unwrap_or(0).max(0);
        Duration::from_secs(seconds as u64)
    }

    /// The local instant after which the holder has had its full duration without renewing.
    pub fn expires_at(&self) -> Instant {
        self.observed_at + self.duration()
    }

    pub fn is_expired(&self, now: Instant) -> bool {
        now > self.expires_at()
    }

    /// Whether another replica may take it now: free, or expired by local observation.
    pub fn is_takeable(&self, now: Instant) -> bool {
        self.holder().is_none() || self.is_expired(now)
    }
}

/// The holder named in a Lease spec, `None` when empty.
pub fn holder_of(spec: &LeaseSpec) -> Option<&str> {
    spec.holder_identity.as_deref().filter(|h| !h.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: &str, renew_time: &str, rv: &str) -> Lease {
        let mut l = Lease::default();
        l.metadata.resource_version = Some(rv.to_owned());
        l.spec.holder_identity = Some(holder.to_owned());
        l.spec.lease_duration_seconds = Some(15);
        l.spec.renew_time = Some(renew_time.to_owned());
        l
    }

    const NOW_ISH: &str = "2026-11-29T19:51:46.000000Z";

    #[test]
    fn held_lease_expires_only_after_its_duration_from_observation() {
        let t0 = Instant::now();
        let seen = ObservedLease::new(lease("other", NOW_ISH, "1"), t0);
        assert!(!seen.is_expired(t0 + Duration::from_secs(15)));
        assert!(!seen.is_takeable(t0 + Duration::from_secs(15)));
        assert!(seen.is_expired(t0 + Duration::from_millis(15_001)));
        assert!(seen.is_takeable(t0 + Duration::from_millis(15_001)));
    }

    #[test]
    fn renew_time_far_in_the_past_or_future_does_not_change_the_judgement() {
        let t0 = Instant::now();
        for renew_time in [
            "1970-01-01T00:00:00.000000Z",
            NOW_ISH,
            "2999-12-31T23:59:59.999999Z",
        ] {
            let seen = ObservedLease::new(lease("other", renew_time, "1"), t0);
            assert!(
                !seen.is_expired(t0 + Duration::from_secs(14)),
                "{renew_time}"
            );
            assert!(
                seen.is_expired(t0 + Duration::from_secs(16)),
                "{renew_time}"
            );
        }
    }

    #[test]
    fn a_renewal_moves_the_observation_time_a_reread_does_not() {
        let t0 = Instant::now();
        let mut seen = ObservedLease::new(lease("other", NOW_ISH, "1"), t0);
        let t1 = t0 + Duration::from_secs(10);
        assert!(!seen.observe(lease("other", NOW_ISH, "1"), t1));
        assert_eq!(seen.observed_at(), t0);
        assert!(seen.observe(lease("other", "2026-11-29T19:51:56.000000Z", "2"), t1));
        assert_eq!(seen.observed_at(), t1);
        assert!(!seen.is_expired(t0 + Duration::from_secs(20)));
    }

    #[test]
    fn empty_or_missing_holder_is_free_at_once() {
        let t0 = Instant::now();
        let mut free = lease("", NOW_ISH, "1");
        assert!(ObservedLease::new(free.clone(), t0).is_takeable(t0));
        free.spec.holder_identity = None;
        let seen = ObservedLease::new(free, t0);
        assert_eq!(seen.holder(), None);
        assert!(seen.is_takeable(t0));
    }

    #[test]
    fn missing_duration_counts_as_expired() {
        let t0 = Instant::now();
        let mut l = lease("other", NOW_ISH, "1");
        l.spec.lease_duration_seconds = None;
        assert!(ObservedLease::new(l, t0).is_expired(t0 + Duration::from_nanos(1)));
    }
}
