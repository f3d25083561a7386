//! Plugins are shell scripts written here; each counts its runs in a file beside it.

use super::credential::EXPIRY_MARGIN;
use super::*;
use crate::kube::test_dir::temp_dir;
use std::os::unix::fs::PermissionsExt;

const TOKEN_REPLY: &str = r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"tok-RUN"}}"#;

/// A plugin script in a fresh dir: it appends a line to `runs` and then runs `body`, with
/// `$n` set to its run number.
fn script(tag: &str, body: &str) -> PathBuf {
    let dir = temp_dir(tag);
    let path = dir.join("plugin.sh");
    let text = format!(
        "#!/bin/sh\necho run >> \"$(dirname \"$0\")/runs\"\nn=$(wc -l < \"$(dirname \"$0\")/runs\" | tr -d ' ')\n{body}\n"
    );
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn runs(script: &Path) -> usize {
    std::fs::read_to_string(script.with_file_name("runs"))
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

fn entry(command: &Path, extra: &str) -> ExecEntry {
    let yaml = format!(
        "apiVersion: client.authentication.k8s.io/v1\ncommand: {}\ninteractiveMode: Never\n{extra}",
        command.display()
    );
    crate::kube::yaml::from_str(&yaml).unwrap()
}

fn plugin(command: &Path, extra: &str) -> ExecPlugin {
    let cluster = ClusterInfo {
        server: "https://api.example:6443/".into(),
        ca_pem: Some(b"-----BEGIN CERTIFICATE-----\n".to_vec()),
        ..ClusterInfo::default()
    };
    ExecPlugin::new("u", &entry(command, extra), Path::new("/"), cluster).unwrap()
}

fn token_of(plugin: &ExecPlugin) -> Result<String, Error> {
    smol::block_on(plugin.current()).map(|c| c.token.unwrap_or_default())
}

fn echo_token() -> String {
    format!("echo '{}' | sed \"s/RUN/$n/\"", TOKEN_REPLY)
}

#[test]
fn token_is_cached_until_retired_and_clones_keep_their_own() {
    let path = script("exec-cache", &echo_token());
    let plugin = plugin(&path, "");
    assert_eq!(token_of(&plugin).unwrap(), "tok-1");
    assert_eq!(token_of(&plugin).unwrap(), "tok-1");
    assert_eq!(runs(&path), 1);
    let clone = plugin.clone();
    assert_eq!(token_of(&clone).unwrap(), "tok-2");
    assert_eq!(token_of(&plugin).unwrap(), "tok-1");
    let used = smol::block_on(plugin.current()).unwrap();
    smol::block_on(plugin.retire(used.generation + 1000));
    assert_eq!(
        token_of(&plugin).unwrap(),
        "tok-1",
        "another run's 401 is ignored"
    );
    smol::block_on(plugin.retire(used.generation));
    assert_eq!(token_of(&plugin).unwrap(), "tok-3");
    assert_eq!(token_of(&clone).unwrap(), "tok-2");
    assert_eq!(runs(&path), 3);
}

#[test]
fn credential_expiring_within_the_margin_is_fetched_again() {
    let soon = crate::time::rfc3339_seconds(SystemTime::now() + EXPIRY_MARGIN / 2);
    let later = crate::time::rfc3339_seconds(SystemTime::now() + EXPIRY_MARGIN * 6);
    let body = format!(
        r#"if [ "$n" = 1 ]; then at={soon}; else at={later}; fi
echo '{{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{{"token":"t'$n'","expirationTimestamp":"'$at'"}}}}'"#
    );
    let path = script("exec-expiry", &body);
    let plugin = plugin(&path, "");
    assert_eq!(token_of(&plugin).unwrap(), "t1");
    assert_eq!(token_of(&plugin).unwrap(), "t2");
    assert_eq!(token_of(&plugin).unwrap(), "t2");
    assert_eq!(runs(&path), 2);
}

#[test]
fn args_env_and_cluster_info_reach_the_plugin() {
    let body = format!(
        "printf '%s|' \"$@\" > \"$(dirname \"$0\")/args\"\necho \"$GREETING\" > \"$(dirname \"$0\")/env\"\necho \"$KUBERNETES_EXEC_INFO\" > \"$(dirname \"$0\")/info\"\n{}",
        echo_token()
    );
    let path = script("exec-info", &body);
    let extra = "args: [eks, get-token, --cluster-name, 'a b']\nenv:\n- {name: GREETING, value: hello}\nprovideClusterInfo: true\n";
    let plugin = plugin(&path, extra);
    assert_eq!(token_of(&plugin).unwrap(), "tok-1");
    let read = |name| std::fs::read_to_string(path.with_file_name(name)).unwrap();
    assert_eq!(read("args"), "eks|get-token|--cluster-name|a b|");
    assert_eq!(read("env").trim(), "hello");
    let info: serde_json::Value = serde_json::from_str(&read("info")).unwrap();
    assert_eq!(info["kind"], "ExecCredential");
    assert_eq!(info["spec"]["interactive"], false);
    assert_eq!(
        info["spec"]["cluster"]["server"],
        "https://api.example:6443/"
    );
    assert_eq!(
        info["spec"]["cluster"]["certificate-authority-data"],
        "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="
    );
    let without = plugin_without_cluster_info(&path);
    assert_eq!(token_of(&without).unwrap(), "tok-2");
    let info: serde_json::Value = serde_json::from_str(&read("info")).unwrap();
    assert!(info["spec"].get("cluster").is_none(), "{info}");
}

fn plugin_without_cluster_info(path: &Path) -> ExecPlugin {
    plugin(path, "")
}

#[test]
fn client_certificate_credentials_are_converted_for_tls() {
    let key = openssl::pkey::PKey::from_rsa(openssl::rsa::Rsa::generate(2048).unwrap()).unwrap();
    let cert = crate::kube::test_cert::self_signed(&key);
    let pkcs1 = String::from_utf8(key.rsa().unwrap().private_key_to_pem().unwrap()).unwrap();
    let reply = serde_json::json!({
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "kind": "ExecCredential",
        "status": {"clientCertificateData": String::from_utf8(cert.clone()).unwrap(),
                   "clientKeyData": pkcs1},
    });
    let dir = temp_dir("exec-cert");
    std::fs::write(dir.join("reply.json"), reply.to_string()).unwrap();
    let path = script(
        "exec-cert-plugin",
        &format!("cat {}", dir.join("reply.json").display()),
    );
    let yaml = format!(
        "apiVersion: client.authentication.k8s.io/v1beta1\ncommand: {}\n",
        path.display()
    );
    let entry: ExecEntry = crate::kube::yaml::from_str(&yaml).unwrap();
    let plugin = ExecPlugin::new("u", &entry, Path::new("/"), ClusterInfo::default()).unwrap();
    let credential = smol::block_on(plugin.current()).unwrap();
    assert!(credential.token.is_none());
    let identity = credential.identity.expect("a client identity");
    assert_eq!(identity.cert_pem, cert);
    assert!(String::from_utf8_lossy(&identity.key_pkcs8_pem).contains("BEGIN PRIVATE KEY"));
}

/// Each failure names the command, what happened and the install hint.
fn failing(tag: &str, body: &str) -> String {
    let path = script(tag, body);
    let hint = "installHint: |\n  Install the cloud CLI: see the cloud's docs.\n";
    let err = token_of(&plugin(&path, hint)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::Credentials(_)), "{err:?}");
    assert!(
        text.contains("plugin.sh") && text.contains("user \"u\""),
        "{text}"
    );
    assert!(text.contains("Install the cloud CLI"), "{text}");
    text
}

#[test]
fn plugin_failures_name_the_command_the_status_and_the_install_hint() {
    let text = failing("exec-exit", "echo 'token expired, run login' >&2\nexit 3");
    assert!(text.contains("exit status: 3"), "{text}");
    let text = failing("exec-json", "echo 'not json'");
    assert!(
        text.contains("no ExecCredential JSON") && text.contains("not json"),
        "{text}"
    );
    let text = failing(
        "exec-version",
        r#"echo '{"apiVersion":"client.authentication.k8s.io/v1alpha1","kind":"ExecCredential","status":{"token":"x"}}'"#,
    );
    assert!(text.contains("v1alpha1"), "{text}");
    let text = failing(
        "exec-empty",
        r#"echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}}'"#,
    );
    assert!(text.contains("neither a token"), "{text}");
    let text = failing(
        "exec-stamp",
        r#"echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"x","expirationTimestamp":"tomorrow"}}'"#,
    );
    assert!(text.contains("tomorrow"), "{text}");
    let missing = temp_dir("exec-missing").join("no-such-plugin");
    let err = token_of(&plugin(&missing, "installHint: brew install it\n")).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("no-such-plugin") && text.contains("could not be started"),
        "{text}"
    );
    assert!(text.contains("brew install it"), "{text}");
}

