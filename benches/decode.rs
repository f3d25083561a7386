//! Decode benchmark: what decoding a watch stream of real-shaped objects costs, in heap bytes
//! (a counting global allocator) and in time, and what the namespace cache keeps of each.
//!
//! The objects are shaped as kube-apiserver sends them: a Namespace with its `managedFields`,
//! the `kubernetes.io/metadata.name` label, `spec.finalizers` and `status.phase`; a copy
//! ConfigMap with skiff's labels, annotation and `managedFields`. Time per event is the
//! CPU-bound figure the release profile is chosen against.
//!
//! `cargo bench --bench decode` prints a table; `cargo test --all-targets` runs it on a few
//! objects and checks the counts only.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use skiff::kind::SourceKind;
use skiff::kube::WatchStream;
use skiff::kube::api::{ConfigMap, Namespace, NamespaceStatus, Object, OwnerReference, Resource};
use skiff::kube::watch::WatchEvent;
use skiff::mirror::copy::CopyInfo;
use skiff::mirror::index::{copy_store, mirror_store};
use skiff::mirror::namespace::NamespaceEntry;
use skiff::mirror::selection::Selections;
use skiff::mirror::types::Mirror;
use skiff::runtime::{Change, Store};
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

/// Counts live heap bytes and their peak; every allocation goes through it.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static TOTAL: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
        PEAK.fetch_max(live, Relaxed);
        TOTAL.fetch_add(layout.size(), Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Objects per figure in bench mode, and in the smoke run.
const OBJECTS: usize = 5_000;
const SMOKE_OBJECTS: usize = 50;

fn managed_fields(manager: &str, fields: &str) -> String {
    format!(
        r#"[{{"manager":"{manager}","operation":"Update","apiVersion":"v1","time":"2026-11-30T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{fields}}}]"#
    )
}

/// A watch line for namespace `i`, as kube-apiserver 1.36 sends it.
fn namespace_line(i: usize) -> String {
    let name = format!("team-{i:05}");
    let fields = managed_fields(
        "kubectl-create",
        r#"{"f:metadata":{"f:labels":{".":{},"f:kubernetes.io/metadata.name":{},"f:mirror":{}}}}"#,
    );
    format!(
        r#"{{"type":"ADDED","object":{{"kind":"Namespace","apiVersion":"v1","metadata":{{"name":"{name}","uid":"0b5c2a51-8f0e-4a43-9d8e-{i:012}","resourceVersion":"{rv}","creationTimestamp":"2026-11-30T00:00:00Z","labels":{{"kubernetes.io/metadata.name":"{name}","mirror":"yes"}},"managedFields":{fields}}},"spec":{{"finalizers":["kubernetes"]}},"status":{{"phase":"Active"}}}}}}"#,
        rv = 1000 + i
    )
}

/// A watch line for a copy ConfigMap in namespace `i`.
fn copy_line(i: usize) -> String {
    let fields = managed_fields(
        "skiff",
        r#"{"f:data":{".":{},"f:ca.crt":{}},"f:metadata":{"f:annotations":{".":{},"f:skiff.dev/source-hash":{}},"f:labels":{".":{},"f:app.kubernetes.io/managed-by":{},"f:skiff.dev/mirror-name":{},"f:skiff.dev/mirror-namespace":{}}}}"#,
    );
    format!(
        r#"{{"type":"ADDED","object":{{"kind":"ConfigMap","apiVersion":"v1","metadata":{{"name":"app-ca","namespace":"team-{i:05}","uid":"6d1f-{i:012}","resourceVersion":"{rv}","creationTimestamp":"2026-11-30T00:00:00Z","labels":{{"app.kubernetes.io/managed-by":"skiff","skiff.dev/mirror-name":"ca","skiff.dev/mirror-namespace":"skiff-system"}},"annotations":{{"skiff.dev/source-hash":"{hash}"}},"managedFields":{fields}}},"data":{{"ca.crt":"-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----\n"}}}}}}"#,
        rv = 9000 + i,
        hash = "9f2c".repeat(16)
    )
}

/// A Mirror as the API server holds it after `kubectl apply` and a reconcile: the applied
/// configuration annotation, a finalizer, a status with its conditions.
fn mirror_line(i: usize) -> String {
    let applied = format!(
        r#"{{\"apiVersion\":\"skiff.dev/v1alpha1\",\"kind\":\"Mirror\",\"metadata\":{{\"annotations\":{{}},\"name\":\"ca-{i:05}\",\"namespace\":\"skiff-system\"}},\"spec\":{{\"namespaceSelector\":{{\"matchLabels\":{{\"mirror\":\"yes\"}}}},\"source\":{{\"kind\":\"ConfigMap\",\"name\":\"app-ca\"}}}}}}\n"#
    );
    let fields = managed_fields(
        "skiff",
        r#"{"f:status":{".":{},"f:conditions":{},"f:synced":{}}}"#,
    );
    format!(
        r#"{{"type":"ADDED","object":{{"kind":"Mirror","apiVersion":"skiff.dev/v1alpha1","metadata":{{"name":"ca-{i:05}","namespace":"skiff-system","uid":"7e2a-{i:012}","resourceVersion":"{rv}","generation":1,"creationTimestamp":"2026-11-30T00:00:00Z","finalizers":["skiff.dev/copies"],"annotations":{{"kubectl.kubernetes.io/last-applied-configuration":"{applied}"}},"managedFields":{fields}}},"spec":{{"source":{{"kind":"ConfigMap","name":"app-ca"}},"namespaceSelector":{{"matchLabels":{{"mirror":"yes"}}}}}},"status":{{"observedGeneration":1,"synced":10,"failed":0,"conditions":[{{"type":"Ready","status":"True","reason":"Synced","message":"10 of 10 copies in sync","lastTransitionTime":"2026-11-30T00:00:00Z","observedGeneration":1}}]}}}}}}"#,
        rv = 5000 + i
    )
}

/// Live heap bytes per object that `store` keeps (its projection, key, table and index), the
/// objects given to it as a list.
fn store_bytes<K: Resource + Clone, P: Clone>(store: &Store<K, P>, objects: &[K]) -> usize {
    let before = LIVE.load(Relaxed);
    for object in objects {
        store.apply(&Change::Listed(object.clone()));
    }
    store.apply(&Change::Relisted);
    (LIVE.load(Relaxed) - before) / objects.len()
}

/// Per-item bytes of the caches, as [`store_bytes`] measures them: a namespace, a copy, a
/// Mirror, and a namespace in one Mirror's selection.
struct CacheBytes {
    namespace: usize,
    copy: usize,
    mirror: usize,
    selected: usize,
}

fn cache_bytes(namespaces: &[Namespace], copies: &[Object], mirrors: &[Mirror]) -> CacheBytes {
    let namespace_store = Store::new(NamespaceEntry::of);
    let namespace = store_bytes(&namespace_store, namespaces);
    let row = SourceKind::ConfigMap.row();
    let copy = store_bytes(&copy_store(move |o| CopyInfo::of(row, o)), copies);
    let mirror = store_bytes(&mirror_store(), mirrors);
    // One Mirror selecting every namespace.
    let one = mirror_store();
    let known = one.clone();
    let selections = Selections::new(&namespace_store, move |key| known.contains(key));
    one.apply(&Change::Applied(mirrors[0].clone()));
    let before = LIVE.load(Relaxed);
    selections.mirror_changed(&Change::Applied(mirrors[0].clone()));
    let selected = (LIVE.load(Relaxed) - before) / namespaces.len();
    CacheBytes {
        namespace,
        copy,
        mirror,
        selected,
    }
}

/// What decoding `count` events cost.
struct Figures {
    /// Bytes of the watch lines fed in.
    wire: usize,
    /// Heap bytes allocated while decoding, per event (all of them, freed or not).
    allocated: usize,
    /// Peak live heap bytes while decoding, above what was live before, per event.
    peak: usize,
    /// Live heap bytes the decoded objects keep, per event.
    kept: usize,
    /// Nanoseconds per event.
    nanos: u128,
}

/// Decodes `count` lines made by `line` through the watch stream, keeping every object.
fn decode<K: Resource + std::fmt::Debug>(
    count: usize,
    line: fn(usize) -> String,
) -> (Figures, Vec<K>) {
    let body: String = (0..count).map(|i| line(i) + "\n").collect();
    let wire = body.len();
    // Leaked so that freeing it does not count against what the objects keep.
    let body: &'static [u8] = Box::leak(body.into_bytes().into_boxed_slice());
    let mut stream = WatchStream::<K>::from_reader(smol::io::Cursor::new(body));
    let mut objects = Vec::with_capacity(count);
    let (before, total) = (LIVE.load(Relaxed), TOTAL.load(Relaxed));
    PEAK.store(before, Relaxed);
    let started = Instant::now();
    smol::block_on(async {
        while let Some(event) = stream.next().await {
            match event {
                Ok(WatchEvent::Added(object)) => objects.push(object),
                other => panic!("unexpected watch item: {other:?}"),
            }
        }
    });
    let nanos = started.elapsed().as_nanos() / count as u128;
    drop(stream);
    let figures = Figures {
        wire: wire / count,
        allocated: (TOTAL.load(Relaxed) - total) / count,
        peak: (PEAK.load(Relaxed) - before) / count,
        kept: LIVE.load(Relaxed).saturating_sub(before) / count,
        nanos,
    };
    assert_eq!(objects.len(), count);
    (figures, objects)
}

/// How skiff decoded before (kept here to measure against): each line into a `Value` tree,
/// then the object from that tree, with metadata's unknown fields in a flattened map.
#[allow(dead_code)] // fields are decoded to be measured, not read
mod before {
    use super::*;

    #[derive(Deserialize)]
    pub struct WatchEvent {
        #[serde(rename = "type")]
        pub kind: String,
        pub object: Value,
    }

    #[derive(Default, Deserialize)]
    #[serde(rename_all = "camelCase", default)]
    pub struct ObjectMeta {
        pub name: Option<String>,
        pub namespace: Option<String>,
        pub uid: Option<String>,
        pub resource_version: Option<String>,
        pub generation: Option<i64>,
        pub creation_timestamp: Option<String>,
        pub deletion_timestamp: Option<String>,
        pub labels: BTreeMap<String, String>,
        pub annotations: BTreeMap<String, String>,
        pub finalizers: Vec<String>,
        pub owner_references: Vec<OwnerReference>,
        #[serde(flatten)]
        pub extra: Map<String, Value>,
    }

    #[derive(Default, Deserialize)]
    #[serde(rename_all = "camelCase", default)]
    pub struct Namespace {
        pub api_version: Option<String>,
        pub kind: Option<String>,
        pub metadata: ObjectMeta,
        pub status: Option<NamespaceStatus>,
    }

    #[derive(Default, Deserialize)]
    #[serde(rename_all = "camelCase", default)]
    pub struct ConfigMap {
        pub api_version: Option<String>,
        pub kind: Option<String>,
        pub metadata: ObjectMeta,
        pub data: BTreeMap<String, String>,
        pub binary_data: BTreeMap<String, String>,
    }
}

/// As [`decode`], the way skiff decoded before.
fn decode_before<K: DeserializeOwned>(count: usize, line: fn(usize) -> String) -> Figures {
    let lines: Vec<String> = (0..count).map(line).collect();
    let wire = lines.iter().map(|l| l.len() + 1).sum::<usize>();
    let mut objects: Vec<K> = Vec::with_capacity(count);
    let (before, total) = (LIVE.load(Relaxed), TOTAL.load(Relaxed));
    PEAK.store(before, Relaxed);
    let started = Instant::now();
    for line in &lines {
        let event: before::WatchEvent =
            serde_json::from_slice(line.as_bytes()).expect("a watch event");
        assert_eq!(event.kind, "ADDED");
        objects.push(serde_json::from_value(event.object).expect("the object"));
    }
    let nanos = started.elapsed().as_nanos() / count as u128;
    Figures {
        wire: wire / count,
        allocated: (TOTAL.load(Relaxed) - total) / count,
        peak: (PEAK.load(Relaxed) - before) / count,
        kept: LIVE.load(Relaxed).saturating_sub(before) / count,
        nanos,
    }
}

/// Live heap bytes per namespace that `project` keeps of the decoded namespaces.
fn projection_bytes<P>(namespaces: &[Namespace], project: impl Fn(&Namespace) -> P) -> usize {
    let before = LIVE.load(Relaxed);
    let kept: Vec<P> = namespaces.iter().map(project).collect();
    let bytes = LIVE.load(Relaxed) - before;
    drop(kept);
    bytes / namespaces.len()
}

/// `namespaces`, each with a label no other namespace has.
fn with_own_labels(namespaces: &[Namespace]) -> Vec<Namespace> {
    let mut own = namespaces.to_vec();
    for ns in &mut own {
        let name = ns.metadata.name().to_owned();
        ns.metadata.labels.insert("team".into(), name);
    }
    own
}

fn row(what: &str, f: &Figures) {
    println!(
        "| {what:<26} | {:>8} | {:>9} | {:>8} | {:>8} | {:>9} |",
        f.wire,
        f.allocated,
        f.peak,
        f.kept,
        format!("{:.2}", f.nanos as f64 / 1000.0)
    );
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let count = if bench { OBJECTS } else { SMOKE_OBJECTS };
    let (ns_figures, namespaces) = decode::<Namespace>(count, namespace_line);
    let (copy_figures, copies) = decode::<Object>(count, copy_line);
    let (typed_figures, _) = decode::<ConfigMap>(count, copy_line);
    let (_, mirrors) = decode::<Mirror>(count, mirror_line);
    let ns_before = decode_before::<before::Namespace>(count, namespace_line);
    let copy_before = decode_before::<before::ConfigMap>(count, copy_line);
    assert!(
        namespaces
            .iter()
            .all(|ns| ns.metadata.extra.is_empty() && ns.metadata.labels.len() == 2),
        "a decoded namespace kept a field skiff never reads"
    );
    assert!(copies.iter().all(|cm| cm.metadata.extra.is_empty()));
    let info = projection_bytes(&namespaces, |ns| {
        NamespaceEntry::new(ns.metadata.name(), &ns.metadata.labels, ns.is_terminating())
    });
    // The worst case for sharing: every namespace with a label set of its own.
    let own = projection_bytes(&with_own_labels(&namespaces), |ns| {
        NamespaceEntry::new(ns.metadata.name(), &ns.metadata.labels, ns.is_terminating())
    });
    // What the cache kept per namespace before: the name and a clone of the label map.
    let map = projection_bytes(&namespaces, |ns| {
        (ns.metadata.name.clone(), ns.metadata.labels.clone())
    });
    let caches = cache_bytes(&namespaces, &copies, &mirrors);
    assert!(
        caches.selected > 0 && caches.mirror > 0,
        "the caches kept nothing"
    );
    if !bench {
        println!("decode: smoke run ok (run `cargo bench --bench decode` for figures)");
        return;
    }
    println!("Decoding {count} watch events per kind (bytes and µs are per event)\n");
    println!(
        "| {:<26} | {:>8} | {:>9} | {:>8} | {:>8} | {:>9} |",
        "kind", "wire B", "alloc'd B", "peak B", "kept B", "µs/event"
    );
    println!(
        "|{:-<28}|{:-<10}|{:-<11}|{:-<10}|{:-<10}|{:-<11}|",
        "", "", "", "", "", ""
    );
    row("Namespace, before", &ns_before);
    row("Namespace", &ns_figures);
    row("ConfigMap (a copy), before", &copy_before);
    row("ConfigMap (a copy), typed", &typed_figures);
    row("ConfigMap (a copy), Object", &copy_figures);
    println!(
        "\nnamespace cache entry, heap bytes beyond the entry itself: NamespaceEntry {info} B \
         (size {} B), {own} B with a label set of its own (`team=<name>`); name + label map as \
         kept before {map} B (size {} B)",
        size_of::<NamespaceEntry>(),
        size_of::<(String, std::collections::BTreeMap<String, String>)>()
    );
    println!(
        "\ncache bytes per item ({count} of each, heap bytes requested, the store's table, key \
         and index included): namespace {} B, copy {} B, Mirror {} B, namespace in a \
         Mirror's selection {} B",
        caches.namespace, caches.copy, caches.mirror, caches.selected
    );
}
