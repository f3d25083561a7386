//! e2e: objects skiff takes over or refuses, on a real API server: an object handed to a Mirror
//! with `skiff.dev/adopt` is adopted (and one that is not stays a conflict, untouched); copies
//! the server will not update (a Secret whose type changed, an immutable copy whose data must
//! change) are replaced; a ServiceAccount token is never copied; a typed Secret's picked keys
//! must keep what its type requires.
//!
//! Why: Secret types and immutability are the API server's own validation, and adoption acts on
//! objects skiff otherwise never writes: both are only proven against the real thing. How skiff
//! runs here: `support/mirror_e2e.rs`.

use crate::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE, require_e2e_binaries};
use crate::support::mirror_e2e::{
    has_copy, has_event, mirror, mirror_with_source, ready_says, source_configmap, wait_until,
    with_skiff,
};
use serde_json::{Value, json};

fn status_field(cp: &ControlPlane, mirror: &str, field: &str) -> Value {
    cp.object("mirror", OPERATOR_NAMESPACE, mirror)
        .map_or(Value::Null, |m| m["status"][field].clone())
}

/// An object of the target name that skiff does not manage, with `annotations`.
fn unmanaged(cp: &ControlPlane, ns: &str, name: &str, annotations: Value) -> Value {
    cp.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns, "labels": {"owner": "team"},
                         "annotations": annotations},
            "data": {"old": "data"}})
        .to_string(),
    );
    cp.object("cm", ns, name).expect("the unmanaged ConfigMap")
}

fn uid(object: &Value) -> Value {
    object["metadata"]["uid"].clone()
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn only_an_object_handed_over_with_the_adopt_annotation_is_adopted() {
    require_e2e_binaries();
    with_skiff("mirror-adopt", |cp| {
        let label = "adopt";
        let handed = cp.create_namespace("adopt", &[("mirror-e2e", label)]);
        let elsewhere = cp.create_namespace("adopt", &[("mirror-e2e", label)]);
        let plain = cp.create_namespace("adopt", &[("mirror-e2e", label)]);
        let to_me = json!({"skiff.dev/adopt": format!("{OPERATOR_NAMESPACE}/adopt")});
        let to_other = json!({"skiff.dev/adopt": format!("{OPERATOR_NAMESPACE}/another")});
        let before_handed = unmanaged(cp, &handed, "shared", to_me);
        let untouched = [
            unmanaged(cp, &elsewhere, "shared", to_other),
            unmanaged(cp, &plain, "shared", json!({})),
        ];
        source_configmap(cp, "shared", r#"{"mode": "mirrored"}"#);
        mirror(cp, "adopt", "ConfigMap", "shared", "", label);

        let data = json!({"mode": "mirrored"});
        wait_until("the handed-over object is now a copy", || {
            has_copy(cp, "cm", &handed, "shared", &data)
        });
        let adopted = cp.object("cm", &handed, "shared").expect("adopted");
        assert_eq!(
            uid(&adopted),
            uid(&before_handed),
            "adopted in place, not recreated"
        );
        assert_eq!(
            adopted["metadata"]["labels"]["owner"], "team",
            "{adopted:#}"
        );
        assert_eq!(
            adopted["metadata"]["labels"]["skiff.dev/mirror-name"],
            "adopt"
        );
        wait_until(
            "status counts the adoption, Ready names the conflicts",
            || {
                status_field(cp, "adopt", "adopted") == 1
                    && ready_says(cp, "adopt", "Conflict", &elsewhere)
                    && ready_says(cp, "adopt", "Conflict", &plain)
            },
        );
        wait_until("a Normal Event says what was adopted", || {
            has_event(cp, "adopt", "Normal", "Adopted", &handed)
        });
        for before in &untouched {
            let ns = before["metadata"]["namespace"].as_str().unwrap_or_default();
            let after = cp.object("cm", ns, "shared").expect("still there");
            assert_eq!(
                after, *before,
                "an object not handed to this Mirror was written"
            );
        }
    });
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn an_immutable_copy_whose_data_must_change_is_replaced() {
    require_e2e_binaries();
    with_skiff("mirror-immutable", |cp| {
        let label = "immutable";
        let ns = cp.create_namespace("immutable", &[("mirror-e2e", label)]);
        let frozen = |value: &str| {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "immutable": true,
                "metadata": {"name": "frozen", "namespace": OPERATOR_NAMESPACE},
                "data": {"v": value}})
            .to_string()
        };
        cp.apply(&frozen("1"));
        mirror(cp, "immutable", "ConfigMap", "frozen", "", label);
        wait_until("an immutable copy", || {
            has_copy(cp, "cm", &ns, "frozen", &json!({"v": "1"}))
        });
        let first = cp.object("cm", &ns, "frozen").expect("copy");
        assert_eq!(first["immutable"], true, "{first:#}");

        // An immutable source changes only by being created again.
        cp.kubectl_ok(&["delete", "cm", "frozen", "-n", OPERATOR_NAMESPACE]);
        cp.apply(&frozen("2"));
        wait_until("the copy holds the new data", || {
            has_copy(cp, "cm", &ns, "frozen", &json!({"v": "2"}))
        });
        let second = cp.object("cm", &ns, "frozen").expect("copy");
        assert_ne!(
            uid(&second),
            uid(&first),
            "replaced: deleted and created again"
        );
        assert_eq!(second["immutable"], true);
        wait_until("status and an Event say it was replaced", || {
            status_field(cp, "immutable", "replaced") == 1
                && has_event(cp, "immutable", "Normal", "Replaced", "immutable")
        });

        // Labels of an immutable copy can change: an update, no replacement.
        let labelled = r#""target": {"metadata": {"labels": {"frozen": "yes"}}},"#;
        mirror(cp, "immutable", "ConfigMap", "frozen", labelled, label);
        wait_until("the label on the copy", || {
            cp.object("cm", &ns, "frozen")
                .is_some_and(|c| c["metadata"]["labels"]["frozen"] == "yes")
        });
        let third = cp.object("cm", &ns, "frozen").expect("copy");
        assert_eq!(
            uid(&third),
            uid(&second),
            "a label change replaced the copy"
        );
    });
}

fn secret(cp: &ControlPlane, name: &str, type_: &str, data: Value, annotations: Value) {
    cp.apply(
        &json!({"apiVersion": "v1", "kind": "Secret", "type": type_,
            "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE,
                         "annotations": annotations},
            "data": data})
        .to_string(),
    );
}