#[test]
fn bad_exec_entries_are_refused_at_load_with_the_fix() {
    let refused = |yaml: &str| {
        let entry: ExecEntry = crate::kube::yaml::from_str(yaml).unwrap();
        ExecPlugin::new("u", &entry, Path::new("/"), ClusterInfo::default())
            .unwrap_err()
            .to_string()
    };
    let v1 = "apiVersion: client.authentication.k8s.io/v1\ncommand: x\n";
    let text = refused(&format!("{v1}interactiveMode: Always\n"));
    assert!(
        text.contains("Always") && text.contains("terminal"),
        "{text}"
    );
    let text = refused(v1);
    assert!(text.contains("interactiveMode: Never"), "{text}");
    let text = refused("apiVersion: client.authentication.k8s.io/v1alpha1\ncommand: x\n");
    assert!(
        text.contains("v1alpha1") && text.contains("v1beta1"),
        "{text}"
    );
    let text = refused("apiVersion: client.authentication.k8s.io/v1beta1\n");
    assert!(text.contains("no command"), "{text}");
}

#[test]
fn relative_commands_with_a_slash_resolve_against_the_kubeconfig_dir() {
    let yaml = "apiVersion: client.authentication.k8s.io/v1beta1\ncommand: ./bin/plugin\n";
    let entry: ExecEntry = crate::kube::yaml::from_str(yaml).unwrap();
    let dir = Path::new("/home/me/.kube");
    let plugin = ExecPlugin::new("u", &entry, dir, ClusterInfo::default()).unwrap();
    assert_eq!(plugin.command(), Path::new("/home/me/.kube/./bin/plugin"));
    let yaml = "apiVersion: client.authentication.k8s.io/v1beta1\ncommand: aws\n";
    let entry: ExecEntry = crate::kube::yaml::from_str(yaml).unwrap();
    let plugin = ExecPlugin::new("u", &entry, dir, ClusterInfo::default()).unwrap();
    assert_eq!(plugin.command(), Path::new("aws"));
}
