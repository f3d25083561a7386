//! An in-memory Lease store for the leader-election tests: resourceVersion and 409 semantics,
//! scripted failures and delays, a watch, and a hook to act as "another replica". Each store
//! has a manual clock of its own: its delays and deadlines, and the lock and elector the tests
//! build on it, read that clock, which the tests move by hand.

use super::lock::LeaseApi;
use super::timing::Timing;
use crate::clock::{Clock, ManualClock};
use crate::kube::api::{Lease, LeaseSpec};
use crate::kube::{Error, WatchEvent};
use smol::channel::{Receiver, Sender, unbounded};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

type Events = Receiver<Result<WatchEvent<Lease>, Error>>;

/// client-go's defaults (lease 15 s, renew deadline 10 s, retry period 2 s): virtual time makes
/// real timings cost nothing, so the tests use them.
pub const CLIENT_GO_TIMING: Timing = Timing {
    lease_duration: Duration::from_secs(15),
    renew_deadline: Duration::from_secs(10),
    retry_period: Duration::from_secs(2),
};
/// What "another replica" does to the lease.
type OtherWrite = Box<dyn FnOnce(&mut LeaseSpec) + Send>;

#[derive(Default)]
struct Inner {
    lease: Option<Lease>,
    version: u64,
    fail_next: usize,
    fail_all: bool,
    fail_watch: bool,
    delay: Duration,
    requests: Vec<String>,
    watchers: Vec<Sender<Result<WatchEvent<Lease>, Error>>>,
    race_next_put: Option<OtherWrite>,
    conflict_after_next_put: bool,
}

/// Cheap to clone: every clone (and every [`FakeApi`]) sees the same lease.
#[derive(Clone, Default)]
pub struct FakeStore {
    inner: Arc<Mutex<Inner>>,
    time: ManualClock,
}

impl FakeStore {
    /// The store's clock, for what the tests build on it.
    pub fn clock(&self) -> Clock {
        self.time.clock()
    }

