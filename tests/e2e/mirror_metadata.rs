//! e2e: what copies carry besides the source's content, on a real API server: labels and
//! annotations a Mirror sets (`spec.target.metadata`), the source's own ones when asked for
//! (`spec.source.copyLabels`, `copyAnnotations`) but never GitOps tracking keys, and only the
//! keys a Mirror picks (`spec.source.keys`). And that all of it in use, steady or restarted,
//! writes nothing.
//!
//! Why: the copies are written with strategic merge patches, whose semantics only the real API
//! server has (the fake one models them); and what Argo CD sees on a copy is what matters to
//! its users. How skiff runs here: `support/mirror_e2e.rs`.

use std::time::Duration;

use crate::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE, require_e2e_binaries};
use crate::support::mirror_e2e::{
    Replica, has_copy, mirror_events, mirror_with_source, one_replica_at_a_time, ready_says,
    source_configmap, source_configmap_with, wait_until, with_replica, with_skiff,
};
use serde_json::{Value, json};

/// How long a settled replica is watched for writes.
const QUIET: Duration = Duration::from_secs(5);

fn labels(cp: &ControlPlane, ns: &str, name: &str) -> Value {
    cp.object("cm", ns, name)
        .map_or(Value::Null, |c| c["metadata"]["labels"].clone())
}

fn annotations(cp: &ControlPlane, ns: &str, name: &str) -> Value {
    cp.object("cm", ns, name)
        .map_or(Value::Null, |c| c["metadata"]["annotations"].clone())
}