fn tls_data() -> Value {
    json!({"tls.crt": "Q0VSVA==", "tls.key": "S0VZ", "ca.crt": "Q0E="})
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_secret_copy_whose_type_changed_is_replaced() {
    require_e2e_binaries();
    with_skiff("mirror-secret-type", |cp| {
        let label = "secret-type";
        let ns = cp.create_namespace("secret-type", &[("mirror-e2e", label)]);
        secret(cp, "typed-tls", "Opaque", tls_data(), json!({}));
        let target = r#""targetName": "app-tls","#;
        mirror(cp, "secret-type", "Secret", "typed-tls", target, label);
        wait_until("an Opaque copy", || {
            cp.object("secret", &ns, "app-tls")
                .is_some_and(|s| s["type"] == "Opaque")
        });
        let first = cp.object("secret", &ns, "app-tls").expect("copy");

        cp.kubectl_ok(&["delete", "secret", "typed-tls", "-n", OPERATOR_NAMESPACE]);
        secret(cp, "typed-tls", "kubernetes.io/tls", tls_data(), json!({}));
        wait_until("the copy has the source's new type", || {
            cp.object("secret", &ns, "app-tls")
                .is_some_and(|s| s["type"] == "kubernetes.io/tls")
        });
        let second = cp.object("secret", &ns, "app-tls").expect("copy");
        assert_ne!(uid(&second), uid(&first));
        assert_eq!(second["data"], tls_data());
        wait_until("an Event names the types", || {
            has_event(cp, "secret-type", "Normal", "Replaced", "kubernetes.io/tls")
        });
    });
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_service_account_token_is_never_copied() {
    require_e2e_binaries();
    with_skiff("mirror-token", |cp| {
        let label = "token";
        let ns = cp.create_namespace("token", &[("mirror-e2e", label)]);
        let account = json!({"kubernetes.io/service-account.name": "skiff"});
        let token = "kubernetes.io/service-account-token";
        secret(
            cp,
            "robot-token",
            token,
            json!({"token": "c2VjcmV0"}),
            account,
        );
        let target = r#""targetName": "app-tls","#;
        mirror(cp, "token", "Secret", "robot-token", target, label);
        wait_until("Ready=False, SourceNotAllowed naming the type", || {
            ready_says(cp, "token", "SourceNotAllowed", token)
        });
        assert!(
            cp.object("secret", &ns, "app-tls").is_none(),
            "a token was copied"
        );
    });
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_typed_secret_keeps_the_keys_its_type_requires() {
    require_e2e_binaries();
    with_skiff("mirror-tls-keys", |cp| {
        let label = "tls-keys";
        let ns = cp.create_namespace("tls-keys", &[("mirror-e2e", label)]);
        secret(cp, "full-tls", "kubernetes.io/tls", tls_data(), json!({}));
        let source =
            |keys: &str| format!(r#""kind": "Secret", "name": "full-tls", "keys": {keys}"#);
        let target = r#""targetName": "app-tls","#;
        mirror_with_source(cp, "tls-keys", &source(r#"["tls.crt"]"#), target, label);
        wait_until(
            "Ready=False, RequiredKeyNotListed naming the type and key",
            || {
                ready_says(cp, "tls-keys", "RequiredKeyNotListed", "kubernetes.io/tls")
                    && ready_says(cp, "tls-keys", "RequiredKeyNotListed", "leaves out tls.key")
            },
        );
        assert!(cp.object("secret", &ns, "app-tls").is_none());
        mirror_with_source(
            cp,
            "tls-keys",
            &source(r#"["tls.crt", "tls.key"]"#),
            target,
            label,
        );
        let picked = json!({"tls.crt": "Q0VSVA==", "tls.key": "S0VZ"});
        wait_until("a copy without ca.crt", || {
            has_copy(cp, "secret", &ns, "app-tls", &picked)
        });
    });
}
