//! Watching skiff's Lease from outside: periodic snapshots and the one-leader rule over them.
//!
//! Why: the e2e suites judge leader election as a cluster admin would, by reading the Lease the
//! replicas write. The admin's requests are exempt from API Priority and Fairness, so the
//! observer is never slowed down by the throttling it is watching.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::control_plane::ControlPlane;
use super::keepalive::KeepAliveGet;

/// skiff's Lease: `--leader-election-id`'s default in `--leader-election-namespace=skiff-system`.
pub const LEASE_PATH: &str =
    "/apis/coordination.k8s.io/v1/namespaces/skiff-system/leases/skiff-leader";

/// One reading of the Lease's spec, with the local time it was read.
#[derive(Clone, Debug)]
pub struct LeaseRecord {
    pub at: Instant,
    pub holder: String,
    pub duration_seconds: i64,
    pub transitions: i64,
    pub renew_time: String,
    pub resource_version: String,
}

/// Reads skiff's Lease as the admin over one kept-alive connection.
pub struct LeaseReader {
    client: KeepAliveGet,
}

impl LeaseReader {
    pub fn new(cp: &ControlPlane) -> LeaseReader {
        LeaseReader {
            client: KeepAliveGet::new(cp.url(), cp.ca_pem(), cp.admin_token()),
        }
    }

    /// The Lease now (`at` is when the answer arrived); None while it does not exist.
    pub fn read(&mut self) -> Option<LeaseRecord> {
        let (status, body) = self
            .client
            .get(LEASE_PATH)
            .unwrap_or_else(|e| panic!("GET {LEASE_PATH}: {e}"));
        let at = Instant::now();
        if status == 404 {
            return None;
        }
        assert_eq!(status, 200, "GET the Lease: {body}");
        let lease: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("Lease is not JSON ({e}): {body}"));
        Some(parse_lease(&lease, at))
    }
}

fn parse_lease(lease: &serde_json::Value, at: Instant) -> LeaseRecord {
    let spec = &lease["spec"];
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    LeaseRecord {
        at,
        holder: text(&spec["holderIdentity"]),
        duration_seconds: spec["leaseDurationSeconds"].as_i64().unwrap_or(0),
        transitions: spec["leaseTransitions"].as_i64().unwrap_or(0),
        renew_time: text(&spec["renewTime"]),
        resource_version: text(&lease["metadata"]["resourceVersion"]),
    }
}

