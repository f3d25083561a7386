//! e2e: a Secret's certificates published as a ConfigMap (`spec.target.kind`), and renamed keys,
//! on a real API server with the shipped RBAC (the secret-targets component, `app-tls` its one
//! Secret name).
//!
//! Why: a projection promises that nothing but certificates reaches a ConfigMap, which anyone
//! who may read ConfigMaps in its namespace reads. Only the real server shows what each copy
//! really holds, that the copy is a ConfigMap like any other (restored, adopted, left alone when
//! it is not skiff's, deleted with its Mirror, not written again by a restart), and that neither
//! `--secret-target-names` nor the Secret's type applies to it. The certificates are made fresh
//! with OpenSSL, as cert-manager's CA Secret holds them (`tests/support/pem.rs`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use std::time::Duration;

use crate::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE, require_e2e_binaries};
use crate::support::mirror_e2e::{
    Replica, absent, control_plane, mirror_with_source, one_replica_at_a_time, ready, ready_says,
    running, source_configmap, wait_until, with_skiff,
};
use crate::support::pem::issued;

/// How long a restarted replica is watched for writes once its caches are filled.
const QUIET: Duration = Duration::from_secs(6);

/// A `kubernetes.io/tls` Secret `name` in skiff's namespace as cert-manager writes a CA's, with
/// the additional outputs it writes when asked (`key.der`, `keystore.p12`).
fn cert_manager_secret(cp: &ControlPlane, name: &str) {
    let pem = issued();
    let b64 = |bytes: &[u8]| STANDARD.encode(bytes);
    cp.apply(
        &json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE},
        "data": {
            "ca.crt": b64(pem.ca.as_bytes()),
            "tls.crt": b64(pem.chain.as_bytes()),
            "tls.key": b64(pem.key.as_bytes()),
            "key.der": b64(&pem.key_der),
            "keystore.p12": b64(&pem.keystore),
        }})
        .to_string(),
    );
}

