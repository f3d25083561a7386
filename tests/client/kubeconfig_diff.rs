//! skiff's kubeconfig loading against client-go's, on a corpus of kubeconfigs in the shapes
//! real tools write (`kubeconfigs/`, made by its `generate.py`) and `$KUBECONFIG` merges of
//! them. The oracle is client-go itself: `bin/kubeconfig-oracle` (built by `make testbin`
//! from testbin/kubeconfig-oracle) loads each case with `clientcmd`, builds the client config
//! and its HTTP client, and prints the fields compared here or its refusal.
//!
//! Every case must come out the same: both read it with equal fields, or both refuse it.
//! The exceptions are skiff's deliberate refusals, listed with their reasons in `REFUSALS`,
//! and the differences not fixed yet in `KNOWN_DIFFERENCES`; a listed case that no longer
//! differs fails too, so the lists stay true.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use skiff::kube::{Auth, Config, ProxyConfig, load_kubeconfig_files};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Cases kubectl reads and skiff refuses on purpose, and why.
const REFUSALS: &[(&str, &str)] = &[
    (
        "basic-auth.yaml",
        "basic auth (username/password): deprecated, and API servers since 1.19 do not accept it",
    ),
    (
        "missing-user.yaml",
        "a context naming a user the file does not define: kubectl connects without credentials, skiff refuses rather than drop who it is",
    ),
    (
        "oidc-auth-provider.yaml",
        "the oidc auth-provider: client-go deprecated auth-providers for exec plugins (kubelogin), which skiff runs",
    ),
    (
        "exec-interactive-always.yaml",
        "interactiveMode: Always: skiff runs without a terminal, so the plugin could never prompt",
    ),
    (
        "proxy-https.yaml",
        "https:// proxies (TLS to the proxy): TLS inside TLS for what a local http:// or socks5:// forwarder serves as well (README, Proxies)",
    ),
    (
        "server-http-impersonating.yaml",
        "impersonation over a plain http:// server: client-go drops it silently with the credentials; skiff refuses rather than change who it acts as",
    ),
];

/// Cases where both read the file and a field differs, and why that is not fixed here.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[];

/// Strings from the corpus's credentials that no error may print.
const SECRETS: &[&str] = &[
    "hunter2",
    "sha256~Xq3b",
    "k8wz5nqvl8",
    "eyJhbGciOiJSUzI1NiJ9",
    "3b7c1f0e9d2a4c6b",
    "LS0tLS1CRUdJTi",
    "q1bKLFOyUiosTfawzA93",
    "ghost-token",
];

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/client/kubeconfigs")
}

/// Each case: its name and the files it loads, in `$KUBECONFIG` order.
fn cases() -> Vec<(String, Vec<PathBuf>)> {
    let files = corpus().join("files");
    let mut names: Vec<String> = std::fs::read_dir(&files)
        .expect("corpus files")
        .map(|e| {
            e.expect("corpus entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    let mut cases: Vec<(String, Vec<PathBuf>)> = names
        .into_iter()
        .map(|n| (n.clone(), vec![files.join(n)]))
        .collect();
    let merges = std::fs::read_to_string(corpus().join("merges.txt")).expect("merges.txt");
    for line in merges
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (name, list) = line.split_once(':').expect("name: files");
        let paths = list.split_whitespace().map(|f| files.join(f)).collect();
        cases.push((name.to_owned(), paths));
    }
    cases
}

/// client-go's results, one a case, in order.
fn oracle(cases: &[(String, Vec<PathBuf>)]) -> Vec<Value> {
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("bin/kubeconfig-oracle");
    assert!(
        oracle.exists(),
        "{} is missing: run `make testbin`",
        oracle.display()
    );
    let args = cases
        .iter()
        .map(|(_, paths)| std::env::join_paths(paths).expect("path list"));
    let output = Command::new(&oracle)
        .args(args)
        .output()
        .expect("run the oracle");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("oracle JSON"))
        .collect();
    assert_eq!(results.len(), cases.len());
    results
        .into_iter()
        .map(|mut r| {
            let fields = r.as_object_mut().expect("an object");
            fields.remove("case");
            if let Some(exec) = fields.get_mut("exec").and_then(Value::as_object_mut) {
                exec.remove("interactiveMode");
                exec.remove("provideClusterInfo");
                if exec.get("args") == Some(&Value::Null) {
                    exec.insert("args".into(), json!([]));
                }
            }
            if let Some(server) = fields.get_mut("server") {
                *server = json!(url(server.as_str().unwrap_or_default()));
            }
            r
        })
        .collect()
}

/// A server URL as a URL parser writes it (client-go keeps the text; the default port and
/// the host's case make no difference to where it connects).
fn url(server: &str) -> String {
    http_types::Url::parse(server).map_or_else(|_| server.to_owned(), |u| u.to_string())
}

/// A path with its `.` and `..` steps folded, as Go's `filepath.Clean` writes it.
fn clean(path: &Path) -> PathBuf {
    let mut clean = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                clean.pop();
            }
            other => clean.push(other),
        }
    }
    clean
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// skiff's config in the oracle's shape.
fn fields(config: &Config) -> Value {
    let mut r = Map::new();
    let mut set = |key: &str, value: Value| {
        if !matches!(&value, Value::Null | Value::Bool(false)) && value != json!("") {
            r.insert(key.into(), value);
        }
    };
    set("server", json!(url(config.server.as_str())));
    set("insecure", json!(config.tls.insecure_skip_verify));
    set("serverName", json!(config.tls.server_name));
    set("ca", json!(config.tls.ca_pem.as_deref().map(sha256)));
    let identity = config.tls.identity.as_ref();
    set("cert", json!(identity.map(|i| sha256(&i.cert_pem))));
    set("key", json!(identity.is_some()));
    match &config.auth {
        Auth::None => {}
        Auth::Token(token) => set("token", json!(token)),
        Auth::TokenFile(file) => set("tokenFile", json!(clean(file.path()))),
        Auth::Exec(plugin) => {
            let env: Map<String, Value> = plugin
                .env()
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            set(
                "exec",
                json!({"command": clean(plugin.command()), "args": plugin.args(), "env": env,
                    "apiVersion": plugin.api_version()}),
            );
        }
    }
    if let Some(impersonation) = &config.impersonate {
        set("impersonate", json!(impersonation.user));
        set("impersonateUID", json!(impersonation.uid));
        if !impersonation.groups.is_empty() {
            set("impersonateGroups", json!(impersonation.groups));
        }
        if !impersonation.extra.is_empty() {
            set("impersonateExtra", json!(impersonation.extra));
        }
    }
    if let ProxyConfig::Url(url) = &config.proxy {
        set("proxy", json!(url));
    }
    set(
        "namespace",
        json!(config.namespace.as_deref().unwrap_or("default")),
    );
    Value::Object(r)
}