    /// The hand that moves [`FakeStore::clock`].
    pub fn time(&self) -> &ManualClock {
        &self.time
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn api(&self) -> FakeApi {
        self.api_named("test-lease")
    }

    /// An API whose Lease has its own name (its own `leader_election_master_status` series).
    pub fn api_named(&self, name: &str) -> FakeApi {
        FakeApi {
            store: self.clone(),
            name: name.to_owned(),
        }
    }

    pub fn lease(&self) -> Option<Lease> {
        self.lock().lease.clone()
    }

    pub fn holder(&self) -> Option<String> {
        self.lease().and_then(|l| l.spec.holder_identity)
    }

    /// Methods of the requests seen so far ("GET", "POST", "PUT", "WATCH").
    pub fn requests(&self) -> Vec<String> {
        self.lock().requests.clone()
    }

    pub fn count(&self, method: &str) -> usize {
        self.lock().requests.iter().filter(|m| *m == method).count()
    }

    pub fn clear_requests(&self) {
        self.lock().requests.clear();
    }

    /// The next `n` GET/POST/PUT requests fail with 500.
    pub fn fail_next(&self, n: usize) {
        self.lock().fail_next = n;
    }

    pub fn fail_all(&self, on: bool) {
        self.lock().fail_all = on;
    }

    pub fn fail_watch(&self, on: bool) {
        self.lock().fail_watch = on;
    }

    pub fn delay(&self, delay: Duration) {
        self.lock().delay = delay;
    }

    /// Another replica writes the lease (creating it when absent); watchers are told.
    pub fn write_as_other(&self, change: impl FnOnce(&mut LeaseSpec)) {
        let mut inner = self.lock();
        let mut lease = inner.lease.clone().unwrap_or_default();
        change(&mut lease.spec);
        store(&mut inner, lease);
    }

    /// Just before the next PUT is judged, another replica writes the lease (so the PUT's
    /// resourceVersion is stale and it gets 409).
    pub fn race_next_put(&self, change: impl FnOnce(&mut LeaseSpec) + Send + 'static) {
        self.lock().race_next_put = Some(Box::new(change));
    }

    /// The next PUT is stored, but its caller is told 409: as when the first copy of a hedged
    /// PUT landed unanswered and the second copy found its resourceVersion stale.
    pub fn conflict_after_next_put(&self) {
        self.lock().conflict_after_next_put = true;
    }

    /// Another replica deletes the lease; watchers are told.
    pub fn delete_as_other(&self) {
        let mut inner = self.lock();
        if let Some(lease) = inner.lease.take() {
            let event = WatchEvent::Deleted(lease);
            inner
                .watchers
                .retain(|w| w.try_send(Ok(event.clone())).is_ok());
        }
    }

    fn request(&self, method: &str) -> (Duration, Result<(), Error>) {
        let mut inner = self.lock();
        inner.requests.push(method.to_owned());
        let failing = inner.fail_all || inner.fail_next > 0;
        inner.fail_next = inner.fail_next.saturating_sub(1);
        (
            inner.delay,
            if failing {
                Err(Error::with_code(500))
            } else {
                Ok(())
            },
        )
    }
}

fn store(inner: &mut Inner, mut lease: Lease) -> Lease {
    let created = inner.lease.is_none();
    inner.version += 1;
    lease.metadata.resource_version = Some(inner.version.to_string());
    inner.lease = Some(lease.clone());
    let event = if created {
        WatchEvent::Added(lease.clone())
    } else {
        WatchEvent::Modified(lease.clone())
    };
    inner
        .watchers
        .retain(|w| w.try_send(Ok(event.clone())).is_ok());
    lease
}

pub struct FakeApi {
    store: FakeStore,
    name: String,
}

impl FakeApi {
    async fn call<T>(
        &self,
        method: &str,
        deadline: Instant,
        op: impl FnOnce(&mut Inner) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let (delay, outcome) = self.store.request(method);
        let clock = self.store.clock();
        if !delay.is_zero() {
            clock.sleep(delay).await;
        }
        if clock.now() > deadline {
            return Err(Error::Timeout(format!("fake {method} past its deadline")));
        }
        outcome?;
        op(&mut self.store.lock())
    }
}

impl LeaseApi for FakeApi {
    type Events = Events;

    fn name(&self) -> &str {
        &self.name
    }

    async fn get(&self, deadline: Instant) -> Result<Lease, Error> {
        self.call("GET", deadline, |inner| {
            inner.lease.clone().ok_or_else(|| Error::with_code(404))
        })
        .await
    }

    async fn create(&self, lease: &Lease, deadline: Instant) -> Result<Lease, Error> {
        self.call("POST", deadline, |inner| match inner.lease {
            Some(_) => Err(Error::with_code(409)),
            None => Ok(store(inner, lease.clone())),
        })
        .await
    }

    async fn replace(&self, lease: &Lease, deadline: Instant) -> Result<Lease, Error> {
        self.call("PUT", deadline, |inner| {
            if let Some(change) = inner.race_next_put.take() {
                let mut raced = inner.lease.clone().unwrap_or_default();
                change(&mut raced.spec);
                store(inner, raced);
            }
            let current = inner.lease.as_ref().ok_or_else(|| Error::with_code(404))?;
            if current.metadata.resource_version != lease.metadata.resource_version {
                return Err(Error::with_code(409));
            }
            let stored = store(inner, lease.clone());
            if std::mem::take(&mut inner.conflict_after_next_put) {
                return Err(Error::with_code(409));
            }
            Ok(stored)
        })
        .await
    }

    async fn watch(&self) -> Result<Events, Error> {
        let mut inner = self.store.lock();
        inner.requests.push("WATCH".to_owned());
        if inner.fail_watch {
            return Err(Error::with_code(500));
        }
        let (tx, rx) = unbounded();
        if let Some(lease) = inner.lease.clone() {
            let _ = tx.try_send(Ok(WatchEvent::Added(lease)));
        }
        inner.watchers.push(tx);
        Ok(rx)
    }
}
