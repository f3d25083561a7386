//! e2e: a hostile proxy between skiff and the real API server cannot exhaust skiff's memory or
//! stop it: replies whose status line, headers, chunk size, body, watch line or CONNECT answer
//! never end are cut at their limits with errors naming them, and skiff recovers as after any
//! other failed request: it leads, and its Mirror's copies appear.
//!
//! skiff runs as its ServiceAccount with a kubeconfig whose `proxy-url` is the proxy and whose
//! CA is the proxy's own (as behind a TLS-inspecting corporate proxy); the proxy passes every
//! request on to the API server except the ones its rules pick.

use std::time::{Duration, Instant};

use crate::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE, require_e2e_binaries};
use crate::support::hostile_proxy::{HostileProxy, Mangle, Rule};
use crate::support::skiff::{Skiff, TempDir, eventually, proc_status_kib};

/// Faults end after their first few requests; skiff's retries then succeed.
const RECOVERY: Duration = Duration::from_secs(90);
/// Anonymous memory skiff may reach while the proxy attacks: two objects' worth of buffers
/// and then some; an unbounded client takes hundreds of MiB (each endless reply is 256 MiB).
const ANON_CEILING_KIB: u64 = 48 * 1024;

fn rules() -> Vec<Rule> {
    vec![
        Rule {
            needle: "CONNECT",
            mangle: Mangle::EndlessConnectReply,
            times: 1,
        },
        Rule {
            needle: "/api/v1/namespaces?",
            mangle: Mangle::AbsurdChunk,
            times: 2,
        },
        Rule {
            needle: "watch=true",
            mangle: Mangle::EndlessWatchLine,
            times: 2,
        },
        Rule {
            needle: "/mirrors?",
            mangle: Mangle::EndlessStatusLine,
            times: 1,
        },
        Rule {
            needle: "/configmaps?",
            mangle: Mangle::ManyHeaders,
            times: 1,
        },
    ]
}

fn kubeconfig(dir: &TempDir, cp: &ControlPlane, proxy: &HostileProxy) -> std::path::PathBuf {
    let ca = dir.0.join("proxy-ca.crt");
    std::fs::write(&ca, proxy.ca_pem()).expect("write the proxy's CA");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority: {}\n    proxy-url: {}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u, namespace: {OPERATOR_NAMESPACE}}}\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: {}\n",
        cp.url(),
        ca.display(),
        proxy.url(),
        cp.operator_token()
    );
    let path = dir.0.join("kubeconfig");
    std::fs::write(&path, text).expect("write the kubeconfig");
    path
}

fn mirror(cp: &ControlPlane, selector_value: &str) {
    cp.apply(&format!(
        r#"{{"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {{"name": "hostile-src", "namespace": "{OPERATOR_NAMESPACE}"}},
            "data": {{"k": "v"}}}}"#
    ));
    cp.apply(&format!(
        r#"{{"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
            "metadata": {{"name": "hostile", "namespace": "{OPERATOR_NAMESPACE}"}},
            "spec": {{"source": {{"kind": "ConfigMap", "name": "hostile-src"}},
                      "namespaceSelector": {{"matchLabels": {{"hostile-proxy": "{selector_value}"}}}}}}}}"#
    ));
}

fn release_lease() -> String {
    serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "skiff-leader", "namespace": OPERATOR_NAMESPACE},
        "spec": {"holderIdentity": "", "leaseDurationSeconds": 1},
    })
    .to_string()
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_hostile_proxy_is_cut_at_every_limit_and_skiff_recovers() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    cp.apply(&release_lease());
    let proxy = HostileProxy::start(cp.ca_pem().as_bytes(), rules());
    let dir = TempDir::new("e2e-hostile-proxy");
    let target = cp.create_namespace("hostile-proxy", &[("hostile-proxy", "yes")]);
    mirror(cp, "yes");
    let args = [
        "--leader-elect",
        "--leader-election-namespace=skiff-system",
        "--source-namespaces=skiff-system",
        "--log-level=debug",
    ];
    let mut skiff = Skiff::start(
        &kubeconfig(&dir, cp, &proxy),
        dir.0.join("skiff.log"),
        &args,
    );
    let pid = skiff.child.id();
    let started = Instant::now();
    let mut peak_anon = 0;
    let copied = eventually(RECOVERY, || {
        peak_anon = peak_anon.max(proc_status_kib(pid, "RssAnon").unwrap_or(0));
        cp.object("configmap", &target, "hostile-src").is_some()
    });
    let logs = skiff.logs();
    assert!(
        peak_anon <= ANON_CEILING_KIB,
        "RssAnon reached {peak_anon} KiB under the hostile proxy"
    );
    assert!(skiff.is_running(), "skiff exited; log:\n{logs}");
    assert!(
        copied,
        "no copy after {RECOVERY:?}; served {:?}; log:\n{logs}",
        proxy.served()
    );
    let served = proxy.served();
    for mangle in [
        Mangle::EndlessConnectReply,
        Mangle::AbsurdChunk,
        Mangle::EndlessWatchLine,
        Mangle::EndlessStatusLine,
        Mangle::ManyHeaders,
    ] {
        assert!(
            served.contains(&mangle),
            "{mangle:?} was never served: {served:?}"
        );
    }
    for limit in [
        "the reply head is longer than 16384 bytes",
        "the response head is longer than 32768 bytes",
        "limit of one object",
        "watch event longer than",
    ] {
        assert!(
            logs.contains(limit),
            "no error naming {limit:?}; log:\n{logs}"
        );
    }
    println!(
        "hostile proxy: copy in {:.1} s, peak RssAnon {peak_anon} KiB, served {served:?}",
        started.elapsed().as_secs_f64()
    );
    skiff.terminate(Duration::from_secs(20));
}
