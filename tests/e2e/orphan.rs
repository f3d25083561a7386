//! e2e: copies that outlive their Mirror (`spec.deletionPolicy: Orphan`) on a real API server.
//!
//! Why: orphaning is a promise about objects skiff leaves behind, in as many namespaces as the
//! Mirror selected: each keeps its content and loses everything that marks it as skiff's, so
//! that no Mirror, this one's successor included, touches it again unless its owner hands it
//! over. Only the real server shows what the copies hold once the Mirror is gone, and that no
//! write of the Mirror's lands after they were orphaned, even when the Mirror is deleted in the
//! middle of its fan-out.

use serde_json::{Value, json};
use std::time::Duration;

use crate::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE, require_e2e_binaries};
use crate::support::mirror_e2e::{
    absent, has_event, mirror, ready_says, source_configmap, wait_until, with_replica_flags,
};
use crate::support::skiff::eventually;

/// The copies of the issue's test.
const COPIES: usize = 300;
/// A fan-out of 300 copies at the e2e flags' pace, and their orphaning, take longer than a
/// step's usual 20 s on a loaded machine.
const LONG: Duration = Duration::from_secs(120);
/// What marks an object as skiff's: none of it may stay on an orphaned copy.
const SKIFFS_LABELS: [&str; 3] = [
    "app.kubernetes.io/managed-by",
    "skiff.dev/mirror-namespace",
    "skiff.dev/mirror-name",
];
const SKIFFS_ANNOTATIONS: [&str; 4] = [
    "skiff.dev/source-hash",
    "skiff.dev/managed-labels",
    "skiff.dev/managed-annotations",
    "skiff.dev/adopt",
];

fn wait_long(what: &str, check: impl FnMut() -> bool) {
    assert!(eventually(LONG, check), "timed out: {what}");
}