/// Reads the Lease every `interval` on a thread until stopped; keeps every reading.
pub struct LeasePoller {
    records: Arc<Mutex<Vec<LeaseRecord>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl LeasePoller {
    pub fn start(cp: &'static ControlPlane, interval: Duration) -> LeasePoller {
        let records = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (records, stop) = (records.clone(), stop.clone());
            let mut reader = LeaseReader::new(cp);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(record) = reader.read() {
                        lock(&records).push(record);
                    }
                    std::thread::sleep(interval);
                }
            })
        };
        LeasePoller {
            records,
            stop,
            thread: Some(thread),
        }
    }

    /// Every reading so far.
    pub fn records(&self) -> Vec<LeaseRecord> {
        lock(&self.records).clone()
    }

    /// The latest reading, if any.
    pub fn latest(&self) -> Option<LeaseRecord> {
        lock(&self.records).last().cloned()
    }

    /// Waits until a reading taken after `since` satisfies `wanted`, at most `limit`.
    pub fn wait_for(
        &self,
        since: Instant,
        limit: Duration,
        wanted: impl Fn(&LeaseRecord) -> bool,
    ) -> Option<LeaseRecord> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            let found = lock(&self.records)
                .iter()
                .find(|r| r.at >= since && wanted(r))
                .cloned();
            if found.is_some() {
                return found;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Whether `holder` kept the Lease from `from` on: a renewal (a renewTime other than the one
    /// it had at `from`) is read within `limit`, and every reading since `from` names it. Not
    /// how often it renewed: a holder that misses its renew deadline gives the Lease up (and
    /// skiff exits), which shows here and in its log. `Err` says what broke.
    pub fn kept_by(&self, holder: &str, from: Instant, limit: Duration) -> Result<(), String> {
        let renew_time_then = (self.records().into_iter())
            .rfind(|r| r.at <= from && r.holder == holder)
            .map(|r| r.renew_time);
        let renewed = self.wait_for(from, limit, |r| {
            r.holder == holder && Some(&r.renew_time) != renew_time_then.as_ref()
        });
        if renewed.is_none() {
            return Err(format!(
                "no renewal by {holder} within {limit:?}; last reading {:?}",
                self.latest()
            ));
        }
        let others: Vec<LeaseRecord> = (self.records().into_iter())
            .filter(|r| r.at >= from && r.holder != holder)
            .collect();
        match others.is_empty() {
            true => Ok(()),
            false => Err(format!("{holder} lost the Lease: {others:?}")),
        }
    }

    /// Stops polling and returns every reading.
    pub fn stop(mut self) -> Vec<LeaseRecord> {
        self.halt();
        self.records()
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for LeasePoller {
    fn drop(&mut self) {
        self.halt();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Breaches of the one-leader rule between consecutive readings: the holder changes only by a
/// release (holder "", duration 1, transitions kept) or a takeover (transitions + 1) of a lease
/// that was released (a `released` holder, read after it was told to release) or had expired (no
/// renewal seen for its duration).
pub fn one_leader_violations(
    records: &[LeaseRecord],
    released: &[(String, Instant)],
) -> Vec<String> {
    let mut violations = Vec::new();
    let mut last_change = records.first().map(|r| r.at);
    for pair in records.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        if let Some(why) = change_violation(before, after, last_change, released) {
            violations.push(format!("{why}: {before:?} -> {after:?}"));
        }
        if after.renew_time != before.renew_time || after.holder != before.holder {
            last_change = Some(after.at);
        }
    }
    violations
}

fn change_violation(
    before: &LeaseRecord,
    after: &LeaseRecord,
    last_change: Option<Instant>,
    released: &[(String, Instant)],
) -> Option<&'static str> {
    let transitions = after.transitions - before.transitions;
    if after.holder == before.holder {
        return (transitions != 0).then_some("transitions changed without a new holder");
    }
    if after.holder.is_empty() {
        if after.duration_seconds != 1 || transitions != 0 {
            return Some("cleared holder is not a release (duration 1, transitions kept)");
        }
        return None;
    }
    if transitions != 1 {
        return Some("new holder without exactly one more transition");
    }
    let was_released = released
        .iter()
        .any(|(holder, told)| *holder == before.holder && after.at >= *told);
    if before.holder.is_empty() || was_released {
        return None;
    }
    let lease = Duration::from_secs(before.duration_seconds.max(0) as u64);
    let unrenewed = last_change.map_or(Duration::ZERO, |t| after.at.duration_since(t));
    (unrenewed < lease).then_some("holder replaced while its lease was still being renewed")
}

/// Times between successive observed renewals (renewTime changes) of `holder`.
pub fn renew_gaps(records: &[LeaseRecord], holder: &str) -> Vec<Duration> {
    let mut gaps = Vec::new();
    let mut last: Option<&LeaseRecord> = None;
    for record in records.iter().filter(|r| r.holder == holder) {
        match last {
            Some(previous) if previous.renew_time == record.renew_time => continue,
            Some(previous) => gaps.push(record.at.duration_since(previous.at)),
            None => {}
        }
        last = Some(record);
    }
    gaps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(base: Instant, ms: u64, holder: &str, transitions: i64, renew: &str) -> LeaseRecord {
        LeaseRecord {
            at: base + Duration::from_millis(ms),
            holder: holder.to_owned(),
            duration_seconds: if holder.is_empty() { 1 } else { 4 },
            transitions,
            renew_time: renew.to_owned(),
            resource_version: String::new(),
        }
    }

    #[test]
    fn release_then_takeover_keeps_one_leader() {
        let t = Instant::now();
        let records = [
            at(t, 0, "a", 0, "r1"),
            at(t, 1000, "a", 0, "r2"),
            at(t, 1100, "", 0, "r3"),
            at(t, 1200, "b", 1, "r4"),
        ];
        assert!(one_leader_violations(&records, &[]).is_empty());
    }

    #[test]
    fn a_takeover_while_the_holder_renews_is_a_violation() {
        let t = Instant::now();
        let records = [
            at(t, 0, "a", 0, "r1"),
            at(t, 1000, "a", 0, "r2"),
            at(t, 1100, "b", 1, "r3"),
        ];
        assert_eq!(one_leader_violations(&records, &[]).len(), 1);
        let released = [("a".to_owned(), t)];
        assert!(one_leader_violations(&records, &released).is_empty());
        let released_too_late = [("a".to_owned(), t + Duration::from_millis(2000))];
        assert_eq!(one_leader_violations(&records, &released_too_late).len(), 1);
    }

    #[test]
    fn a_takeover_after_expiry_is_allowed_but_transitions_must_count_it() {
        let t = Instant::now();
        let expired = [at(t, 0, "a", 0, "r1"), at(t, 5000, "b", 1, "r2")];
        assert!(one_leader_violations(&expired, &[]).is_empty());
        let uncounted = [at(t, 0, "a", 0, "r1"), at(t, 5000, "b", 0, "r2")];
        assert_eq!(one_leader_violations(&uncounted, &[]).len(), 1);
    }

    #[test]
    fn a_cleared_holder_must_look_like_a_release() {
        let t = Instant::now();
        let mut cleared = at(t, 100, "", 0, "r2");
        cleared.duration_seconds = 4;
        let records = [at(t, 0, "a", 0, "r1"), cleared];
        assert_eq!(one_leader_violations(&records, &[]).len(), 1);
    }

    #[test]
    fn renew_gaps_count_from_the_first_reading_of_each_renew_time() {
        let t = Instant::now();
        let records = [
            at(t, 0, "a", 0, "r1"),
            at(t, 100, "a", 0, "r1"),
            at(t, 1000, "a", 0, "r2"),
            at(t, 1100, "b", 1, "r3"),
            at(t, 2500, "a", 2, "r4"),
        ];
        let ms = Duration::from_millis;
        assert_eq!(renew_gaps(&records, "a"), [ms(1000), ms(1500)]);
    }
}