/// The Mirror `name` publishing `keys` (and `more` source members) of the Secret `source` as
/// ConfigMaps named `target` in the namespaces labelled `label`.
fn publish(
    cp: &ControlPlane,
    (name, source): (&str, &str),
    keys: &[&str],
    more: &str,
    target: &str,
    label: &str,
) {
    let keys = json!(keys);
    mirror_with_source(
        cp,
        name,
        &format!(r#""kind": "Secret", "name": "{source}", "keys": {keys}{more}"#),
        &format!(r#""target": {{"kind": "ConfigMap"}}, "targetName": "{target}","#),
        label,
    );
}

/// The Mirror `trust` publishing `keys` of `issuer-ca` as `trust-bundle` where `publish` is.
fn trust(cp: &ControlPlane, keys: &[&str]) {
    publish(
        cp,
        ("trust", "issuer-ca"),
        keys,
        "",
        "trust-bundle",
        "publish",
    );
}

/// skiff's ConfigMap `name` in `namespace`, if it is one.
fn managed_configmap(cp: &ControlPlane, namespace: &str, name: &str) -> Option<Value> {
    let cm = cp.object("configmap", namespace, name)?;
    let labels = &cm["metadata"]["labels"];
    (labels["app.kubernetes.io/managed-by"] == "skiff").then_some(cm)
}

fn version(object: &Value) -> Value {
    object["metadata"]["resourceVersion"].clone()
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_ca_and_its_chain_are_published_as_a_configmap_and_nothing_else_ever_is() {
    require_e2e_binaries();
    let cp = control_plane();
    let _turn = one_replica_at_a_time();
    let label = "publish";
    let selected = cp.create_namespaces("publish", &[("mirror-e2e", label)], 2);
    cert_manager_secret(cp, "issuer-ca");
    // Not in --secret-target-names: the copies are ConfigMaps, which any name may take.
    trust(cp, &["ca.crt", "tls.crt"]);
    let pem = issued();
    let published = json!({"ca.crt": pem.ca, "tls.crt": pem.chain});
    running(cp, ("publish", &[]), |_| {
        published_as_text(cp, &selected, &published);
        refused_by_name(cp, &selected[0]);
    });
    running(cp, ("publish-again", &[]), |replica| {
        restart_writes_nothing(cp, replica, &selected);
        not_skiffs_and_handed_over(cp, label, &published);
        deleted_with_the_mirror(cp, &selected);
    });
}

fn published_as_text(cp: &ControlPlane, selected: &[String], published: &Value) {
    wait_until(
        "the CA and its chain as ConfigMaps in both namespaces",
        || {
            selected.iter().all(|ns| {
                managed_configmap(cp, ns, "trust-bundle").is_some_and(|cm| cm["data"] == *published)
            })
        },
    );
    for ns in selected {
        let cm = managed_configmap(cp, ns, "trust-bundle").expect("the copy");
        let annotations = &cm["metadata"]["annotations"];
        assert!(annotations["skiff.dev/source-hash"].is_string(), "{cm:#}");
        assert!(
            cm["binaryData"].is_null() && cm["immutable"].is_null(),
            "{cm:#}"
        );
        assert!(
            absent(cp, "secret", ns, "trust-bundle"),
            "a Secret written in {ns}"
        );
    }
    wait_until("Ready, every copy up to date", || {
        ready_says(cp, "trust", "Synced", "2 of 2")
    });
    let tamper = r#"{"data": {"ca.crt": "tampered"}}"#;
    let ns = &selected[0];
    cp.kubectl_ok(&[
        "patch",
        "cm",
        "trust-bundle",
        "-n",
        ns,
        "--type=merge",
        "-p",
        tamper,
    ]);
    wait_until("a hand edit restored", || {
        managed_configmap(cp, ns, "trust-bundle").is_some_and(|cm| cm["data"] == *published)
    });
}

/// A key that is not only certificates, listed beside `ca.crt`, stops all copying, named in
/// the condition; the copies keep what they hold. A Mirror that lists one from the start
/// writes nothing.
fn refused_by_name(cp: &ControlPlane, ns: &str) {
    let before = managed_configmap(cp, ns, "trust-bundle").expect("the copy");
    for (key, why) in [
        ("tls.key", "PRIVATE KEY"),
        ("key.der", "not text"),
        ("keystore.p12", "not text"),
    ] {
        trust(cp, &["ca.crt", key]);
        wait_until(&format!("{key} refused by name"), || {
            ready_says(cp, "trust", "KeyNotPublishable", key)
        });
        let message = ready(cp, "trust").expect("Ready")["message"].to_string();
        assert!(
            message.contains(why) && !message.contains("ca.crt:"),
            "{message}"
        );
        let now = managed_configmap(cp, ns, "trust-bundle").expect("the copy");
        assert_eq!(
            version(&now),
            version(&before),
            "the copy was written for {key}"
        );
    }
    trust(cp, &["ca.crt", "tls.crt"]);
    wait_until("published again", || {
        ready_says(cp, "trust", "Synced", "2 of 2")
    });

    let fresh = cp.create_namespace("publish-never", &[("mirror-e2e", "publish-never")]);
    publish(
        cp,
        ("never", "issuer-ca"),
        &["tls.key"],
        "",
        "never",
        "publish-never",
    );
    wait_until("a Mirror of a key alone is refused", || {
        ready_says(cp, "never", "KeyNotPublishable", "tls.key")
    });
    assert!(
        absent(cp, "configmap", &fresh, "never"),
        "a key was published"
    );
    cp.kubectl_ok(&["delete", "mirror", "never", "-n", OPERATOR_NAMESPACE]);
}

fn restart_writes_nothing(cp: &ControlPlane, replica: &Replica, selected: &[String]) {
    let versions: Vec<Value> = (selected.iter())
        .map(|ns| version(&managed_configmap(cp, ns, "trust-bundle").expect("a copy")))
        .collect();
    wait_until("the new replica reconciles", || {
        replica
            .skiff
            .logs()
            .contains("mirror caches filled; reconciling")
    });
    std::thread::sleep(QUIET);
    let writes: Vec<_> = (replica.writes().into_iter())
        .filter(|(method, n)| *method != "POST" && *n > 0.0)
        .collect();
    assert!(writes.is_empty(), "the restart wrote: {writes:?}");
    let now: Vec<Value> = (selected.iter())
        .map(|ns| version(&managed_configmap(cp, ns, "trust-bundle").expect("a copy")))
        .collect();
    assert_eq!(now, versions, "a copy was written again");
}

/// A ConfigMap of the copy's name that skiff does not manage is left alone, one handed over
/// with `skiff.dev/adopt` becomes a copy.
fn not_skiffs_and_handed_over(cp: &ControlPlane, label: &str, published: &Value) {
    let [theirs, handed] = ["theirs", "handed"].map(|n| cp.create_namespace(n, &[]));
    for (ns, annotations) in [
        (&theirs, json!({})),
        (&handed, json!({"skiff.dev/adopt": "skiff-system/trust"})),
    ] {
        cp.apply(
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "trust-bundle", "namespace": ns, "annotations": annotations},
                "data": {"ca.crt": "their own"}})
            .to_string(),
        );
    }
    let before = cp
        .object("configmap", &theirs, "trust-bundle")
        .expect("theirs");
    for ns in [&theirs, &handed] {
        cp.kubectl_ok(&["label", "namespace", ns, &format!("mirror-e2e={label}")]);
    }
    wait_until("the handed-over ConfigMap adopted", || {
        managed_configmap(cp, &handed, "trust-bundle").is_some_and(|cm| cm["data"] == *published)
    });
    wait_until("the other one reported as a conflict", || {
        ready_says(cp, "trust", "Conflict", &theirs)
    });
    let after = cp
        .object("configmap", &theirs, "trust-bundle")
        .expect("theirs");
    assert_eq!(
        version(&after),
        version(&before),
        "skiff wrote their ConfigMap"
    );
}

