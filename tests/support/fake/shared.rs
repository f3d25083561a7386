//! State shared by the server thread and the test's `FakeServer` handle, and the request log.

use super::faults::{FaultRules, RequestClass};
use super::store::Store;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Default bookmark period of the fake; the apiserver's is about a minute, tests want it quick.
pub const DEFAULT_BOOKMARK_INTERVAL: Duration = Duration::from_secs(1);

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct RequestRecord {
    /// One id per accepted TCP connection.
    pub conn_id: u64,
    pub method: String,
    pub path: String,
    pub query: String,
    /// `Lease` or `Other`.
    pub class: RequestClass,
    pub user_agent: Option<String>,
    pub accept: Option<String>,
    /// The bearer token, which tells replicas apart.
    pub token: Option<String>,
    /// The `impersonate-*` headers, in the order sent (names lower-cased).
    pub impersonation: Vec<(String, String)>,
    pub body: Option<Value>,
    /// 0 if no answer was sent (stall, reset).
    pub status: u16,
    /// When the request head was read.
    pub received: Instant,
    /// When the response head was written.
    pub answered: Option<Instant>,
    pub watch: bool,
}

impl RequestRecord {
    /// The query's parameters, decoded.
    pub fn params(&self) -> std::collections::HashMap<String, String> {
        super::routes::parse_query(&self.query)
    }

    /// A request that changes something (POST, PUT, PATCH, DELETE).
    pub fn is_mutating(&self) -> bool {
        matches!(self.method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE")
    }
}

/// Every lock is held only for a synchronous step, never across an await.
pub struct Shared {
    pub store: Mutex<Store>,
    pub faults: Mutex<FaultRules>,
    pub records: Mutex<Vec<RequestRecord>>,
    pub token: Mutex<Option<String>>,
    pub bookmark_interval: Mutex<Duration>,
    /// Watches by these bearer tokens send nothing: no event, no bookmark (a stalled watch cache).
    pub deaf_tokens: Mutex<HashSet<String>>,
    next_conn_id: AtomicU64,
}

/// Locks, ignoring poisoning: a panicking test thread must not take the server down with it.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    pub fn new() -> Shared {
        Shared {
            store: Mutex::new(Store::default()),
            faults: Mutex::new(FaultRules::default()),
            records: Mutex::new(Vec::new()),
            token: Mutex::new(None),
            bookmark_interval: Mutex::new(DEFAULT_BOOKMARK_INTERVAL),
            deaf_tokens: Mutex::new(HashSet::new()),
            next_conn_id: AtomicU64::new(1),
        }
    }

    /// Whether the watch logged as request `index` must stay silent.
    pub fn watch_is_silenced(&self, index: usize) -> bool {
        let token = lock(&self.records).get(index).and_then(|r| r.token.clone());
        token.is_some_and(|t| lock(&self.deaf_tokens).contains(&t))
    }

    pub fn next_conn_id(&self) -> u64 {
        self.next_conn_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Logs an arriving request; returns its index for [`Shared::answered`].
    pub fn record(&self, record: RequestRecord) -> usize {
        let mut records = lock(&self.records);
        records.push(record);
        records.len() - 1
    }

    /// Notes that the response head of request `index` went out with `status`.
    pub fn answered(&self, index: usize, status: u16) {
        if let Some(record) = lock(&self.records).get_mut(index) {
            record.status = status;
            record.answered = Some(Instant::now());
        }
    }
}
