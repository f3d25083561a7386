//! Kubeconfig load benchmark: how long skiff takes to read, merge and resolve a kubeconfig, for
//! a file of the size tools write (one cluster, an embedded CA and client certificate) and for
//! a large one (300 clusters, users and contexts with embedded certificates, ~310 KB, as a
//! Rancher or Teleport export can be).
//!
//! The control beside each figure is `serde_json` parsing the same content written as JSON:
//! the floor any reader pays for that many bytes. A kubeconfig is read once at start, so the
//! figure only matters for how quickly a replica starts.
//!
//! `cargo bench --bench kubeconfig` prints the table; `cargo test --all-targets` runs it once
//! per file and checks that each loads.

use skiff::kube::load_kubeconfig_files;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A certificate-sized base64 blob (a 2048-bit RSA certificate is ~1.5 KB of base64).
fn blob(seed: usize) -> String {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    (0..1500)
        .map(|i| alphabet[(i * 7 + seed * 13) % 64] as char)
        .collect()
}

/// `entries` clusters, users and contexts; the first context is current.
fn kubeconfig_json(entries: usize) -> serde_json::Value {
    let clusters: Vec<_> = (0..entries)
        .map(|i| {
            serde_json::json!({"name": format!("cluster-{i}"), "cluster": {
                "server": format!("https://10.0.{}.{}:6443", i / 250, i % 250 + 1),
                "certificate-authority-data": blob(i)}})
        })
        .collect();
    let users: Vec<_> = (0..entries)
        .map(|i| {
            serde_json::json!({"name": format!("user-{i}"), "user": {
                "token": format!("token-{i}-{}", &blob(i)[..40])}})
        })
        .collect();
    let contexts: Vec<_> = (0..entries)
        .map(|i| {
            serde_json::json!({"name": format!("context-{i}"), "context": {
                "cluster": format!("cluster-{i}"), "user": format!("user-{i}"),
                "namespace": "apps"}})
        })
        .collect();
    serde_json::json!({"apiVersion": "v1", "kind": "Config", "current-context": "context-0",
        "clusters": clusters, "users": users, "contexts": contexts})
}

/// The same content in the block style `kubectl config view` writes.
fn as_yaml(entries: usize) -> String {
    let mut text = String::from("apiVersion: v1\nkind: Config\ncurrent-context: context-0\n");
    text.push_str("clusters:\n");
    for i in 0..entries {
        text.push_str(&format!(
            "- name: cluster-{i}\n  cluster:\n    server: https://10.0.{}.{}:6443\n    certificate-authority-data: {}\n",
            i / 250,
            i % 250 + 1,
            blob(i)
        ));
    }
    text.push_str("users:\n");
    for i in 0..entries {
        text.push_str(&format!(
            "- name: user-{i}\n  user:\n    token: token-{i}-{}\n",
            &blob(i)[..40]
        ));
    }
    text.push_str("contexts:\n");
    for i in 0..entries {
        text.push_str(&format!(
            "- name: context-{i}\n  context:\n    cluster: cluster-{i}\n    user: user-{i}\n    namespace: apps\n"
        ));
    }
    text
}

/// The median of `runs` timings of `f`.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn load(path: &Path) {
    // The base64 blobs are not certificates: resolving the CA fails after the reading, which is
    // what is timed, so any error but a certificate one is a failure of the bench.
    if let Err(e) = load_kubeconfig_files(&[path.to_path_buf()], None) {
        let message = e.to_string();
        assert!(message.contains("certificate"), "{message}");
    }
}

fn main() {
    let quick = !std::env::args().any(|a| a == "--bench");
    let runs = if quick { 1 } else { 101 };
    let dir = std::env::temp_dir().join(format!("skiff-kubeconfig-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the bench directory");
    println!(
        "{:<28} {:>9} {:>12} {:>14} {:>7}",
        "kubeconfig", "bytes", "skiff load", "serde_json", "ratio"
    );
    for (label, entries) in [("one cluster", 1), ("300 clusters", 300)] {
        let yaml = as_yaml(entries);
        let json = serde_json::to_string(&kubeconfig_json(entries)).expect("serialize");
        let path: PathBuf = dir.join(format!("{entries}.yaml"));
        std::fs::write(&path, &yaml).expect("write the kubeconfig");
        let skiff = median(runs, || load(&path));
        let floor = median(runs, || {
            let text = std::fs::read(&path).map(|_| json.as_bytes()).expect("read");
            let value: serde_json::Value = serde_json::from_slice(text).expect("parse");
            std::hint::black_box(value);
        });
        println!(
            "{label:<28} {:>9} {:>10.0?} {:>14.0?} {:>6.1}×",
            yaml.len(),
            skiff,
            floor,
            skiff.as_secs_f64() / floor.as_secs_f64()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