fn deleted_with_the_mirror(cp: &ControlPlane, selected: &[String]) {
    cp.kubectl_ok(&[
        "delete",
        "mirror",
        "trust",
        "-n",
        OPERATOR_NAMESPACE,
        "--wait=false",
    ]);
    wait_until("the copies deleted with their Mirror", || {
        selected
            .iter()
            .all(|ns| absent(cp, "configmap", ns, "trust-bundle"))
    });
    wait_until("the Mirror gone", || {
        absent(cp, "mirror", OPERATOR_NAMESPACE, "trust")
    });
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn changing_the_target_kind_moves_the_copies_to_it() {
    require_e2e_binaries();
    with_skiff("projection-move", |cp| {
        let label = "move";
        let ns = cp.create_namespace("move", &[("mirror-e2e", label)]);
        cert_manager_secret(cp, "move-ca");
        let source = r#""kind": "Secret", "name": "move-ca""#;
        mirror_with_source(cp, "move", source, r#""targetName": "app-tls","#, label);
        wait_until("a Secret copy, under an allowed name", || {
            cp.object("secret", &ns, "app-tls")
                .is_some_and(|s| s["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "skiff")
        });
        publish(cp, ("move", "move-ca"), &["ca.crt"], "", "app-tls", label);
        wait_until("a ConfigMap copy instead, the Secret copy gone", || {
            let cm = managed_configmap(cp, &ns, "app-tls");
            cm.is_some_and(|cm| cm["data"]["ca.crt"] == issued().ca)
                && absent(cp, "secret", &ns, "app-tls")
        });
        wait_until("Ready", || ready_says(cp, "move", "Synced", "1 of 1"));
    });
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn renamed_keys_reach_configmaps_secrets_and_projections() {
    require_e2e_binaries();
    with_skiff("renames", |cp| {
        let label = "renames";
        let ns = cp.create_namespace("renames", &[("mirror-e2e", label)]);
        let rename = r#", "rename": [{"from": "tls.crt", "to": "ca.crt"}]"#;
        source_configmap(cp, "renamed-cm", r#"{"tls.crt": "cert", "other": "kept"}"#);
        let source = format!(r#""kind": "ConfigMap", "name": "renamed-cm"{rename}"#);
        mirror_with_source(cp, "renamed-cm", &source, "", label);
        cp.apply(
            &json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "renamed-secret", "namespace": OPERATOR_NAMESPACE},
                "stringData": {"tls.crt": "cert"}})
            .to_string(),
        );
        let source = format!(r#""kind": "Secret", "name": "renamed-secret"{rename}"#);
        mirror_with_source(
            cp,
            "renamed-secret",
            &source,
            r#""targetName": "app-tls","#,
            label,
        );
        cert_manager_secret(cp, "renamed-ca");
        publish(
            cp,
            ("renamed-ca", "renamed-ca"),
            &["tls.crt"],
            rename,
            "chain",
            label,
        );

        wait_until("a ConfigMap's key renamed", || {
            managed_configmap(cp, &ns, "renamed-cm")
                .is_some_and(|cm| cm["data"] == json!({"ca.crt": "cert", "other": "kept"}))
        });
        wait_until("a Secret's key renamed", || {
            let secret = cp.object("secret", &ns, "app-tls");
            secret.is_some_and(|s| s["data"] == json!({"ca.crt": STANDARD.encode("cert")}))
        });
        wait_until(
            "a published chain under the name its consumers read",
            || {
                managed_configmap(cp, &ns, "chain")
                    .is_some_and(|cm| cm["data"] == json!({"ca.crt": issued().chain}))
            },
        );
    });
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn the_cert_manager_sample_publishes_the_cas_own_certificate_and_leaves_it_behind() {
    require_e2e_binaries();
    with_skiff("projection-sample", |cp| {
        let ns = cp.create_namespace("sample", &[("trust.example.com/platform-ca", "true")]);
        let sample = crate::support::control_plane::manifests_dir()
            .join("samples/cert-manager-ca-mirror.yaml");
        cp.kubectl_ok(&["apply", "-f", &sample.display().to_string()]);
        // The CA's Secret as cert-manager writes it for a root: its own certificate twice.
        let pem = issued();
        let b64 = |text: &str| STANDARD.encode(text);
        cp.apply(
            &json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                "metadata": {"name": "platform-ca", "namespace": OPERATOR_NAMESPACE},
                "data": {"tls.crt": b64(&pem.ca), "ca.crt": b64(&pem.ca), "tls.key": b64(&pem.key)}})
            .to_string(),
        );
        wait_until("the CA's certificate published as ca.crt", || {
            managed_configmap(cp, &ns, "platform-ca")
                .is_some_and(|cm| cm["data"] == json!({"ca.crt": pem.ca}))
        });
        cp.kubectl_ok(&[
            "delete",
            "-f",
            &sample.display().to_string(),
            "--wait=false",
        ]);
        wait_until("the sample Mirror gone", || {
            absent(cp, "mirror", OPERATOR_NAMESPACE, "platform-ca")
        });
        let left = cp
            .object("configmap", &ns, "platform-ca")
            .expect("left in place");
        assert_eq!(left["data"], json!({"ca.crt": pem.ca}));
        assert!(left["metadata"]["labels"]["app.kubernetes.io/managed-by"].is_null());
    });
}