fn patch(cp: &ControlPlane, kind: &str, ns: &str, name: &str, patch: &Value) {
    let patch = patch.to_string();
    cp.kubectl_ok(&["patch", kind, name, "-n", ns, "--type=merge", "-p", &patch]);
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn target_metadata_reaches_every_copy_and_only_what_skiff_set_is_removed() {
    require_e2e_binaries();
    with_skiff("mirror-target-metadata", |cp| {
        let label = "target-metadata";
        let namespaces = [
            cp.create_namespace("target-md", &[("mirror-e2e", label)]),
            cp.create_namespace("target-md", &[("mirror-e2e", label)]),
        ];
        source_configmap(cp, "repo-creds", r#"{"url": "https://git.example.com"}"#);
        let target = r#""target": {"metadata": {
            "labels": {"argocd.argoproj.io/secret-type": "repository", "team": "payments"},
            "annotations": {"reloader.stakater.com/match": "true"}}},"#;
        let source = r#""kind": "ConfigMap", "name": "repo-creds""#;
        mirror_with_source(cp, "target-md", source, target, label);
        wait_until(
            "every copy carries the target labels and annotations",
            || {
                namespaces.iter().all(|ns| {
                    let (l, a) = (
                        labels(cp, ns, "repo-creds"),
                        annotations(cp, ns, "repo-creds"),
                    );
                    l["argocd.argoproj.io/secret-type"] == "repository"
                        && l["team"] == "payments"
                        && l["app.kubernetes.io/managed-by"] == "skiff"
                        && a["reloader.stakater.com/match"] == "true"
                })
            },
        );

        // Someone else's label on a copy, and a hand edit of one of skiff's.
        let [first, second] = &namespaces;
        patch(
            cp,
            "cm",
            first,
            "repo-creds",
            &json!({"metadata": {"labels": {"backup": "daily"}}}),
        );
        patch(
            cp,
            "cm",
            second,
            "repo-creds",
            &json!({"metadata": {"labels": {"team": "edited"}}}),
        );
        wait_until("the hand-edited label restored", || {
            labels(cp, second, "repo-creds")["team"] == "payments"
        });

        let changed = r#""target": {"metadata": {
            "labels": {"argocd.argoproj.io/secret-type": "repository"},
            "annotations": {"reloader.stakater.com/match": "false"}}},"#;
        mirror_with_source(cp, "target-md", source, changed, label);
        wait_until(
            "team removed and the annotation changed on every copy",
            || {
                namespaces.iter().all(|ns| {
                    let (l, a) = (
                        labels(cp, ns, "repo-creds"),
                        annotations(cp, ns, "repo-creds"),
                    );
                    l.get("team").is_none()
                        && l["argocd.argoproj.io/secret-type"] == "repository"
                        && a["reloader.stakater.com/match"] == "false"
                })
            },
        );
        assert_eq!(
            labels(cp, first, "repo-creds")["backup"],
            "daily",
            "a label skiff did not set was removed"
        );
        wait_until("Ready, every copy up to date", || {
            ready_says(cp, "target-md", "Synced", "2 of 2")
        });
    });
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn source_metadata_is_carried_only_when_asked_and_never_the_gitops_tracking_keys() {
    require_e2e_binaries();
    with_skiff("mirror-source-metadata", |cp| {
        let label = "source-metadata";
        let ns = cp.create_namespace("source-md", &[("mirror-e2e", label)]);
        // As Argo CD (label and annotation tracking), Helm and `kubectl apply` leave a source.
        let tracked = r#""labels": {"app.kubernetes.io/instance": "platform",
                "app.kubernetes.io/managed-by": "Helm", "cnpg.io/reload": "true", "tier": "db"},
            "annotations": {"argocd.argoproj.io/tracking-id": "platform:/ConfigMap:skiff-system/db-ca",
                "meta.helm.sh/release-name": "platform", "docs.example.com/owner": "dba"}"#;
        source_configmap_with(cp, "db-ca", r#"{"ca.crt": "PEM"}"#, tracked);
        let source = r#""kind": "ConfigMap", "name": "db-ca""#;
        mirror_with_source(cp, "source-md", source, "", label);
        let data = json!({"ca.crt": "PEM"});
        wait_until("a copy", || has_copy(cp, "cm", &ns, "db-ca", &data));
        let plain = labels(cp, &ns, "db-ca");
        for key in ["app.kubernetes.io/instance", "cnpg.io/reload", "tier"] {
            assert!(plain.get(key).is_none(), "{key} copied unasked: {plain}");
        }
        assert_eq!(plain["app.kubernetes.io/managed-by"], "skiff");

        let everything = r#""kind": "ConfigMap", "name": "db-ca",
            "copyLabels": ["*"], "copyAnnotations": ["*"]"#;
        mirror_with_source(cp, "source-md", everything, "", label);
        wait_until("the source's labels and annotations carried", || {
            let (l, a) = (labels(cp, &ns, "db-ca"), annotations(cp, &ns, "db-ca"));
            l["cnpg.io/reload"] == "true"
                && l["tier"] == "db"
                && a["docs.example.com/owner"] == "dba"
        });
        let (l, a) = (labels(cp, &ns, "db-ca"), annotations(cp, &ns, "db-ca"));
        assert!(
            l.get("app.kubernetes.io/instance").is_none(),
            "Argo CD's tracking label: {l}"
        );
        assert_eq!(l["app.kubernetes.io/managed-by"], "skiff", "{l}");
        for key in [
            "argocd.argoproj.io/tracking-id",
            "meta.helm.sh/release-name",
            "kubectl.kubernetes.io/last-applied-configuration",
        ] {
            assert!(a.get(key).is_none(), "{key} copied: {a}");
        }

        // A change to a carried label follows; dropping the opt-in removes what it carried.
        let relabel = json!({"metadata": {"labels": {"cnpg.io/reload": "false"}}});
        patch(cp, "cm", OPERATOR_NAMESPACE, "db-ca", &relabel);
        wait_until("the source's new label value on the copy", || {
            labels(cp, &ns, "db-ca")["cnpg.io/reload"] == "false"
        });
        let only_cnpg = r#""kind": "ConfigMap", "name": "db-ca", "copyLabels": ["cnpg.io/*"]"#;
        mirror_with_source(cp, "source-md", only_cnpg, "", label);
        wait_until("only the cnpg.io labels left", || {
            let (l, a) = (labels(cp, &ns, "db-ca"), annotations(cp, &ns, "db-ca"));
            l.get("tier").is_none()
                && l["cnpg.io/reload"] == "false"
                && a.get("docs.example.com/owner").is_none()
        });
    });
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn only_the_picked_keys_are_copied_and_a_missing_one_keeps_the_last_good_copies() {
    require_e2e_binaries();
    with_skiff("mirror-keys", |cp| {
        let label = "keys";
        let ns = cp.create_namespace("keys", &[("mirror-e2e", label)]);
        source_configmap(
            cp,
            "bundle",
            r#"{"a": "1", "b": "2", "internal": "secret-ish"}"#,
        );
        let picked =
            |keys: &str| format!(r#""kind": "ConfigMap", "name": "bundle", "keys": {keys}"#);
        mirror_with_source(cp, "keys", &picked(r#"["a", "b"]"#), "", label);
        wait_until("a copy with a and b only", || {
            has_copy(cp, "cm", &ns, "bundle", &json!({"a": "1", "b": "2"}))
        });
        mirror_with_source(cp, "keys", &picked(r#"["a"]"#), "", label);
        wait_until("a shorter list updates the copy", || {
            has_copy(cp, "cm", &ns, "bundle", &json!({"a": "1"}))
        });
        let good = cp.object("cm", &ns, "bundle").expect("copy");

        mirror_with_source(cp, "keys", &picked(r#"["a", "gone"]"#), "", label);
        wait_until("Ready=False, SourceKeyMissing naming the key", || {
            ready_says(cp, "keys", "SourceKeyMissing", "gone")
        });
        source_configmap(cp, "bundle", r#"{"a": "changed", "b": "2"}"#);
        std::thread::sleep(Duration::from_secs(2));
        let kept = cp.object("cm", &ns, "bundle").expect("copy");
        assert_eq!(
            kept["metadata"]["resourceVersion"], good["metadata"]["resourceVersion"],
            "the copy was written while a listed key was missing: {kept:#}"
        );
        source_configmap(cp, "bundle", r#"{"a": "changed", "gone": "back"}"#);
        wait_until("the copy follows once every listed key exists", || {
            has_copy(
                cp,
                "cm",
                &ns,
                "bundle",
                &json!({"a": "changed", "gone": "back"}),
            )
        });
    });
}

/// The writes counted by the replica's metrics, PATCH, PUT and DELETE (POST is also the
/// leader's Event).
fn updates(replica: &Replica) -> f64 {
    replica
        .writes()
        .iter()
        .filter(|(method, _)| *method != "POST")
        .map(|(_, n)| n)
        .sum()
}

/// Every copy's uid and resourceVersion, and the Mirror's resourceVersion.
fn versions(cp: &ControlPlane, namespaces: &[String]) -> Vec<(Value, Value)> {
    let mut seen: Vec<(Value, Value)> = namespaces
        .iter()
        .map(|ns| {
            let copy = cp.object("cm", ns, "settled").expect("copy");
            (
                copy["metadata"]["uid"].clone(),
                copy["metadata"]["resourceVersion"].clone(),
            )
        })
        .collect();
    let mirror = cp
        .object("mirror", OPERATOR_NAMESPACE, "settled")
        .expect("Mirror");
    seen.push((Value::Null, mirror["metadata"]["resourceVersion"].clone()));
    seen
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn steady_and_restarted_with_metadata_and_keys_in_use_skiff_writes_nothing() {
    require_e2e_binaries();
    let label = "settled";
    let mut namespaces = Vec::new();
    let mut before = Vec::new();
    with_replica("mirror-settled", |cp, replica| {
        namespaces = cp.create_namespaces("settled", &[("mirror-e2e", label)], 3);
        source_configmap_with(
            cp,
            "settled",
            r#"{"a": "1", "b": "2"}"#,
            r#""labels": {"cnpg.io/reload": "true", "app.kubernetes.io/instance": "argo"}"#,
        );
        let source = r#""kind": "ConfigMap", "name": "settled", "keys": ["a"],
            "copyLabels": ["cnpg.io/*"]"#;
        let target = r#""target": {"metadata": {"labels": {"team": "x"},
            "annotations": {"note": "kept"}}},"#;
        mirror_with_source(cp, "settled", source, target, label);
        wait_until("Ready with every copy", || {
            ready_says(cp, "settled", "Synced", "3 of 3")
        });
        let settled = updates(replica);
        before = versions(cp, &namespaces);
        std::thread::sleep(QUIET);
        assert_eq!(updates(replica), settled, "a steady state wrote");
        assert_eq!(
            versions(cp, &namespaces),
            before,
            "a steady state changed an object"
        );
    });

    let _turn = one_replica_at_a_time();
    let cp = crate::support::mirror_e2e::control_plane();
    let replica = Replica::start(cp, "mirror-settled-again");
    wait_until("the restarted replica reconciled", || {
        replica
            .skiff
            .logs()
            .contains("mirror caches filled; reconciling")
    });
    std::thread::sleep(QUIET);
    let (writes, sent) = (replica.writes(), updates(&replica));
    let events = mirror_events(cp, "settled").len();
    let after = versions(cp, &namespaces);
    replica.stop();
    assert_eq!(after, before, "the restart changed a copy or the Mirror");
    assert_eq!(sent, 0.0, "writes on a restart: {writes:?}");
    assert_eq!(events, 0, "the restart posted Events about the Mirror");
}
