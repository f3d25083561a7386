//! Self-service benchmark: what the acceptance cache costs per acceptance, and whether asking
//! it which namespaces accept a Mirror stays flat as acceptances grow.
//!
//! The cache is built as the controller builds it (`Acceptances`, the projection and the
//! index by Mirror), fed 10,000 acceptances in 10,000 namespaces (`team-00000`…, each naming
//! one of 100 Mirrors `team-src-NN/share`, names as long as real ones), and measured in this
//! process: RssAnon before and after, with free memory returned to the system both times.
//! Then the time of one lookup with 1 acceptance cached against with all of them.
//!
//! `cargo bench --bench acceptances` prints the figures; `cargo test --all-targets` runs it on
//! 200 acceptances and only checks that the lookups answer.

use skiff::kube::api::ObjectMeta;
use skiff::mirror::SourceKind;
use skiff::mirror::acceptance::{AcceptanceSpec, Acceptances, MirrorAcceptance, MirrorRef};
use skiff::mirror::copy::Owner;
use skiff::runtime::Change;
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
}
