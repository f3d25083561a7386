//! Exec credential plugins against the fake API server: the plugin's token is what the server
//! sees, a 401 runs the plugin again and retries once (never more), and the lease client's
//! renewals do not wait while the main client's plugin run lasts.

use crate::support::fake::{FakeServer, Fault, RequestClass};
use crate::support::plugin::{Plugin, exec_kubeconfig, print_token};
use crate::support::skiff::{HOME_NS, SHORT_LEASE, Skiff, TempDir, eventually, is_lease_hold};
use serde_json::json;
use skiff::kube::api::ConfigMap;
use skiff::kube::{Client, load_kubeconfig_files};
use std::time::Duration;

/// How long a test waits for the binary to get somewhere it gets in a second or less (lead,
/// run its plugin, renew twice): a liveness bound, not a speed goal.
const LIVENESS: Duration = Duration::from_secs(30);

/// Over TLS: like kubectl, skiff runs no credential plugin for a plain http:// server.
fn server_with_configmap() -> FakeServer {
    let server = FakeServer::start_tls();
    server.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HOME_NS}}));
    server.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "app", "namespace": HOME_NS}, "data": {}}));
    server
}

fn exec_client(server: &FakeServer, dir: &TempDir, plugin: &Plugin) -> Client {
    let kubeconfig = exec_kubeconfig(
        &dir.0,
        &server.url(),
        server.ca_pem().as_deref(),
        plugin,
        HOME_NS,
        &[],
    );
    let config = load_kubeconfig_files(&[kubeconfig], None).expect("load kubeconfig");
    Client::new(config).expect("client")
}

fn get(client: &Client) -> Result<ConfigMap, skiff::kube::Error> {
    smol::block_on(client.get::<ConfigMap>(Some(HOME_NS), "app"))
}

#[test]
fn the_plugins_token_is_sent_and_a_401_runs_it_again_once() {
    let server = server_with_configmap();
    let dir = TempDir::new("exec-401");
    let plugin = Plugin::token(&dir.0, "tok-$n");
    let client = exec_client(&server, &dir, &plugin);
    server.require_token("tok-1");
    get(&client).expect("first run's token accepted");
    get(&client).expect("cached token accepted");
    assert_eq!(plugin.runs(), 1, "the token is cached");

    // The server stops accepting tok-1: one 401, one plugin run, one retry with tok-2.
    server.require_token("tok-2");
    let before = server.requests().len();
    get(&client).expect("the retry with a new token succeeds");
    assert_eq!(plugin.runs(), 2);
    let codes: Vec<u16> = server.requests()[before..]
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(codes, [401, 200]);

    // A token the server never accepts: one retry, then the 401 is the answer.
    server.require_token("never");
    let before = server.requests().len();
    let err = get(&client).expect_err("the server rejects every token");
    assert_eq!(err.code(), Some(401), "{err}");
    assert_eq!(plugin.runs(), 3, "at most one plugin run per request");
    assert_eq!(server.requests().len() - before, 2, "one retry, no more");
}

#[test]
fn watches_retry_a_401_with_a_fresh_credential_too() {
    let server = server_with_configmap();
    let dir = TempDir::new("exec-watch");
    let plugin = Plugin::token(&dir.0, "tok-$n");
    let client = exec_client(&server, &dir, &plugin);
    server.require_token("tok-1");
    get(&client).expect("first token accepted");
    server.require_token("tok-2");
    let params = skiff::kube::WatchParams::default();
    let watch = smol::block_on(client.watch::<ConfigMap>(Some(HOME_NS), &params));
    assert!(watch.is_ok(), "{:?}", watch.err());
    assert_eq!(plugin.runs(), 2);
}

#[test]
fn a_failing_plugin_fails_the_request_naming_the_command_and_hint() {
    let server = server_with_configmap();
    let dir = TempDir::new("exec-fail");
    let plugin = Plugin::write(&dir.0, "echo 'please log in' >&2\nexit 7");
    let client = exec_client(&server, &dir, &plugin);
    let err = get(&client).expect_err("no credential");
    let text = err.to_string();
    assert!(text.contains("credential-plugin.sh"), "{text}");
    assert!(text.contains("exit status: 7"), "{text}");
    assert!(
        text.contains("the test writes this plugin itself"),
        "{text}"
    );
    assert!(err.is_retryable(), "a plugin may fail for a passing reason");
    assert!(
        server.requests().is_empty(),
        "nothing is sent without a credential"
    );
}

/// The skiff binary leads with a plugin token; then a 401 on a main-client request makes the
/// main client run the plugin again, and that run does not end until the test lets it. The
/// lease client has its own cached credential, so it renews while the run lasts.
#[test]
fn lease_renewals_do_not_wait_for_the_main_clients_plugin_run() {
    let server = server_with_configmap();
    let dir = TempDir::new("exec-lease");
    let held_run = "if [ -f \"$here/slow\" ]; then rm \"$here/slow\"; touch \"$here/started\"; while [ ! -f \"$here/release\" ]; do sleep 0.05; done; touch \"$here/ended\"; fi";
    let body = format!(
        "echo \"plugin run $n\" >&2\n{held_run}\n{}",
        print_token("tok")
    );
    let plugin = Plugin::write(&dir.0, &body);
    let kubeconfig = exec_kubeconfig(
        &dir.0,
        &server.url(),
        server.ca_pem().as_deref(),
        &plugin,
        HOME_NS,
        &[],
    );
    let mut args: Vec<&str> = SHORT_LEASE.to_vec();
    args.push("--log-level=debug");
    let skiff = Skiff::start(&kubeconfig, dir.0.join("skiff.log"), &args);
    let leading_and_watching = eventually(LIVENESS, || {
        let records = server.requests();
        records.iter().any(is_lease_hold)
            && records
                .iter()
                .any(|r| r.watch && r.class == RequestClass::Other && r.status == 200)
    });
    assert!(leading_and_watching, "never led; log:\n{}", skiff.logs());
    let runs_before = plugin.runs();

    std::fs::write(plugin.file("slow"), "").expect("arm the held run");
    server.set_fault_times(RequestClass::Other, Fault::Unauthorized, 1);
    // The main client's watches reconnect; the first request gets the 401.
    server.close_watches();
    let started = eventually(LIVENESS, || plugin.file("started").exists());
    assert!(started, "the main client never ran the plugin again");
    let mark = server.requests().len();
    // Renewals while the main client's run lasts: two, so not one that slipped through.
    let renewing = eventually(LIVENESS, || {
        server.requests()[mark..]
            .iter()
            .filter(|r| is_lease_hold(r))
            .count()
            >= 2
    });
    assert!(
        renewing,
        "no renewals while the main client's plugin ran; log:\n{}",
        skiff.logs()
    );
    assert!(
        !plugin.file("ended").exists(),
        "the run ended before it was released"
    );
    std::fs::write(plugin.file("release"), "").expect("release the run");
    assert!(
        eventually(LIVENESS, || plugin.file("ended").exists()),
        "the held run never ended; log:\n{}",
        skiff.logs()
    );
    assert!(
        !skiff.logs().contains("leader election lost"),
        "log:\n{}",
        skiff.logs()
    );
    assert_eq!(runs_before, 2, "one run per client at start");
    // skiff logs the plugin's stderr once the run has exited, a moment after its `ended` file.
    assert!(
        eventually(LIVENESS, || skiff.logs().contains("plugin run 3")),
        "the plugin's stderr is logged; log:\n{}",
        skiff.logs()
    );
    assert_eq!(
        plugin.runs(),
        3,
        "only the main client ran the plugin again"
    );
}