/// skiff's result: the fields, or `{"error": ...}`. Missing files of a merge are skipped, as
/// for `$KUBECONFIG` (pinned by the loader's own tests).
fn skiff(paths: &[PathBuf]) -> Value {
    let paths: Vec<PathBuf> = if paths.len() > 1 {
        paths.iter().filter(|p| p.exists()).cloned().collect()
    } else {
        paths.to_vec()
    };
    match load_kubeconfig_files(&paths, None) {
        Ok(config) => fields(&config),
        Err(e) => json!({"error": e.to_string()}),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Same,
    SkiffRefuses,
    FieldDiffers,
    SkiffReads,
}

fn compare(kubectl: &Value, skiff: &Value) -> Outcome {
    match (kubectl.get("error").is_some(), skiff.get("error").is_some()) {
        (true, true) => Outcome::Same,
        (false, true) => Outcome::SkiffRefuses,
        (true, false) => Outcome::SkiffReads,
        (false, false) if kubectl == skiff => Outcome::Same,
        (false, false) => Outcome::FieldDiffers,
    }
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn skiff_reads_every_kubeconfig_of_the_corpus_as_client_go_does() {
    let cases = cases();
    assert!(cases.len() >= 40, "the corpus has {} cases", cases.len());
    let mut counts = [0; 4];
    let mut failures = Vec::new();
    for ((name, paths), kubectl) in cases.iter().zip(oracle(&cases)) {
        let skiff = skiff(paths);
        let outcome = compare(&kubectl, &skiff);
        counts[outcome as usize] += 1;
        if let Some(error) = skiff.get("error").and_then(Value::as_str) {
            let leaked: Vec<_> = SECRETS.iter().filter(|s| error.contains(*s)).collect();
            if !leaked.is_empty()
                || error.contains("line 0")
                || !error.contains("line ") && !error.contains("context")
            {
                failures.push(format!(
                    "{name}: skiff's error {error:?} leaks {leaked:?} or names no line"
                ));
            }
        }
        let refusal = REFUSALS.iter().any(|(case, _)| case == name);
        let known = KNOWN_DIFFERENCES.iter().any(|(case, _)| case == name);
        match (outcome, refusal, known) {
            (Outcome::Same, false, false)
            | (Outcome::SkiffRefuses, true, _)
            | (Outcome::FieldDiffers, _, true) => {}
            (Outcome::Same, _, _) => {
                failures.push(format!("{name}: listed, but skiff and kubectl agree"))
            }
            _ => failures.push(format!(
                "{name}: {outcome:?}\n  kubectl: {kubectl}\n  skiff:   {skiff}"
            )),
        }
    }
    println!(
        "kubeconfig differential: {} cases: same {}, skiff refuses what kubectl reads {} ({} listed), a field differs {} ({} listed), skiff reads what kubectl refuses {}",
        cases.len(),
        counts[0],
        counts[1],
        REFUSALS.len(),
        counts[2],
        KNOWN_DIFFERENCES.len(),
        counts[3]
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
