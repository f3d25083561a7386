//! Self-service benchmark: what the acceptance cache costs per acceptance, and whether asking
//! it which namespaces accept a Mirror stays flat as acceptances grow.
//!
//! The cache is built as the controller builds it (`Acceptances`, the projection and the
//! index by Mirror), fed 10,000 acceptances in 10,000 namespaces (`team-00000`…, each naming
//! one of 100 Mirrors `team-src-NN/share`, names as long as real ones), and measured in this
//! process: RssAnon before and after, with free memory returned to the system both times.
//! Then the time of one lookup with 1 acceptance cached against with all of them.
//!
//! Then the CPU time of one Namespace event, with the same number of acceptances, in caches
//! built as the controller builds them (`Caches` with `--self-service`): the namespace cache
//! and the selection index take the event, and for the Mirror it wakes (a tenant's offer
//! with one acceptance, as in the control) the consent check runs as a reconcile runs it:
//! which namespaces it serves, and each of its acceptances' verdict. The control is the same
//! world in the same process before the other acceptances are added (10,100 namespaces and
//! 101 offers in both).
//!
//! `cargo bench --bench acceptances` prints the figures; `cargo test --all-targets` runs it on
//! 200 acceptances and only checks that the lookups answer.

use skiff::flags::SelfService;
use skiff::kind::Kinds;
use skiff::kube::api::Namespace;
use skiff::kube::api::ObjectMeta;
use skiff::kube::events::Recorder;
use skiff::kube::{Client, Config};
use skiff::mirror::acceptance::{AcceptanceSpec, Acceptances, MirrorAcceptance, MirrorRef};
use skiff::mirror::caches::Caches;
use skiff::mirror::consent::Consent;
use skiff::mirror::copy::Owner;
use skiff::mirror::tenancy::Tenancy;
use skiff::mirror::types::{LabelSelector, LabelSelectorRequirement, Mirror};
use skiff::mirror::{SecretTargets, SourceKind, SourceScope};
use skiff::runtime::Change;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

const MIRRORS: usize = 100;
const LOOKUPS: u32 = 10_000;

fn acceptance(i: usize) -> MirrorAcceptance {
    MirrorAcceptance {
        metadata: ObjectMeta::named(Some(&format!("team-{i:05}")), "from-shared-settings"),
        spec: AcceptanceSpec {
            from: MirrorRef {
                namespace: format!("team-src-{:02}", i % MIRRORS),
                mirror: "share".into(),
            },
            kind: SourceKind::ConfigMap,
            target_name: None,
        },
        ..MirrorAcceptance::default()
    }
}

/// Nanoseconds per `accepting` lookup of the Mirror `lonely/share`, accepted once.
fn lookup_ns(store: &Acceptances) -> f64 {
    let lonely = Owner {
        namespace: "lonely".into(),
        name: "share".into(),
    };
    let started = Instant::now();
    for _ in 0..LOOKUPS {
        assert_eq!(
            black_box(store.accepting(&lonely, SourceKind::ConfigMap)).len(),
            1
        );
    }
    started.elapsed().as_nanos() as f64 / f64::from(LOOKUPS)
}

fn selector(key: &str) -> LabelSelector {
    LabelSelector {
        match_expressions: vec![LabelSelectorRequirement {
            key: key.into(),
            operator: "In".into(),
            values: vec!["yes".into()],
        }],
        ..LabelSelector::default()
    }
}

fn namespace(name: &str, labels: &[(&str, &str)]) -> Namespace {
    let mut ns = Namespace {
        metadata: ObjectMeta::named(None, name),
        ..Namespace::default()
    };
    let labels: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    ns.metadata.labels = labels;
    ns
}

/// Caches with self-service on, as the controller builds them, and their consent checks.
struct World {
    caches: Caches,
    consent: Consent,
    scope: SourceScope,
}

impl World {
    /// `lonely-src/share` offered to `lonely-dst` (labelled by the events), accepted there;
    /// `team-src-NN/share` offered to the namespaces labelled `from-NN`; `count` namespaces
    /// `team-NNNNN`, each labelled for one of them.
    fn new(count: usize) -> World {
        let settings = SelfService {
            offer_selector: selector("may-offer"),
            max_copies: 100,
            kinds: [SourceKind::ConfigMap].into(),
            projections: Default::default(),
            orphan: false,
        };
        let scope = SourceScope::Namespaces(["skiff-system".to_owned()].into());
        let targets = SecretTargets::default();
        let caches = Caches::new(
            &scope,
            &targets,
            Some(&settings),
            &Kinds::default(),
            (None, None),
        );
        let client = Client::new(Config::new("http://127.0.0.1:9".parse().expect("url")));
        let client = client.expect("a client that is never used");
        let recorder = Recorder::new(&client, "skiff", "bench");
        let consent = Consent::new(settings, targets, caches.clone(), (client, recorder));
        let world = World {
            caches,
            consent,
            scope,
        };
        world.namespace(namespace("lonely-src", &[("may-offer", "yes")]));
        world.namespace(namespace("lonely-dst", &[]));
        world.mirror("lonely-src", "lonely");
        for m in 0..MIRRORS {
            world.namespace(namespace(
                &format!("team-src-{m:02}"),
                &[("may-offer", "yes")],
            ));
            world.mirror(&format!("team-src-{m:02}"), &format!("from-{m:02}"));
        }
        for i in 1..=count {
            let label = format!("from-{:02}", i % MIRRORS);
            world.namespace(namespace(&format!("team-{i:05}"), &[(&label, "yes")]));
        }
        let mut lonely = acceptance(0);
        lonely.metadata.namespace = Some("lonely-dst".into());
        lonely.spec.from.namespace = "lonely-src".into();
        world.acceptances().apply(&Change::Applied(lonely));
        world
    }

