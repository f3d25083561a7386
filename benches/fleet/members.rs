//! The scale part's members: each a skiff process reading the real hub with its own identity
//! (admitted in bulk) and writing into a fake cluster of its own, the fakes of each step
//! served by one thread ([`FakeFleet`]).
//!
//! A member's skiff runs without leader election: 1,000 Lease renewals a second would load
//! the members' fakes, not the hub this part measures (the real part leads). Its cluster holds
//! `skiff-system`, `team-a` (selected) and `team-b`; the fakes send watch bookmarks every
//! minute, as kube-apiserver does, instead of every second.

use crate::children;
use crate::support::control_plane::ControlPlane;
use crate::support::fake::{FakeFleet, FakeServer};
use crate::support::fleet::{Admission, admit_in_bulk};
use crate::support::skiff::{Skiff, TempDir, proc_status_kib, write_kubeconfig};
use crate::world::{self, COPY_PATH, HUB_NAME};
use serde_json::json;
use std::time::{Duration, Instant};

/// Members started at once; the next batch starts once this one holds its copies.
const BATCH: usize = 50;
/// How long a batch may take to hold its copies.
const BATCH_LIMIT: Duration = Duration::from_secs(300);
/// The fakes' watch bookmark period: kube-apiserver's.
const BOOKMARKS: Duration = Duration::from_secs(60);
/// How often the fakes are read while waiting for copies.
const POLL: Duration = Duration::from_millis(10);

/// One member: its admission, its skiff and where its files are.
struct Member {
    admission: Admission,
    skiff: Skiff,
    _dir: TempDir,
}

/// Every member started so far, and the fakes they write into (in the same order). Fields
/// drop in order: the skiffs go before their clusters.
pub struct Members {
    members: Vec<Member>,
    fakes: Vec<FakeFleet>,
    admissions: TempDir,
}

impl Members {
    pub fn new() -> Members {
        Members {
            members: Vec::new(),
            fakes: Vec::new(),
            admissions: TempDir::new("fleet-admissions"),
        }
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// The members' clusters, in the members' order.
    fn servers(&self) -> impl Iterator<Item = &FakeServer> {
        self.fakes.iter().flat_map(FakeFleet::servers)
    }

    /// Admits members on `hub` (labelled `selector`) until there are `to`, and starts their
    /// skiffs a batch at a time, each batch once the one before holds its copies of `value`.
    pub fn grow(&mut self, hub: &ControlPlane, to: usize, selector: (&str, &str), value: &str) {
        let from = self.len();
        let names: Vec<String> = (from..to).map(|i| format!("member-{i:04}")).collect();
        let fakes = FakeFleet::start(names.len());
        for server in fakes.servers() {
            seed(server);
        }
        self.fakes.push(fakes);
        let admissions = admit_in_bulk(hub, &names, &[selector], &self.admissions.0);
        let mut admissions = admissions.into_iter();
        while self.len() < to {
            let batch: Vec<Admission> = admissions.by_ref().take(BATCH).collect();
            let first = self.len();
            for admission in batch {
                let server = self.servers().nth(self.len()).expect("a fake per member");
                let member = start(server, admission);
                self.members.push(member);
            }
            let started = Instant::now();
            while self.holding(value, first) < self.len() - first {
                self.assert_running();
                assert!(
                    started.elapsed() < BATCH_LIMIT,
                    "members {first}.. hold no copy of {value} after {BATCH_LIMIT:?}; a log:\n{}",
                    self.members[first].skiff.logs()
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }

    /// How many members from the `first` on hold `value`.
    fn holding(&self, value: &str, first: usize) -> usize {
        let held = |s: &FakeServer| s.get(COPY_PATH).is_some_and(|c| world::holds(&c, value));
        self.servers().skip(first).filter(|s| held(s)).count()
    }

    /// Waits until every member holds `value`: when the last one was first seen holding it.
    pub fn wait_holding(&mut self, value: &str, limit: Duration) -> Instant {
        let started = Instant::now();
        let mut seen: Vec<Option<Instant>> = vec![None; self.len()];
        loop {
            let now = Instant::now();
            for (at, server) in seen.iter_mut().zip(self.servers()) {
                if at.is_none()
                    && server
                        .get(COPY_PATH)
                        .is_some_and(|c| world::holds(&c, value))
                {
                    *at = Some(now);
                }
            }
            if seen.iter().all(Option::is_some) {
                return seen.into_iter().flatten().max().unwrap_or(now);
            }
            let missing = seen.iter().filter(|s| s.is_none()).count();
            assert!(
                started.elapsed() < limit,
                "{missing} members hold no copy of {value} after {limit:?}"
            );
            std::thread::sleep(POLL);
        }
    }

    /// Panics with a log when a member's skiff has ended.
    pub fn assert_running(&mut self) {
        for member in &mut self.members {
            if !member.skiff.is_running() {
                panic!(
                    "{}'s skiff ended; its log:\n{}",
                    member.admission.cluster,
                    member.skiff.logs()
                );
            }
        }
    }

    /// The members' skiffs' RssAnon, mean and max, in KiB.
    pub fn anon_kib(&self) -> (f64, u64) {
        let anon: Vec<u64> = (self.members.iter())
            .filter_map(|m| proc_status_kib(m.skiff.child.id(), "RssAnon"))
            .collect();
        let mean = anon.iter().sum::<u64>() as f64 / anon.len().max(1) as f64;
        (mean, anon.iter().copied().max().unwrap_or(0))
    }
}

impl Drop for Members {
    fn drop(&mut self) {
        for member in &self.members {
            children::unregister(member.skiff.child.id());
        }
    }
}

/// A member cluster's namespaces.
fn seed(server: &FakeServer) {
    server.set_bookmark_interval(BOOKMARKS);
    server.insert(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "skiff-system"}}));
    for namespace in world::member_namespaces() {
        server.insert(namespace);
    }
}

/// The member's skiff: its own cluster `server`, its hub through `admission`.
fn start(server: &FakeServer, admission: Admission) -> Member {
    let dir = TempDir::new("fleet-member");
    let kubeconfig = write_kubeconfig(&dir, &server.url(), None, None, "skiff-system");
    let hub = format!("--hub-kubeconfig={}", admission.kubeconfig().display());
    let name = format!("--hub-name={HUB_NAME}");
    let log = dir.0.join("skiff.log");
    let skiff = Skiff::start(&kubeconfig, log, &[&hub, &name]);
    children::register(skiff.child.id());
    Member {
        admission,
        skiff,
        _dir: dir,
    }
}