/// Every ConfigMap `name` in the namespaces labelled `mirror-e2e=<label>`, by namespace.
fn copies_of(cp: &ControlPlane, name: &str, label: &str) -> Vec<Value> {
    let selector = format!("metadata.name={name}");
    let list = cp.get_json(&["configmaps", "-A", "--field-selector", &selector]);
    let items = list.map(|l| l["items"].as_array().cloned().unwrap_or_default());
    let namespaces = cp.get_json(&["namespaces", "-l", &format!("mirror-e2e={label}")]);
    let selected: Vec<String> = (namespaces.into_iter())
        .flat_map(|l| l["items"].as_array().cloned().unwrap_or_default())
        .filter_map(|n| n["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    (items.into_iter().flatten())
        .filter(|cm| {
            selected
                .iter()
                .any(|ns| cm["metadata"]["namespace"] == *ns.as_str())
        })
        .collect()
}

/// What of skiff's an object still carries, if anything.
fn skiffs_marks(object: &Value) -> Vec<String> {
    let meta = &object["metadata"];
    let labels = SKIFFS_LABELS
        .iter()
        .filter(|k| !meta["labels"][**k].is_null());
    let annotations = SKIFFS_ANNOTATIONS
        .iter()
        .filter(|k| !meta["annotations"][**k].is_null());
    labels.chain(annotations).map(|k| k.to_string()).collect()
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn orphaned_copies_keep_their_data_and_nothing_of_skiffs_until_handed_over() {
    require_e2e_binaries();
    let fast = ["--kube-api-qps=100", "--kube-api-burst=200"];
    with_replica_flags("orphan", &fast, |cp, _| {
        let label = "orphan";
        let namespaces = cp.create_namespaces("orphan", &[("mirror-e2e", label)], COPIES);
        // One copy was adopted: the annotation that handed it over goes with skiff's marks.
        let handed = &namespaces[0];
        cp.apply(
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "kept-ca", "namespace": handed,
                             "annotations": {"skiff.dev/adopt": "skiff-system/kept"}},
                "data": {"old": "data"}})
            .to_string(),
        );
        source_configmap(cp, "kept-ca", r#"{"ca.crt": "PEM"}"#);
        let extra = r#""deletionPolicy": "Orphan",
            "target": {"metadata": {"labels": {"team": "payments"}}},"#;
        mirror(cp, "kept", "ConfigMap", "kept-ca", extra, label);
        wait_long("every copy written", || {
            ready_says(cp, "kept", "Synced", &format!("{COPIES} of {COPIES}"))
        });

        cp.kubectl_ok(&[
            "delete",
            "mirror",
            "kept",
            "-n",
            OPERATOR_NAMESPACE,
            "--wait=false",
        ]);
        wait_long("the Mirror gone once its copies are orphaned", || {
            absent(cp, "mirror", OPERATOR_NAMESPACE, "kept")
        });
        let copies = copies_of(cp, "kept-ca", label);
        assert_eq!(copies.len(), COPIES, "a copy was deleted");
        for copy in &copies {
            let ns = copy["metadata"]["namespace"].as_str().unwrap_or_default();
            assert_eq!(copy["data"], json!({"ca.crt": "PEM"}), "{ns} lost its data");
            assert_eq!(
                skiffs_marks(copy),
                Vec::<String>::new(),
                "{ns} keeps skiff's marks"
            );
            assert_eq!(copy["metadata"]["labels"]["team"], "payments", "{ns}");
        }
        wait_until("an Event counts the copies orphaned", || {
            has_event(
                cp,
                "kept",
                "Normal",
                "Orphaned",
                &format!("{COPIES} copies of ConfigMap kept-ca"),
            )
        });

        // A new Mirror of the same name takes back only what the copies' owners hand over.
        let handed_over = &namespaces[..3];
        for ns in handed_over {
            let adopt = "skiff.dev/adopt=skiff-system/kept";
            cp.kubectl_ok(&["annotate", "configmap", "kept-ca", "-n", ns, adopt]);
        }
        let before: Vec<Value> = copies_of(cp, "kept-ca", label);
        source_configmap(cp, "kept-ca", r#"{"ca.crt": "PEM 2"}"#);
        mirror(cp, "kept", "ConfigMap", "kept-ca", "", label);
        wait_long(
            "the handed-over copies taken back, the others left alone",
            || {
                ready_says(
                    cp,
                    "kept",
                    "Conflict",
                    &format!("{} ConfigMap named kept-ca", COPIES - 3),
                )
            },
        );
        for copy in copies_of(cp, "kept-ca", label) {
            let ns = copy["metadata"]["namespace"].as_str().unwrap_or_default();
            let was = before
                .iter()
                .find(|b| b["metadata"]["namespace"] == ns)
                .expect("there before");
            if handed_over.iter().any(|h| h == ns) {
                assert_eq!(
                    copy["data"],
                    json!({"ca.crt": "PEM 2"}),
                    "{ns} not taken back"
                );
                assert_eq!(copy["metadata"]["labels"]["skiff.dev/mirror-name"], "kept");
            } else {
                assert_eq!(
                    copy["metadata"]["resourceVersion"], was["metadata"]["resourceVersion"],
                    "{ns} was written"
                );
            }
        }
    });
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_mirror_deleted_during_its_fan_out_leaves_no_copy_of_skiffs() {
    require_e2e_binaries();
    // The default pace (20 writes a second): the deletion lands while creates are in flight.
    with_replica_flags("orphan-in-flight", &[], |cp, _| {
        let label = "orphan-in-flight";
        let count = 200;
        cp.create_namespaces("in-flight", &[("mirror-e2e", label)], count);
        source_configmap(cp, "flight-ca", r#"{"ca.crt": "PEM"}"#);
        mirror(
            cp,
            "flight",
            "ConfigMap",
            "flight-ca",
            r#""deletionPolicy": "Orphan","#,
            label,
        );
        wait_until("the fan-out under way", || {
            !copies_of(cp, "flight-ca", label).is_empty()
        });
        cp.kubectl_ok(&[
            "delete",
            "mirror",
            "flight",
            "-n",
            OPERATOR_NAMESPACE,
            "--wait=false",
        ]);
        let at_deletion = copies_of(cp, "flight-ca", label).len();
        assert!(
            at_deletion < count,
            "the fan-out ended before the deletion: no test"
        );
        wait_long("the Mirror gone", || {
            absent(cp, "mirror", OPERATOR_NAMESPACE, "flight")
        });
        // The fan-out ran to its end before its copies were orphaned; nothing it had in flight
        // lands later, marked as skiff's or not.
        let orphaned = copies_of(cp, "flight-ca", label).len();
        std::thread::sleep(Duration::from_secs(5));
        let later = copies_of(cp, "flight-ca", label);
        assert_eq!(
            later.len(),
            orphaned,
            "copies written after the Mirror went"
        );
        for copy in &later {
            let ns = copy["metadata"]["namespace"].as_str().unwrap_or_default();
            assert_eq!(
                skiffs_marks(copy),
                Vec::<String>::new(),
                "{ns} keeps skiff's marks"
            );
            assert_eq!(copy["data"], json!({"ca.crt": "PEM"}), "{ns}");
        }
    });
}