    fn acceptances(&self) -> &Acceptances {
        self.caches.acceptances.as_ref().expect("self-service on")
    }

    fn mirror(&self, ns: &str, selects: &str) {
        let mut mirror = Mirror {
            metadata: ObjectMeta::named(Some(ns), "share"),
            ..Mirror::default()
        };
        mirror.spec.source.name = "settings".into();
        mirror.spec.namespace_selector = Some(selector(selects));
        let event = Change::Applied(mirror);
        self.caches.mirrors.apply(&event);
        self.caches.selections.mirror_changed(&event);
    }

    /// What a Namespace event costs before any write: the cache, the Mirrors it wakes, and
    /// for each the consent check and its acceptances' verdicts. Returns how many it woke.
    fn namespace(&self, ns: Namespace) -> usize {
        let event = Change::Applied(ns);
        let previous = self.caches.namespaces.apply(&event);
        let woken = self
            .caches
            .selections
            .namespace_changed(&event, previous.as_ref());
        for key in &woken {
            let Some(mirror) = self.caches.mirrors.get(&key.namespace, &key.name) else {
                continue;
            };
            let owner = Owner::of(&mirror);
            let tenancy = Tenancy::of(&mirror, (&self.scope, Some(&self.consent)), &self.caches);
            assert!(tenancy.is_offer());
            let copy = |kind, ns: &str, name: &str| self.caches.copy(kind, ns, name);
            let none = Default::default();
            for (key, accepted) in self.acceptances().of(&owner) {
                let seen = tenancy.seen(&mirror, false);
                black_box(
                    self.consent
                        .verdict(seen, (&key, accepted.kind), &copy, &none),
                );
            }
        }
        woken.len()
    }

    /// Nanoseconds of CPU per Namespace event relabelling `lonely-dst` in and out of the
    /// lonely offer's selection.
    fn event_ns(&self, events: u32) -> f64 {
        let started = cpu_ns();
        for i in 0..events {
            let labels: &[(&str, &str)] = if i % 2 == 0 {
                &[("lonely", "yes")]
            } else {
                &[]
            };
            assert_eq!(self.namespace(namespace("lonely-dst", labels)), 1);
        }
        (cpu_ns() - started) as f64 / f64::from(events)
    }
}

/// This thread's CPU time, in nanoseconds: the figure holds on a busy machine, where wall
/// time would count other processes' turns.
fn cpu_ns() -> u128 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec for the call to write.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } == 0;
    assert!(ok, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    now.tv_sec as u128 * 1_000_000_000 + now.tv_nsec as u128
}

fn main() {
    let count = if std::env::args().any(|a| a == "--bench") {
        10_000
    } else {
        200
    };
    skiff::heap::configure();
    let store = Acceptances::default();
    let mut lonely = acceptance(0);
    lonely.spec.from.namespace = "lonely".into();
    store.apply(&Change::Applied(lonely));
    lookup_ns(&store);
    let one = lookup_ns(&store);
    skiff::heap::release_free_memory();
    let before = skiff::heap::anon_bytes().unwrap_or_default();
    for i in 1..=count {
        store.apply(&Change::Applied(acceptance(i)));
    }
    skiff::heap::release_free_memory();
    let after = skiff::heap::anon_bytes().unwrap_or_default();
    lookup_ns(&store); // warm: the release above returned the pages lookups allocate in
    let all = lookup_ns(&store);
    let per = after.saturating_sub(before) as f64 / count as f64;
    println!("acceptances: {count} more in {count} namespaces, naming {MIRRORS} Mirrors");
    println!("  RssAnon per acceptance: {per:.0} B (goal <= 300 B)");
    println!(
        "  which namespaces accept a Mirror (one acceptance): {one:.0} ns with it alone, {all:.0} ns with {count} more cached ({:.2}x)",
        all / one
    );
    let events = if count == 200 { 200 } else { 20_000 };
    let world = World::new(count);
    world.event_ns(events);
    let alone = world.event_ns(events);
    for i in 1..=count {
        let mut a = acceptance(i);
        a.spec.from.namespace = format!("team-src-{:02}", i % MIRRORS);
        world.acceptances().apply(&Change::Applied(a));
    }
    world.event_ns(events);
    let among = world.event_ns(events);
    println!(
        "  CPU per Namespace event (the offer it wakes has one acceptance): {alone:.0} ns with it alone, {among:.0} ns with {count} more cached ({:.2}x, goal <= 1.5x)",
        among / alone
    );
}
