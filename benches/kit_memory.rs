//! Memory per copy of each namespace kit kind, on a real control plane (the e2e harness's etcd
//! and kube-apiserver) with skiff as leader under the RBAC of `deploy/kinds`.
//!
//! One Mirror after another into the same namespaces: a ConfigMap (the baseline), then a
//! NetworkPolicy, a LimitRange, a ResourceQuota, a RoleBinding and a ServiceAccount. After each converges, skiff's
//! RssAnon (median of 10 readings) is taken; the growth divided by the copies it added is the
//! RssAnon per copy of that kind. Goal: ≤ 1 KB per copy, every kind.
//!
//! `cargo bench --bench kit_memory` prints the table (`SKIFF_BENCH_NAMESPACES` changes the 1,000
//! namespaces); `cargo test --all-targets` runs it with 20 namespaces and checks only that each
//! kind converges.

// Built with cfg(test) but no test harness, the support files' test modules import unused items.
#[path = "../tests/support/mod.rs"]
#[cfg_attr(test, allow(unused_imports))]
mod support;

use serde_json::{Value, json};
use support::bench::{STEP_LIMIT, bench_mode, leading, settle};
use support::control_plane::{ControlPlane, OPERATOR_NAMESPACE, e2e_enabled};
use support::skiff::{eventually, rss_anon_median};

const SELECT_LABEL: &str = "kit-memory";
const FLAGS: [&str; 8] = [
    "--leader-elect",
    "--leader-election-namespace=skiff-system",
    "--source-namespaces=skiff-system",
    "--kube-api-qps=200",
    "--kube-api-burst=200",
    "--kinds=networkpolicies.networking.k8s.io,limitranges,resourcequotas,rolebindings.rbac.authorization.k8s.io,serviceaccounts",
    "--bindable-roles=edit,view",
    "--binding-namespace-label=skiff.dev/kit",
];

/// Each kind's source (kind, API version, content members) as a user writes it.
fn sources() -> [(&'static str, &'static str, Value); 6] {
    [
        (
            "ConfigMap",
            "v1",
            json!({"data": {"ca.crt": "-----BEGIN CERTIFICATE-----\nMIIB...\n"}}),
        ),
        (
            "NetworkPolicy",
            "networking.k8s.io/v1",
            json!({"spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}),
        ),
        (
            "LimitRange",
            "v1",
            json!({"spec": {"limits": [{"type": "Container",
            "default": {"cpu": "500m", "memory": "512Mi"},
            "defaultRequest": {"cpu": "100m", "memory": "128Mi"}}]}}),
        ),
        (
            "ResourceQuota",
            "v1",
            json!({"spec": {"hard": {"pods": "50", "requests.cpu": "8", "requests.memory": "16Gi"}}}),
        ),
        (
            "RoleBinding",
            "rbac.authorization.k8s.io/v1",
            json!({
            "subjects": [{"kind": "Group", "name": "team", "apiGroup": "rbac.authorization.k8s.io"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}}),
        ),
        (
            "ServiceAccount",
            "v1",
            json!({"imagePullSecrets": [{"name": "registry-pull"}], "automountServiceAccountToken": false}),
        ),
    ]
}

fn create_namespaces(cp: &ControlPlane, count: usize) {
    let items: Vec<Value> = (0..count)
        .map(|i| {
            json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": format!("kit-{i:05}"), "labels": {SELECT_LABEL: "yes", "skiff.dev/kit": "yes"}}})
        })
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    let out = cp.kubectl_stdin(&["create", "-f", "-", "-o", "name"], &list.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The source of `kind` and a Mirror of it over the selected namespaces.
fn add_mirror(cp: &ControlPlane, kind: &str, api_version: &str, content: &Value) -> String {
    let name = format!("kit-{}", kind.to_ascii_lowercase());
    let mut source = json!({"apiVersion": api_version, "kind": kind,
        "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE}});
    for (field, value) in content.as_object().into_iter().flatten() {
        source[field] = value.clone();
    }
    cp.apply(&source.to_string());
    cp.apply(
        &json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
            "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE},
            "spec": {"source": {"kind": kind, "name": name},
                     "namespaceSelector": {"matchLabels": {SELECT_LABEL: "yes", "skiff.dev/kit": "yes"}}}})
        .to_string(),
    );
    name
}

fn main() {
    if !e2e_enabled() {
        println!("kit_memory: skipped (no control plane binaries; make testbin)");
        return;
    }
    let namespaces = support::bench::namespaces();
    let cp = support::bench::control_plane("kinds");
    create_namespaces(&cp, namespaces);
    let (skiff, _dir) = leading(&cp, "kit-memory", &FLAGS);
    let pid = skiff.child.id();
    settle();
    let mut before = rss_anon_median(pid);
    let mut rows = vec![("idle leader".to_owned(), before, None)];
    for (kind, api_version, content) in sources() {
        let name = add_mirror(&cp, kind, api_version, &content);
        let synced = eventually(STEP_LIMIT, || {
            cp.object("mirror", OPERATOR_NAMESPACE, &name)
                .and_then(|m| m["status"]["synced"].as_u64())
                == Some(namespaces as u64)
        });
        assert!(synced, "{kind} did not converge; log:\n{}", skiff.logs());
        settle();
        let now = rss_anon_median(pid);
        let per_copy = (now as f64 - before as f64) * 1024.0 / namespaces as f64;
        rows.push((format!("+ {namespaces} {kind} copies"), now, Some(per_copy)));
        before = now;
    }
    support::bench::finish(skiff, &cp);
    if !bench_mode() {
        return;
    }
    println!(
        "\nskiff as leader on a real control plane, {namespaces} namespaces, copies added kind by kind\n"
    );
    println!("| step | RssAnon | RssAnon per added copy | ≤ 1 KB |");
    println!("|---|---|---|---|");
    for (step, anon, per_copy) in rows {
        let (per, verdict) = per_copy.map_or(("".to_owned(), ""), |b| {
            (
                format!("{b:.0} B"),
                if b <= 1024.0 { "met" } else { "missed" },
            )
        });
        println!(
            "| {step} | {:.1} MiB | {per} | {verdict} |",
            anon as f64 / 1024.0
        );
    }
}
